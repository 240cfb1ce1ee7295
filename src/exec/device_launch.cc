// Collective kernels from the API (device_launch.h).
#include "exec/device_launch.h"

#include "comm/communicator.h"
#include "device/device_runtime.h"
#include "tuner/device_schedule.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

bool kernelRuns(const Plan& plan) {
  return plan.kind == Plan::Kind::kCollective && plan.comm->device.channels.ready() &&
         plan.coll.deviceScalar == nullptr;
}

ncclResult_t noteKernelFailures(ncclComm* comm) {
  const int status = comm->device.channels.takeFailure();
  if (status == 0)
    return comm->health.state() == ncclInProgress ? ncclSuccess : comm->health.state();
  const ncclResult_t r = fail(ncclSystemError,
                              "rank %d: a collective kernel gave up waiting for a peer (status "
                              "%d: the communicator was aborted, or a peer did not take part "
                              "within BRAID_TIMEOUT_S=%g s)",
                              comm->rank(), status, comm->config.timeoutS);
  comm->health.setError(r, lastError());
  return r;
}

namespace {

/// One rank's share of `plan` for the kernel (its count is not 0), with the schedule logged.
kernels::device::CollectiveArgs kernelArgs(ncclComm* comm, const Plan& plan, bool capturing) {
  DeviceChannels& channels = comm->device.channels;
  const CollArgs& a = plan.coll;
  const bool gathered = a.coll == CollType::kAllGather || a.coll == CollType::kReduceScatter;
  const size_t bytes = a.bytes() * (gathered ? static_cast<size_t>(comm->nranks()) : 1);
  const DeviceSchedule s = chooseDeviceSchedule(a.coll, bytes, comm->nranks(), channels.channels(),
                                                comm->config.algo, comm->config.proto);
  kernels::device::CollectiveArgs k;
  k.collective = static_cast<kernels::device::Collective>(a.coll);
  k.algorithm = s.algorithm;
  k.protocol = s.protocol;
  k.root = a.root;
  k.count = a.count;
  k.sendbuff = a.sendbuff;
  k.recvbuff = a.recvbuff;
  k.op = a.op;
  k.comm = channels.comm(s.channels);
  k.comm.timeoutNs = static_cast<uint64_t>(comm->config.timeoutS * 1e9);
  comm->ops.opCount++;
  BRAID_INFO(kSubsysColl,
             "%s: opCount %llu sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm "
             "%p [nranks=%d] stream %p kernel %s/%s x%d%s",
             collName(a.coll), static_cast<unsigned long long>(comm->ops.opCount), a.sendbuff,
             a.recvbuff, a.count, a.op.dtype, a.userOp, a.root, static_cast<void*>(comm),
             comm->nranks(), plan.stream, deviceAlgorithmName(s.algorithm),
             s.protocol == kernels::device::Protocol::kLL ? "LL" : "Simple", s.channels,
             capturing ? " (captured)" : "");
  return k;
}

}  // namespace

bool sameLaunch(const Plan& a, const Plan& b) {
  return a.comm == b.comm && a.stream == b.stream && a.capturing == b.capturing &&
         a.coll.op.dtype == b.coll.op.dtype && a.coll.op.op == b.coll.op.op;
}

ncclResult_t launchKernels(Plan* const* plans, int count) {
  if (count < 1 || count > kernels::device::kMaxLaunchItems)
    return fail(ncclInternalError, "a kernel launch takes 1 to %d collectives, not %d",
                kernels::device::kMaxLaunchItems, count);
  const Plan& first = *plans[0];
  ncclComm* comm = first.comm;
  // A launch that gave up (abort, or a peer silent past the timeout) failed the communicator.
  if (ncclResult_t r = noteKernelFailures(comm); r != ncclSuccess) return r;
  kernels::device::LaunchArgs launch;
  for (int i = 0; i < count; ++i) {
    if (!sameLaunch(first, *plans[i]))
      return fail(ncclInternalError, "collectives of one launch differ in stream, type or op");
    if (plans[i]->coll.count > 0)  // as NCCL: an empty call launches nothing
      launch.items[launch.count++] = kernelArgs(comm, *plans[i], first.capturing);
  }
  if (launch.count == 0) return ncclSuccess;
  DeviceChannels& channels = comm->device.channels;
  DeviceRuntime& rt = deviceRuntime();
  const int device = comm->device.cudaDevice;
  if (!first.capturing) BRAID_TRY(rt.streamWaitChain(device, first.stream, *channels.chain()));
  if (ncclResult_t r = rt.launchCollective(device, launch, channels.status(), first.stream);
      r != ncclSuccess)
    return addContext(r, "rank %d: launching %d collective(s) (the first: %s of %zu elements)",
                      comm->rank(), launch.count, collName(first.coll.coll), first.coll.count);
  if (!first.capturing) BRAID_TRY(rt.recordChain(device, first.stream, channels.chain()));
  return ncclSuccess;
}

ncclResult_t launchKernel(Plan& plan) {
  Plan* one = &plan;
  return launchKernels(&one, 1);
}

}  // namespace braid
