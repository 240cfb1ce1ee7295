#include "perf_options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>

#include "datatypes.h"

namespace braid::bench {
namespace {

void printUsage(const char* programName) {
  std::printf(
      "USAGE: %s \n\t"
      "[-t,--nthreads <num threads>] \n\t"
      "[-g,--ngpus <ranks per thread>] \n\t"
      "[-b,--minbytes <min size in bytes>] \n\t"
      "[-e,--maxbytes <max size in bytes>] \n\t"
      "[-i,--stepbytes <increment size>] \n\t"
      "[-f,--stepfactor <increment factor>] \n\t"
      "[-n,--iters <iteration count>] \n\t"
      "[-m,--agg_iters <aggregated iteration count>] \n\t"
      "[-w,--warmup_iters <warmup iteration count>] \n\t"
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
      "[-p,--parallel_init <0/1>] \n\t"
      "[-c,--check <check iteration count>] \n\t"
      "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
      "[-d,--datatype <nccltype/all>] \n\t"
      "[-r,--root <root>] \n\t"
      "[-z,--blocking <0/1/2/3> 1=barrier after each inner iter (-m), 2=no barrier, 3=wait and "
      "barrier after each outer iter (-n)] \n\t"
      "[-y,--stream_null <0/1>] (host buffers always use the NULL stream) \n\t"
      "[-T,--timeout <time in seconds>] \n\t"
      "[-G,--cudagraph <num graph launches>] (ignored: host buffers) \n\t"
      "[-C,--report_cputime <0/1>] \n\t"
      "[-S,--report_timestamps <0/1> report timestamps (default 0)] \n\t"
      "[-A,--report_algorithm <0/1> report the algorithm each size ran with (default 0)] \n\t"
      "[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix "
      "(only json supported presently.)] \n\t"
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
      "[-R,--local_register <0/1/2> enable local (1) or symmetric (2) buffer registration on "
      "send/recv buffers (default: disable (0))] \n\t"
      "[-x,--cta_policy <0/1/2> set CTA policy (default: do not set)] \n\t"
      "[-D,--device_implementation <implementation number> (only 0: host buffers)] \n\t"
      "[-V,--device_cta_count <number> (ignored: host buffers)] \n\t"
      "[-M,--memory <0/1> enable memory usage report (default: 0)] \n\t"
      "[-u,--unalign <index of first element> Misalign source and destination buffers "
      "(default: 0)] \n\t"
      "[-I,--per_iter_timing <0/1> per-iteration timing (default: 0)] \n\t"
      "[-K,--per_iter_skip <count> exclude leading samples from -I summary stats (default: 0)] "
      "\n\t"
      "[-h,--help]\n",
      programName);
}

int toInt(const char* text) {
  return static_cast<int>(std::strtol(text, nullptr, 0));
}

}  // namespace

double parseSize(const char* text) {
  double size = 0;
  char unit = 0;
  int fields = std::sscanf(text, "%lf %1c", &size, &unit);
  if (fields < 1 || size < 0) return -1.0;
  if (fields == 1) return size;
  switch (unit) {
    case 'G':
    case 'g':
      return size * 1024.0 * 1024.0 * 1024.0;
    case 'M':
    case 'm':
      return size * 1024.0 * 1024.0;
    case 'K':
    case 'k':
      return size * 1024.0;
    default:
      return -1.0;
  }
}

int parsePerfOptions(int argc, char** argv, const char* programName, PerfOptions* options) {
  static const option kLongOptions[] = {{"nthreads", required_argument, nullptr, 't'},
                                        {"ngpus", required_argument, nullptr, 'g'},
                                        {"minbytes", required_argument, nullptr, 'b'},
                                        {"maxbytes", required_argument, nullptr, 'e'},
                                        {"stepbytes", required_argument, nullptr, 'i'},
                                        {"stepfactor", required_argument, nullptr, 'f'},
                                        {"iters", required_argument, nullptr, 'n'},
                                        {"agg_iters", required_argument, nullptr, 'm'},
                                        {"warmup_iters", required_argument, nullptr, 'w'},
                                        {"run_cycles", required_argument, nullptr, 'N'},
                                        {"parallel_init", required_argument, nullptr, 'p'},
                                        {"check", required_argument, nullptr, 'c'},
                                        {"op", required_argument, nullptr, 'o'},
                                        {"datatype", required_argument, nullptr, 'd'},
                                        {"root", required_argument, nullptr, 'r'},
                                        {"blocking", required_argument, nullptr, 'z'},
                                        {"stream_null", required_argument, nullptr, 'y'},
                                        {"timeout", required_argument, nullptr, 'T'},
                                        {"cudagraph", required_argument, nullptr, 'G'},
                                        {"report_cputime", required_argument, nullptr, 'C'},
                                        {"report_timestamps", required_argument, nullptr, 'S'},
                                        {"report_algorithm", required_argument, nullptr, 'A'},
                                        {"output_file", required_argument, nullptr, 'J'},
                                        {"average", required_argument, nullptr, 'a'},
                                        {"local_register", required_argument, nullptr, 'R'},
                                        {"cta_policy", required_argument, nullptr, 'x'},
                                        {"device_implementation", required_argument, nullptr, 'D'},
                                        {"device_cta_count", required_argument, nullptr, 'V'},
                                        {"memory", required_argument, nullptr, 'M'},
                                        {"unalign", required_argument, nullptr, 'u'},
                                        {"per_iter_timing", required_argument, nullptr, 'I'},
                                        {"per_iter_skip", required_argument, nullptr, 'K'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {nullptr, 0, nullptr, 0}};
  PerfOptions& o = *options;
  int longIndex = 0;
  for (;;) {
    int c =
        getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:A:",
                    kLongOptions, &longIndex);
    if (c == -1) break;
    double parsed = 0;
    switch (c) {
      case 't':
        o.nThreads = toInt(optarg);
        break;
      case 'g':
        o.nGpus = toInt(optarg);
        break;
      case 'b':
      case 'e':
      case 'i':
        parsed = parseSize(optarg);
        if (parsed < 0) {
          std::fprintf(stderr, "invalid size specified for '%s'\n",
                       c == 'b'   ? "minbytes"
                       : c == 'e' ? "maxbytes"
                                  : "stepBytes");
          return 255;
        }
        (c == 'b'   ? o.minBytes
         : c == 'e' ? o.maxBytes
                    : o.stepBytes) = static_cast<std::size_t>(parsed);
        break;
      case 'f':
        o.stepFactor = std::strtoul(optarg, nullptr, 0);
        break;
      case 'n':
        o.iters = toInt(optarg);
        break;
      case 'm':
        o.aggIters = toInt(optarg);
        break;
      case 'w':
        o.warmupIters = toInt(optarg);
        break;
      case 'N':
        o.runCycles = toInt(optarg);
        break;
      case 'c':
        o.check = toInt(optarg);
        break;
      case 'p':
        o.parallelInit = toInt(optarg);
        break;
      case 'o':
        o.opIndex = opIndexFromName(optarg);
        if (o.opIndex == -2) {
          std::printf("invalid op %s, defaulting to %s .. \n", optarg, kOpNames[0]);
          o.opIndex = 0;
        }
        break;
      case 'd':
        o.typeIndex = typeIndexFromName(optarg);
        if (o.typeIndex == -2) {
          std::printf("invalid type %s, defaulting to %s .. \n", optarg, kTypes[7].testsName);
          o.typeIndex = 7;
        }
        break;
      case 'r':
        o.root = toInt(optarg);
        break;
      case 'z':
        o.blocking = toInt(optarg);
        break;
      case 'y':
        o.streamNull = toInt(optarg);
        break;
      case 'T':
        o.timeoutSeconds = toInt(optarg);
        break;
      case 'G':
        o.cudaGraphLaunches = toInt(optarg);
        if (o.cudaGraphLaunches > 0) {
          o.notes.push_back("-G (CUDA graph) ignored: host buffers run without CUDA graphs");
          o.cudaGraphLaunches = 0;
        }
        break;
      case 'C':
        o.reportCpuTime = toInt(optarg);
        break;
      case 'S':
        o.reportTimestamps = toInt(optarg);
        break;
      case 'A':
        o.reportAlgorithm = toInt(optarg);
        break;
      case 'J':
        o.outputFile = optarg;
        break;
      case 'a':
        o.average = toInt(optarg);
        break;
      case 'R':
        o.localRegister = toInt(optarg);
        if (o.localRegister < 0 || o.localRegister > 2) {
          o.notes.push_back("-R takes 0, 1 or 2; using 1");
          o.localRegister = 1;
        }
        break;
      case 'x':
        o.ctaPolicy = toInt(optarg);
        break;
      case 'D':
        o.deviceImplementation = toInt(optarg);
        break;
      case 'V':
        o.deviceCtaCount = toInt(optarg);
        o.notes.push_back("-V (device CTA count) ignored: no device implementation");
        break;
      case 'M':
        o.memoryReport = toInt(optarg);
        break;
      case 'u':
        o.unalign = toInt(optarg);
        break;
      case 'I':
        o.perIterTiming = toInt(optarg);
        break;
      case 'K':
        o.perIterSkip = toInt(optarg);
        break;
      case 'h':
        printUsage(programName);
        return 0;
      default:
        // getopt already named the bad option on stderr.
        printUsage(programName);
        return 255;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
    return 255;
  }
  if (o.minBytes > o.maxBytes) {
    std::fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %llu > %llu\n",
                 static_cast<unsigned long long>(o.minBytes),
                 static_cast<unsigned long long>(o.maxBytes));
    return 255;
  }
  if (o.nThreads < 1 || o.nGpus < 1 || o.iters < 1 || o.aggIters < 1 || o.warmupIters < 0 ||
      o.runCycles < 0 || o.check < 0 || o.unalign < 0) {
    std::fprintf(stderr, "-t, -g, -n and -m must be at least 1; -w, -N, -c and -u not negative\n");
    return 255;
  }
  if (o.localRegister == 2 && o.nGpus > 1) {
    o.notes.push_back(
        "-R 2 with -g > 1: window registration is collective, one rank per thread; "
        "registering locally (-R 1)");
    o.localRegister = 1;
  }
  if (o.stepFactor <= 1 && o.stepBytes == 0) {
    std::fprintf(stderr, "-i (stepbytes) must be positive when -f (stepfactor) is 1\n");
    return 255;
  }
  if (o.average < 0 || o.average > 3) {
    std::fprintf(stderr, "-a (average) must be 0, 1, 2 or 3\n");
    return 255;
  }
  if (o.deviceImplementation != 0) {
    std::fprintf(stderr,
                 "device implementation (-D > 0) is not available: Braid's perf tests use host "
                 "buffers and the library's own collectives\n");
    return 255;
  }
  if (o.perIterTiming != 0 && o.perIterTiming != 1) {
    std::fprintf(stderr, "per-iteration timing (-I) only supports 0=off or 1=on. Disabling.\n");
    o.perIterTiming = 0;
  }
  if (o.perIterSkip < 0 || o.perIterSkip >= o.iters) {
    if (o.perIterSkip != 0) {
      std::fprintf(stderr, "per-iteration skip (-K) must be between 0 and %d. Disabling.\n",
                   o.iters - 1);
    }
    o.perIterSkip = 0;
  }
  if (o.perIterSkip && !o.perIterTiming) {
    std::fprintf(stderr,
                 "per-iteration skip (-K) requires per-iteration timing (-I 1). Disabling.\n");
    o.perIterSkip = 0;
  }
  return -1;
}

}  // namespace braid::bench
