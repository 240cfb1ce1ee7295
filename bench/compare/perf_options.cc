// nccl-tests compatible command line of the peer benchmarks: same letters, same defaults, so
// compare.py passes one argument list to every library. Parsed with CLI11 behind the C interface
// of perf_common.h (mpi_perf is C); names and sizes of the types come from the dtype table.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "braid/datatypes.h"
#include "perf_common.h"

namespace {

// perf_type follows ncclDataType_t up to bfloat16 (the peers have no fp8).
static_assert(int{PERF_NUM_TYPES} == int{ncclBfloat16} + 1 && int{PERF_HALF} == int{ncclFloat16} &&
              int{PERF_BFLOAT16} == int{ncclBfloat16});

const braid::DataType& typeOf(perf_type type) {
  return braid::kDataTypes[static_cast<std::size_t>(type)];
}

const char* const kOpNames[PERF_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};

// nccl-tests also accepts these spellings.
int parseType(const std::string& s, perf_type* out) {
  static const struct {
    const char* alias;
    perf_type type;
  } kAliases[] = {{"char", PERF_INT8},     {"int", PERF_INT32},      {"float16", PERF_HALF},
                  {"float32", PERF_FLOAT}, {"float64", PERF_DOUBLE}, {"bf16", PERF_BFLOAT16}};
  for (int t = 0; t < PERF_NUM_TYPES; t++) {
    if (s == typeOf(static_cast<perf_type>(t)).testsName) {
      *out = static_cast<perf_type>(t);
      return 0;
    }
  }
  for (const auto& alias : kAliases) {
    if (s == alias.alias) {
      *out = alias.type;
      return 0;
    }
  }
  return -1;
}

int parseOp(const std::string& s, perf_op* out) {
  for (int o = 0; o < PERF_NUM_OPS; o++) {
    if (s == kOpNames[o]) {
      *out = static_cast<perf_op>(o);
      return 0;
    }
  }
  return -1;
}

// "64", "64K", "1M", "2G" (powers of 1024, as nccl-tests reads them), a trailing B allowed. 0 on
// a bad size.
size_t parseSize(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *s == '-' || errno == ERANGE) return 0;
  int shift = 0;
  switch (*end) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    default:
      break;
  }
  if (shift) {
    if (v > (ULLONG_MAX >> shift)) return 0;
    v <<= shift;
    end++;
  }
  if (*end == 'B' || *end == 'b') end++;
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

// A whole decimal or C-syntax integer in [minimum, maximum]; false for anything else.
bool parseInt(const std::string& text, long long minimum, long long maximum, long long* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < minimum || v > maximum) return false;
  *out = v;
  return true;
}

void usage(FILE* out, const char* program) {
  std::fprintf(out,
               "usage: %s [options]\n"
               "  -b,--minbytes <n>       smallest message, K/M/G suffixes (default 32M)\n"
               "  -e,--maxbytes <n>       largest message (default 32M)\n"
               "  -i,--stepbytes <n>      size increment when -f is 1 (default 1M)\n"
               "  -f,--stepfactor <n>     size multiplier (default 1: use -i)\n"
               "  -n,--iters <n>          timed calls per size and mode (default 20)\n"
               "  -w,--warmup_iters <n>   warm-up calls per size before the sweep (default 1)\n"
               "  -c,--check <n>          checked calls per size and mode, 0 = none (default 1)\n"
               "  -d,--datatype <type>    int8 uint8 int32 uint32 int64 uint64 half float double "
               "bfloat16 (default float)\n"
               "  -o,--op <op>            sum prod max min avg (default sum)\n"
               "  -a,--average <0..3>     combine per-rank times: 0 rank 0, 1 mean, 2 min, 3 max "
               "(default 3)\n"
               "  -r,--root <n>           root of rooted collectives (default 0)\n"
               "  -K,--collective <name>  collective, for programs that run several\n"
               "  -t,--nthreads 1  -g,--ngpus 1   accepted for compatibility (one rank per "
               "process)\n"
               "  -h,--help\n",
               program);
}

// A flag whose value is refused ("--iters: bad value 'x'"); flags is "-n,--iters".
[[noreturn]] void refuse(const char* flags, const std::string& text) {
  const char* name = std::strchr(flags, ',');
  throw CLI::ValidationError(std::string(name ? name + 1 : flags) + ": bad value '" + text + "'");
}

// Each flag stores through its own callback, so that the last of repeated flags wins (as with
// getopt) and every refusal names the flag.
void define(CLI::App& app, perf_options* opts, std::string* collective) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help");
  auto option = [&app](const char* flags, auto store) {
    app.add_option_function<std::string>(flags, [flags, store](const std::string& text) {
      if (!store(text)) refuse(flags, text);
    });
  };
  auto size = [&option](const char* flags, size_t* target) {
    option(flags, [target](const std::string& text) { return (*target = parseSize(text)) != 0; });
  };
  auto integer = [&option](const char* flags, long long minimum, long long maximum, int* target) {
    option(flags, [=](const std::string& text) {
      long long v = 0;
      if (!parseInt(text, minimum, maximum, &v)) return false;
      *target = static_cast<int>(v);
      return true;
    });
  };
  size("-b,--minbytes", &opts->min_bytes);
  size("-e,--maxbytes", &opts->max_bytes);
  size("-i,--stepbytes", &opts->step_bytes);
  option("-f,--stepfactor", [opts](const std::string& text) {
    long long v = 0;
    if (!parseInt(text, 0, LLONG_MAX, &v)) return false;
    opts->step_factor = static_cast<size_t>(v);
    return true;
  });
  integer("-n,--iters", 1, INT_MAX, &opts->iters);
  integer("-w,--warmup_iters", 0, INT_MAX, &opts->warmup_iters);
  integer("-c,--check", 0, INT_MAX, &opts->check);
  option("-d,--datatype",
         [opts](const std::string& text) { return parseType(text, &opts->type) == 0; });
  option("-o,--op", [opts](const std::string& text) { return parseOp(text, &opts->op) == 0; });
  option("-a,--average", [opts](const std::string& text) {
    long long v = 0;
    if (!parseInt(text, 0, 3, &v)) return false;
    opts->time_reduce = static_cast<perf_time_reduce>(v);
    return true;
  });
  integer("-r,--root", 0, INT_MAX, &opts->root);
  option("-K,--collective", [collective](const std::string& text) {
    *collective = text;
    return true;
  });
  // One rank per process: only 1 is accepted.
  auto one = [](const std::string& text) {
    long long v = 0;
    return parseInt(text, 1, 1, &v);
  };
  option("-t,--nthreads", one);
  option("-g,--ngpus", one);
}

}  // namespace

extern "C" {

const char* perf_type_name(perf_type type) {
  return typeOf(type).testsName;
}
size_t perf_type_size(perf_type type) {
  return typeOf(type).size;
}
const char* perf_op_name(perf_op op) {
  return kOpNames[op];
}

int perf_parse_options(int argc, char** argv, perf_options* opts, const char* program,
                       int verbose) {
  // nccl-tests' defaults, except -a: the project compares the slowest rank's time.
  *opts = perf_options{};
  opts->min_bytes = 32u << 20;
  opts->max_bytes = 32u << 20;
  opts->step_bytes = 1u << 20;
  opts->step_factor = 1;
  opts->iters = 20;
  opts->warmup_iters = 1;
  opts->check = 1;
  opts->type = PERF_FLOAT;
  opts->op = PERF_SUM;
  opts->time_reduce = PERF_TIME_MAX;
  opts->root = 0;
  opts->collective = nullptr;

  // opts is a C struct that keeps a pointer: the name lives as long as the process (one parse).
  static std::string collective;
  CLI::App app("", program);
  define(app, opts, &collective);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (verbose) usage(stdout, program);
    return 1;
  } catch (const CLI::ParseError& e) {
    if (verbose) {
      std::fprintf(stderr, "%s: %s\n", program, e.what());
      usage(stderr, program);
    }
    return 2;
  }
  if (app.count("--collective")) opts->collective = collective.c_str();
  if (opts->max_bytes < opts->min_bytes) {
    if (verbose) {
      std::fprintf(stderr, "%s: -b %zu is larger than -e %zu\n", program, opts->min_bytes,
                   opts->max_bytes);
      usage(stderr, program);
    }
    return 2;
  }
  return 0;
}

size_t perf_next_size(const perf_options* opts, size_t bytes) {
  size_t next = opts->step_factor > 1 ? bytes * opts->step_factor : bytes + opts->step_bytes;
  return next > opts->max_bytes || next <= bytes ? 0 : next;
}

}  // extern "C"
