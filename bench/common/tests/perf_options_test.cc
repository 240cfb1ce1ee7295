// The *_perf command line: nccl-tests' flags in their short, long and attached forms, its size
// syntax and defaults, and a clear message with exit status 255 for a value that is not one.
#include "perf_options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "nccl.h"
#include "tests/command_line.h"

namespace braid::bench {
namespace {

struct Parsed : testing::CommandLineRun {
  PerfOptions options;
};

Parsed parse(std::initializer_list<const char*> args) {
  Parsed p;
  static_cast<testing::CommandLineRun&>(p) =
      testing::runCommandLine("all_reduce_perf", args, [&p](int argc, char** argv) {
        return parsePerfOptions(argc, argv, "all_reduce_perf", &p.options);
      });
  return p;
}

TEST(PerfOptions, DefaultsAreNcclTests) {
  Parsed p = parse({});
  ASSERT_EQ(p.status, -1) << p.err;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.nThreads, 1);
  EXPECT_EQ(o.nGpus, 1);
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.stepBytes, 1u << 20);
  EXPECT_EQ(o.stepFactor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 1);
  EXPECT_EQ(o.check, 1);
  EXPECT_EQ(o.opIndex, 0);
  EXPECT_EQ(o.typeIndex, 7);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.ctaPolicy, -1);
  EXPECT_TRUE(o.notes.empty());
  EXPECT_EQ(p.out + p.err, "");
}

TEST(PerfOptions, ShortLongAndAttachedForms) {
  Parsed p = parse({"-b", "8", "--maxbytes", "64M", "-f2", "--iters=5", "-t", "4", "--ngpus=2",
                    "-d", "half", "--op", "all", "-r", "-1", "-J", "out.json", "-A", "1"});
  ASSERT_EQ(p.status, -1) << p.err;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 64u << 20);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.nThreads, 4);
  EXPECT_EQ(o.nGpus, 2);
  EXPECT_EQ(o.typeIndex, ncclFloat16);
  EXPECT_EQ(o.opIndex, -1);  // all
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.outputFile, "out.json");
  EXPECT_EQ(o.reportAlgorithm, 1);
}

TEST(PerfOptions, SizesAndIntegersKeepTheirSyntax) {
  Parsed p = parse({"-b", "1.5K", "-e", "2g", "-i", "4096", "-n", "0x10", "-w", "010"});
  ASSERT_EQ(p.status, -1) << p.err;
  EXPECT_EQ(p.options.minBytes, 1536u);
  EXPECT_EQ(p.options.maxBytes, std::size_t{2} << 30);
  EXPECT_EQ(p.options.stepBytes, 4096u);
  EXPECT_EQ(p.options.iters, 16);       // hexadecimal, as strtol(..., 0) reads it
  EXPECT_EQ(p.options.warmupIters, 8);  // and octal
  EXPECT_EQ(parseSize("64M"), 64.0 * 1024 * 1024);
  EXPECT_EQ(parseSize("8"), 8.0);
  EXPECT_LT(parseSize("8X"), 0);
  EXPECT_LT(parseSize("-1"), 0);
}

TEST(PerfOptions, TheLastOfARepeatedFlagWins) {
  Parsed p = parse({"-n", "3", "-n", "7", "-b", "1K", "-b", "2K", "-e", "4K"});
  ASSERT_EQ(p.status, -1) << p.err;
  EXPECT_EQ(p.options.iters, 7);
  EXPECT_EQ(p.options.minBytes, 2048u);
}

TEST(PerfOptions, HelpPrintsTheUsageAndStops) {
  for (const char* flag : {"-h", "--help"}) {
    Parsed p = parse({"-n", "5", flag});
    EXPECT_EQ(p.status, 0);
    EXPECT_NE(p.out.find("USAGE: all_reduce_perf"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("[-b,--minbytes <min size in bytes>]"), std::string::npos);
  }
}

TEST(PerfOptions, UnknownNamesFallBackAsInNcclTests) {
  Parsed p = parse({"-d", "float128", "-o", "xor"});
  ASSERT_EQ(p.status, -1) << p.err;
  EXPECT_EQ(p.options.typeIndex, 7);
  EXPECT_EQ(p.options.opIndex, 0);
  EXPECT_NE(p.out.find("invalid type float128, defaulting to float .."), std::string::npos);
  EXPECT_NE(p.out.find("invalid op xor, defaulting to sum .."), std::string::npos);
}

TEST(PerfOptions, IgnoredDeviceFlagsLeaveNotes) {
  Parsed p = parse({"-G", "3", "-V", "8", "-R", "5"});
  ASSERT_EQ(p.status, -1) << p.err;
  EXPECT_EQ(p.options.cudaGraphLaunches, 0);
  EXPECT_EQ(p.options.localRegister, 1);
  ASSERT_EQ(p.options.notes.size(), 3u);
  EXPECT_EQ(p.options.notes[0], "-G (CUDA graph) ignored: host buffers run without CUDA graphs");
}

// Every malformed command line stops with 255 and a message naming what was wrong.
TEST(PerfOptions, BadValuesAreRefusedWithAMessage) {
  const testing::BadCommandLine cases[] = {
      {{"-n", "abc"}, "--iters: 'abc' is not an integer"},
      {{"-t", "4x"}, "--nthreads: '4x' is not an integer"},
      {{"-r", ""}, "--root: '' is not an integer"},
      {{"-b", "12X"}, "invalid size specified for 'minbytes'"},
      {{"-e", "-5"}, "invalid size specified for 'maxbytes'"},
      {{"-f", "-1"}, "--stepfactor: '-1' is outside 0.."},
      {{"-n", "99999999999"}, "--iters: '99999999999' is outside"},
      {{"--bogus", "1"}, "--bogus"},
      {{"stray"}, "stray"},
      {{"-n"}, "--iters"},
      {{"-b", "2M", "-e", "1M"}, "invalid sizes for 'minbytes' and 'maxbytes'"},
      {{"-n", "0"}, "-n and -m must be at least 1"},
      {{"-a", "4"}, "-a (average) must be 0, 1, 2 or 3"},
      {{"-D", "1"}, "device implementation (-D > 0) is not available"},
  };
  for (const testing::BadCommandLine& bad : cases) {
    Parsed p = parse(bad.args);
    std::string shown = *bad.args.begin();
    EXPECT_EQ(p.status, 255) << shown;
    EXPECT_NE(p.err.find(bad.message), std::string::npos) << shown << ": " << p.err;
  }
}

}  // namespace
}  // namespace braid::bench
