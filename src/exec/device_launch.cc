// Collective kernels from the API (device_launch.h).
#include "exec/device_launch.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/fingerprint.h"
#include "comm/communicator.h"
#include "device/device_runtime.h"
#include "exec/call_record.h"
#include "kernels/device/p2p_arrange.h"
#include "tuner/device_schedule.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

bool kernelRuns(const Plan& plan) {
  if (!plan.comm->device.channels.ready()) return false;
  if (plan.kind == Plan::Kind::kCollective) return true;
  if (plan.kind != Plan::Kind::kSendRecv) return false;
  // A point-to-point launch runs up to a block per peer and direction; where that many cannot
  // be resident for every rank sharing a GPU, no launch could be sure to finish. From the
  // communicator's size and the agreed budget: every rank chooses alike.
  const int budget = plan.comm->device.channels.blockBudget();
  const int mostBlocks = 2 * (plan.comm->nranks() - 1);
  if (budget > 0 && mostBlocks > budget) {
    BRAID_INFO(kSubsysP2p,
               "rank %d: point-to-point at %d ranks may need %d blocks a launch, more than the "
               "%d resident for each rank on its GPU: host-driven steps",
               plan.comm->rank(), plan.comm->nranks(), mostBlocks, budget);
    return false;
  }
  if (plan.transfers.size() <= static_cast<size_t>(kernels::device::kMaxP2pItems)) return true;
  BRAID_INFO(kSubsysP2p,
             "rank %d: a group of %zu sends and receives is more than one kernel takes (%d): "
             "host-driven steps",
             plan.comm->rank(), plan.transfers.size(), kernels::device::kMaxP2pItems);
  return false;
}

ncclResult_t noteKernelFailures(ncclComm* comm) {
  int channel = 0;
  const int status = comm->device.channels.takeFailure(&channel);
  if (status == 0)
    return comm->health.state() == ncclInProgress ? ncclSuccess : comm->health.state();
  if (status == kernels::device::kChannelMismatch) {
    // The host path's words (mismatch_watch.h), from what the channel saw in the peer's FIFO.
    const uint64_t* report = comm->device.channels.report(channel);
    Fingerprint mine, theirs;
    for (int i = 0; i < 3; ++i) {
      mine.words[i] = report[1 + i];
      theirs.words[i] = report[4 + i];
    }
    const int peer = static_cast<int>(report[0]);
    const ncclResult_t r =
        theirs.seq() == mine.seq()
            ? fail(ncclInvalidUsage,
                   "operation mismatch: rank %d's collective kernel ran %s, but rank %d's ran %s "
                   "as the same call of the communicator",
                   comm->rank(), describeCall(mine).c_str(), peer, describeCall(theirs).c_str())
            : fail(ncclInvalidUsage,
                   "operation mismatch: rank %d's collective kernel ran %s and waited for %s "
                   "rank %d, which had already left call #%llu (it is in %s)",
                   comm->rank(), describeCall(mine).c_str(),
                   report[7] ? "data from" : "a free slot at", peer,
                   static_cast<unsigned long long>(mine.seq()), describeCall(theirs).c_str());
    comm->health.setError(r, lastError());
    return r;
  }
  if (status == kernels::device::kChannelSizeMismatch) {
    const ncclResult_t r = fail(ncclInvalidUsage,
                                "rank %d: a receive met a send of another size (a peer's ncclSend "
                                "and its matching ncclRecv differ in count or type); the receive "
                                "buffer was not written",
                                comm->rank());
    comm->health.setError(r, lastError());
    return r;
  }
  const ncclResult_t r = fail(ncclSystemError,
                              "rank %d: a collective kernel gave up waiting for a peer (status "
                              "%d: the communicator was aborted, or a peer did not take part "
                              "within BRAID_TIMEOUT_S=%g s)",
                              comm->rank(), status, comm->config.timeoutS);
  comm->health.setError(r, lastError());
  return r;
}

namespace {

/// One rank's share of `plan` for the kernel (its count is not 0), with the schedule logged:
/// numbered, fingerprinted and recorded in `record` as a host call is (call_record.h). Raises
/// `*threads` to what its schedule asks for.
kernels::device::CollectiveArgs kernelArgs(ncclComm* comm, Plan& plan, bool capturing,
                                           std::optional<CollectiveRecord>* record, int* threads) {
  DeviceChannels& channels = comm->device.channels;
  CollArgs& a = plan.coll;
  const bool gathered = a.coll == CollType::kAllGather || a.coll == CollType::kReduceScatter;
  const size_t bytes = a.bytes() * (gathered ? static_cast<size_t>(comm->nranks()) : 1);
  const DeviceSchedule s = comm->tuner.chooseDevice(a.coll, bytes, channels.channels());
  kernels::device::CollectiveArgs k;
  k.collective = a.coll;  // one enum (kernels/collective_type.h)
  k.algorithm = s.algorithm;
  k.protocol = s.protocol;
  k.root = a.root;
  k.count = a.count;
  k.sendbuff = a.sendbuff;
  k.recvbuff = a.recvbuff;
  k.op = a.op;
  k.scalarOnDevice = a.deviceScalar;
  k.comm = channels.comm(s.channels);
  k.comm.timeoutNs = static_cast<uint64_t>(comm->config.timeoutS * 1e9);
  record->emplace(*comm, a, deviceScheduleName(s.algorithm, s.protocol), OpState::kLaunched);
  *threads = std::max(*threads, s.threads);
  for (int i = 0; i < 3; ++i) k.call[i] = a.fingerprint.words[i];
  BRAID_INFO(kSubsysColl,
             "%s: opCount %llu sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm "
             "%p [nranks=%d] stream %p kernel %s/%s x%d%s",
             collName(a.coll), static_cast<unsigned long long>((*record)->seq()), a.sendbuff,
             a.recvbuff, a.count, a.op.dtype, a.userOp, a.root, static_cast<void*>(comm),
             comm->nranks(), plan.stream, deviceAlgorithmName(s.algorithm),
             deviceProtocolName(s.protocol), s.channels, capturing ? " (captured)" : "");
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
  ActiveCall active(comm->health);
  // A launch that gave up (abort, or a peer silent past the timeout) failed the communicator.
  if (ncclResult_t r = noteKernelFailures(comm); r != ncclSuccess) return r;
  for (int i = 0; i < count; ++i)
    if (!sameLaunch(first, *plans[i]))
      return fail(ncclInternalError, "collectives of one launch differ in stream, type or op");
  kernels::device::LaunchArgs launch;
  std::optional<CollectiveRecord> records[kernels::device::kMaxLaunchItems];
  for (int i = 0; i < count; ++i)
    if (plans[i]->coll.count > 0) {  // as NCCL: an empty call launches nothing
      launch.items[launch.count] =
          kernelArgs(comm, *plans[i], first.capturing, &records[launch.count], &launch.threads);
      launch.count++;
    }
  if (launch.count == 0) return ncclSuccess;
  DeviceChannels& channels = comm->device.channels;
  DeviceRuntime& rt = deviceRuntime();
  const int device = comm->device.cudaDevice;
  ncclResult_t r = ncclSuccess;
  if (!first.capturing) r = rt.streamWaitChain(device, first.stream, *channels.chain());
  if (r == ncclSuccess) {
    r = rt.launchCollective(device, launch, channels.status(), first.stream);
    if (r != ncclSuccess)
      addContext(r, "rank %d: launching %d collective(s) (the first: %s of %zu elements)",
                 comm->rank(), launch.count, collName(first.coll.coll), first.coll.count);
  }
  if (r == ncclSuccess && !first.capturing)
    r = rt.recordChain(device, first.stream, channels.chain());
  for (int i = 0; i < launch.count; ++i) records[i]->finish(r, OpState::kLaunched);
  return r;
}

namespace {

/// A group's sends and receives as one launch (kernels/device/p2p.h): the transfers of each
/// (peer, direction) adjacent in posting order, a block group each; a send to self is copied
/// by its receive, so the two must pair up here.
ncclResult_t p2pArgs(ncclComm* comm, const std::vector<Transfer>& transfers,
                     kernels::device::P2pLaunchArgs* l) {
  using kernels::device::Protocol;
  DeviceChannels& channels = comm->device.channels;
  const DeviceChannelShape& shape = channels.shape();
  const int self = comm->rank();
  std::vector<const Transfer*> toSelf, fromSelf;
  for (const Transfer& t : transfers)
    if (t.peer == self) (t.isSend ? toSelf : fromSelf).push_back(&t);
  if (toSelf.size() != fromSelf.size())
    return fail(ncclInvalidUsage, "rank %d: %zu send(s) to itself but %zu receive(s) from itself",
                self, toSelf.size(), fromSelf.size());
  for (size_t k = 0; k < toSelf.size(); ++k)
    if (toSelf[k]->bytes != fromSelf[k]->bytes)
      return fail(ncclInvalidUsage,
                  "rank %d: send %zu to itself is %zu bytes but its receive is %zu bytes", self, k,
                  toSelf[k]->bytes, fromSelf[k]->bytes);
  const bool llAllowed = shape.fifo.llSlotBytes >= 64;
  std::vector<kernels::device::P2pItem> posted(transfers.size());
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    kernels::device::P2pItem& it = posted[i];
    it.src = t.src;
    it.dst = t.dst;
    it.bytes = t.bytes;
    it.peer = t.peer;
    it.isSend = t.isSend ? 1 : 0;
    // From the bytes and the communicator's settings only: both ends choose alike.
    it.protocol = static_cast<uint8_t>(
        llAllowed && t.bytes <= shape.p2pLLThreshold ? Protocol::kLL : Protocol::kSimple);
  }
  l->comm = channels.comm(channels.channels());
  l->comm.timeoutNs = static_cast<uint64_t>(comm->config.timeoutS * 1e9);
  // Blocks grow as peers x channels per peer, and the blocks of every rank sharing a GPU must
  // fit on it at once (a resident block may wait for one that is not): as many channels per
  // peer as the agreed budget leaves for a block per peer and direction, or, where the runtime
  // knows no budget, one past 8 ranks. From the communicator's size, so every rank chooses
  // alike.
  const int budget = channels.blockBudget();
  const int pairs = std::max(2 * (comm->nranks() - 1), 1);
  const int fit = budget > 0 ? std::max(budget / pairs, 1) : (comm->nranks() > 8 ? 1 : 32);
  l->channelsPerPeer = std::min({shape.p2pChannelsPerPeer, channels.channels(), fit});
  kernels::device::arrangeP2p(posted, l);
  return ncclSuccess;
}

}  // namespace

ncclResult_t launchSendRecv(Plan& plan) {
  ncclComm* comm = plan.comm;
  if (ncclResult_t r = noteKernelFailures(comm); r != ncclSuccess) return r;
  if (plan.transfers.empty()) return ncclSuccess;
  // Held on the heap: up to 32 KiB of kernel parameter.
  auto launch = std::make_unique<kernels::device::P2pLaunchArgs>();
  BRAID_TRY(p2pArgs(comm, plan.transfers, launch.get()));
  size_t bytes = 0;
  for (const Transfer& t : plan.transfers) bytes += t.bytes;
  // As the host path's (executor.cc): point-to-point has no collective number, since the ranks
  // of a communicator need not all take part, and one flight-recorder entry per batch.
  const int64_t entry =
      comm->recorder.begin(0, "Send/Recv", bytes, "p2p kernel", OpState::kLaunched);
  BRAID_INFO(kSubsysP2p,
             "SendRecv: %zu transfer(s) %zu bytes comm %p [nranks=%d] stream %p kernel %d "
             "block(s)%s",
             plan.transfers.size(), bytes, static_cast<void*>(comm), comm->nranks(), plan.stream,
             launch->blocks(), plan.capturing ? " (captured)" : "");
  DeviceChannels& channels = comm->device.channels;
  DeviceRuntime& rt = deviceRuntime();
  const int device = comm->device.cudaDevice;
  ncclResult_t r = ncclSuccess;
  if (!plan.capturing) r = rt.streamWaitChain(device, plan.stream, *channels.chain());
  if (r == ncclSuccess) {
    r = rt.launchSendRecv(device, *launch, channels.status(), channels.channels(), plan.stream);
    if (r != ncclSuccess)
      addContext(r, "rank %d: launching %zu send(s) and receive(s)", comm->rank(),
                 plan.transfers.size());
  }
  if (r == ncclSuccess && !plan.capturing)
    r = rt.recordChain(device, plan.stream, channels.chain());
  comm->recorder.setState(entry, r == ncclSuccess ? OpState::kLaunched : OpState::kFailed);
  if (r != ncclSuccess) {
    comm->health.setError(r, lastError());
    comm->recorder.dumpOnFirstFailure(lastError());
  }
  return r;
}

ncclResult_t launchKernel(Plan& plan) {
  if (plan.kind == Plan::Kind::kSendRecv) return launchSendRecv(plan);
  Plan* one = &plan;
  return launchKernels(&one, 1);
}

}  // namespace braid
