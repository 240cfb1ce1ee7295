// Command line of the *_perf programs: nccl-tests' flags, long names, defaults and meanings.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace braid::bench {

struct PerfOptions {
  int nThreads = 1;                         ///< -t: threads per process
  int nGpus = 1;                            ///< -g: ranks driven by each thread
  std::size_t minBytes = 32 * 1024 * 1024;  ///< -b
  std::size_t maxBytes = 32 * 1024 * 1024;  ///< -e
  std::size_t stepBytes = 1 * 1024 * 1024;  ///< -i
  std::size_t stepFactor = 1;               ///< -f: >1 multiplies instead of adding -i
  int iters = 20;                           ///< -n
  int aggIters = 1;                         ///< -m: collectives per ncclGroupStart/End
  int warmupIters = 1;                      ///< -w
  int runCycles = 1;                        ///< -N: 0 = forever
  int parallelInit = 0;                     ///< -p: each thread creates its communicators
  int check = 1;                            ///< -c: checked runs per size (0 = no check)
  int opIndex = 0;                          ///< -o: index into kOpNames, -1 = all
  int typeIndex = 7;                        ///< -d: index into kTypes (float), -1 = all
  int root = 0;                             ///< -r: -1 = every root in turn
  int blocking = 0;                         ///< -z: 0..3, see the usage text
  int streamNull = 0;                       ///< -y: accepted; host buffers use NULL always
  int timeoutSeconds = 0;                   ///< -T: 0 = none
  int cudaGraphLaunches = 0;                ///< -G: accepted and ignored (host buffers)
  int reportCpuTime = 0;                    ///< -C
  int reportTimestamps = 0;                 ///< -S
  int reportAlgorithm = 0;                  ///< -A: a last column with the algorithm run
  std::string outputFile;                   ///< -J: JSON results file
  int average = 1;                          ///< -a: 0 rank 0, 1 avg, 2 min, 3 max
  int localRegister = 0;                    ///< -R: 1 ncclCommRegister, 2 symmetric window
  int ctaPolicy = -1;                       ///< -x: passed in ncclConfig_t when >= 0
  int deviceImplementation = 0;             ///< -D: must stay 0 (no device kernels)
  int deviceCtaCount = 16;                  ///< -V: accepted and ignored
  int memoryReport = 0;                     ///< -M
  int unalign = 0;                          ///< -u: element offset of every buffer
  int perIterTiming = 0;                    ///< -I
  int perIterSkip = 0;                      ///< -K
  /// Remarks about accepted-but-ignored or adjusted options, printed in the header by rank 0.
  std::vector<std::string> notes;
};

/// Parses argv into options (CLI11). Returns -1 to go on, or the exit status to stop with: 0
/// after --help, 255 for an unknown flag, a value that is not a number or a size, or values that
/// do not fit together (the reason on stderr). nccl-tests' own messages (an unknown -o/-d name
/// falls back to the default) go to stdout, as there.
int parsePerfOptions(int argc, char** argv, const char* programName, PerfOptions* options);

/// nccl-tests' size syntax: a number with an optional K, M or G suffix (powers of 1024).
/// Returns a negative value for malformed text.
double parseSize(const char* text);

}  // namespace braid::bench
