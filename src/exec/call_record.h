// What every collective passes through however it runs, host steps (executor.h) or a kernel
// (device_launch.h): its number in the communicator's sequence (ops.opCount), its fingerprint,
// its flight-recorder entry, and the last-collective words the mismatch watch publishes. One
// place, so that a device call and a host call read alike in every report and every check.
#pragma once

#include <cstdint>

#include "comm/communicator.h"

namespace braid {

class CollectiveRecord {
 public:
  /// Numbers `args`, gives it its fingerprint for `algorithm` (a string literal) and opens its
  /// flight-recorder entry in `state`.
  CollectiveRecord(ncclComm& comm, CollArgs& args, const char* algorithm,
                   OpState state = OpState::kRunning);
  CollectiveRecord(const CollectiveRecord&) = delete;
  CollectiveRecord& operator=(const CollectiveRecord&) = delete;

  uint64_t seq() const { return args_.fingerprint.seq(); }

  /// Closes the call: its entry moves to `done` (kFailed when r is an error) and it becomes the
  /// communicator's last collective; a failure, with the call as its context, becomes the
  /// communicator's error and dumps the recorder once. Returns r.
  ncclResult_t finish(ncclResult_t r, OpState done = OpState::kDone);

 private:
  ncclComm& comm_;
  CollArgs& args_;
  const char* algorithm_;
  int64_t entry_;
};

}  // namespace braid
