#include "json_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "perf_options.h"
#include "report.h"

namespace braid::bench {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kJsonVersion = 3;

// JSON has no NaN or infinity: they are written as strings, as nccl-tests does.
Json number(double value) {
  if (std::isfinite(value)) return value;
  return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
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

// The devices entries from the text lines Report::deviceLine writes.
Json devices(const std::string& deviceLines) {
  Json list = Json::array();
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
    list.push_back({{"rank", rank},
                    {"group", group},
                    {"pid", pid},
                    {"hostname", host},
                    {"device", "host"},
                    {"device_hex", std::to_string(cpus) + " cpus"},
                    {"device_info", info}});
  }
  return list;
}

Json microseconds(const std::vector<double>& seconds, std::size_t first, std::size_t count) {
  Json list = Json::array();
  for (std::size_t i = first; i < first + count; ++i) list.push_back(number(seconds[i] * 1e6));
  return list;
}

}  // namespace

JsonReport::JsonReport(std::FILE* file, const PerfOptions& options)
    : file_(file), options_(options), doc_(std::make_unique<Json>(Json::object())) {}

JsonReport::~JsonReport() {
  if (file_) std::fclose(file_);
}

void JsonReport::start(int argc, char** argv, char** envp, int libraryVersion,
                       const std::string& startTime) {
  Json& doc = *doc_;
  doc["version"] = kJsonVersion;
  doc["start_time"] = startTime;
  doc["args"] = Json::array();
  for (int i = 0; i < argc; ++i) doc["args"].push_back(argv[i]);
  doc["env"] = Json::array();
  for (char** entry = envp; entry && *entry; ++entry) {
    doc["env"].push_back(redactedEnvEntry(*entry));
  }
  doc["nccl_version"] = libraryVersion;
}

void JsonReport::config(const std::string& deviceLines) {
  const PerfOptions& o = options_;
  Json config = {
      {"nthreads", o.nThreads},
      {"ngpus", o.nGpus},
      {"minimum_bytes", o.minBytes},
      {"maximum_bytes", o.maxBytes},
  };
  if (o.stepFactor > 1) {
    config["step_factor"] = o.stepFactor;
  } else {
    config["step_bytes"] = o.stepBytes;
  }
  config.update({{"warmup_iters", o.warmupIters},
                 {"iterations", o.iters},
                 {"aggregated_iterations", o.aggIters},
                 {"validation", o.check},
                 {"graph", o.cudaGraphLaunches},
                 {"blocking_collectives", o.blocking != 0},
                 {"per_iter_timing", o.perIterTiming != 0},
                 {"per_iter_skip", o.perIterSkip},
                 {"parallel_init", o.parallelInit != 0},
                 {"devices", devices(deviceLines)}});
  (*doc_)["config"] = std::move(config);
  (*doc_)["results"] = Json::array();
}

void JsonReport::beginRow(std::size_t bytes, std::size_t count, const char* typeName,
                          const char* opName, int root) {
  row_ = std::make_unique<Json>(Json{
      {"size", bytes}, {"count", count}, {"type", typeName}, {"redop", opName}, {"root", root}});
}

void JsonReport::placement(bool outOfPlace, double timeUsec, double algBw, double busBw,
                           bool reportErrors, std::int64_t wrong) {
  // nccl-tests writes the wrong count as a floating-point number.
  (*row_)[outOfPlace ? "out_of_place" : "in_place"] = {
      {options_.reportCpuTime ? "cpu_time" : "time", number(timeUsec)},
      {"alg_bw", number(algBw)},
      {"bus_bw", number(busBw)},
      {"nwrong", reportErrors ? number(static_cast<double>(wrong)) : Json(nullptr)}};
}

void JsonReport::placementNotRun(bool outOfPlace) {
  (*row_)[outOfPlace ? "out_of_place" : "in_place"] = nullptr;
}

void JsonReport::perIteration(bool outOfPlace, const IterationStats& stats, double cvPercent,
                              const std::vector<double>& iterSeconds,
                              const std::vector<double>& perProcessRows, int nProcs) {
  Json summary = {{"skipped_iterations", options_.perIterSkip},
                  {"min_us", number(stats.min * 1e6)},
                  {"max_us", number(stats.max * 1e6)},
                  {"avg_us", number(stats.avg * 1e6)},
                  {"p50_us", number(stats.p50 * 1e6)},
                  {"p95_us", number(stats.p95 * 1e6)},
                  {"p99_us", number(stats.p99 * 1e6)},
                  {"stdev_us", number(stats.stdev * 1e6)},
                  {"cv_pct", number(cvPercent)},
                  {"times_us", microseconds(iterSeconds, 0, iterSeconds.size())}};
  if (nProcs > 1) {
    const std::size_t iters = iterSeconds.size();
    Json rows = Json::array();
    for (int p = 0; p < nProcs; ++p) rows.push_back(microseconds(perProcessRows, p * iters, iters));
    summary["per_process_max_times_us"] = std::move(rows);
  }
  (*row_)[outOfPlace ? "out_of_place_per_iter" : "in_place_per_iter"] = std::move(summary);
}

void JsonReport::endRow(int iterations, const char* algorithm) {
  Json& row = *row_;
  if (options_.reportAlgorithm) row["algorithm"] = algorithm ? algorithm : "";
  row["actual_iterations"] = iterations;
  row["experiment_name"] = "";
  (*doc_)["results"].push_back(std::move(row));
  row_.reset();
}

void JsonReport::footer(int errors, double avgBusBw, double minBusBwCheck) {
  Json& doc = *doc_;
  doc["out_of_bounds"] = {{"count", errors}, {"okay", errors == 0}};
  doc["average_bus_bandwidth"] = {
      {"bandwidth", number(avgBusBw)},
      {"okay", minBusBwCheck < 0 ? Json("unchecked") : Json(avgBusBw >= minBusBwCheck * 0.9)}};
}

void JsonReport::finish(const char* lastError, const std::string& endTime) {
  Json& doc = *doc_;
  doc["errors"] = Json::array();
  if (lastError && *lastError) doc["errors"].push_back(lastError);
  doc["end_time"] = endTime;
  // Invalid UTF-8 (an environment entry, an argument) is replaced, not a reason to lose the run.
  std::string text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::fprintf(file_, "%s\n", text.c_str());
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace braid::bench
