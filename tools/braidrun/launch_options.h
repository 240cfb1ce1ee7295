// Command line of braidrun: how many ranks to start and the program they run.
#pragma once

#include <string>
#include <vector>

namespace braidrun {

struct LaunchOptions {
  int nranks = 0;                    ///< -n: local processes to start
  int masterPort = 0;                ///< --master-port: 0 means "pick a free one"
  double timeoutSeconds = 0;         ///< --timeout: 0 means no limit
  double gracePeriodSeconds = 5;     ///< --grace-period: SIGTERM-to-SIGKILL delay
  bool tagOutput = false;            ///< --tag-output: prefix each output line with "[rankN]: "
  bool bindToCore = false;           ///< --bind-to core: rank i on the i-th allowed CPU
  std::vector<std::string> command;  ///< PROGRAM ARGS...
};

/// Outcome of parsing: run, print help and stop, or reject with a message.
enum class ParseStatus { kRun, kHelp, kError };

/// Parses argv. Options end at the first argument that is not an option (the program) or at "--".
ParseStatus parseLaunchOptions(int argc, char** argv, LaunchOptions* options, std::string* error);

/// The --help text.
std::string usageText(const char* programName);

}  // namespace braidrun
