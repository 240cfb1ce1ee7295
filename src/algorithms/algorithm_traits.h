// What an algorithm is, beside what it does: the word NCCL_ALGO names it by, how it moves data
// (NCCL_PROTO's word), whether the tuner takes it before ranking anything, and the shape the
// tuner's cost model prices it with. Each algorithm declares its traits in its own file, so the
// tuner, the filters and the tests iterate the registry instead of naming algorithms
// (docs/design.md, "Recipes"; unit.AlgorithmTraits checks every registered one).
#pragma once

#include <optional>

#include "algorithms/collectives.h"

namespace braid {

/// NCCL_PROTO's word for how an algorithm moves data.
enum class WireProtocol {
  kSimple,  ///< slots with a separate flag (NCCL's Simple)
  kLL,      ///< data and flag in one cache line (NCCL's LL; the mailbox)
};
const char* wireProtocolName(WireProtocol p);

/// When the tuner takes an algorithm.
enum class Preference {
  kRanked,             ///< by the cost model's estimate against the others
  kWhereverSupported,  ///< before any ranking, wherever it supports the call (registry order)
};

/// An algorithm's schedule in the alpha-beta-gamma model (tuner/cost_model.h): steps = c0 + c1
/// (n-1) + c2 log2(n) + c3 floor(log2 n) latencies of stepFactor times the transport's alpha,
/// and its collective's traffic (collectives.h), or its own, at bytesFactor (+ per peer, for up to
/// 3 peers) times the byte counts: the corrections fitted to measurement (docs/performance.md,
/// "Tuner").
struct CostShape {
  double c0 = 0, c1 = 1, c2 = 0;
  double stepFactor = 1, bytesFactor = 1;
  double bytesFactorPerPeer = 0;
  double c3 = 0;
  bool ownTraffic = false;
  Traffic moved{}, reduced{};
  /// A pipelined chain (the ring broadcast and reduce): each hop's latency is paid once, so
  /// across hosts only the hops that cross the network cost the network's latency.
  bool chain = false;
};

// Traffic of algorithms whose data path is not their collective's textbook schedule: every
// peer's whole message, each rank reducing all of them (one-shot); twice the message up and down
// a tree, reduced once on the way up; the whole message sent and reduced once per doubling step.
inline constexpr Traffic kToEveryPeer{0, 0, 1, 0};
inline constexpr Traffic kTwiceMessage{2, 0, 0, 0};
inline constexpr Traffic kOnceMessage{1, 0, 0, 0};
inline constexpr Traffic kEachStep{0, 0, 0, 0, 1};

/// Which formula prices the algorithm.
enum class CostFormula {
  kSteps,             ///< the shapes below
  kCopy,              ///< one copy when out of place, nothing in place (Self)
  kHierarchicalRing,  ///< rings within hosts, a ring between them (hierarchy.h)
  kHierarchicalTree,  ///< rings within hosts, a double binary tree between them
};

/// The shapes of kSteps, per kind of link: `shared` (memory links with more ranks than cores)
/// holds wherever no other line applies; `dedicated` on memory links with a core per rank (and
/// over TCP without a line of its own); `tcp` and, at a power of two, `tcpPowerOfTwo` over TCP.
struct CostModelShapes {
  CostFormula formula = CostFormula::kSteps;
  CostShape shared{};
  std::optional<CostShape> dedicated = std::nullopt, tcp = std::nullopt;
  std::optional<CostShape> tcpPowerOfTwo = std::nullopt;
  /// Recursive doubling: ranks beyond a power of two fold in before the steps and out after.
  bool foldsBeyondPowerOfTwo = false;
  /// Across hosts, a double binary tree over the hosts with a chain within each (allreduce).
  bool treeAcrossHosts = false;
};

struct AlgorithmTraits {
  const char* name;  ///< NCCL_ALGO's word, the logs' and the flight recorder's name
  WireProtocol protocol = WireProtocol::kSimple;
  Preference preference = Preference::kRanked;
  /// The fewest ranks it runs on (its supports() refuses fewer; the tuner leaves them to others).
  int fewestRanks = 2;
  CostModelShapes cost{};
};

/// A shape every transport shares (the collectives other than the allreduce).
inline CostModelShapes sameOnEveryLink(const CostShape& s) {
  CostModelShapes c;
  c.shared = s;
  return c;
}

}  // namespace braid
