// algorithm_race: the tuner's allreduce choice against every forced algorithm, side by side in
// one run. Separate invocations per algorithm (all_reduce_perf with NCCL_ALGO) differ by more than
// the 10% the tuner is judged by on a small VM: the scheduler places the ranks anew each time.
// Here every variant has communicators of its own (I instances, split from one parent, with
// NCCL_ALGO set while each is made; "auto" has none), all in the same processes on the same
// buffers, and the variants take turns (round r on instance r % I): per size, R rounds, each round
// every variant in a shuffled order (the same on every rank), each turn a few warm-up calls and
// then as many timed calls as fill 10 ms for the fastest variant (one at least; the same number for
// every variant). A turn's time is the slowest rank's mean per call; a variant's time is the median
// of its R turns.
//
//   braidrun -n 4 build/bench/algorithm_race -b 8 -e 256M -f 2 -r 11
//   NCCL_SHM_DISABLE=1 braidrun -n 3 build/bench/algorithm_race -a Ring,Tree,Direct
//
// Output, on rank 0, one line per size and variant (tools/tuner-sweep reads it):
//   <bytes> <variant> <algorithm that ran> <median us> <every turn's us, comma-separated>
// A forced algorithm that does not apply at a size (LowLatency beyond one mailbox entry) is
// skipped there. Each variant's result is checked once per size against the exact sum (small
// integers in float32); a wrong element ends the run with status 7, as nccl-tests' #wrong does.
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "fatal.h"
#include "launch_env.h"
#include "nccl.h"
#include "perf_options.h"

namespace braid::bench {
namespace {

struct Options {
  std::size_t minBytes = 8;
  std::size_t maxBytes = 256u << 20;
  std::size_t factor = 2;
  int rounds = 11;
  int instances = 3;
  std::vector<std::string> algorithms = {
      "Ring", "Tree", "Direct", "TwoShot", "Rabenseifner", "RecursiveDoubling", "LowLatency"};
};

struct Variant {
  std::string name;               // "auto" or the forced algorithm
  std::vector<ncclComm_t> comms;  // its instances; round r uses comms[r % instances]
};

// Calls per turn: as many as the fastest variant fills kTurnUs with (one call at least), so that
// its turn spans several scheduler slices; a tenth of that to warm up (one at least, none for
// calls longer than a turn).
constexpr double kTurnUs = 10000;
constexpr int kMaxCallsPerTurn = 2000;

struct TurnShape {
  int warmup = 1;
  int timed = 1;
};

TurnShape turnShape(double usPerCall) {
  TurnShape s;
  s.timed = static_cast<int>(
      std::clamp(kTurnUs / std::max(usPerCall, 0.01), 1.0, static_cast<double>(kMaxCallsPerTurn)));
  // A call longer than a turn has nothing to warm: its buffers do not fit any cache.
  s.warmup = std::max(usPerCall < kTurnUs ? 1 : 0, s.timed / 10);
  return s;
}

// nccl-tests' size syntax (perf_options.h); a malformed size is -1, refused below as too small.
std::size_t sizeOption(const char* text) {
  const double bytes = parseSize(text);
  return bytes < 0 ? 0 : static_cast<std::size_t>(bytes);
}

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> out;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

[[noreturn]] void usage(const char* program, int status) {
  std::printf(
      "usage: braidrun -n N %s [-b minbytes] [-e maxbytes] [-f factor] [-r rounds] [-i instances] "
      "[-a Ring,Tree,...]\n"
      "  -b/-e  smallest and largest message (K, M, G suffixes; default 8 and 256M)\n"
      "  -f     size multiplier (default 2)\n"
      "  -r     rounds per size: each round runs every variant once, in a shuffled order "
      "(default 11)\n"
      "  -i     communicators per variant, used in turn by the rounds (default 3)\n"
      "  -a     forced algorithms raced against the tuner's choice (default "
      "Ring,Tree,Direct,TwoShot,Rabenseifner,RecursiveDoubling,LowLatency; Ring+Direct is the "
      "list\n"
      "Ring,Direct)\n",
      program);
  exitNow(status);
}

Options parseOptions(int argc, char** argv) {
  Options o;
  int c;
  while ((c = getopt(argc, argv, "b:e:f:r:i:a:h")) != -1) {
    switch (c) {
      case 'b':
        o.minBytes = sizeOption(optarg);
        break;
      case 'e':
        o.maxBytes = sizeOption(optarg);
        break;
      case 'f':
        o.factor = static_cast<std::size_t>(std::atoi(optarg));
        break;
      case 'r':
        o.rounds = std::atoi(optarg);
        break;
      case 'i':
        o.instances = std::atoi(optarg);
        break;
      case 'a':
        o.algorithms = splitList(optarg);
        break;
      case 'h':
        usage(argv[0], kTestSuccess);
      default:
        usage(argv[0], kTestInvalidUsage);
    }
  }
  if (o.factor < 2 || o.rounds < 1 || o.instances < 1 || o.minBytes < 4 ||
      o.maxBytes < o.minBytes) {
    std::fprintf(stderr, "%s: need -f >= 2, -r >= 1, -i >= 1 and 4 <= -b <= -e\n", argv[0]);
    exitNow(kTestInvalidUsage);
  }
  return o;
}

// The slowest rank's value of each entry (times), or whether any rank failed (codes).
void maxOverRanks(ncclComm_t parent, int rank, double* values, std::size_t count) {
  PERF_NCCL_CHECK(ncclAllReduce(values, values, count, ncclFloat64, ncclMax, parent, nullptr), rank,
                  parent);
}

// A variant's NCCL_ALGO: "Ring+Direct" stands for the list "Ring,Direct" (-a splits at commas).
std::string algoSpec(std::string name) {
  std::replace(name.begin(), name.end(), '+', ',');
  return name;
}

// Page-aligned, as nccl-tests' buffers (and any framework's large tensors): a std::vector's
// 16-byte alignment made the 2-rank ring 2x slower at 128 KiB than all_reduce_perf measured it.
float* allocatePages(std::size_t count) {
  void* p = nullptr;
  const std::size_t bytes = (std::max<std::size_t>(count, 1) * sizeof(float) + 4095) / 4096 * 4096;
  if (posix_memalign(&p, 4096, bytes) != 0) {
    std::printf("algorithm_race: cannot allocate %zu bytes\n", bytes);
    exitNow(kTestInternalError);
  }
  return static_cast<float*>(p);
}

// Inputs whose float32 sum over any rank count here is exact: small integers.
float inputValue(std::size_t i, int rank) {
  return static_cast<float>((i * 7 + static_cast<std::size_t>(rank) * 3) % 64);
}

class Race {
 public:
  Race(const Options& o, ncclComm_t parent, int rank, int nranks)
      : o_(o), parent_(parent), rank_(rank), nranks_(nranks) {
    const std::size_t count = o.maxBytes / sizeof(float);
    send_.reset(allocatePages(count));
    recv_.reset(allocatePages(count));
    for (std::size_t i = 0; i < count; ++i) send_[i] = inputValue(i, rank);
    std::fill(recv_.get(), recv_.get() + count, 0.0f);  // first touch, as the harness's buffers
  }

  // Instances, made in blocks of one per variant, each block in its own shuffled order: two
  // communicators running the same algorithm on TCP at 3 ranks differed by up to 1.4x on the
  // 2-core VM, the same one in every run, so no variant may always be made in the same place.
  void addVariants(const std::vector<std::string>& names, int instances) {
    for (const std::string& name : names) variants_.push_back({name, {}});
    std::vector<std::size_t> order(names.size());
    for (int i = 0; i < instances; ++i) {
      for (std::size_t v = 0; v < order.size(); ++v) order[v] = v;
      std::mt19937 shuffler(static_cast<unsigned>(i) * 7919u + 1);
      std::shuffle(order.begin(), order.end(), shuffler);  // the same order on every rank
      for (std::size_t v : order) {
        // NCCL_ALGO is read when a communicator is made; a split makes one.
        if (names[v] == "auto")
          unsetenv("NCCL_ALGO");
        else
          setenv("NCCL_ALGO", algoSpec(names[v]).c_str(), 1);
        ncclComm_t comm = nullptr;
        PERF_NCCL_CHECK(ncclCommSplit(parent_, 0, rank_, &comm, nullptr), rank_, parent_);
        unsetenv("NCCL_ALGO");
        variants_[v].comms.push_back(comm);
      }
    }
  }

  void runSize(std::size_t bytes) {
    const std::size_t count = bytes / sizeof(float);
    const std::size_t nv = variants_.size();
    // Which variants apply at this size: a forced algorithm that cannot run the call fails
    // alike on every rank, before any communication.
    std::vector<double> failed(nv, 0.0);
    for (std::size_t v = 0; v < nv; ++v)
      failed[v] = call(variants_[v].comms[0], count) == ncclSuccess ? 0.0 : 1.0;
    maxOverRanks(parent_, rank_, failed.data(), nv);
    std::vector<double> wrong(nv, 0.0);
    for (std::size_t v = 0; v < nv; ++v)
      if (failed[v] == 0.0)
        for (ncclComm_t comm : variants_[v].comms) wrong[v] += checkedCall(comm, count);
    maxOverRanks(parent_, rank_, wrong.data(), nv);
    for (std::size_t v = 0; v < nv; ++v) {
      if (wrong[v] > 0) {
        if (rank_ == 0)
          std::printf("# %zu bytes, %s: %.0f wrong elements\n", bytes, variants_[v].name.c_str(),
                      wrong[v]);
        exitNow(kTestNumResults);
      }
    }

    // Each variant's turn shape, from a probe of three calls (the slowest rank's time, so that
    // every rank makes the same number of calls).
    std::vector<double> probe(nv, 0.0);
    for (std::size_t v = 0; v < nv; ++v) {
      if (failed[v] != 0.0) continue;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 3; ++i) mustCall(variants_[v].comms[0], count);
      probe[v] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count() /
                 3;
    }
    maxOverRanks(parent_, rank_, probe.data(), nv);
    // One shape for every variant, from the fastest: a turn's first call absorbs the ranks'
    // skew after the barrier, and with fewer calls a slow variant would pay more of it per call.
    double fastest = 1e300;
    for (std::size_t v = 0; v < nv; ++v)
      if (failed[v] == 0.0) fastest = std::min(fastest, probe[v]);
    const TurnShape shape = turnShape(fastest);
    std::vector<double> times(nv * static_cast<std::size_t>(o_.rounds), -1.0);
    std::mt19937 shuffler(static_cast<unsigned>(bytes * 2654435761u) ^ 0x5eed);
    std::vector<std::size_t> order(nv);
    for (int round = 0; round < o_.rounds; ++round) {
      for (std::size_t v = 0; v < nv; ++v) order[v] = v;
      std::shuffle(order.begin(), order.end(), shuffler);  // same seed, same order on every rank
      for (std::size_t v : order) {
        if (failed[v] != 0.0) continue;
        ncclComm_t comm =
            variants_[v].comms[static_cast<std::size_t>(round) % variants_[v].comms.size()];
        for (int i = 0; i < shape.warmup; ++i) mustCall(comm, count);
        // The same barrier before every turn: each variant's own would run its own algorithm
        // (a forced Ring's a ring, auto's Direct), and the ranks leave a one-shot barrier with
        // another skew than a chained one. At 4 MiB on TCP, one or two calls a turn, that made
        // auto's turns 1.2-3x its forced twin's.
        PERF_NCCL_CHECK(braidBarrier(parent_), rank_, parent_);
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < shape.timed; ++i) mustCall(comm, count);
        std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
        times[v * static_cast<std::size_t>(o_.rounds) + static_cast<std::size_t>(round)] =
            spent.count() / shape.timed;
      }
    }
    maxOverRanks(parent_, rank_, times.data(), times.size());
    if (rank_ == 0) report(bytes, failed, times);
  }

 private:
  ncclResult_t call(ncclComm_t comm, std::size_t count) {
    return ncclAllReduce(send_.get(), recv_.get(), count, ncclFloat32, ncclSum, comm, nullptr);
  }

  void mustCall(ncclComm_t comm, std::size_t count) {
    PERF_NCCL_CHECK(call(comm, count), rank_, comm);
  }

  // Elements of one poisoned, checked call that differ from the exact sum.
  double checkedCall(ncclComm_t comm, std::size_t count) {
    std::fill(recv_.get(), recv_.get() + count, std::nanf(""));
    mustCall(comm, count);
    double wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < nranks_; ++r) expected += inputValue(i, r);
      if (!(recv_[i] == expected)) wrong++;
    }
    return wrong;
  }

  void report(std::size_t bytes, const std::vector<double>& failed,
              const std::vector<double>& times) {
    for (std::size_t v = 0; v < variants_.size(); ++v) {
      if (failed[v] != 0.0) continue;
      std::vector<double> turns(times.begin() + static_cast<std::ptrdiff_t>(v * o_.rounds),
                                times.begin() + static_cast<std::ptrdiff_t>((v + 1) * o_.rounds));
      std::vector<double> sorted = turns;
      std::sort(sorted.begin(), sorted.end());
      const std::size_t n = sorted.size();
      double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
      char ran[64] = "?";
      braidCommLastAlgorithm(variants_[v].comms[0], ran, sizeof(ran));
      std::string every;
      for (double t : turns) every += (every.empty() ? "" : ",") + std::to_string(t);
      std::printf("%zu %s %s %.2f %s\n", bytes, variants_[v].name.c_str(), ran, median,
                  every.c_str());
    }
    std::fflush(stdout);
  }

 public:
  void destroy() {
    for (Variant& v : variants_)
      for (ncclComm_t comm : v.comms) PERF_NCCL_CHECK(ncclCommDestroy(comm), rank_, comm);
    variants_.clear();
  }

 private:
  const Options& o_;
  ncclComm_t parent_;
  int rank_, nranks_;
  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], FreeDeleter> send_, recv_;
  std::vector<Variant> variants_;
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  using namespace braid::bench;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  LaunchInfo launch;
  std::string error;
  if (!detectLaunch(&argc, &argv, &launch, &error)) {
    std::fprintf(stderr, "algorithm_race: %s\n", error.c_str());
    return kTestInvalidUsage;
  }
  setFatalLaunchMode(launch.mode);
  Options o = parseOptions(argc, argv);
  if (launch.mode == LaunchMode::kSingleProcess) {
    std::fprintf(stderr, "algorithm_race: start it with braidrun or mpirun (one rank a process)\n");
    return kTestInvalidUsage;
  }
  const int rank = launch.proc, nranks = launch.nProcs;
  ncclUniqueId id;
  if (launch.mode != LaunchMode::kMpi || rank == 0)
    PERF_NCCL_CHECK(ncclGetUniqueId(&id), rank, nullptr);
  if (launch.mode == LaunchMode::kMpi) mpiBroadcastBytes(&id, sizeof(id), 0);
  unsetenv("NCCL_ALGO");  // the parent carries the run's own bookkeeping, with the tuner's choice
  ncclComm_t parent = nullptr;
  PERF_NCCL_CHECK(ncclCommInitRank(&parent, nranks, id, rank), rank, nullptr);

  Race race(o, parent, rank, nranks);
  std::vector<std::string> names = {"auto"};
  names.insert(names.end(), o.algorithms.begin(), o.algorithms.end());
  race.addVariants(names, o.instances);
  if (rank == 0) {
    std::printf(
        "# algorithm_race: %d ranks, %d rounds per size, %d instances per variant, "
        "sizes %zu..%zu x%zu\n",
        nranks, o.rounds, o.instances, o.minBytes, o.maxBytes, o.factor);
    std::printf("# bytes variant ran median_us turns_us\n");
  }
  for (std::size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor)
    race.runSize(bytes / sizeof(float) * sizeof(float));
  race.destroy();
  PERF_NCCL_CHECK(ncclCommDestroy(parent), rank, parent);
  finishLaunch(launch);
  return kTestSuccess;
}
