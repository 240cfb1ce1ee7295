// Shared by the oracle test executables: one point of the algorithm x transport x ranks grid,
// its test name, and running a case list there in one of the harness's rank shapes.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "oracle/oracle_matrix.h"

namespace braid::oracle {

struct GridPoint {
  const char* algo;       ///< NCCL_ALGO
  const char* transport;  ///< BRAID_TRANSPORTS and the transport every connection must use
  int nranks;
  /// Buffers from ncclMemAlloc, registered (zero-copy runs from 1 byte up at these points).
  Registration registration = Registration::kNone;
  /// Processes only: the ranks on this many emulated hosts (NCCL_HOSTID, rank r on host r % hosts),
  /// `transport` within a host and TCP over loopback between hosts; 0: one host.
  int hosts = 0;
};

inline void PrintTo(const GridPoint& p, std::ostream* os) {
  *os << p.algo << "/" << p.transport << "/" << p.nranks << " ranks";
  if (p.registration != Registration::kNone) *os << "/registered " << int(p.registration);
  if (p.hosts > 0) *os << "/" << p.hosts << " hosts";
}

inline std::string gridName(const ::testing::TestParamInfo<GridPoint>& info) {
  static const char* const kRegistration[] = {"", "_registered", "_windows",
                                              "_evenRanksRegistered"};
  return std::string(info.param.algo) + "_" + info.param.transport + "_" +
         std::to_string(info.param.nranks) + "ranks" +
         kRegistration[static_cast<int>(info.param.registration)] +
         (info.param.hosts > 0 ? "_" + std::to_string(info.param.hosts) + "hosts" : "");
}

using Env = std::vector<std::pair<std::string, std::string>>;

/// Runs `cases` at grid point `p` in the given shape and checks every rank's every element,
/// and that all ranks hold the same output bits. The seed comes from the test's name.
/// Between namespaces every connection is TCP, or `p.transport` when it is a network's ("net",
/// chosen by `extraEnv`: NCCL_NET_PLUGIN...); `extraEnv` is added to every rank's environment.
void runGridPoint(test::RankShape shape, const GridPoint& p, const std::vector<OracleCase>& cases,
                  size_t slotBytes = kSlotBytes, double timeoutS = 240, const Env& extraEnv = {});

}  // namespace braid::oracle
