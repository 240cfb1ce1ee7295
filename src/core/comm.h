// The communicator: who the ranks are, how this rank is connected to its neighbours, and the
// state every operation shares (wait policy, abort flag, error state, operation counter).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/adaptive_choice.h"
#include "algorithms/cost_model.h"
#include "core/bootstrap.h"
#include "core/config.h"
#include "core/flight_recorder.h"
#include "core/nonblocking.h"
#include "core/registration.h"
#include "core/worker.h"
#include "device/device_staging.h"
#include "kernels/reduce.h"
#include "nccl.h"
#include "transports/transport.h"

namespace braid {
class Algorithm;
}

namespace braid {

/// ncclComm::cudaDevice before init has chosen one.
inline constexpr int kDeviceUnset = -2;

/// An ncclSend or ncclRecv waiting for its group to end.
struct P2pRequest {
  bool isSend;
  int peer;
  const void* sendbuff;
  void* recvbuff;
  size_t bytes;
};

/// A ncclRedOpCreatePreMulSum op: the scalar is captured (host immediate) or read at call time.
struct UserRedOp {
  bool inUse = false;
  int dtype = 0;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  unsigned char value[8] = {};
  const void* pointer = nullptr;
};

}  // namespace braid

struct ncclComm {
  static constexpr uint64_t kMagic = 0x4272616964436f6dull;  // "BraidCom"
  uint64_t magic = kMagic;
  int rank = -1;
  int nranks = 0;
  uint64_t commHash = 0;
  braid::CommConfig config;
  braid::WaitPolicy policy;
  std::vector<braid::PeerInfo> peers;
  std::vector<std::unique_ptr<braid::SendConnection>> sendTo;    ///< by peer rank; null if unused
  std::vector<std::unique_ptr<braid::RecvConnection>> recvFrom;  ///< by peer rank
  std::unique_ptr<braid::Bootstrap> bootstrap;
  std::atomic<uint32_t> abortFlag{0};
  std::atomic<int> asyncError{ncclSuccess};
  std::mutex errorMutex;
  std::string errorText;
  bool initialized = false;
  std::atomic<int> activeCalls{0};  ///< API calls in progress (abort waits for them to leave)
  uint64_t opCount = 0;
  uint64_t lastCollective[3] = {};   ///< fingerprint of the previous collective (mismatch watch)
  std::vector<uint64_t> p2pSendSeq;  ///< point-to-point transfers issued to each peer
  std::vector<uint64_t> p2pRecvSeq;  ///< point-to-point transfers received from each peer
  /// ncclSend/ncclRecv of the open group (`pendingP2pGroup`), shared with the task that runs them
  std::shared_ptr<std::vector<braid::P2pRequest>> pendingP2p;
  uint64_t pendingP2pGroup = 0;
  std::atomic<int> streamWork{0};  ///< items queued on host streams that use this communicator
  std::vector<braid::UserRedOp> userOps;
  std::atomic<uint32_t> revoked{0};  ///< ncclCommRevoke (or a shrink with NCCL_SHRINK_ABORT) ran
  uint32_t shrinkCount = 0;          ///< ncclCommShrink calls on this communicator so far
  braid::AsyncWork asyncWork;        ///< non-blocking communicators: queued background work
  braid::FlightRecorder recorder;    ///< last operations and peers' progress (hang reports)
  braid::RegistrationTable registrations;  ///< ncclCommRegister / ncclCommWindowRegister
  uint64_t zeroCopyRuns = 0;    ///< collectives that read registered peer buffers in place (tests)
  uint64_t zeroCopyRounds = 0;  ///< descriptor rounds run, whether or not they found registrations
  /// Collectives left before the zero-copy algorithms try a descriptor round again, after one
  /// found a buffer unregistered (zero_copy.h). Every rank counts the same calls alike.
  uint32_t zeroCopyQuiet = 0;
  braid::Worker worker;            ///< runs this communicator's share of a multi-communicator group
  braid::CommCostModel costModel;  ///< the tuner's constants, the same on every rank (commInit)
  braid::AdaptiveChoice adaptive;  ///< the online choice among near candidates (allreduce, memory)
  std::atomic<const char*> lastAlgorithm{nullptr};  ///< what the last collective ran with
  /// Every peer connected over memory both ends map (shm or same-process); set at init, asked
  /// by every small collective (allPeersShareMemory).
  bool peersShareMemory = false;
  /// chooseAlgorithm's last answer and its key: the choice depends only on the collective, the
  /// message size and what init fixed, and small collectives repeat (a tenth of an 8-byte call
  /// went into choosing again). Only the thread calling the communicator touches it.
  struct {
    int coll = -1;
    size_t bytes = 0;
    bool device = false;
    const braid::Algorithm* algorithm = nullptr;
  } lastChoice;
  /// The CUDA device current when the communicator was created (-1 without devices): device
  /// buffers and streams of calls must belong to it.
  int cudaDevice = braid::kDeviceUnset;
  /// Every pair of ranks is connected by the P2P transport (the same answer on every rank):
  /// calls on device buffers move their data on the GPUs instead of staging it through the host.
  bool deviceDirect = false;
  /// Page-locked staging for device buffers over shm/TCP, one block per stream.
  braid::StagingPool staging;
  /// Issue order across streams: each device-buffer call takes a ticket (orderIssued) and its
  /// host step runs once orderDone reaches it (device/device_staging.h: runInTurn).
  std::atomic<uint32_t> orderIssued{0};
  std::atomic<uint32_t> orderDone{0};
  std::atomic<uint32_t> orderSleepers{0};
};

namespace braid {

/// Creates the communicator object (not yet connected) and registers it as live.
ncclComm* commAllocate();
/// Bootstrap, transport selection and connection of `comm` as rank `rank` of `nranks`.
ncclResult_t commInit(ncclComm* comm, const ncclUniqueId& id, int nranks, int rank,
                      const ncclConfig_t* config);
/// Frees everything; the pointer is no longer live afterwards.
void commFree(ncclComm* comm);
/// True while `comm` points at a communicator that has not been destroyed.
bool commIsLive(const ncclComm* comm);
/// Records a failure that makes the communicator unusable (except abort and destroy).
void commSetError(ncclComm* comm, ncclResult_t code, const std::string& text);

}  // namespace braid
