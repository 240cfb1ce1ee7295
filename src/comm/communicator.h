// The communicator: the owned parts an ncclComm_t is made of, and its lifetime. Each part has
// one job and a narrow interface: the Team (ranks and connections), Health (errors, abort,
// revocation), the settings, the flight recorder, the buffer registrations, the operation
// counters, the Tuner, the device state and the Lane (its own thread). Schedules see a Context
// built from some of these (context()); the executor (exec/) runs plans over the whole.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/context.h"
#include "core/buffer_registration.h"
#include "core/config.h"
#include "core/device_channels.h"
#include "core/flight_recorder.h"
#include "core/health.h"
#include "core/issue_order.h"
#include "core/lane.h"
#include "core/staging_pool.h"
#include "core/team.h"
#include "nccl.h"
#include "tuner/tuner.h"

namespace braid {

/// DeviceState::cudaDevice before init has chosen one.
inline constexpr int kDeviceUnset = -2;

/// A ncclRedOpCreatePreMulSum op: the scalar is captured (host immediate) or read at call time.
struct UserRedOp {
  bool inUse = false;
  int dtype = 0;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  unsigned char value[8] = {};
  const void* pointer = nullptr;
};

/// What calls on device buffers need.
struct DeviceState {
  /// The CUDA device current when the communicator was created (-1 without devices): device
  /// buffers and streams of calls must belong to it.
  int cudaDevice = kDeviceUnset;
  /// Page-locked staging for device buffers over shm/TCP, one block per stream.
  StagingPool staging;
  /// Issue order across streams: host steps enqueued on CUDA streams, and calls that run at
  /// once while such steps are outstanding, take their turn here.
  IssueOrder order;
  /// The collective kernels' FIFOs (ready when every pair of ranks reaches each other's GPU).
  DeviceChannels channels;
};

}  // namespace braid

struct ncclComm {
  static constexpr uint64_t kMagic = 0x4272616964436f6dull;  // "BraidCom"
  uint64_t magic = kMagic;
  braid::CommConfig config;
  braid::Team team;
  braid::Health health;
  braid::FlightRecorder recorder;          ///< last operations and peers' progress (hang reports)
  braid::RegistrationTable registrations;  ///< ncclCommRegister / ncclCommWindowRegister
  braid::OpCounters ops;
  braid::Tuner tuner;
  braid::DeviceState device;
  /// Runs a non-blocking communicator's work, and this communicator's share of a group that
  /// spans several.
  braid::Lane lane;
  std::atomic<int> streamWork{0};  ///< items queued on host streams that use this communicator
  std::vector<braid::UserRedOp> userOps;
  uint32_t shrinkCount = 0;  ///< ncclCommShrink calls on this communicator so far

  int rank() const { return team.rank; }
  int nranks() const { return team.nranks; }
  /// What a schedule of this communicator sees (fallback: the tuner's next choice).
  braid::Context context(const braid::Algorithm* fallback = nullptr) {
    return braid::Context{team, config, recorder, registrations, ops, device.cudaDevice, fallback};
  }
};

namespace braid {

/// The device the calling thread has current, which a communicator created now takes (as in
/// NCCL); -1 without devices.
int initDevice();
/// Creates the communicator object (not yet connected) and registers it as live.
ncclComm* commAllocate();
/// Bootstrap, transport selection, connection and tuner of `comm` as rank `rank` of `nranks`.
ncclResult_t commInit(ncclComm* comm, const ncclUniqueId& id, int nranks, int rank,
                      const ncclConfig_t* config);
/// Frees everything; the pointer is no longer live afterwards.
void commFree(ncclComm* comm);
/// True while `comm` points at a communicator that has not been destroyed.
bool commIsLive(const ncclComm* comm);
/// True for a communicator created with config.blocking = 0 (or inheriting it).
inline bool commIsNonblocking(const ncclComm* comm) {
  return comm->config.blocking == 0;
}
/// Waits until no host stream holds queued work for `comm`.
void commDrainStreamWork(ncclComm* comm);
/// ncclCommDestroy (abort = false) and ncclCommAbort: queued work runs out first (after an
/// abort it fails fast), calls in progress leave, then everything is freed.
void commRelease(ncclComm* comm, bool abort);

}  // namespace braid
