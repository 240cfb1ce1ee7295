#include "launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace braidrun {
namespace {

bool parseInt(const char* text, long low, long high, long* value) {
  char* end = nullptr;
  errno = 0;
  long parsed = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < low || parsed > high) return false;
  *value = parsed;
  return true;
}

bool parseSeconds(const char* text, double* value) {
  char* end = nullptr;
  errno = 0;
  double parsed = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(parsed) || parsed < 0) {
    return false;
  }
  *value = parsed;
  return true;
}

// Accepts "--name value" and "--name=value"; advances *index past what it consumed.
bool takeValue(int argc, char** argv, int* index, std::string_view name, const char** value) {
  std::string_view arg = argv[*index];
  if (arg == name) {
    if (*index + 1 >= argc) return false;
    *value = argv[++*index];
    return true;
  }
  if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
    *value = argv[*index] + name.size() + 1;
    return true;
  }
  return false;
}

bool startsWithOption(std::string_view arg, std::string_view name) {
  return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                         arg[name.size()] == '=');
}

}  // namespace

ParseStatus parseLaunchOptions(int argc, char** argv, LaunchOptions* options, std::string* error) {
  int index = 1;
  for (; index < argc; ++index) {
    std::string_view arg = argv[index];
    const char* value = nullptr;
    if (arg == "--") {
      ++index;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;  // the program: everything after belongs to it
    if (arg == "-h" || arg == "--help") return ParseStatus::kHelp;
    if (arg == "--tag-output") {
      options->tagOutput = true;
      continue;
    }
    if (arg == "--bind-to" || startsWithOption(arg, "--bind-to")) {
      if (!takeValue(argc, argv, &index, "--bind-to", &value) ||
          (std::string_view(value) != "core" && std::string_view(value) != "none")) {
        *error = "--bind-to takes core or none";
        return ParseStatus::kError;
      }
      options->bindToCore = std::string_view(value) == "core";
      continue;
    }
    long number = 0;
    if (arg == "-n" || startsWithOption(arg, "--nproc") ||
        startsWithOption(arg, "--nproc-per-node") || startsWithOption(arg, "--nproc_per_node")) {
      std::string_view name = arg == "-n" ? "-n" : arg.substr(0, arg.find('='));
      if (!takeValue(argc, argv, &index, name, &value) || !parseInt(value, 1, 4096, &number)) {
        *error = "-n needs a rank count between 1 and 4096";
        return ParseStatus::kError;
      }
      options->nranks = static_cast<int>(number);
    } else if (startsWithOption(arg, "--master-port") || startsWithOption(arg, "--master_port")) {
      if (!takeValue(argc, argv, &index, arg.substr(0, arg.find('=')), &value) ||
          !parseInt(value, 1, 65535, &number)) {
        *error = "--master-port needs a port number between 1 and 65535";
        return ParseStatus::kError;
      }
      options->masterPort = static_cast<int>(number);
    } else if (startsWithOption(arg, "--timeout")) {
      if (!takeValue(argc, argv, &index, "--timeout", &value) ||
          !parseSeconds(value, &options->timeoutSeconds)) {
        *error = "--timeout needs a number of seconds (0 = no limit)";
        return ParseStatus::kError;
      }
    } else if (startsWithOption(arg, "--grace-period")) {
      if (!takeValue(argc, argv, &index, "--grace-period", &value) ||
          !parseSeconds(value, &options->gracePeriodSeconds)) {
        *error = "--grace-period needs a number of seconds";
        return ParseStatus::kError;
      }
    } else {
      *error = "unknown option " + std::string(arg);
      return ParseStatus::kError;
    }
  }
  for (; index < argc; ++index) options->command.emplace_back(argv[index]);
  if (options->nranks <= 0) {
    *error = "missing -n N (the number of ranks to start)";
    return ParseStatus::kError;
  }
  if (options->command.empty()) {
    *error = "missing the program to run";
    return ParseStatus::kError;
  }
  return ParseStatus::kRun;
}

std::string usageText(const char* programName) {
  std::string text = "usage: ";
  text += programName;
  text +=
      " -n N [--master-port P] [--timeout S] [--grace-period S] [--tag-output]\n"
      "       [--bind-to core|none] [--] PROGRAM [ARGS...]\n"
      "\n"
      "Starts N local processes of PROGRAM with the torchrun environment:\n"
      "  RANK, LOCAL_RANK (0..N-1), WORLD_SIZE, LOCAL_WORLD_SIZE (N), GROUP_RANK (0),\n"
      "  MASTER_ADDR (127.0.0.1), MASTER_PORT, and BRAID_COMM_SECRET (fresh per run).\n"
      "\n"
      "  -n, --nproc-per-node N  number of ranks\n"
      "  --master-port P         rendezvous port (default: a free port)\n"
      "  --timeout S             stop all ranks after S seconds (exit status 124)\n"
      "  --grace-period S        wait S seconds after SIGTERM before SIGKILL (default 5)\n"
      "  --tag-output            prefix every output line with [rankN]:\n"
      "  --bind-to core|none     core: pin rank i to the i-th CPU braidrun may use, as\n"
      "                          mpirun --bind-to core (refused when ranks outnumber\n"
      "                          those CPUs); none (default, as torchrun): no pinning\n"
      "\n"
      "When a rank fails, the others get SIGTERM, then SIGKILL after the grace period.\n"
      "Exit status: 0 if all ranks exit 0; else the first failing rank's status, or\n"
      "128+signal if it was killed by a signal.\n";
  return text;
}

}  // namespace braidrun
