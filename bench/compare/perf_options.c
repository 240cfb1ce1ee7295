/* nccl-tests compatible command line of the peer benchmarks: same letters, same defaults, so
 * compare.py passes one argument list to every library. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "perf_common.h"

static const char* const kTypeNames[PERF_NUM_TYPES] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"};
static const size_t kTypeSizes[PERF_NUM_TYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
static const char* const kOpNames[PERF_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};

const char* perf_type_name(perf_type type) {
  return kTypeNames[type];
}
size_t perf_type_size(perf_type type) {
  return kTypeSizes[type];
}
const char* perf_op_name(perf_op op) {
  return kOpNames[op];
}

/* nccl-tests also accepts these spellings. */
static int parse_type(const char* s, perf_type* out) {
  static const struct {
    const char* alias;
    perf_type type;
  } kAliases[] = {{"char", PERF_INT8},     {"int", PERF_INT32},      {"float16", PERF_HALF},
                  {"float32", PERF_FLOAT}, {"float64", PERF_DOUBLE}, {"bf16", PERF_BFLOAT16}};
  for (int t = 0; t < PERF_NUM_TYPES; t++) {
    if (strcmp(s, kTypeNames[t]) == 0) {
      *out = (perf_type)t;
      return 0;
    }
  }
  for (size_t a = 0; a < sizeof kAliases / sizeof kAliases[0]; a++) {
    if (strcmp(s, kAliases[a].alias) == 0) {
      *out = kAliases[a].type;
      return 0;
    }
  }
  return -1;
}

static int parse_op(const char* s, perf_op* out) {
  for (int o = 0; o < PERF_NUM_OPS; o++) {
    if (strcmp(s, kOpNames[o]) == 0) {
      *out = (perf_op)o;
      return 0;
    }
  }
  return -1;
}

/* "64", "64K", "1M", "2G" (powers of 1024, as nccl-tests reads them). 0 on a bad size. */
static size_t parse_size(const char* s) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      end++;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      end++;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      end++;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') end++;
  return *end == '\0' ? (size_t)v : 0;
}

static void usage(FILE* out, const char* program) {
  fprintf(out,
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
          "  -t,--nthreads 1  -g,--ngpus 1   accepted for compatibility (one rank per process)\n"
          "  -h,--help\n",
          program);
}

int perf_parse_options(int argc, char** argv, perf_options* opts, const char* program,
                       int verbose) {
  /* nccl-tests' defaults, except -a: the project compares the slowest rank's time. */
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
  opts->collective = NULL;

  static const struct option kLong[] = {{"minbytes", required_argument, 0, 'b'},
                                        {"maxbytes", required_argument, 0, 'e'},
                                        {"stepbytes", required_argument, 0, 'i'},
                                        {"stepfactor", required_argument, 0, 'f'},
                                        {"iters", required_argument, 0, 'n'},
                                        {"warmup_iters", required_argument, 0, 'w'},
                                        {"check", required_argument, 0, 'c'},
                                        {"datatype", required_argument, 0, 'd'},
                                        {"op", required_argument, 0, 'o'},
                                        {"average", required_argument, 0, 'a'},
                                        {"nthreads", required_argument, 0, 't'},
                                        {"ngpus", required_argument, 0, 'g'},
                                        {"root", required_argument, 0, 'r'},
                                        {"collective", required_argument, 0, 'K'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  int c;
  optind = 1;
  opterr = verbose;
  while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:a:t:g:r:K:h", kLong, NULL)) != -1) {
    int bad = 0;
    switch (c) {
      case 'b':
        bad = (opts->min_bytes = parse_size(optarg)) == 0;
        break;
      case 'e':
        bad = (opts->max_bytes = parse_size(optarg)) == 0;
        break;
      case 'i':
        bad = (opts->step_bytes = parse_size(optarg)) == 0;
        break;
      case 'f':
        opts->step_factor = strtoull(optarg, NULL, 0);
        break;
      case 'n':
        bad = (opts->iters = atoi(optarg)) < 1;
        break;
      case 'w':
        bad = (opts->warmup_iters = atoi(optarg)) < 0;
        break;
      case 'c':
        bad = (opts->check = atoi(optarg)) < 0;
        break;
      case 'd':
        bad = parse_type(optarg, &opts->type) != 0;
        break;
      case 'o':
        bad = parse_op(optarg, &opts->op) != 0;
        break;
      case 'a': {
        int a = atoi(optarg);
        bad = a < 0 || a > 3;
        opts->time_reduce = (perf_time_reduce)a;
        break;
      }
      case 'r':
        bad = (opts->root = atoi(optarg)) < 0;
        break;
      case 'K':
        opts->collective = optarg;
        break;
      case 't':
      case 'g':
        bad = atoi(optarg) != 1;
        break;
      case 'h':
        if (verbose) usage(stdout, program);
        return 1;
      default:
        bad = 1;
        break;
    }
    if (bad) {
      if (verbose && c != '?') fprintf(stderr, "%s: bad value for -%c\n", program, c);
      if (verbose) usage(stderr, program);
      return 2;
    }
  }
  if (optind < argc || opts->max_bytes < opts->min_bytes) {
    if (verbose) usage(stderr, program);
    return 2;
  }
  return 0;
}

size_t perf_next_size(const perf_options* opts, size_t bytes) {
  size_t next = opts->step_factor > 1 ? bytes * opts->step_factor : bytes + opts->step_bytes;
  return next > opts->max_bytes || next <= bytes ? 0 : next;
}
