// The device runtime: the few CUDA services the device path needs, behind one interface, so the
// staging and stream logic (exec/device_queue.h) runs the same over CUDA and over a fake device
// that the tests drive on a machine without a GPU.
//
// Streams and pointers travel as void* (a cudaStream_t, a device address); results are
// ncclResult_t with the last-error text set on failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/device/fifo.h"
#include "kernels/device/p2p.h"
#include "kernels/reduce.h"
#include "nccl.h"

namespace braid {

/// Where a buffer lives.
enum class MemoryKind {
  kHost,     ///< pageable or pinned host memory: the CPU path reads it directly
  kDevice,   ///< memory of one device (cudaMalloc)
  kManaged,  ///< managed memory: readable by the host, staged like host memory
  kPinned,   ///< page-locked (cudaHostAlloc or registered) host memory: the host path reads it
};

/// Device memory exported to another process (cudaIpcMemHandle_t's 64 bytes).
struct IpcHandle {
  unsigned char bytes[64];
};

struct MemoryPlace {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;  ///< the owning device for kDevice
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  /// "cuda", "none" or a fake's name (for messages).
  virtual const char* name() const = 0;
  /// Devices present; 0 without a GPU or driver (then every pointer is host memory).
  virtual int deviceCount() = 0;
  /// The calling thread's current device.
  virtual ncclResult_t currentDevice(int* device) = 0;
  /// The memory kind of `p` (cudaPointerGetAttributes).
  virtual MemoryPlace place(const void* p) = 0;
  /// The device a stream belongs to; the NULL stream belongs to the current device.
  virtual ncclResult_t streamDevice(void* stream, int* device) = 0;
  /// Whether the stream is being captured into a CUDA graph.
  virtual ncclResult_t streamCapturing(void* stream, bool* capturing) = 0;
  /// Enqueues a copy of `bytes` between any two kinds of memory on `stream`.
  virtual ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) = 0;
  /// Enqueues host work in the stream's order and returns at once: `work` runs on a host thread
  /// once the stream's earlier work is done, and the stream's later work waits until it has
  /// returned. Works of one stream run one at a time, in order.
  virtual ncclResult_t hostWorkAsync(void* stream, std::function<void()> work) = 0;
  /// Page-locked host memory for staging (so copies overlap); nullptr on failure.
  virtual void* allocStaging(size_t bytes) = 0;
  /// Frees a staging block once the work queued on `stream` (the stream it served) is done,
  /// without waiting for any other stream (a peer's kernel may be waiting on one).
  virtual void freeStaging(void* p, void* stream) = 0;
  /// Why the devices cannot be used (a driver older than the runtime), or ncclSuccess: checked
  /// when a communicator is created, so a job fails there with the reason instead of treating
  /// device memory as host memory later.
  virtual ncclResult_t checkUsable() { return ncclSuccess; }

  // What the P2P transport (transports/p2p) and the collectives that move device memory
  // themselves need. The defaults are a runtime without peer memory: no identity, so no rank
  // ever picks the P2P transport.

  /// A name of `device` that every process of the host gives alike (a hash of its UUID); 0 when
  /// unknown.
  virtual uint64_t deviceIdentity(int /*device*/) { return 0; }
  /// Whether kernels on `device` can read and write memory of `peer` (a device reaches itself).
  virtual bool canAccessPeer(int device, int peer) { return device == peer; }
  /// Lets kernels on `device` reach `peer`'s memory; succeeds when already enabled.
  virtual ncclResult_t enablePeerAccess(int device, int peer);
  /// `bytes` of memory of `device` (cudaMalloc), and its release.
  virtual ncclResult_t allocDevice(int device, size_t bytes, void** p);
  virtual void freeDevice(void* p) { (void)p; }
  /// A handle another process of the host opens to map memory from allocDevice.
  virtual ncclResult_t exportMemory(void* p, IpcHandle* handle);
  /// Maps exported memory into this process for use from `device`; closeMemory unmaps it.
  virtual ncclResult_t openMemory(int device, const IpcHandle& handle, void** p);
  virtual void closeMemory(void* p) { (void)p; }
  /// kernels::reduce and kernels::copy on memory of (or reachable from) `device`, run on a
  /// stream of the runtime's own and complete when they return.
  virtual ncclResult_t reduce(int device, const kernels::ReduceOp& op, void* out0, void* out1,
                              const void* acc, const void* local, size_t count, unsigned flags);
  virtual ncclResult_t copy(int device, void* out0, void* out1, const void* src, size_t bytes);
  /// Copies `bytes` of device memory to host memory, complete when it returns (a premulsum
  /// scalar that lives on the device).
  virtual ncclResult_t read(int device, void* host, const void* src, size_t bytes);

  // What the collective kernels (kernels/device, kernels/cuda/device_collective.h) need: their
  // FIFOs live in device memory the host fills once, their abort and status words in host
  // memory both sides reach, and a launch joins the user's stream like any kernel.

  /// Whether processes' contexts on `device` are shared through MPS, so that kernels of several
  /// processes run side by side (without it they take turns, and kernels waiting for each other
  /// would crawl from one time slice to the next).
  virtual bool mpsEnabled(int /*device*/) { return false; }
  /// Copies `bytes` of host memory to memory of `device`; complete when it returns.
  virtual ncclResult_t upload(int device, void* dst, const void* src, size_t bytes);
  /// Host memory that kernels on any device read and write (page-locked and mapped), zeroed;
  /// nullptr on failure.
  virtual void* allocMapped(size_t bytes);
  virtual void freeMapped(void* p);
  /// Blocks of the collective and point-to-point kernels `device` keeps resident at once (the
  /// fewest of any instantiation per multiprocessor, times the multiprocessors); 0 where the
  /// runtime knows no such limit (no kernels, or a fake device whose blocks are threads).
  virtual ncclResult_t residentKernelBlocks(int device, int* blocks);
  /// The hardware queues this process's streams reach `device` through: CUDA's
  /// CUDA_DEVICE_MAX_CONNECTIONS (8 when unset, 1 to 32), read when CUDA starts. More streams
  /// than queues share them, and a kernel queued behind another on one queue waits for it to
  /// finish. 0 where the runtime has no such limit (no kernels, or a fake device).
  virtual int hardwareQueues(int /*device*/) { return 0; }
  /// Enqueues one rank's launch on `stream` (of `device`): launch.channels() blocks, each running
  /// the launch's collectives in order and writing its ChannelStatus to status[channel] (mapped
  /// memory) when it ends.
  virtual ncclResult_t launchCollective(int device, const kernels::device::LaunchArgs& launch,
                                        int* status, void* stream);
  /// Enqueues one rank's point-to-point launch (kernels/device/p2p.h) on `stream`:
  /// launch.blocks() blocks; one that does not end well writes its ChannelStatus to
  /// status[block % statusWords].
  virtual ncclResult_t launchSendRecv(int device, const kernels::device::P2pLaunchArgs& launch,
                                      int* status, int statusWords, void* stream);
  /// A communicator's launches run one after another in the order they were issued, whatever
  /// streams they name (as NCCL's): each launch's stream first waits for `chain` (the previous
  /// launch; nothing when null), and the launch is then recorded into `*chain` (created on
  /// first use).
  virtual ncclResult_t streamWaitChain(int device, void* stream, void* chain);
  virtual ncclResult_t recordChain(int device, void* stream, void** chain);
  /// Releases what recordChain created.
  virtual void destroyChain(void* chain) { (void)chain; }
  /// Waits on the host until the launch last recorded in `chain` has completed.
  virtual ncclResult_t waitChain(void* chain);
};

/// The process's runtime: CUDA's when the library was built with CUDA, otherwise one with no
/// devices. Tests may install another (a fake) with setDeviceRuntime; nullptr restores it.
DeviceRuntime& deviceRuntime();
void setDeviceRuntime(DeviceRuntime* runtime);

/// A runtime without devices: every pointer is host memory.
DeviceRuntime& noDeviceRuntime();
/// CUDA's runtime (defined only in CUDA builds).
DeviceRuntime* cudaDeviceRuntime();

}  // namespace braid
