#include "exec/device_queue.h"

#include <algorithm>
#include <cstdint>

#include "comm/communicator.h"
#include "core/host_stream.h"
#include "device/device_runtime.h"
#include "exec/device_launch.h"
#include "exec/executor.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr size_t kStagingAlign = 256;

size_t alignUp(size_t n) {
  return (n + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
}

/// Overlapping buffers (in place: sendbuff == recvbuff, or one inside the other) share one
/// staged region, so the staged plan sees the same aliasing the caller made.
struct Region {
  uintptr_t begin;
  uintptr_t end;
  bool input;     ///< some buffer in it is read: copy the whole region in
  size_t offset;  ///< in the staging block
};

// Enqueues `plan` on `stream` as one host step in the communicator's issue order.
ncclResult_t enqueueStep(ncclComm* comm, void* stream, Plan plan) {
  DeviceRuntime& rt = deviceRuntime();
  comm->streamWork.fetch_add(1);
  const uint32_t ticket = comm->device.order.issue();
  ncclResult_t queued = rt.hostWorkAsync(stream, [comm, ticket, plan = std::move(plan)]() mutable {
    // Steps on other streams issued earlier run first. A step whose wait failed leaves the
    // order where it is: the communicator has failed, and later steps fail at their deadline.
    ncclResult_t r =
        comm->device.order.waitTurn(ticket, comm->team.policy.timeoutS, &comm->health.abortFlag);
    if (r == ncclSuccess) {
      r = execute(plan);
      comm->device.order.finish(ticket);
    }
    if (r != ncclSuccess) comm->health.setError(r, lastError());
    comm->streamWork.fetch_sub(1);
  });
  if (queued != ncclSuccess) {
    // The ticket can never run: the communicator is unusable from here on.
    comm->health.setError(queued, lastError());
    comm->streamWork.fetch_sub(1);
    return queued;
  }
  return ncclSuccess;
}

ncclResult_t enqueueStaged(Plan plan) {
  ncclComm* comm = plan.comm;
  void* stream = plan.stream;
  DeviceRuntime& rt = deviceRuntime();
  const std::vector<CallBuffer> buffers = plan.buffers();
  // Merge overlapping buffers into regions, each staged once.
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].bytes > 0 && buffers[i].ptr) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reinterpret_cast<uintptr_t>(buffers[a].ptr) <
           reinterpret_cast<uintptr_t>(buffers[b].ptr);
  });
  std::vector<Region> regions;
  std::vector<size_t> regionOf(buffers.size(), SIZE_MAX);
  for (size_t i : order) {
    const auto begin = reinterpret_cast<uintptr_t>(buffers[i].ptr);
    const uintptr_t end = begin + buffers[i].bytes;
    if (regions.empty() || begin >= regions.back().end) {
      regions.push_back({begin, end, false, 0});
    } else {
      regions.back().end = std::max(regions.back().end, end);
    }
    regions.back().input |= buffers[i].input;
    regionOf[i] = regions.size() - 1;
  }
  size_t total = 0;
  for (Region& r : regions) {
    r.offset = total;
    total += alignUp(r.end - r.begin);
  }
  char* block = comm->device.staging.acquire(stream, total);
  if (total > 0 && !block)
    return fail(ncclSystemError, "cannot allocate %zu bytes of page-locked staging memory", total);

  std::vector<void*> staged(buffers.size(), nullptr);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (regionOf[i] == SIZE_MAX) continue;
    const Region& r = regions[regionOf[i]];
    staged[i] = block + r.offset + (reinterpret_cast<uintptr_t>(buffers[i].ptr) - r.begin);
  }
  for (const Region& r : regions)
    if (r.input)
      BRAID_TRY(rt.copyAsync(block + r.offset, reinterpret_cast<const void*>(r.begin),
                             r.end - r.begin, stream));
  Plan onHost = plan.withBuffers(staged);
  onHost.target = Target::kHost;
  BRAID_TRY(enqueueStep(comm, stream, std::move(onHost)));
  // Only what the call writes goes back: bytes of a region no output covers keep the device's
  // own values, even where the region was staged whole.
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].output && staged[i])
      BRAID_TRY(
          rt.copyAsync(const_cast<void*>(buffers[i].ptr), staged[i], buffers[i].bytes, stream));
  return ncclSuccess;
}

/// Whether `stream` is the legacy default stream of the communicator's device while another rank
/// of the communicator runs in this process on the same device.
bool sharesDefaultStream(const ncclComm& comm, void* stream) {
  // cudaStreamLegacy is ((cudaStream_t)0x1); NULL is the legacy stream unless the program was
  // built with per-thread default streams, which then name it cudaStreamPerThread.
  if (stream != nullptr && stream != reinterpret_cast<void*>(0x1)) return false;
  const std::vector<PeerInfo>& peers = comm.team.peers;
  const PeerInfo& me = peers[comm.rank()];
  for (const PeerInfo& p : peers)
    if (p.rank != me.rank && p.processHash == me.processHash && p.deviceId == me.deviceId)
      return true;
  return false;
}

}  // namespace

ncclResult_t place(Plan& plan) {
  plan.target = Target::kHost;
  if (plan.kind == Plan::Kind::kManagement) return ncclSuccess;
  DeviceRuntime& rt = deviceRuntime();
  if (rt.deviceCount() == 0) return ncclSuccess;  // no GPU: all memory is host memory
  ncclComm* comm = plan.comm;
  const std::vector<CallBuffer> buffers = plan.buffers();
  const CallBuffer* firstHost = nullptr;
  const CallBuffer* firstDevice = nullptr;
  bool streamOrdered = false;  // some buffer is managed or page-locked
  int deviceOfFirst = -1;
  for (const CallBuffer& b : buffers) {
    if (b.bytes == 0 || b.ptr == nullptr) continue;
    const MemoryPlace where = rt.place(b.ptr);
    if (where.kind == MemoryKind::kDevice) {
      if (where.device != comm->device.cudaDevice)
        return fail(ncclInvalidArgument,
                    "%s=%p is memory of device %d, but the communicator's device is %d", b.name,
                    b.ptr, where.device, comm->device.cudaDevice);
      if (!firstDevice) {
        firstDevice = &b;
        deviceOfFirst = where.device;
      }
    } else if ((where.kind == MemoryKind::kHost || where.kind == MemoryKind::kPinned) &&
               !firstHost) {
      firstHost = &b;
    }
    streamOrdered |= where.kind == MemoryKind::kManaged || where.kind == MemoryKind::kPinned;
  }
  if (!firstDevice) {
    // Managed or page-locked buffers on a CUDA stream: the host path, in the stream's order
    // (after the GPU work queued before it, before the work queued after it), as NCCL's kernels
    // would read them. On the NULL stream the call runs at once, as for any host buffer.
    if (streamOrdered && plan.stream != nullptr && !hostStreamFromHandle(plan.stream) &&
        plan.kind != Plan::Kind::kManagement)
      plan.target = Target::kHostOnStream;
    return ncclSuccess;
  }
  if (firstHost)
    return fail(
        ncclInvalidArgument,
        "%s=%p is host memory but %s=%p is memory of device %d: one call's buffers must all be "
        "host memory or all device memory",
        firstHost->name, firstHost->ptr, firstDevice->name, firstDevice->ptr, deviceOfFirst);
  void* stream = plan.stream;
  if (hostStreamFromHandle(stream))
    return fail(ncclInvalidArgument,
                "stream=%p is a Braid host stream, which takes host buffers only, but %s=%p is "
                "memory of device %d",
                stream, firstDevice->name, firstDevice->ptr, deviceOfFirst);
  int streamDevice = -1;
  BRAID_TRY(rt.streamDevice(stream, &streamDevice));
  if (streamDevice != comm->device.cudaDevice)
    return fail(ncclInvalidArgument,
                "stream=%p belongs to device %d, but the communicator's device is %d", stream,
                streamDevice, comm->device.cudaDevice);
  if (sharesDefaultStream(*comm, stream))
    return fail(ncclInvalidUsage,
                "stream=%p is the default stream of device %d, which another rank of this "
                "communicator in this process uses too: one rank's work would wait on the stream "
                "for the other's, which waits for it. Give each rank a stream of its own",
                stream, comm->device.cudaDevice);
  bool capturing = false;
  BRAID_TRY(rt.streamCapturing(stream, &capturing));
  if (kernelRuns(plan)) {
    plan.target = Target::kDeviceKernel;
    plan.capturing = capturing;
    return ncclSuccess;
  }
  if (capturing)
    return fail(ncclInvalidUsage,
                "stream=%p is capturing a CUDA graph, and this call runs as a host step in "
                "stream order, which a graph cannot replay (%s); call outside capture",
                stream,
                comm->device.channels.ready()
                    ? "a group of more sends and receives than one kernel takes"
                    : "the ranks' GPUs do not all reach each other, so no kernel runs");
  plan.target = comm->team.overP2p ? Target::kDeviceP2p : Target::kDeviceStaged;
  if (plan.target == Target::kDeviceP2p) plan.coll.device = true;
  return ncclSuccess;
}

ncclResult_t enqueueOnDevice(Plan plan) {
  if (plan.target == Target::kDeviceKernel) return launchKernel(plan);
  if (plan.target == Target::kHostOnStream) {
    plan.target = Target::kHost;
    ncclComm* comm = plan.comm;
    void* stream = plan.stream;
    return enqueueStep(comm, stream, std::move(plan));
  }
  if (plan.target == Target::kDeviceStaged) return enqueueStaged(std::move(plan));
  ncclComm* comm = plan.comm;
  void* stream = plan.stream;
  return enqueueStep(comm, stream, std::move(plan));
}

ncclResult_t runInTurn(ncclComm* comm, const std::function<ncclResult_t()>& task) {
  // Only the thread calling the communicator issues tickets, so nothing can be issued between
  // this check and the task.
  IssueOrder& order = comm->device.order;
  if (order.idle()) return task();
  const uint32_t ticket = order.issue();
  BRAID_TRY(order.waitTurn(ticket, comm->team.policy.timeoutS, &comm->health.abortFlag));
  const ncclResult_t r = task();
  order.finish(ticket);
  return r;
}

}  // namespace braid
