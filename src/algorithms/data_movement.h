// Where an operation's copies and reductions run: on the CPU (kernels/reduce.h) for host
// buffers, on the communicator's GPU for a call on device buffers (CollArgs::device), whose
// buffers and FIFO slots are device memory (the P2P transport's device slots). The device
// versions complete before they return, so a slot is published only once its data is there.
#pragma once

#include "algorithms/algorithm.h"
#include "device/device_runtime.h"
#include "kernels/reduce.h"

namespace braid {

inline ncclResult_t reduceData(const Context& ctx, const CollArgs& args, void* out0, void* out1,
                               const void* acc, const void* local, size_t count, unsigned flags) {
  if (!args.device) {
    kernels::reduce(args.op, out0, out1, acc, local, count, flags);
    return ncclSuccess;
  }
  return deviceRuntime().reduce(ctx.cudaDevice, args.op, out0, out1, acc, local, count, flags);
}

inline ncclResult_t copyData(const Context& ctx, bool device, void* out0, void* out1,
                             const void* src, size_t bytes) {
  if (!device) {
    kernels::copy(out0, out1, src, bytes);
    return ncclSuccess;
  }
  return deviceRuntime().copy(ctx.cudaDevice, out0, out1, src, bytes);
}

}  // namespace braid
