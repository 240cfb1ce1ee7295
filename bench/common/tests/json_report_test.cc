// The -J file: a run written through JsonReport is read back as JSON and every field of
// nccl-tests' schema checked, in nccl-tests' key order, with secrets redacted and non-finite
// numbers written as strings.
#include "json_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perf_options.h"
#include "report.h"

namespace braid::bench {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> keys(const Json& object) {
  std::vector<std::string> names;
  for (const auto& item : object.items()) names.push_back(item.key());
  return names;
}

// Runs `write` on a JsonReport over a temporary file and parses what it wrote.
template <typename Write>
Json written(const PerfOptions& options, Write write) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  int fd = dup(fileno(file));  // the report closes the stream; read through a second descriptor
  {
    JsonReport report(file, options);
    write(report);
  }
  std::string text;
  char buffer[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
  close(fd);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  return Json::parse(text);
}

TEST(JsonReport, AWholeRunHasNcclTestsSchema) {
  PerfOptions options;
  options.minBytes = 8;
  options.maxBytes = 1024;
  options.stepFactor = 2;
  options.reportAlgorithm = 1;
  char arg0[] = "all_reduce_perf", arg1[] = "-b", arg2[] = "8";
  char* argv[] = {arg0, arg1, arg2};
  char env0[] = "PATH=/bin", env1[] = "BRAID_COMM_SECRET=0123", env2[] = "ODD=\"quoted\"\n";
  char* envp[] = {env0, env1, env2, nullptr};
  const std::string devices =
      "#  Rank  0 Group  0 Pid    101 on       host device host [2 cpus] Some CPU\n"
      "#  Rank  1 Group  0 Pid    101 on       host device host [2 cpus] Some CPU\n";
  Json doc = written(options, [&](JsonReport& r) {
    r.start(3, argv, envp, 22809, "2025-01-01 00:00:00");
    r.config(devices);
    r.beginRow(8, 2, "float", "sum", -1);
    r.placement(true, 5.25, 0.5, 0.75, true, 0);
    r.placement(false, NAN, INFINITY, -INFINITY, false, 0);
    r.endRow(20, "Ring");
    r.beginRow(16, 4, "float", "sum", -1);
    r.placement(true, 6.0, 1.0, 1.5, true, 3);
    r.placementNotRun(false);
    r.endRow(20, nullptr);
    r.footer(3, 1.125, -1);
    r.finish("a failure", "2025-01-01 00:00:01");
  });

  EXPECT_EQ(keys(doc),
            (std::vector<std::string>{"version", "start_time", "args", "env", "nccl_version",
                                      "config", "results", "out_of_bounds", "average_bus_bandwidth",
                                      "errors", "end_time"}));
  EXPECT_EQ(doc["version"], 3);
  EXPECT_EQ(doc["args"], Json({"all_reduce_perf", "-b", "8"}));
  EXPECT_EQ(doc["env"], Json({"PATH=/bin", "BRAID_COMM_SECRET=<redacted>", "ODD=\"quoted\"\n"}));
  EXPECT_EQ(doc["nccl_version"], 22809);

  const Json& config = doc["config"];
  EXPECT_EQ(keys(config), (std::vector<std::string>{
                              "nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor",
                              "warmup_iters", "iterations", "aggregated_iterations", "validation",
                              "graph", "blocking_collectives", "per_iter_timing", "per_iter_skip",
                              "parallel_init", "devices"}));
  EXPECT_EQ(config["step_factor"], 2);
  EXPECT_EQ(config["blocking_collectives"], false);
  ASSERT_EQ(config["devices"].size(), 2u);
  EXPECT_EQ(config["devices"][1], Json({{"rank", 1},
                                        {"group", 0},
                                        {"pid", 101},
                                        {"hostname", "host"},
                                        {"device", "host"},
                                        {"device_hex", "2 cpus"},
                                        {"device_info", "Some CPU"}}));

  ASSERT_EQ(doc["results"].size(), 2u);
  const Json& first = doc["results"][0];
  EXPECT_EQ(keys(first), (std::vector<std::string>{"size", "count", "type", "redop", "root",
                                                   "out_of_place", "in_place", "algorithm",
                                                   "actual_iterations", "experiment_name"}));
  EXPECT_EQ(first["root"], -1);
  EXPECT_EQ(first["out_of_place"],
            Json({{"time", 5.25}, {"alg_bw", 0.5}, {"bus_bw", 0.75}, {"nwrong", 0.0}}));
  EXPECT_EQ(first["in_place"],
            Json({{"time", "nan"}, {"alg_bw", "inf"}, {"bus_bw", "-inf"}, {"nwrong", nullptr}}));
  EXPECT_EQ(first["algorithm"], "Ring");
  const Json& second = doc["results"][1];
  EXPECT_EQ(second["out_of_place"]["nwrong"], 3.0);
  EXPECT_TRUE(second["in_place"].is_null());
  EXPECT_EQ(second["algorithm"], "");

  EXPECT_EQ(doc["out_of_bounds"], Json({{"count", 3}, {"okay", false}}));
  EXPECT_EQ(doc["average_bus_bandwidth"], Json({{"bandwidth", 1.125}, {"okay", "unchecked"}}));
  EXPECT_EQ(doc["errors"], Json({"a failure"}));
  EXPECT_EQ(doc["end_time"], "2025-01-01 00:00:01");
}

TEST(JsonReport, PerIterationTimesAndCpuTime) {
  PerfOptions options;
  options.reportCpuTime = 1;
  options.perIterTiming = 1;
  options.perIterSkip = 1;
  const std::vector<double> seconds = {1e-6, 2e-6, 4e-6};
  const std::vector<double> perProcess = {1e-6, 2e-6, 4e-6, 3e-6, 5e-6, 6e-6};
  IterationStats stats = computeIterationStats(seconds.data(), 3);
  Json doc = written(options, [&](JsonReport& r) {
    r.config("");
    r.beginRow(8, 2, "int8", "max", 0);
    r.placement(true, 2.0, 1.0, 1.0, true, 0);
    r.perIteration(true, stats, 25.0, seconds, perProcess, 2);
    r.endRow(3, nullptr);
    r.footer(0, 1.0, 0.5);
    r.finish(nullptr, "now");
  });
  const Json& row = doc["results"][0];
  EXPECT_TRUE(row["out_of_place"].contains("cpu_time"));
  EXPECT_FALSE(row.contains("algorithm"));  // without -A
  const Json& iters = row["out_of_place_per_iter"];
  EXPECT_EQ(iters["skipped_iterations"], 1);
  EXPECT_DOUBLE_EQ(iters["min_us"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(iters["max_us"].get<double>(), 4.0);
  EXPECT_EQ(iters["cv_pct"], 25.0);
  ASSERT_EQ(iters["times_us"].size(), 3u);
  EXPECT_DOUBLE_EQ(iters["times_us"][2].get<double>(), 4.0);
  ASSERT_EQ(iters["per_process_max_times_us"].size(), 2u);
  EXPECT_DOUBLE_EQ(iters["per_process_max_times_us"][1][2].get<double>(), 6.0);
  EXPECT_EQ(doc["average_bus_bandwidth"]["okay"], true);
  EXPECT_EQ(doc["errors"], Json::array());
}

}  // namespace
}  // namespace braid::bench
