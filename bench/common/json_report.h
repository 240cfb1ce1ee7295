// The -J results file: nccl-tests' JSON record (version 3 of its schema: args, environment,
// config with the devices, one result per size with its placements, the bound checks, errors),
// built with nlohmann-json as the run goes and written whole by finish(). Keys keep the order
// nccl-tests writes them in.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace braid::bench {

struct IterationStats;
struct PerfOptions;

class JsonReport {
 public:
  /// Takes `file` (already opened, exclusively) and closes it in finish() or the destructor.
  JsonReport(std::FILE* file, const PerfOptions& options);
  ~JsonReport();

  /// version, start_time, args, env (secrets redacted), nccl_version.
  void start(int argc, char** argv, char** envp, int libraryVersion, const std::string& startTime);
  /// config, with one devices entry per "#  Rank ..." line of deviceLines.
  void config(const std::string& deviceLines);

  /// A size's result: the row's columns, then its placements, then endRow.
  void beginRow(std::size_t bytes, std::size_t count, const char* typeName, const char* opName,
                int root);
  void placement(bool outOfPlace, double timeUsec, double algBw, double busBw, bool reportErrors,
                 std::int64_t wrong);
  void placementNotRun(bool outOfPlace);  ///< null
  void perIteration(bool outOfPlace, const IterationStats& stats, double cvPercent,
                    const std::vector<double>& iterSeconds,
                    const std::vector<double>& perProcessRows, int nProcs);
  /// `algorithm` only with -A.
  void endRow(int iterations, const char* algorithm);

  void footer(int errors, double avgBusBw, double minBusBwCheck);
  /// errors, end_time; writes the document and closes the file.
  void finish(const char* lastError, const std::string& endTime);

 private:
  std::FILE* file_;
  const PerfOptions& options_;
  std::unique_ptr<nlohmann::ordered_json> doc_;
  std::unique_ptr<nlohmann::ordered_json> row_;  ///< the size being reported
};

}  // namespace braid::bench
