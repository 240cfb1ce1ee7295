// What a schedule sees of its communicator: the ranks and connections (Team), the settings, the
// flight recorder, the buffer registrations and the counters the schedules advance. The executor
// builds one for each call; a schedule never sees the communicator itself.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer_registration.h"
#include "core/config.h"
#include "core/flight_recorder.h"
#include "core/team.h"

namespace braid {

class Algorithm;

/// Counters of a communicator's operations, the same on every rank after the same calls.
struct OpCounters {
  uint64_t opCount = 0;             ///< collectives run so far (a fingerprint's sequence number)
  uint64_t lastCollective[3] = {};  ///< fingerprint of the previous collective (mismatch watch)
  std::vector<uint64_t> sendSeq;    ///< point-to-point transfers sent to each peer
  std::vector<uint64_t> recvSeq;    ///< point-to-point transfers received from each peer
  uint64_t zeroCopyRuns = 0;        ///< collectives that read registered peer buffers in place
  uint64_t zeroCopyRounds = 0;      ///< descriptor rounds run, registered or not
  /// Collectives left before the zero-copy algorithms try a descriptor round again, after one
  /// found a buffer unregistered (zero_copy.h). Every rank counts the same calls alike.
  uint32_t zeroCopyQuiet = 0;
  /// Rank 0's shared work words of the zero-copy allreduce (zero_copy.h, SharedWork): allocated
  /// by rank 0 at its first descriptor round and held by the ranks of its process too (ranks in
  /// other processes map it); freed when the last of them goes.
  std::shared_ptr<void> sharedWork;
  /// Chunks the zero-copy allreduce has handed out so far over all its calls: where the next
  /// call's chunks start in SharedWork's counters (the same on every rank).
  uint64_t sharedChunks = 0;
  uint64_t sharedCalls = 0;  ///< calls of the zero-copy allreduce that shared their chunks out
};

struct Context {
  Team& team;
  const CommConfig& config;
  FlightRecorder& recorder;
  RegistrationTable& registrations;
  OpCounters& ops;
  int cudaDevice = -1;  ///< the communicator's CUDA device (-1: none)
  /// The algorithm the tuner ranks next for this call: what an algorithm that finds at run time
  /// that it cannot take the call (ZeroCopy on unregistered buffers) hands it to. Every rank
  /// gets the same one.
  const Algorithm* fallback = nullptr;

  int rank() const { return team.rank; }
  int nranks() const { return team.nranks; }
  WaitPolicy& policy() const { return team.policy; }
  FifoSender& sendFifo(int peer) const { return team.sendTo[peer]->fifo(); }
  FifoReceiver& recvFifo(int peer) const { return team.recvFrom[peer]->fifo(); }
};

}  // namespace braid
