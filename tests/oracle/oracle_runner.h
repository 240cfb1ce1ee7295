// One rank's side of an oracle run: create the communicator, check which transports it chose,
// then for every case fill the inputs, poison the output (and a guard zone past its end), call
// ncclAllReduce, and compare EVERY element with the exact expected value. Each rank reports a
// digest of all its outputs so the test can assert that all ranks hold the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "oracle/case_buffer.h"
#include "oracle/oracle_data.h"

namespace braid::oracle {

struct OracleCase {
  ncclDataType_t dtype;
  OpKind op;
  size_t count;
  bool inPlace;
};
std::string caseName(const OracleCase& c);

struct OracleRun {
  std::vector<OracleCase> cases;
  uint64_t seed = 1;
  /// Transports each neighbour connection may use (e.g. {"local"}); empty: not checked.
  std::vector<std::string> transports;
  /// How the case buffers are allocated and registered (kNone: plain memory).
  Registration registration = Registration::kNone;
};

/// The rank function: runs every case of `run` on this rank's communicator.
void runOracleRank(test::RankContext& ctx, const OracleRun& run);

/// Checks a finished run: every rank ok, same output digest everywhere, every case done.
/// Returns "" when all is well, else what went wrong.
std::string verifyOracleReport(const test::RunReport& report, const OracleRun& run);

}  // namespace braid::oracle
