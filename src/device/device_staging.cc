// Device buffers over the host transports: placement checks and stream-ordered staging
// (device_staging.h).
#include "device/device_staging.h"

#include <algorithm>
#include <cstdint>

#include "core/comm.h"
#include "core/host_stream.h"
#include "device/device_runtime.h"
#include "util/status.h"
#include "util/wait.h"

namespace braid {
namespace {

constexpr size_t kStagingAlign = 256;

size_t alignUp(size_t n) {
  return (n + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
}

/// Overlapping buffers (in place: sendbuff == recvbuff, or one inside the other) share one
/// staged region, so the host collective sees the same aliasing the caller made.
struct Region {
  uintptr_t begin;
  uintptr_t end;
  bool input;     ///< some buffer in it is read: copy the whole region in
  size_t offset;  ///< in the staging block
};

/// Waits until every earlier ticket of the communicator has run, or fails on abort or timeout.
/// The wait has its own policy: the communicator's belongs to the thread that calls it.
ncclResult_t waitTurn(ncclComm* comm, uint32_t ticket) {
  WaitPolicy policy;
  policy.spinIters = 200;
  policy.timeoutS = comm->policy.timeoutS;
  policy.abort = &comm->abortFlag;
  const WakeWord word{&comm->orderDone, &comm->orderSleepers};
  return waitUntil(
      policy, word, [&] { return comm->orderDone.load(std::memory_order_acquire) == ticket; },
      nullptr, "the communicator's earlier device-buffer calls");
}

void finishTurn(ncclComm* comm, uint32_t ticket) {
  comm->orderDone.store(ticket + 1, std::memory_order_seq_cst);
  notify(WakeWord{&comm->orderDone, &comm->orderSleepers});
}

}  // namespace

ncclResult_t runInTurn(ncclComm* comm, const std::function<ncclResult_t()>& task) {
  // Only the thread calling the communicator issues tickets, so nothing can be issued between
  // this check and the task.
  if (comm->orderIssued.load(std::memory_order_relaxed) ==
      comm->orderDone.load(std::memory_order_acquire))
    return task();
  const uint32_t ticket = comm->orderIssued.fetch_add(1, std::memory_order_relaxed);
  BRAID_TRY(waitTurn(comm, ticket));
  const ncclResult_t r = task();
  finishTurn(comm, ticket);
  return r;
}

int initDevice() {
  DeviceRuntime& rt = deviceRuntime();
  if (rt.deviceCount() == 0) return -1;
  int device = -1;
  if (rt.currentDevice(&device) != ncclSuccess) return -1;
  return device;
}

ncclResult_t placeCall(ncclComm* comm, const std::vector<CallBuffer>& buffers, void* stream,
                       bool* onDevice) {
  *onDevice = false;
  DeviceRuntime& rt = deviceRuntime();
  if (rt.deviceCount() == 0) return ncclSuccess;  // no GPU: all memory is host memory
  const CallBuffer* firstHost = nullptr;
  const CallBuffer* firstDevice = nullptr;
  int deviceOfFirst = -1;
  for (const CallBuffer& b : buffers) {
    if (b.bytes == 0 || b.ptr == nullptr) continue;
    const MemoryPlace place = rt.place(b.ptr);
    if (place.kind == MemoryKind::kDevice) {
      if (place.device != comm->cudaDevice)
        return fail(ncclInvalidArgument,
                    "%s=%p is memory of device %d, but the communicator's device is %d", b.name,
                    b.ptr, place.device, comm->cudaDevice);
      if (!firstDevice) {
        firstDevice = &b;
        deviceOfFirst = place.device;
      }
    } else if (place.kind == MemoryKind::kHost && !firstHost) {
      firstHost = &b;
    }
  }
  if (!firstDevice) return ncclSuccess;
  if (firstHost)
    return fail(
        ncclInvalidArgument,
        "%s=%p is host memory but %s=%p is memory of device %d: one call's buffers must all be "
        "host memory or all device memory",
        firstHost->name, firstHost->ptr, firstDevice->name, firstDevice->ptr, deviceOfFirst);
  if (hostStreamFromHandle(stream))
    return fail(ncclInvalidArgument,
                "stream=%p is a Braid host stream, which takes host buffers only, but %s=%p is "
                "memory of device %d",
                stream, firstDevice->name, firstDevice->ptr, deviceOfFirst);
  int streamDevice = -1;
  BRAID_TRY(rt.streamDevice(stream, &streamDevice));
  if (streamDevice != comm->cudaDevice)
    return fail(ncclInvalidArgument,
                "stream=%p belongs to device %d, but the communicator's device is %d", stream,
                streamDevice, comm->cudaDevice);
  bool capturing = false;
  BRAID_TRY(rt.streamCapturing(stream, &capturing));
  if (capturing)
    return fail(ncclInvalidUsage,
                "stream=%p is capturing a CUDA graph: Braid runs a call on device buffers as a "
                "host step in stream order, which a graph cannot replay; call outside capture",
                stream);
  *onDevice = true;
  return ncclSuccess;
}

ncclResult_t runStaged(ncclComm* comm, void* stream, const std::vector<CallBuffer>& buffers,
                       StagedWork work) {
  DeviceRuntime& rt = deviceRuntime();
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
  char* block = comm->staging.acquire(stream, total);
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

  BRAID_TRY(runDirect(comm, stream, [staged, work = std::move(work)] { return work(staged); }));
  // Only what the call writes goes back: bytes of a region no output covers keep the device's
  // own values, even where the region was staged whole.
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].output && staged[i])
      BRAID_TRY(
          rt.copyAsync(const_cast<void*>(buffers[i].ptr), staged[i], buffers[i].bytes, stream));
  return ncclSuccess;
}

ncclResult_t runDirect(ncclComm* comm, void* stream, std::function<ncclResult_t()> work) {
  DeviceRuntime& rt = deviceRuntime();
  comm->streamWork.fetch_add(1);
  const uint32_t ticket = comm->orderIssued.fetch_add(1, std::memory_order_relaxed);
  ncclResult_t queued = rt.hostWorkAsync(stream, [comm, ticket, work = std::move(work)] {
    // Steps on other streams issued earlier run first. A step whose wait failed leaves the
    // order where it is: the communicator has failed, and later steps fail at their deadline.
    ncclResult_t r = waitTurn(comm, ticket);
    if (r == ncclSuccess) {
      r = work();
      finishTurn(comm, ticket);
    }
    if (r != ncclSuccess) commSetError(comm, r, lastError());
    comm->streamWork.fetch_sub(1);
  });
  if (queued != ncclSuccess) {
    // The ticket can never run: the communicator is unusable from here on.
    commSetError(comm, queued, lastError());
    comm->streamWork.fetch_sub(1);
    return queued;
  }
  return ncclSuccess;
}

StagingPool::~StagingPool() {
  for (const Block& b : current_) b.runtime->freeStaging(b.data);
  for (const Block& b : retired_) b.runtime->freeStaging(b.data);
}

char* StagingPool::acquire(void* stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  for (Block& b : current_) {
    if (b.stream != stream) continue;
    if (b.bytes >= bytes) return b.data;
    retired_.push_back(b);
    b = current_.back();
    current_.pop_back();
    break;
  }
  DeviceRuntime& rt = deviceRuntime();
  const size_t size = std::max(alignUp(bytes), size_t{1} << 20);
  auto* data = static_cast<char*>(rt.allocStaging(size));
  if (!data) return nullptr;
  current_.push_back({stream, data, size, &rt});
  return data;
}

}  // namespace braid
