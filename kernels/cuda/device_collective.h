// The collective kernel: one launch runs a whole collective of one rank on the GPU, a block per
// channel, each block running the schedule of kernels/device/collective.h (the code the
// emulation runs on CPU threads). No host thread takes part: the blocks of the ranks hand
// chunks to each other through the FIFOs in peer-visible device memory.
#pragma once

#include "kernels/device/fifo.h"

namespace braid::kernels::device {
struct P2pLaunchArgs;
}

namespace braid::kernels::cuda {

/// The most threads per block of the collective kernel (a launch asks for fewer for small calls:
/// LaunchArgs::threads). The schedules' state takes about 250 registers per thread, so one block
/// of 256 fills a multiprocessor's registers: more threads would spill, and the channels, one
/// block per multiprocessor, carry the scaling.
inline constexpr int kCollectiveThreads = 256;

/// Launches `args` on `stream` (a cudaStream_t): args.comm.channels blocks. `status` is device
/// (or mapped host) memory of args.comm.channels ints that receive each channel's
/// device::ChannelStatus. Returns 0 or the cudaError_t of the launch; a reason the arguments
/// cannot run is returned through `why` (then nothing is launched and the result is -1).
int launchCollective(const device::CollectiveArgs& args, int* status, void* stream,
                     const char** why);
/// The same for the collectives of a launch, run one after another by every block
/// (launch.channels() blocks).
int launchCollectives(const device::LaunchArgs& launch, int* status, void* stream,
                      const char** why);
/// A point-to-point launch (kernels/device/p2p.h): launch.blocks() blocks; a block that did not
/// end well writes its device::ChannelStatus to status[block % statusWords].
int launchSendRecv(const device::P2pLaunchArgs& launch, int* status, int statusWords, void* stream,
                   const char** why);

/// Blocks of the collective and point-to-point kernels that `device` runs at once: the fewest
/// any of their instantiations keeps resident per multiprocessor (registers, shared memory,
/// threads), times the multiprocessors. Blocks of ranks that wait for each other must all be
/// resident, or a resident one spins for one that never starts. Returns 0 or a cudaError_t.
int residentKernelBlocks(int device, int* blocks);
/// The point-to-point kernel's share of it (device_p2p.cu): its resident blocks per
/// multiprocessor on the current device.
int p2pResidentBlocksPerMultiprocessor(int* blocks);

}  // namespace braid::kernels::cuda
