// The perf tests' output, on stdout in nccl-tests' layout (header, device lines, the
// size/count/type/redop/root | time algbw busbw #wrong table, footer) and optionally as a JSON
// file (-J) with nccl-tests' record fields. Only global rank 0's thread writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf_options.h"

namespace braid::bench {

class JsonReport;

/// Summary of one placement's per-iteration times (-I), in seconds.
struct IterationStats {
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0;
};
IterationStats computeIterationStats(const double* seconds, int count);

/// nccl-tests' fixed-width number: 2, 1 or 0 decimals, then exponent form, to fit width.
std::string formatFixedWidth(double value, int width);

class Report {
 public:
  Report(const PerfOptions& options, const char* programName, bool enabled);
  ~Report();

  bool enabled() const { return enabled_; }

  /// Opens the -J file (rank 0 only); writes args, environment (secrets redacted), version.
  void openJson(int argc, char** argv, char** envp, int libraryVersion);

  /// The run description and "# Using devices" with one line per rank (deviceLines, already in
  /// rank order, in the format of deviceLine()).
  void writeHeader(int libraryVersion, const std::string& deviceLines);
  void writeNote(const std::string& text);  ///< "# text"
  void writeTableHeader();

  void writeLinePreamble(std::size_t bytes, std::size_t count, const char* typeName,
                         const char* opName, int root);
  void writeLineBody(double timeUsec, double algBw, double busBw, bool reportErrors,
                     std::int64_t wrong, bool outOfPlace);
  /// A half of the line that was not run (every column N/A; JSON null).
  void writeLineNotRun(bool outOfPlace);
  void writePerIteration(const IterationStats& stats, const std::vector<double>& iterSeconds,
                         const std::vector<double>& perProcessRows, int nProcs, bool outOfPlace);
  /// Ends a size's line; with -A, `algorithm` (the one that size ran with) is its last column.
  void writeLineEnd(int iterations, const char* algorithm = nullptr);

  void writeFooter(int errors, double avgBusBw, double minBusBwCheck);
  void writeMemoryReport(std::int64_t initBytes, std::int64_t bufferBytes,
                         std::int64_t collectiveBytes);
  /// The closing lines: "#", then the library's last error (if any), and closes the JSON file.
  void finish(const char* lastError);

  /// One "#  Rank ..." line for a rank with host buffers.
  static std::string deviceLine(int rank, int group, int pid, const std::string& hostname);

 private:
  void print(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void writeTimestamp();

  const PerfOptions& options_;
  const char* programName_;
  bool enabled_;
  std::unique_ptr<JsonReport> json_;  ///< -J (json_report.h)
};

}  // namespace braid::bench
