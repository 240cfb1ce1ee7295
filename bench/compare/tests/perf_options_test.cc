// The peer benchmarks' command line (perf_parse_options): nccl-tests' flags and defaults, the
// project's -a default, and exit code 2 with the flag named for every malformed value.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "perf_common.h"
#include "tests/command_line.h"

namespace {

using braid::bench::testing::BadCommandLine;
using braid::bench::testing::CommandLineRun;

struct Parsed : CommandLineRun {
  perf_options options{};
};

Parsed parse(std::initializer_list<const char*> args, int verbose = 1) {
  Parsed p;
  static_cast<CommandLineRun&>(p) =
      braid::bench::testing::runCommandLine("mpi_perf", args, [&](int argc, char** argv) {
        return perf_parse_options(argc, argv, &p.options, "mpi_perf", verbose);
      });
  return p;
}

TEST(CompareOptions, Defaults) {
  Parsed p = parse({});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.options.min_bytes, 32u << 20);
  EXPECT_EQ(p.options.max_bytes, 32u << 20);
  EXPECT_EQ(p.options.step_bytes, 1u << 20);
  EXPECT_EQ(p.options.step_factor, 1u);
  EXPECT_EQ(p.options.iters, 20);
  EXPECT_EQ(p.options.warmup_iters, 1);
  EXPECT_EQ(p.options.check, 1);
  EXPECT_EQ(p.options.type, PERF_FLOAT);
  EXPECT_EQ(p.options.op, PERF_SUM);
  EXPECT_EQ(p.options.time_reduce, PERF_TIME_MAX);
  EXPECT_EQ(p.options.root, 0);
  EXPECT_EQ(p.options.collective, nullptr);
}

TEST(CompareOptions, EveryFlagInItsForms) {
  Parsed p = parse({"-b",
                    "8",
                    "--maxbytes=64MB",
                    "-f2",
                    "--iters",
                    "5",
                    "-w",
                    "0",
                    "-c",
                    "0",
                    "-d",
                    "bf16",
                    "--op",
                    "max",
                    "-a",
                    "1",
                    "-r",
                    "3",
                    "--collective",
                    "gather",
                    "-t",
                    "1",
                    "-g",
                    "1",
                    "-i",
                    "4k"});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_EQ(p.options.min_bytes, 8u);
  EXPECT_EQ(p.options.max_bytes, 64u << 20);
  EXPECT_EQ(p.options.step_factor, 2u);
  EXPECT_EQ(p.options.step_bytes, 4096u);
  EXPECT_EQ(p.options.iters, 5);
  EXPECT_EQ(p.options.warmup_iters, 0);
  EXPECT_EQ(p.options.check, 0);
  EXPECT_EQ(p.options.type, PERF_BFLOAT16);
  EXPECT_EQ(p.options.op, PERF_MAX);
  EXPECT_EQ(p.options.time_reduce, PERF_TIME_AVG);
  EXPECT_EQ(p.options.root, 3);
  ASSERT_NE(p.options.collective, nullptr);
  EXPECT_STREQ(p.options.collective, "gather");
}

TEST(CompareOptions, TypeNamesAndSizesFollowTheDtypeTable) {
  EXPECT_STREQ(perf_type_name(PERF_HALF), "half");
  EXPECT_STREQ(perf_type_name(PERF_BFLOAT16), "bfloat16");
  EXPECT_EQ(perf_type_size(PERF_INT64), 8u);
  EXPECT_EQ(perf_type_size(PERF_HALF), 2u);
  EXPECT_STREQ(perf_op_name(PERF_AVG), "avg");
  Parsed p = parse({"-d", "float64"});
  EXPECT_EQ(p.options.type, PERF_DOUBLE);
}

TEST(CompareOptions, HelpPrintsOnlyWhenVerbose) {
  Parsed p = parse({"-h"});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.out.find("usage: mpi_perf [options]"), std::string::npos);
  Parsed quiet = parse({"--help"}, 0);
  EXPECT_EQ(quiet.status, 1);
  EXPECT_EQ(quiet.out + quiet.err, "");
}

TEST(CompareOptions, BadValuesNameTheFlag) {
  const BadCommandLine cases[] = {
      {{"-b", "0"}, "--minbytes: bad value '0'"},
      {{"-e", "12X"}, "--maxbytes: bad value '12X'"},
      {{"-b", "-5"}, "--minbytes: bad value '-5'"},
      {{"-b", "99999999999G"}, "--minbytes"},
      {{"-n", "0"}, "--iters: bad value '0'"},
      {{"-n", "abc"}, "--iters: bad value 'abc'"},
      {{"-w", "-1"}, "--warmup_iters"},
      {{"-a", "4"}, "--average"},
      {{"-d", "float128"}, "--datatype: bad value 'float128'"},
      {{"-o", "xor"}, "--op"},
      {{"-r", "-1"}, "--root"},
      {{"-t", "2"}, "--nthreads"},
      {{"-f", "-1"}, "--stepfactor"},
      {{"--bogus"}, "--bogus"},
      {{"stray"}, "stray"},
      {{"-b", "2M", "-e", "1M"}, "-b 2097152 is larger than -e 1048576"},
  };
  for (const BadCommandLine& bad : cases) {
    Parsed p = parse(bad.args);
    std::string shown = *bad.args.begin();
    EXPECT_EQ(p.status, 2) << shown;
    EXPECT_NE(p.err.find(bad.message), std::string::npos) << shown << ": " << p.err;
    Parsed quiet = parse(bad.args, 0);
    EXPECT_EQ(quiet.status, 2) << shown;
    EXPECT_EQ(quiet.out + quiet.err, "") << shown;  // only the verbose rank prints
  }
}

TEST(CompareOptions, SweepSizes) {
  perf_options o = parse({"-b", "8", "-e", "64", "-f", "2"}).options;
  EXPECT_EQ(perf_next_size(&o, 8), 16u);
  EXPECT_EQ(perf_next_size(&o, 64), 0u);
  o = parse({"-b", "1K", "-e", "3K", "-i", "1K"}).options;
  EXPECT_EQ(perf_next_size(&o, 2048), 3072u);
  EXPECT_EQ(perf_next_size(&o, 3072), 0u);
}

}  // namespace
