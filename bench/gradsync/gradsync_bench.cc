// Does overlapping gradient communication with the backward pass pay? Step time of a wide MLP
// (tens of MiB of gradients, a real forward/backward per layer: examples/mlp) trained
// data-parallel three ways:
//   no sync         each rank steps alone (compute only; the floor),
//   after backward  one ncclAllReduce of all gradients once backward has finished,
//   overlapped      GradSync (gradients as bucket views, so no copies): buckets all-reduced on
//                   a host stream as backward produces them,
//                   with DDP's bucket sizes (25 MiB, first 1 MiB) and with small buckets (2 MiB:
//                   about one per layer here, so only the first layer's gradients wait for the
//                   end of backward).
// Modes are interleaved round by round (the machine's noise hits all alike); a step's time is
// the slowest rank's, and the table shows medians over every measured step.
//
//   build/bin/braidrun -n 4 build/bench/gradsync_bench [--batch 16] [--steps 8] [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "braid/gradsync.h"
#include "launch_env.h"
#include "mlp.h"

namespace {

using braid::examples::Mlp;
using Clock = std::chrono::steady_clock;

enum Mode { kNoSync, kAfterBackward, kOverlapped, kOverlappedSmall, kModes };
const char* const kModeNames[kModes] = {"no sync", "one allreduce after backward",
                                        "GradSync, default buckets", "GradSync, small buckets"};

struct Options {
  std::vector<int> widths = {1024, 1536, 1536, 1536, 1536, 512};
  int batch = 16;
  int steps = 8;
  int rounds = 3;
  int warmup = 2;
  double bucketMiB = 25;
  double firstBucketMiB = 1;
  double smallBucketMiB = 2;
};

[[noreturn]] void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "gradsync_bench rank %d: %s\n", rank, what.c_str());
  std::exit(1);
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "gradsync_bench: %s\nusage: gradsync_bench [--widths 1024,1536,1536,1536,1536,512]"
               " [--batch 16] [--steps 8] [--rounds 3] [--warmup 2] [--bucket-mb 25]"
               " [--first-bucket-mb 1] [--small-bucket-mb 2]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("missing value after " + arg);
    const std::string value = argv[++i];
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = end != value.c_str() && *end == '\0' && number > 0 && number < 1e9;
    if (arg == "--widths") {
      o.widths.clear();
      for (size_t at = 0; at <= value.size();) {
        const size_t comma = std::min(value.find(',', at), value.size());
        const int width = std::atoi(value.substr(at, comma - at).c_str());
        if (width < 1) usage("--widths " + value + ": positive integers separated by commas");
        o.widths.push_back(width);
        at = comma + 1;
      }
      if (o.widths.size() < 2) usage("--widths needs at least inputs and classes");
    } else if (!numeric) {
      usage(arg + " " + value + ": expected a positive number");
    } else if (arg == "--batch") {
      o.batch = static_cast<int>(number);
    } else if (arg == "--steps") {
      o.steps = static_cast<int>(number);
    } else if (arg == "--rounds") {
      o.rounds = static_cast<int>(number);
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(number);
    } else if (arg == "--bucket-mb") {
      o.bucketMiB = number;
    } else if (arg == "--first-bucket-mb") {
      o.firstBucketMiB = number;
    } else if (arg == "--small-bucket-mb") {
      o.smallBucketMiB = number;
    } else {
      usage("unknown option " + arg);
    }
  }
  return o;
}

// The context a step time needs: overlap can only pay when the communication has a core of its
// own, which an oversubscribed host does not give it.
std::string hostLoad() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  char text[96];
  std::snprintf(text, sizeof(text), "%u cores, load average %.1f",
                std::thread::hardware_concurrency(), load);
  return text;
}

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Rank {
  int rank = 0;
  int nranks = 1;
  ncclComm_t comm = nullptr;
};

// The slowest rank's value (a step ends for everyone when its slowest rank is done), or the
// average over ranks.
double overRanks(const Rank& r, double value, ncclRedOp_t op) {
  if (ncclAllReduce(&value, &value, 1, ncclFloat64, op, r.comm, nullptr) != ncclSuccess) {
    fail(r.rank, std::string("allreduce of the timings: ") + ncclGetLastError(r.comm));
  }
  return value;
}

Rank join(int* argc, char*** argv) {
  braid::bench::LaunchInfo launch;
  std::string error;
  if (!braid::bench::detectLaunch(argc, argv, &launch, &error)) fail(0, error);
  Rank r{launch.proc, launch.nProcs, nullptr};
  ncclUniqueId id{};
  if (launch.mode != braid::bench::LaunchMode::kMpi || launch.proc == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) fail(r.rank, ncclGetLastError(nullptr));
  }
  if (launch.mode == braid::bench::LaunchMode::kMpi) {
    braid::bench::mpiBroadcastBytes(&id, sizeof(id), 0);
  }
  if (ncclCommInitRank(&r.comm, r.nranks, id, r.rank) != ncclSuccess) {
    fail(r.rank, std::string("ncclCommInitRank: ") + ncclGetLastError(nullptr));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Rank me = join(&argc, &argv);
  const Options options = parse(argc, argv);
  Mlp model(options.widths, 7);
  braid::examples::SgdMomentum optimizer(model, 1e-4f, 0.9f);
  // One flat gradient buffer: "after backward" reduces it in one call.
  std::vector<size_t> offsets;
  size_t total = 0;
  for (int t = 0; t < model.tensors(); ++t) {
    offsets.push_back(total);
    total += model.parameterCount(t);
  }
  std::vector<float> flat(total);
  std::vector<float*> gradients;
  for (int t = 0; t < model.tensors(); ++t) gradients.push_back(flat.data() + offsets[t]);
  const std::vector<const float*> constGradients(gradients.begin(), gradients.end());

  auto makeSync = [&](double bucketMiB, double firstBucketMiB) {
    braid::GradSyncOptions syncOptions;
    syncOptions.bucketCapBytes = static_cast<size_t>(bucketMiB * (1 << 20));
    syncOptions.firstBucketCapBytes = static_cast<size_t>(firstBucketMiB * (1 << 20));
    // Backward writes straight into the buckets (DDP's gradient_as_bucket_view): no copies.
    syncOptions.gradientsAsBucketViews = true;
    auto sync = std::make_unique<braid::GradSync>(me.comm, syncOptions);
    for (int t = 0; t < model.tensors(); ++t) {
      int index = -1;
      if (sync->addGradient({gradients[t], model.parameterCount(t), ncclFloat32},
                            "tensor" + std::to_string(t), &index) != ncclSuccess) {
        fail(me.rank, "addGradient: " + sync->lastError());
      }
    }
    if (sync->finalize() != ncclSuccess) fail(me.rank, "finalize: " + sync->lastError());
    return sync;
  };
  const auto defaultBuckets = makeSync(options.bucketMiB, options.firstBucketMiB);
  const auto smallBuckets = makeSync(options.smallBucketMiB, options.smallBucketMiB);

  // Random dense inputs (every multiply counts), random labels.
  std::mt19937_64 engine(100 + me.rank);
  std::vector<float> samples(static_cast<size_t>(options.batch) * model.inputs());
  for (float& x : samples) x = static_cast<float>(engine() % 2001) / 1000.0f - 1.0f;
  std::vector<int> labels(options.batch);
  for (int& y : labels) y = static_cast<int>(engine() % model.classes());

  // Wall time says what a step costs on this host now; CPU time (every thread of the process,
  // the host stream's included) says how much work the communication added, which decides
  // the wall time once the cores are all busy.
  std::vector<double> stepTimes[kModes], waitTimes[kModes], cpuTimes[kModes];
  auto step = [&](Mode mode, bool measured) {
    if (braidBarrier(me.comm) != ncclSuccess) fail(me.rank, ncclGetLastError(me.comm));
    const auto start = Clock::now();
    const double cpuStart = processCpuSeconds();
    double wait = 0;
    model.forward(samples.data(), labels.data(), options.batch);
    if (mode == kOverlapped || mode == kOverlappedSmall) {
      braid::GradSync& sync = mode == kOverlapped ? *defaultBuckets : *smallBuckets;
      std::vector<float*> views(model.tensors());
      for (int t = 0; t < model.tensors(); ++t) {
        views[t] = static_cast<float*>(sync.gradientData(t));
      }
      model.backward(views, 1.0f / options.batch, [&](int t) {
        if (sync.markReady(t) != ncclSuccess) fail(me.rank, "markReady: " + sync.lastError());
      });
      if (sync.finish() != ncclSuccess) fail(me.rank, "finish: " + sync.lastError());
      wait = sync.lastStep().finishWaitSeconds;
      for (int t = 0; t < model.tensors(); ++t) {
        views[t] = static_cast<float*>(sync.gradientData(t));
      }
      optimizer.step(model, std::vector<const float*>(views.begin(), views.end()));
    } else {
      model.backward(gradients, 1.0f / options.batch, [](int) {});
      if (mode == kAfterBackward) {
        const auto before = Clock::now();
        if (ncclAllReduce(flat.data(), flat.data(), total, ncclFloat32, ncclAvg, me.comm,
                          nullptr) != ncclSuccess) {
          fail(me.rank, std::string("allreduce: ") + ncclGetLastError(me.comm));
        }
        wait = std::chrono::duration<double>(Clock::now() - before).count();
      }
      optimizer.step(model, constGradients);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpu = processCpuSeconds() - cpuStart;
    const double slowest = overRanks(me, seconds, ncclMax);
    const double slowestWait = overRanks(me, wait, ncclMax);
    const double meanCpu = overRanks(me, cpu, ncclAvg);
    if (measured) {
      stepTimes[mode].push_back(slowest);
      waitTimes[mode].push_back(slowestWait);
      cpuTimes[mode].push_back(meanCpu);
    }
  };

  const double gradientMiB = total * sizeof(float) / double(1 << 20);
  if (me.rank == 0) {
    std::string widths;
    for (int w : options.widths) widths += (widths.empty() ? "" : "-") + std::to_string(w);
    std::printf(
        "gradsync_bench: %d rank(s), MLP %s: %.2fM parameters, %.1f MiB of fp32 "
        "gradients, batch %d per rank; host: %s\n",
        me.nranks, widths.c_str(), total / 1e6, gradientMiB, options.batch, hostLoad().c_str());
    std::printf(
        "default buckets %.3g MiB (first %.3g MiB): %zu allreduces per step; small "
        "buckets %.3g MiB: %zu; %d warm-up + %d rounds x %d steps per mode, interleaved\n",
        options.bucketMiB, options.firstBucketMiB, defaultBuckets->bucketLayout().size(),
        options.smallBucketMiB, smallBuckets->bucketLayout().size(), options.warmup, options.rounds,
        options.steps);
    std::fflush(stdout);
  }
  for (int mode = 0; mode < kModes; ++mode) {
    for (int s = 0; s < options.warmup; ++s) step(static_cast<Mode>(mode), false);
  }
  for (int round = 0; round < options.rounds; ++round) {
    for (int mode = 0; mode < kModes; ++mode) {
      for (int s = 0; s < options.steps; ++s) step(static_cast<Mode>(mode), true);
    }
  }

  if (me.rank == 0) {
    const double floor = median(stepTimes[kNoSync]);
    std::printf(
        "\n| ranks | mode | step ms (median) | comm wait ms | vs no sync | vs after backward "
        "| CPU ms per rank-step |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (int mode = 0; mode < kModes; ++mode) {
      const double t = median(stepTimes[mode]);
      std::printf("| %d | %s | %.1f | %.1f | %.2fx | %.2fx | %.1f |\n", me.nranks, kModeNames[mode],
                  t * 1e3, median(waitTimes[mode]) * 1e3, t / floor,
                  t / median(stepTimes[kAfterBackward]), median(cpuTimes[mode]) * 1e3);
    }
    // What communication adds to a step beyond compute, and how much of that overlap removes.
    const double exposedAfter = median(stepTimes[kAfterBackward]) - floor;
    std::printf("\ncommunication added to a step: %.1f ms with one allreduce after backward",
                exposedAfter * 1e3);
    for (Mode mode : {kOverlapped, kOverlappedSmall}) {
      const double exposed = median(stepTimes[mode]) - floor;
      std::printf("; %.1f ms with %s", exposed * 1e3, kModeNames[mode]);
    }
    std::printf("\n");
  }
  ncclCommDestroy(me.comm);
  return 0;
}
