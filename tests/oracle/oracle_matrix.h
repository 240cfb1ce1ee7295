// Building blocks of the oracle test matrix: case lists, the per-run environment (algorithm,
// transport, slot size), seeds, and the counts that matter for the pipeline.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oracle/oracle_runner.h"

namespace braid::oracle {

/// FIFO slot size for the matrix: small, so modest counts already span many chunks.
constexpr size_t kSlotBytes = 4096;
/// A prime above the largest per-slot element count (4096 one-byte elements).
constexpr size_t kPrimeAboveChunk = 4099;
/// Several chunks per rank for every dtype at up to 8 ranks (and many for 8-byte types).
constexpr size_t kSeveralChunks = 40009;
/// 16 MiB of 4-byte elements.
constexpr size_t k16MiBFloats = (16u << 20) / 4;

/// 0, 1, 7 and a prime above the chunk size.
const std::vector<size_t>& smallCounts();

std::vector<ncclDataType_t> allDTypes();
std::vector<OpKind> allOps();

/// Cross product of dtypes x ops x counts, each in place and out of place.
/// Every dtype x op at counts that fit the low-latency mailbox (0, 1, 7, the prime 503), plus
/// each dtype's largest count that fits (sum, in and out of place).
std::vector<OracleCase> mailboxCases();
std::vector<OracleCase> crossCases(const std::vector<ncclDataType_t>& dtypes,
                                   const std::vector<OpKind>& ops,
                                   const std::vector<size_t>& counts);

/// Environment of one run: NCCL_ALGO, BRAID_TRANSPORTS (empty: the library's choice), the slot
/// size, a test-sized timeout, and the loopback interface for TCP between local ranks.
std::vector<std::pair<std::string, std::string>> oracleEnv(const std::string& algo,
                                                           const std::string& transport,
                                                           size_t slotBytes = kSlotBytes);

/// A seed from a name (the test's), so every run of a test sees the same data.
uint64_t seedFrom(const std::string& name);

}  // namespace braid::oracle
