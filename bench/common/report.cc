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

#include "json_report.h"

namespace braid::bench {
namespace {

constexpr const char* kCompatibleVersion = "2.19.6";  // the nccl-tests release these mirror

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

Report::~Report() = default;

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
  std::FILE* file = openExclusive(options_.outputFile, &opened);
  if (!file) {
    print("# skipping json output; %s not accessible\n", options_.outputFile.c_str());
    return;
  }
  print("# Writing JSON output to %s\n", opened.c_str());
  json_ = std::make_unique<JsonReport>(file, options_);
  json_->start(argc, argv, envp, libraryVersion, now());
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
  if (json_) json_->config(deviceLines);
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
}

void Report::writeLinePreamble(std::size_t bytes, std::size_t count, const char* typeName,
                               const char* opName, int root) {
  print("%12zu  %12zu  %8s  %6s  %6i", bytes, count, typeName, opName, root);
  if (json_) json_->beginRow(bytes, count, typeName, opName, root);
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
  if (json_) json_->placement(outOfPlace, timeUsec, algBw, busBw, reportErrors, wrong);
}

void Report::writeLineNotRun(bool outOfPlace) {
  print("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
  if (options_.perIterTiming) print("  %7s  %7s  %7s  %7s", "N/A", "N/A", "N/A", "N/A");
  if (json_) json_->placementNotRun(outOfPlace);
}

void Report::writePerIteration(const IterationStats& stats, const std::vector<double>& iterSeconds,
                               const std::vector<double>& perProcessRows, int nProcs,
                               bool outOfPlace) {
  double cv = stats.avg > 0 ? stats.stdev / stats.avg * 100.0 : 0.0;
  print("  %7s  %7s  %7s  %7s", formatFixedWidth(stats.min * 1e6, 7).c_str(),
        formatFixedWidth(stats.max * 1e6, 7).c_str(), formatFixedWidth(stats.p99 * 1e6, 7).c_str(),
        formatFixedWidth(cv, 7).c_str());
  if (!outOfPlace && options_.reportTimestamps) writeTimestamp();
  if (json_) json_->perIteration(outOfPlace, stats, cv, iterSeconds, perProcessRows, nProcs);
}

void Report::writeLineEnd(int iterations, const char* algorithm) {
  if (options_.reportAlgorithm) print("  %-12s", algorithm ? algorithm : "?");
  print("\n");
  if (json_) json_->endRow(iterations, algorithm);
}

void Report::writeFooter(int errors, double avgBusBw, double minBusBwCheck) {
  const char* bwVerdict =
      minBusBwCheck < 0 ? "" : (avgBusBw < minBusBwCheck * 0.9 ? "FAILED" : "OK");
  print("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
  print("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, bwVerdict);
  print("#\n");
  print("# Collective test concluded: %s\n", programName_);
  if (json_) json_->footer(errors, avgBusBw, minBusBwCheck);
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
  json_->finish(lastError, now());
  json_.reset();
}

}  // namespace braid::bench
