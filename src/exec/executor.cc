#include "exec/executor.h"

#include <chrono>
#include <exception>

#include "algorithms/mismatch_watch.h"
#include "comm/communicator.h"
#include "core/host_stream.h"
#include "device/device_runtime.h"
#include "exec/call_record.h"
#include "exec/device_queue.h"
#include "exec/group.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

ncclResult_t runCollective(ncclComm& comm, CollArgs& args);

// The tuner's own collectives (the adaptive choice's agreement) run on the same communicator,
// before the call being chosen, as collectives of their own.
class Internal final : public InternalRunner {
 public:
  explicit Internal(ncclComm& comm) : comm_(comm) {}
  ncclResult_t runInternal(CollArgs& args) override { return runCollective(comm_, args); }

 private:
  ncclComm& comm_;
};

// A premulsum scalar in device memory is read when the call runs, in stream order, as NCCL's
// kernels read it.
ncclResult_t readDeviceScalar(ncclComm& comm, CollArgs& args) {
  if (!args.deviceScalar) return ncclSuccess;
  if (ncclResult_t r = deviceRuntime().read(comm.device.cudaDevice, args.op.scalar,
                                            args.deviceScalar, kernels::typeSize(args.op.dtype));
      r != ncclSuccess)
    return addContext(r, "reading the premulsum scalar at %p", args.deviceScalar);
  args.deviceScalar = nullptr;
  return ncclSuccess;
}

ncclResult_t runCollective(ncclComm& comm, CollArgs& args) {
  Context ctx = comm.context();
  Internal internal(comm);
  Choice choice;
  // Before this call's sequence number: the agreement, when due, is a collective of its own.
  BRAID_TRY(comm.tuner.choose(ctx, args, internal, &choice));
  const Algorithm* chosen = choice.algorithm;
  CollectiveRecord record(comm, args, chosen->name());
  OpCounters& ops = comm.ops;
  // The zero-copy algorithms' quiet period after a round without registrations (zero_copy.h).
  if (ops.zeroCopyQuiet > 0) ops.zeroCopyQuiet--;
  ctx.fallback = choice.fallback;
  BRAID_INFO(kSubsysColl,
             "%s: opCount %llu sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
             "[nranks=%d] algorithm %s",
             collName(args.coll), static_cast<unsigned long long>(record.seq()), args.sendbuff,
             args.recvbuff, args.count, args.op.dtype, args.userOp, args.root,
             static_cast<void*>(&comm), comm.nranks(), chosen->name());
  ncclResult_t r;
  {
    MismatchWatch watch(ctx, args);
    const auto start =
        choice.timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    r = chosen->run(args, ctx);
    if (choice.timed && r == ncclSuccess)
      Tuner::record(choice, std::chrono::duration<double, std::micro>(
                                std::chrono::steady_clock::now() - start)
                                .count());
  }
  return record.finish(r);
}

ncclResult_t runSendRecv(ncclComm& comm, const Plan& plan) {
  Context ctx = comm.context();
  uint64_t bytes = 0;
  for (const Transfer& t : plan.transfers) bytes += t.bytes;
  const int64_t entry = comm.recorder.begin(0, "Send/Recv", bytes, "p2p");
  ncclResult_t r = runSendRecvBatch(ctx, plan.transfers, plan.target == Target::kDeviceP2p);
  comm.recorder.setState(entry, r == ncclSuccess ? OpState::kDone : OpState::kFailed);
  if (r != ncclSuccess) {
    comm.health.setError(r, lastError());
    comm.recorder.dumpOnFirstFailure(lastError());
  }
  return r;
}

}  // namespace

ncclResult_t execute(Plan& plan) {
  ncclComm& comm = *plan.comm;
  switch (plan.kind) {
    case Plan::Kind::kCollective: {
      ActiveCall active(comm.health);
      BRAID_TRY(readDeviceScalar(comm, plan.coll));
      return runCollective(comm, plan.coll);
    }
    case Plan::Kind::kSendRecv: {
      ActiveCall active(comm.health);
      return runSendRecv(comm, plan);
    }
    case Plan::Kind::kManagement:
      return plan.manage();
  }
  return fail(ncclInternalError, "a plan of unknown kind %d", static_cast<int>(plan.kind));
}

ncclResult_t submitToLane(Plan plan) {
  ncclComm* comm = plan.comm;
  comm->health.workQueued();
  comm->lane.submit([comm, plan = std::move(plan)]() mutable {
    ncclResult_t r;
    try {
      r = execute(plan);
    } catch (const std::exception& e) {
      r = fail(ncclInternalError, "unexpected exception: %s", e.what());
    } catch (...) {
      r = fail(ncclInternalError, "unexpected exception");
    }
    if (r != ncclSuccess) comm->health.setError(r, lastError());
    comm->health.workDone();
  });
  return ncclInProgress;
}

ncclResult_t submit(Plan plan) {
  BRAID_TRY(place(plan));
  if (groupActive()) {
    groupDefer(std::move(plan));
    return ncclSuccess;
  }
  ncclComm* comm = plan.comm;
  if (HostStream* stream = hostStreamFromHandle(plan.stream)) {
    stream->submit({&comm->streamWork},
                   [plan = std::move(plan)]() mutable { return execute(plan); });
    return ncclSuccess;
  }
  if (plan.target != Target::kHost) return enqueueOnDevice(std::move(plan));
  if (commIsNonblocking(comm)) return submitToLane(std::move(plan));
  return runInTurn(comm, [&plan] { return execute(plan); });
}

bool estimateUs(const Plan& plan, double* us) {
  ncclComm& comm = *plan.comm;
  switch (plan.kind) {
    case Plan::Kind::kCollective:
      *us = comm.tuner.estimateUs(comm.context(), plan.coll);
      return true;
    case Plan::Kind::kSendRecv: {
      size_t bytes = 0;
      for (const Transfer& t : plan.transfers) bytes += t.bytes;
      *us = comm.tuner.estimateP2pUs(plan.transfers.size(), bytes);
      return true;
    }
    case Plan::Kind::kManagement:
      return false;
  }
  return false;
}

}  // namespace braid
