#include "report.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace braid::bench {
namespace {

constexpr const char* kCompatibleVersion = "2.19.6";  // the nccl-tests release these mirror
constexpr int kJsonVersion = 3;

std::string now() {
  char text[64];
  std::time_t t = std::time(nullptr);
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return text;
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "CPU";
}

int usableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
}

// Secrets such as BRAID_COMM_SECRET must not end up in a results file.
std::string redactedEnvEntry(const char* entry) {
  std::string text(entry);
  std::string name = text.substr(0, text.find('='));
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  for (const char* word : {"SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "KEY"}) {
    if (upper.find(word) != std::string::npos) return name + "=<redacted>";
  }
  return text;
}

std::FILE* openExclusive(const std::string& path, std::string* opened) {
  // Like nccl-tests: never overwrite; try path, path.0, path.1, ...
  std::string attempt = path;
  for (int n = 0; n < 1000; ++n) {
    int fd = ::open(attempt.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *opened = attempt;
      return ::fdopen(fd, "w");
    }
    if (errno != EEXIST) return nullptr;
    attempt = path + "." + std::to_string(n);
  }
  return nullptr;
}

bool hasJsonExtension(const std::string& path) {
  std::size_t dot = path.rfind('.');
  std::size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && slash > dot)) return false;
  return strcasecmp(path.c_str() + dot + 1, "json") == 0;
}

}  // namespace

std::string formatFixedWidth(double value, int width) {
  char text[64];
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(text, sizeof(text), format, width, value) <= width) return text;
  }
  std::snprintf(text, sizeof(text), width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return text;
}

IterationStats computeIterationStats(const double* seconds, int count) {
  IterationStats stats;
  if (count <= 0) return stats;
  std::vector<double> sorted(seconds, seconds + count);
  std::sort(sorted.begin(), sorted.end());
  auto percentile = [&](int p) { return sorted[std::min(count - 1, (count * p + 99) / 100 - 1)]; };
  stats.min = sorted.front();
  stats.max = sorted.back();
  stats.p50 = sorted[count / 2];
  stats.p95 = percentile(95);
  stats.p99 = percentile(99);
  double sum = 0;
  for (double s : sorted) sum += s;
  stats.avg = sum / count;
  double variance = 0;
  for (double s : sorted) variance += (s - stats.avg) * (s - stats.avg);
  stats.stdev = std::sqrt(variance / count);
  return stats;
}

Report::Report(const PerfOptions& options, const char* programName, bool enabled)
    : options_(options), programName_(programName), enabled_(enabled) {}

Report::~Report() {
  if (jsonFile_) std::fclose(jsonFile_);
}

void Report::print(const char* format, ...) {
  if (!enabled_) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

void Report::openJson(int argc, char** argv, char** envp, int libraryVersion) {
  if (!enabled_ || options_.outputFile.empty()) return;
  if (!hasJsonExtension(options_.outputFile)) {
    print("# skipping output file %s: only .json output is supported\n",
          options_.outputFile.c_str());
    return;
  }
  std::string opened;
  jsonFile_ = openExclusive(options_.outputFile, &opened);
  if (!jsonFile_) {
    print("# skipping json output; %s not accessible\n", options_.outputFile.c_str());
    return;
  }
  print("# Writing JSON output to %s\n", opened.c_str());
  json_ = std::make_unique<JsonWriter>(jsonFile_);
  json_->beginObject();
  json_->key("version");
  json_->number(std::int64_t{kJsonVersion});
  json_->key("start_time");
  json_->string(now());
  json_->key("args");
  json_->beginArray();
  for (int i = 0; i < argc; ++i) json_->string(argv[i]);
  json_->endArray();
  json_->key("env");
  json_->beginArray();
  for (char** entry = envp; entry && *entry; ++entry) json_->string(redactedEnvEntry(*entry));
  json_->endArray();
  json_->key("nccl_version");
  json_->number(std::int64_t{libraryVersion});
}

std::string Report::deviceLine(int rank, int group, int pid, const std::string& hostname) {
  static const std::string model = cpuModel();
  char line[1024];
  std::snprintf(line, sizeof(line),
                "#  Rank %2d Group %2d Pid %6d on %10s device host [%d cpus] %s\n", rank, group,
                pid, hostname.c_str(), usableCpus(), model.c_str());
  return line;
}

void Report::writeHeader(int libraryVersion, const std::string& deviceLines) {
  const PerfOptions& o = options_;
  print("# Braid perf tests (nccl-tests %s compatible) nccl-headers=%d nccl-library=%d\n",
        kCompatibleVersion, NCCL_VERSION_CODE, libraryVersion);
  print("# Collective test starting: %s\n", programName_);
  print(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
      o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check,
      o.cudaGraphLaunches, o.unalign);
  if (o.blocking == 1)
    print("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (o.blocking == 2)
    print("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (o.blocking == 3) {
    print(
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes "
        "barrier \n");
  }
  if (o.perIterTiming) {
    print("# Per-Iteration Report: wall-clock timing; i_* uses max over process rows");
    if (o.perIterSkip) print("; summary skips first %d iterations", o.perIterSkip);
    print(" \n");
  }
  if (o.parallelInit)
    print("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
  for (const std::string& note : o.notes) print("# %s\n", note.c_str());
  print("#\n# Using devices\n%s", deviceLines.c_str());
  if (!json_) return;
  json_->key("config");
  json_->beginObject();
  json_->key("nthreads");
  json_->number(std::int64_t{o.nThreads});
  json_->key("ngpus");
  json_->number(std::int64_t{o.nGpus});
  json_->key("minimum_bytes");
  json_->number(static_cast<std::int64_t>(o.minBytes));
  json_->key("maximum_bytes");
  json_->number(static_cast<std::int64_t>(o.maxBytes));
  json_->key(o.stepFactor > 1 ? "step_factor" : "step_bytes");
  json_->number(static_cast<std::int64_t>(o.stepFactor > 1 ? o.stepFactor : o.stepBytes));
  json_->key("warmup_iters");
  json_->number(std::int64_t{o.warmupIters});
  json_->key("iterations");
  json_->number(std::int64_t{o.iters});
  json_->key("aggregated_iterations");
  json_->number(std::int64_t{o.aggIters});
  json_->key("validation");
  json_->number(std::int64_t{o.check});
  json_->key("graph");
  json_->number(std::int64_t{o.cudaGraphLaunches});
  json_->key("blocking_collectives");
  json_->boolean(o.blocking != 0);
  json_->key("per_iter_timing");
  json_->boolean(o.perIterTiming != 0);
  json_->key("per_iter_skip");
  json_->number(std::int64_t{o.perIterSkip});
  json_->key("parallel_init");
  json_->boolean(o.parallelInit != 0);
  json_->key("devices");
  json_->beginArray();
  std::istringstream lines(deviceLines);
  std::string line;
  while (std::getline(lines, line)) {
    int rank = 0, group = 0, pid = 0, cpus = 0;
    char host[1024] = {}, info[1024] = {};
    if (std::sscanf(line.c_str(),
                    "#  Rank %d Group %d Pid %d on %1023s device host [%d cpus] %1023[^\n]", &rank,
                    &group, &pid, host, &cpus, info) < 5) {
      continue;
    }
    json_->beginObject();
    json_->key("rank");
    json_->number(std::int64_t{rank});
    json_->key("group");
    json_->number(std::int64_t{group});
    json_->key("pid");
    json_->number(std::int64_t{pid});
    json_->key("hostname");
    json_->string(host);
    json_->key("device");
    json_->string("host");
    json_->key("device_hex");
    json_->string(std::to_string(cpus) + " cpus");
    json_->key("device_info");
    json_->string(info);
    json_->endObject();
  }
  json_->endArray();
  json_->endObject();
}

void Report::writeNote(const std::string& text) {
  print("# %s\n", text.c_str());
}

void Report::writeTableHeader() {
  const char* ts = options_.reportTimestamps ? "timestamp" : "";
  const int tsPad = options_.reportTimestamps ? 19 : 0;
  const char* tsFormat = options_.reportTimestamps ? "%Y-%m-%d %H:%M:%S" : "";
  const char* time = options_.reportCpuTime ? "cputime" : "time";
  print("#\n");
  if (options_.perIterTiming) {
    print(
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                  "
        "              in-place (+ per-iteration)\n",
        "", "", "", "", "");
    print(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  "
        "%6s  %7s  %7s  %7s  %7s %*s\n",
        "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", "i_min",
        "i_max", "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99",
        "i_cv%", tsPad, ts);
    print(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  "
        "%6s  %7s  %7s  %7s  %7s %*s\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
        "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", tsPad, tsFormat);
  } else {
    print(
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place       "
        "   \n",
        "", "", "", "", "");
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size",
          "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw",
          "busbw", "#wrong", tsPad, ts);
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
          tsPad, tsFormat);
  }
  if (options_.reportAlgorithm) print("# (the last column: the algorithm each size ran with)\n");
  if (json_) {
    json_->key("results");
    json_->beginArray();
  }
}

void Report::writeLinePreamble(std::size_t bytes, std::size_t count, const char* typeName,
                               const char* opName, int root) {
  print("%12zu  %12zu  %8s  %6s  %6i", bytes, count, typeName, opName, root);
  if (!json_) return;
  json_->beginObject();
  json_->key("size");
  json_->number(static_cast<std::int64_t>(bytes));
  json_->key("count");
  json_->number(static_cast<std::int64_t>(count));
  json_->key("type");
  json_->string(typeName);
  json_->key("redop");
  json_->string(opName);
  json_->key("root");
  json_->number(std::int64_t{root});
}

void Report::writeTimestamp() {
  print("%21s", now().c_str());
}

void Report::writeLineBody(double timeUsec, double algBw, double busBw, bool reportErrors,
                           std::int64_t wrong, bool outOfPlace) {
  std::string time = formatFixedWidth(timeUsec, 7);
  std::string alg = formatFixedWidth(algBw, 6);
  std::string bus = formatFixedWidth(busBw, 6);
  if (reportErrors) {
    print("  %7s  %6s  %6s  %6g", time.c_str(), alg.c_str(), bus.c_str(),
          static_cast<double>(wrong));
  } else {
    print("  %7s  %6s  %6s    N/A", time.c_str(), alg.c_str(), bus.c_str());
  }
  if (!outOfPlace && options_.reportTimestamps && !options_.perIterTiming) writeTimestamp();
  if (!json_) return;
  json_->key(outOfPlace ? "out_of_place" : "in_place");
  json_->beginObject();
  json_->key(options_.reportCpuTime ? "cpu_time" : "time");
  json_->number(timeUsec);
  json_->key("alg_bw");
  json_->number(algBw);
  json_->key("bus_bw");
  json_->number(busBw);
  json_->key("nwrong");
  if (reportErrors) {
    json_->number(static_cast<double>(wrong));
  } else {
    json_->null();
  }
  json_->endObject();
}

void Report::writeLineNotRun(bool outOfPlace) {
  print("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
  if (options_.perIterTiming) print("  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
  if (!json_) return;
  json_->key(outOfPlace ? "out_of_place" : "in_place");
  json_->null();
}

void Report::writePerIteration(const IterationStats& stats, const std::vector<double>& iterSeconds,
                               const std::vector<double>& perProcessRows, int nProcs,
                               bool outOfPlace) {
  double cv = stats.avg > 0 ? stats.stdev / stats.avg * 100.0 : 0.0;
  print("  %7s  %7s  %7s  %7s", formatFixedWidth(stats.min * 1e6, 7).c_str(),
        formatFixedWidth(stats.max * 1e6, 7).c_str(), formatFixedWidth(stats.p99 * 1e6, 7).c_str(),
        formatFixedWidth(cv, 7).c_str());
  if (!outOfPlace && options_.reportTimestamps) writeTimestamp();
  if (!json_) return;
  json_->key(outOfPlace ? "out_of_place_per_iter" : "in_place_per_iter");
  json_->beginObject();
  json_->key("skipped_iterations");
  json_->number(std::int64_t{options_.perIterSkip});
  json_->key("min_us");
  json_->number(stats.min * 1e6);
  json_->key("max_us");
  json_->number(stats.max * 1e6);
  json_->key("avg_us");
  json_->number(stats.avg * 1e6);
  json_->key("p50_us");
  json_->number(stats.p50 * 1e6);
  json_->key("p95_us");
  json_->number(stats.p95 * 1e6);
  json_->key("p99_us");
  json_->number(stats.p99 * 1e6);
  json_->key("stdev_us");
  json_->number(stats.stdev * 1e6);
  json_->key("cv_pct");
  json_->number(cv);
  json_->key("times_us");
  json_->beginArray();
  for (double s : iterSeconds) json_->number(s * 1e6);
  json_->endArray();
  if (nProcs > 1) {
    std::size_t iters = iterSeconds.size();
    json_->key("per_process_max_times_us");
    json_->beginArray();
    for (int p = 0; p < nProcs; ++p) {
      json_->beginArray();
      for (std::size_t i = 0; i < iters; ++i) json_->number(perProcessRows[p * iters + i] * 1e6);
      json_->endArray();
    }
    json_->endArray();
  }
  json_->endObject();
}

void Report::writeLineEnd(int iterations, const char* algorithm) {
  if (options_.reportAlgorithm) print("  %-12s", algorithm ? algorithm : "?");
  print("\n");
  if (!json_) return;
  if (options_.reportAlgorithm) {
    json_->key("algorithm");
    json_->string(algorithm ? algorithm : "");
  }
  json_->key("actual_iterations");
  json_->number(std::int64_t{iterations});
  json_->key("experiment_name");
  json_->string("");
  json_->endObject();
}

void Report::writeFooter(int errors, double avgBusBw, double minBusBwCheck) {
  if (json_) json_->endArray();
  const char* bwVerdict =
      minBusBwCheck < 0 ? "" : (avgBusBw < minBusBwCheck * 0.9 ? "FAILED" : "OK");
  print("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  print("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, bwVerdict);
  print("#\n");
  print("# Collective test concluded: %s\n", programName_);
  if (!json_) return;
  json_->key("out_of_bounds");
  json_->beginObject();
  json_->key("count");
  json_->number(std::int64_t{errors});
  json_->key("okay");
  json_->boolean(errors == 0);
  json_->endObject();
  json_->key("average_bus_bandwidth");
  json_->beginObject();
  json_->key("bandwidth");
  json_->number(avgBusBw);
  json_->key("okay");
  if (minBusBwCheck < 0) {
    json_->string("unchecked");
  } else {
    json_->boolean(avgBusBw >= minBusBwCheck * 0.9);
  }
  json_->endObject();
}

void Report::writeMemoryReport(std::int64_t initBytes, std::int64_t bufferBytes,
                               std::int64_t collectiveBytes) {
  auto human = [](std::int64_t bytes) {
    double amount = static_cast<double>(bytes);
    const char* unit = " B";
    for (const char* next : {" KB", " MB", " GB"}) {
      if (std::fabs(amount) < 1024.0) break;
      amount /= 1024.0;
      unit = next;
    }
    char text[64];
    int precision = std::fabs(amount) < 10 ? 2 : std::fabs(amount) < 100 ? 1 : 0;
    std::snprintf(text, sizeof(text), "%.*f%s", precision, amount, unit);
    return std::string(text);
  };
  std::string line = "Initialization " + human(initBytes) + " | User-Allocated " +
                     human(bufferBytes) + " | Collective " + human(collectiveBytes) + " | Total  " +
                     human(initBytes + bufferBytes + collectiveBytes);
  print("# %-20s : %s\n", "Host memory usage", line.c_str());
}

void Report::finish(const char* lastError) {
  print("#\n");
  bool hasError = lastError && *lastError;
  if (hasError) {
    print("# error: %s\n", lastError);
  } else {
    print("\n");
  }
  std::fflush(stdout);
  if (!json_) return;
  json_->key("errors");
  json_->beginArray();
  if (hasError) json_->string(lastError);
  json_->endArray();
  json_->key("end_time");
  json_->string(now());
  json_->finish();
  std::fclose(jsonFile_);
  jsonFile_ = nullptr;
  json_.reset();
}

}  // namespace braid::bench
