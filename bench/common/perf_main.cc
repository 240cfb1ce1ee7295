// perfMain: the process-level part of every *_perf program (nccl-tests' main/run): options,
// launch mode, communicators, buffers, threads, and the footer.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"
#include "fatal.h"
#include "perf_harness.h"

extern char** environ;

namespace braid::bench {
namespace {

// Resident and peak memory of this process, in bytes (for -M).
std::int64_t processMemory(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::atoll(line.c_str() + std::strlen(field)) * 1024;
  }
  return 0;
}

struct MemorySamples {
  std::int64_t start = 0, afterInit = 0, afterBuffers = 0;
};

// nccl-tests keeps the three buffers in GPU memory; here send and receive buffers of every rank
// on this host share its RAM. Leave room for the rest of the system, as nccl-tests does.
std::size_t limitMaxBytes(const PerfOptions& o, const LaunchInfo& launch) {
  const std::size_t GiB = std::size_t{1} << 30;
  std::size_t physical = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                         static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t reserve = std::min((physical + 16 * GiB - 1) / (16 * GiB) * GiB, 4 * GiB) + GiB;
  if (physical <= reserve) return o.maxBytes;
  std::size_t buffersOnHost =
      static_cast<std::size_t>(launch.localProcs) * o.nThreads * o.nGpus * 2;
  return std::min(o.maxBytes, (physical - reserve) / buffersOnHost);
}

ncclConfig_t commConfig(const PerfOptions& o) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (o.ctaPolicy >= 0) config.CTAPolicy = o.ctaPolicy;
  return config;
}

void initRanks(ncclComm_t* comms, int count, int firstRank, int nranks, const ncclUniqueId& id,
               const PerfOptions& o) {
  ncclConfig_t config = commConfig(o);
  PERF_NCCL_CHECK(ncclGroupStart(), firstRank, nullptr);
  for (int i = 0; i < count; ++i) {
    PERF_NCCL_CHECK(ncclCommInitRankConfig(comms + i, nranks, id, firstRank + i, &config),
                    firstRank + i, nullptr);
  }
  PERF_NCCL_CHECK(ncclGroupEnd(), firstRank, nullptr);
}

// -R asks for ncclMemAlloc memory (as nccl-tests does), which peers on this host can map.
char* allocateHost(std::size_t bytes, bool shared) {
  void* memory = nullptr;
  std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
  if (shared ? ncclMemAlloc(&memory, rounded) != ncclSuccess
             : posix_memalign(&memory, 4096, rounded) != 0) {
    std::printf("Test failure: cannot allocate %zu bytes of host memory\n", rounded);
    exitNow(kTestInternalError);
  }
  std::memset(memory, 0, rounded);  // first touch by the thread that uses it
  return static_cast<char*>(memory);
}

void freeHost(char* memory, bool shared) {
  if (shared)
    ncclMemFree(memory);
  else
    std::free(memory);
}

struct Process {
  const PerfOptions& options;
  const LaunchInfo& launch;
  PerfRun& run;
  ncclUniqueId id;
  int libraryVersion = 0;
  MemorySamples memory;
  std::string maxBytesNote;
  std::string registrationNote;  // written by global rank 0's thread only
};

struct Registration {
  ncclComm_t comm;
  void* handle;
  bool window;
};

// -R 1: ncclCommRegister; -R 2: ncclCommWindowRegister (collective, one rank per thread).
void registerBuffers(Process& p, ThreadState& state, std::vector<Registration>* handles) {
  if (!p.options.localRegister) return;
  const bool window = p.options.localRegister == 2;
  for (std::size_t i = 0; i < state.comms.size(); ++i) {
    for (char* buffer : {state.sendBases[i], state.recvBases[i]}) {
      void* handle = nullptr;
      ncclResult_t result =
          window ? ncclCommWindowRegister(state.comms[i], buffer, state.bufferBytes,
                                          reinterpret_cast<ncclWindow_t*>(&handle),
                                          NCCL_WIN_COLL_SYMMETRIC)
                 : ncclCommRegister(state.comms[i], buffer, state.bufferBytes, &handle);
      if (result != ncclSuccess) {
        if (state.isMain(p.run) && p.registrationNote.empty()) {
          p.registrationNote = std::string("buffer registration (-R) failed: ") +
                               ncclGetErrorString(result) + "; running unregistered";
        }
        continue;
      }
      handles->push_back({state.comms[i], handle, window});
    }
  }
}

void threadMain(Process& p, ThreadState& state) {
  PerfRun& run = p.run;
  const PerfOptions& o = p.options;
  int ncomms = o.nGpus;
  if (o.parallelInit) {
    initRanks(state.comms.data(), ncomms, state.firstRank, run.nranks, p.id, o);
    run.group.barrier(state.view());
    if (state.thread == 0) p.memory.afterInit = processMemory("VmRSS:");
  }
  // Each thread allocates and touches its own ranks' buffers.
  for (int i = 0; i < ncomms; ++i) {
    state.sendBases.push_back(allocateHost(state.bufferBytes + 8 * o.unalign, o.localRegister));
    state.recvBases.push_back(allocateHost(state.bufferBytes + 8 * o.unalign, o.localRegister));
  }
  std::vector<Registration> handles;
  registerBuffers(p, state, &handles);
  run.group.barrier(state.view());
  if (state.thread == 0) p.memory.afterBuffers = processMemory("VmRSS:");

  std::string processLines;
  if (state.thread == 0) {
    int localRanks = o.nThreads * o.nGpus;
    for (int r = 0; r < localRanks; ++r) {
      processLines += Report::deviceLine(p.launch.proc * localRanks + r, 0,
                                         static_cast<int>(getpid()), p.launch.hostname);
    }
  }
  std::string deviceLines = run.group.gatherText(state.view(), processLines);
  if (state.isMain(run)) {
    run.report.writeHeader(p.libraryVersion, deviceLines);
    if (!p.maxBytesNote.empty()) run.report.writeNote(p.maxBytesNote);
    if (!p.registrationNote.empty()) run.report.writeNote(p.registrationNote);
    run.report.writeTableHeader();
  }

  runThreadTests(run, state);

  std::int64_t errors = state.errors;
  run.group.allreduce(state.view(), &errors, 1, Combine::kSum);
  state.errors = static_cast<int>(errors);
  for (const Registration& r : handles) {
    if (r.window)
      ncclCommWindowDeregister(r.comm, static_cast<ncclWindow_t>(r.handle));
    else
      ncclCommDeregister(r.comm, r.handle);
  }
  if (o.parallelInit) {
    for (ncclComm_t comm : state.comms)
      PERF_NCCL_CHECK(ncclCommDestroy(comm), state.firstRank, comm);
  }
  for (int i = 0; i < ncomms; ++i) {
    freeHost(state.sendBases[i], o.localRegister);
    freeHost(state.recvBases[i], o.localRegister);
  }
}

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

int perfMain(int argc, char** argv, const CollectiveTest& test) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // every line as it is ready, like nccl-tests
  const char* programName = baseName(argv[0]);
  PerfOptions options;
  int parsed = parsePerfOptions(argc, argv, programName, &options);
  if (parsed >= 0) return parsed;

  LaunchInfo launch;
  std::string error;
  if (!detectLaunch(&argc, &argv, &launch, &error)) {
    std::fprintf(stderr, "%s: %s\n", programName, error.c_str());
    return kTestInvalidUsage;
  }
  setFatalLaunchMode(launch.mode);
  const int localRanks = options.nThreads * options.nGpus;
  const int nranks = launch.nProcs * localRanks;
  const int firstLocalRank = launch.proc * localRanks;

  RankGroup group(launch, options.nThreads);
  Report report(options, programName, launch.proc == 0);
  Watchdog watchdog(options.timeoutSeconds, options.nThreads, launch.hostname);
  PerfRun run{options, test, launch, group, report, watchdog, nranks, options.maxBytes};
  Process process{options, launch, run, {}, 0, {}, {}, {}};
  PERF_NCCL_CHECK(ncclGetVersion(&process.libraryVersion), firstLocalRank, nullptr);
  report.openJson(argc, argv, environ, process.libraryVersion);

  run.maxBytes = limitMaxBytes(options, launch);
  if (run.maxBytes < options.maxBytes) {
    process.maxBytesNote =
        "Reducing maxBytes to " + std::to_string(run.maxBytes) + " due to memory limitation";
  }
  options.maxBytes = run.maxBytes;
  options.minBytes = std::min(options.minBytes, run.maxBytes);

  // The unique id: made by process 0 and broadcast under MPI; under braidrun every process
  // calls ncclGetUniqueId and Braid derives the same id from MASTER_ADDR/MASTER_PORT.
  process.memory.start = processMemory("VmRSS:");
  bool initAll =
      launch.mode == LaunchMode::kSingleProcess && !options.parallelInit && options.ctaPolicy < 0;
  if (!initAll) {
    if (launch.mode != LaunchMode::kMpi || launch.proc == 0) {
      PERF_NCCL_CHECK(ncclGetUniqueId(&process.id), firstLocalRank, nullptr);
    }
    if (launch.mode == LaunchMode::kMpi) mpiBroadcastBytes(&process.id, sizeof(process.id), 0);
  }
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(localRanks), nullptr);
  if (initAll) {
    PERF_NCCL_CHECK(ncclCommInitAll(comms.data(), localRanks, nullptr), 0, nullptr);
  } else if (!options.parallelInit) {
    initRanks(comms.data(), localRanks, firstLocalRank, nranks, process.id, options);
  }
  if (!options.parallelInit) process.memory.afterInit = processMemory("VmRSS:");

  std::vector<ThreadState> states(static_cast<std::size_t>(options.nThreads));
  std::size_t sendCount = 0, recvCount = 0, paramCount = 0, sendOffset = 0, recvOffset = 0;
  test.getCollByteCount(&sendCount, &recvCount, &paramCount, &sendOffset, &recvOffset, run.maxBytes,
                        1, nranks);
  for (int t = 0; t < options.nThreads; ++t) {
    ThreadState& state = states[t];
    state.thread = t;
    state.firstRank = firstLocalRank + t * options.nGpus;
    state.comms.assign(comms.begin() + t * options.nGpus, comms.begin() + (t + 1) * options.nGpus);
    state.bufferBytes = std::max({run.maxBytes, sendCount, recvCount});
  }
  std::vector<std::thread> threads;
  for (int t = 1; t < options.nThreads; ++t) {
    threads.emplace_back([&process, &states, t] { threadMain(process, states[t]); });
  }
  threadMain(process, states[0]);
  for (std::thread& thread : threads) thread.join();

  double busBwSum = 0;
  int busBwCount = 0;
  for (const ThreadState& state : states) {
    busBwSum += state.busBwSum;
    busBwCount += state.busBwCount;
  }
  int errors = states[0].errors;  // already summed over all threads and processes
  double avgBusBw = busBwCount ? busBwSum / busBwCount : 0;
  const char* minBw = std::getenv("NCCL_TESTS_MIN_BW");
  double checkBw = minBw ? std::atof(minBw) : -1;
  report.writeFooter(errors, avgBusBw, checkBw);
  if (options.memoryReport) {
    std::int64_t peak = processMemory("VmHWM:");
    report.writeMemoryReport(process.memory.afterInit - process.memory.start,
                             process.memory.afterBuffers - process.memory.afterInit,
                             std::max<std::int64_t>(0, peak - process.memory.afterBuffers));
  }
  if (!options.parallelInit) {
    for (int i = 0; i < localRanks; ++i) {
      PERF_NCCL_CHECK(ncclCommDestroy(comms[i]), firstLocalRank + i, comms[i]);
    }
  }
  report.finish(ncclGetLastError(nullptr));
  finishLaunch(launch);
  if (errors || (checkBw >= 0 && avgBusBw < checkBw * 0.9)) {
    std::printf(" .. %s pid %d: Test failure %s:%d\n", launch.hostname.c_str(),
                static_cast<int>(getpid()), baseName(__FILE__), __LINE__);
    return kTestNumResults;
  }
  return kTestSuccess;
}

}  // namespace braid::bench
