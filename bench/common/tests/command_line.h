// Runs a command-line parser on a list of arguments with stdout and stderr captured: the one
// harness of the option tests of the *_perf programs and of the peer benchmarks (bench/compare).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace braid::bench::testing {

struct CommandLineRun {
  int status = 0;
  std::string out, err;
};

/// A malformed command line and a piece of the message that must name what was wrong.
struct BadCommandLine {
  std::initializer_list<const char*> args;
  const char* message;
};

/// Calls parse(argc, argv) with argv = {program, args...}, capturing what it prints.
template <typename Parse>
CommandLineRun runCommandLine(const char* program, std::initializer_list<const char*> args,
                              Parse parse) {
  std::vector<std::string> text{program};
  text.insert(text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  CommandLineRun run;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  run.status = parse(static_cast<int>(text.size()), argv.data());
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  return run;
}

}  // namespace braid::bench::testing
