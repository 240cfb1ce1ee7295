#include "exec/call_record.h"

#include "algorithms/collectives.h"
#include "util/status.h"

namespace braid {

CollectiveRecord::CollectiveRecord(ncclComm& comm, CollArgs& args, const char* algorithm,
                                   OpState state)
    : comm_(comm), args_(args), algorithm_(algorithm) {
  const uint64_t seq = ++comm.ops.opCount;
  args.fingerprint = collectiveFingerprint(seq, args, algorithm);
  entry_ = comm.recorder.begin(seq, collName(args.coll), args.bytes(), algorithm, state);
}

ncclResult_t CollectiveRecord::finish(ncclResult_t r, OpState done) {
  for (int i = 0; i < 3; i++) comm_.ops.lastCollective[i] = args_.fingerprint.words[i];
  comm_.recorder.setState(entry_, r == ncclSuccess ? done : OpState::kFailed);
  if (r != ncclSuccess) {
    addContext(r, "rank %d: %s #%llu (%s)", comm_.rank(), collName(args_.coll),
               static_cast<unsigned long long>(seq()), algorithm_);
    comm_.health.setError(r, lastError());
    comm_.recorder.dumpOnFirstFailure(lastError());
  }
  return r;
}

}  // namespace braid
