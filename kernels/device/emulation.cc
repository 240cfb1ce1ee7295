#include "kernels/device/emulation.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <thread>

#include "kernels/cuda/dispatch.h"
#include "kernels/device/collective.h"

namespace braid::kernels::device {

namespace {

/// Channel `c` of `a` on the calling thread.
int runChannelHere(const CollectiveArgs& a, int c) {
  BlockShared shared{};
  int result = kChannelBadArguments;
  cuda::withDtypeAndOp(a.op.dtype, a.op.op, [&]<int D, class Op>() {
    result = runChannel<D, Op>(a, c, Block{}, &shared);
  });
  return result;
}

struct AlignedFree {
  void operator()(char* p) const { ::operator delete[](p, std::align_val_t{128}); }
};
using AlignedBlock = std::unique_ptr<char[], AlignedFree>;

AlignedBlock alignedZeroed(std::size_t bytes) {
  AlignedBlock b(static_cast<char*>(::operator new[](bytes, std::align_val_t{128})));
  std::memset(b.get(), 0, bytes);
  return b;
}

}  // namespace

int runLaunchOnThreads(const LaunchArgs& launch, int* status) {
  const int channels = launch.channels();
  std::vector<std::thread> threads;
  threads.reserve(channels);
  for (int c = 0; c < channels; ++c) {
    // The host reads the word while later launches run (as a kernel's store to mapped memory).
    threads.emplace_back([&, c] {
      const ReduceOp& op = launch.items[0].op;
      int result = kChannelBadArguments;
      BlockShared shared{};
      cuda::withDtypeAndOp(op.dtype, op.op, [&]<int D, class Op>() {
        result = runLaunch<D, Op>(launch, c, Block{}, &shared);
      });
      std::atomic_ref<int>(status[c]).store(result, std::memory_order_relaxed);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int c = 0; c < channels; ++c)
    if (const int s = std::atomic_ref<int>(status[c]).load(std::memory_order_relaxed);
        s != kChannelOk)
      return s;
  return kChannelOk;
}

int runP2pOnThreads(const P2pLaunchArgs& launch, int* status, int statusWords) {
  const int blocks = launch.blocks();
  std::vector<int> results(blocks, kChannelOk);
  std::vector<std::thread> threads;
  threads.reserve(blocks);
  for (int b = 0; b < blocks; ++b)
    threads.emplace_back([&, b] {
      BlockShared shared{};
      results[b] = runP2pBlock(launch, b, Block{}, &shared);
      if (results[b] != kChannelOk)
        std::atomic_ref<int>(status[b % statusWords]).store(results[b], std::memory_order_relaxed);
    });
  for (std::thread& t : threads) t.join();
  for (const int r : results)
    if (r != kChannelOk) return r;
  return kChannelOk;
}

struct EmulatedWorld::Memory {
  std::vector<AlignedBlock> fifos;  ///< [(to * nranks + from) * channels + channel]
  std::vector<std::vector<DeviceFifo*>> inbox, outbox;  ///< per rank, [channel * n + peer]
  std::vector<std::unique_ptr<char[]>> scratch;         ///< per rank
  std::vector<std::vector<std::uint64_t>> sent;         ///< per rank, [channel * n + peer]
  std::vector<std::vector<std::uint64_t>> report;       ///< per rank, kReportWords a channel
  std::size_t scratchPerChannel = 0;
  int abort = 0;
};

EmulatedWorld::EmulatedWorld(int nranks, int channels, FifoShape shape)
    : nranks_(nranks), channels_(channels), shape_(shape), memory_(std::make_unique<Memory>()) {
  Memory& m = *memory_;
  const std::size_t count = static_cast<std::size_t>(nranks) * nranks * channels;
  for (std::size_t i = 0; i < count; ++i) {
    m.fifos.push_back(alignedZeroed(fifoBytes(shape)));
    *reinterpret_cast<DeviceFifo*>(m.fifos.back().get()) = fifoHeader(shape);
  }
  auto at = [&](int from, int to, int channel) {
    return reinterpret_cast<DeviceFifo*>(
        m.fifos[(static_cast<std::size_t>(to) * nranks + from) * channels + channel].get());
  };
  m.inbox.resize(nranks);
  m.outbox.resize(nranks);
  m.scratchPerChannel = (maxChunkBytes(shape) + 127) / 128 * 128;
  for (int r = 0; r < nranks; ++r) {
    for (int c = 0; c < channels; ++c) {
      for (int p = 0; p < nranks; ++p) {
        m.inbox[r].push_back(at(p, r, c));
        m.outbox[r].push_back(at(r, p, c));
      }
    }
    m.scratch.emplace_back(new char[m.scratchPerChannel * channels]());
    m.sent.emplace_back(static_cast<std::size_t>(channels) * nranks, 0);
    m.report.emplace_back(static_cast<std::size_t>(channels) * kReportWords, 0);
  }
}

EmulatedWorld::~EmulatedWorld() = default;

DeviceComm EmulatedWorld::comm(int rank) const {
  DeviceComm c;
  c.rank = rank;
  c.nranks = nranks_;
  c.channels = channels_;
  c.inbox = memory_->inbox[rank].data();
  c.outbox = memory_->outbox[rank].data();
  c.scratch = memory_->scratch[rank].get();
  c.sent = memory_->sent[rank].data();
  c.scratchBytesPerChannel = memory_->scratchPerChannel;
  c.abort = &memory_->abort;
  c.report = memory_->report[rank].data();
  return c;
}

const DeviceFifo& EmulatedWorld::fifo(int from, int to, int channel) const {
  return *reinterpret_cast<const DeviceFifo*>(
      memory_->fifos[(static_cast<std::size_t>(to) * nranks_ + from) * channels_ + channel].get());
}

std::uint64_t EmulatedWorld::sent(int from, int to, int channel) const {
  return memory_->sent[from][static_cast<std::size_t>(channel) * nranks_ + to];
}

namespace {

/// One block of one rank of a launch, as a CPU thread.
struct BlockJob {
  int rank;
  int block;
  std::function<int()> run;
};

/// Runs every job on a thread of its own; past `deadline` raises `abort`. "" when every job
/// ended normally, else what went wrong, job by job (each named "rank r <unit> b").
std::string runJobs(const std::vector<BlockJob>& jobs, const char* unit, int* abort,
                    std::chrono::milliseconds deadline) {
  std::atomic_ref<int>(*abort).store(0, std::memory_order_relaxed);
  std::vector<int> status(jobs.size(), kChannelOk);
  std::mutex mutex;
  std::condition_variable done;
  std::size_t running = jobs.size();
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      const int result = jobs[i].run();
      std::lock_guard<std::mutex> lock(mutex);
      status[i] = result;
      if (--running == 0) done.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (!done.wait_for(lock, deadline, [&] { return running == 0; }))
      std::atomic_ref<int>(*abort).store(1, std::memory_order_relaxed);
  }
  for (std::thread& t : threads) t.join();
  std::string error;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (status[i] == kChannelOk) continue;
    const char* what = status[i] == kChannelAborted
                           ? " gave up waiting (abort raised at the deadline)"
                       : status[i] == kChannelSizeMismatch ? " met a send of another size"
                       : status[i] == kChannelMismatch
                           ? " gave up waiting for a peer in another call (operation mismatch)"
                           : " could not run these arguments";
    error += (error.empty() ? "" : "; ") + std::string("rank ") + std::to_string(jobs[i].rank) +
             " " + unit + " " + std::to_string(jobs[i].block) + what;
  }
  return error;
}

}  // namespace

std::string EmulatedWorld::launch(const std::vector<CollectiveArgs>& args,
                                  std::chrono::milliseconds deadline) {
  if (static_cast<int>(args.size()) != nranks_) return "one CollectiveArgs per rank is needed";
  for (const CollectiveArgs& a : args) {
    if (const char* why = unsupported(a))
      return std::string("rank ") + std::to_string(a.comm.rank) + ": " + why;
    if (a.comm.channels > channels_) return "more channels than the world has";
    if (a.comm.channels != args[0].comm.channels)
      return "rank " + std::to_string(a.comm.rank) + " runs " + std::to_string(a.comm.channels) +
             " channels, rank 0 " + std::to_string(args[0].comm.channels);
  }
  std::vector<BlockJob> jobs;
  for (int r = 0; r < nranks_; ++r)
    for (int c = 0; c < args[r].comm.channels; ++c)
      jobs.push_back({r, c, [&args, r, c] { return runChannelHere(args[r], c); }});
  return runJobs(jobs, "channel", &memory_->abort, deadline);
}

std::string EmulatedWorld::launchP2p(const std::vector<P2pLaunchArgs>& launches,
                                     std::chrono::milliseconds deadline) {
  if (static_cast<int>(launches.size()) != nranks_) return "one launch per rank is needed";
  for (const P2pLaunchArgs& l : launches) {
    if (const char* why = unsupported(l))
      return std::string("rank ") + std::to_string(l.comm.rank) + ": " + why;
    if (l.comm.channels > channels_) return "more channels than the world has";
  }
  std::vector<BlockJob> jobs;
  for (int r = 0; r < nranks_; ++r)
    for (int b = 0; b < launches[r].blocks(); ++b)
      jobs.push_back({r, b, [&launches, r, b] {
                        BlockShared shared{};
                        return runP2pBlock(launches[r], b, Block{}, &shared);
                      }});
  return runJobs(jobs, "block", &memory_->abort, deadline);
}

}  // namespace braid::kernels::device
