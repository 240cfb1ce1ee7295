#include "perf_options.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

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

// Sizes keep nccl-tests' syntax (parseSize); CLI11 hands the text over unparsed.
void addSize(CLI::App& app, const char* flags, const char* name, std::size_t* target) {
  app.add_option_function<std::string>(flags, [name, target](const std::string& text) {
    double parsed = parseSize(text.c_str());
    if (parsed < 0) {
      throw CLI::ValidationError(std::string("invalid size specified for '") + name + "'");
    }
    *target = static_cast<std::size_t>(parsed);
  });
}

// Integers in C's syntax (strtoll base 0), whole text, within [minimum, maximum]: CLI11's own
// check would read an empty value as 0 and name the type FLOAT in its message.
CLI::Validator integerIn(long long minimum, long long maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        long long value = std::strtoll(text.c_str(), &end, 0);
        if (text.empty() || *end != '\0') return "'" + text + "' is not an integer";
        if (errno == ERANGE || value < minimum || value > maximum) {
          return "'" + text + "' is outside " + std::to_string(minimum) + ".." +
                 std::to_string(maximum);
        }
        return "";
      },
      "INT");
}

void addNumber(CLI::App& app, const char* flags, int* target) {
  app.add_option(flags, *target)->check(integerIn(INT_MIN, INT_MAX));
}

// Every numeric flag takes C's integer syntax (strtol base 0, as nccl-tests' atoi/strtol: 0x10,
// 010), and the last of repeated flags wins, as with getopt.
void defineOptions(CLI::App& app, PerfOptions& o, std::string* opName, std::string* typeName) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_help_flag("-h,--help");
  addNumber(app, "-t,--nthreads", &o.nThreads);
  addNumber(app, "-g,--ngpus", &o.nGpus);
  addSize(app, "-b,--minbytes", "minbytes", &o.minBytes);
  addSize(app, "-e,--maxbytes", "maxbytes", &o.maxBytes);
  addSize(app, "-i,--stepbytes", "stepBytes", &o.stepBytes);
  app.add_option("-f,--stepfactor", o.stepFactor)->check(integerIn(0, LLONG_MAX));
  addNumber(app, "-n,--iters", &o.iters);
  addNumber(app, "-m,--agg_iters", &o.aggIters);
  addNumber(app, "-w,--warmup_iters", &o.warmupIters);
  addNumber(app, "-N,--run_cycles", &o.runCycles);
  addNumber(app, "-p,--parallel_init", &o.parallelInit);
  addNumber(app, "-c,--check", &o.check);
  app.add_option("-o,--op", *opName);
  app.add_option("-d,--datatype", *typeName);
  addNumber(app, "-r,--root", &o.root);
  addNumber(app, "-z,--blocking", &o.blocking);
  addNumber(app, "-y,--stream_null", &o.streamNull);
  addNumber(app, "-T,--timeout", &o.timeoutSeconds);
  addNumber(app, "-G,--cudagraph", &o.cudaGraphLaunches);
  addNumber(app, "-C,--report_cputime", &o.reportCpuTime);
  addNumber(app, "-S,--report_timestamps", &o.reportTimestamps);
  addNumber(app, "-A,--report_algorithm", &o.reportAlgorithm);
  app.add_option("-J,--output_file", o.outputFile);
  addNumber(app, "-a,--average", &o.average);
  addNumber(app, "-R,--local_register", &o.localRegister);
  addNumber(app, "-x,--cta_policy", &o.ctaPolicy);
  addNumber(app, "-D,--device_implementation", &o.deviceImplementation);
  addNumber(app, "-V,--device_cta_count", &o.deviceCtaCount);
  addNumber(app, "-M,--memory", &o.memoryReport);
  addNumber(app, "-u,--unalign", &o.unalign);
  addNumber(app, "-I,--per_iter_timing", &o.perIterTiming);
  addNumber(app, "-K,--per_iter_skip", &o.perIterSkip);
}

// What nccl-tests does with the values it accepts but adjusts: invalid -o/-d names fall back to
// the defaults with a message, ignored device options leave a note for the header.
void applyNames(const CLI::App& app, PerfOptions& o, const std::string& opName,
                const std::string& typeName) {
  if (app.count("-o") != 0) {
    o.opIndex = opIndexFromName(opName.c_str());
    if (o.opIndex == -2) {
      std::printf("invalid op %s, defaulting to %s .. \n", opName.c_str(), kOpNames[0]);
      o.opIndex = 0;
    }
  }
  if (app.count("-d") != 0) {
    o.typeIndex = typeIndexFromName(typeName.c_str());
    if (o.typeIndex == -2) {
      std::printf("invalid type %s, defaulting to %s .. \n", typeName.c_str(), kTypes[7].testsName);
      o.typeIndex = 7;
    }
  }
  if (o.cudaGraphLaunches > 0) {
    o.notes.push_back("-G (CUDA graph) ignored: host buffers run without CUDA graphs");
    o.cudaGraphLaunches = 0;
  }
  if (app.count("-R") != 0 && (o.localRegister < 0 || o.localRegister > 2)) {
    o.notes.push_back("-R takes 0, 1 or 2; using 1");
    o.localRegister = 1;
  }
  if (app.count("-V") != 0) {
    o.notes.push_back("-V (device CTA count) ignored: no device implementation");
  }
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
  PerfOptions& o = *options;
  CLI::App app("", programName);
  std::string opName, typeName;
  defineOptions(app, o, &opName, &typeName);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    printUsage(programName);
    return 0;
  } catch (const CLI::ExtrasError& e) {
    std::fprintf(stderr, "%s: %s\n", programName, e.what());
    printUsage(programName);
    return 255;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", programName, e.what());
    return 255;
  }
  applyNames(app, o, opName, typeName);
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
