#include "tuner/cost_model.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "algorithms/algorithm_registry.h"
#include "patterns/tree.h"
#include "util/log.h"

namespace braid {
namespace {

// Each algorithm's shape (algorithm_traits.h) is the textbook schedule corrected by factors
// fitted to algorithm_race sweeps (every algorithm forced, side by side in one run:
// docs/performance.md, "Tuner"): steps = c0 + c1 (n-1) + c2 log2(n) latencies, stepFactor what
// one of its steps costs against the transport's alpha, and bytesFactor (+ bytesFactorPerPeer per
// peer) how far its data path falls short of the byte counts (scratch copies, slot handoffs that
// wait on every peer; on TCP, peers' sockets that run in parallel narrow the gap). Three kinds of
// link have lines of their own: shared memory or same-process FIFOs with a core per rank (fitted
// at 2 ranks to the choices, not the times: tools/tuner-sweep's paired turns), the same with
// more ranks than cores (every step waits for a peer to be scheduled; 3 and 4 ranks), and TCP
// (the sockets and the proxy threads are the limit; one line for every rank count: the fit
// separated by cores per rank made no better choices).

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

// The line of `cost` that prices a call on `model`'s links with n ranks.
const CostShape& shapeOf(const CommCostModel& model, const CostModelShapes& cost, int n) {
  const bool powerOfTwo = n > 0 && (n & (n - 1)) == 0;
  if (model.link == LinkClass::kTcp) {
    if (powerOfTwo && cost.tcpPowerOfTwo) return *cost.tcpPowerOfTwo;
    if (cost.tcp) return *cost.tcp;
  }
  if (model.oversubscribe <= 1 && cost.dedicated) return *cost.dedicated;
  return cost.shared;
}

// The most tree edges that cross one host's link: a host's edges to its parent and child hosts
// in both trees of the double binary tree over `hosts` (2 at 2 hosts; 4 from 4 hosts on, where
// a host is inner in one tree and a leaf in the other).
int edgesAtBusiestHost(int hosts) {
  int most = 0;
  for (int h = 0; h < hosts; h++) {
    int edges = 0;
    for (int which = 0; which < 2; which++) {
      const patterns::TreeNode t = patterns::doubleBinaryTree(h, hosts, which);
      edges += (t.parent >= 0) + t.nchildren();
    }
    most = std::max(most, edges);
  }
  return most;
}

// The allreduce's double binary tree across hosts (NCCL's: a tree over the hosts, a chain
// through each host's ranks; Team::treeNode). Each tree moves half the message up and back down
// every edge, so a host's link carries half the message per edge it has in both trees, each way
// (the message at 2 hosts, twice it from 4); those bytes are priced as the hierarchical
// allreduce's ring between hosts prices its bytes on the same links. A pass crosses log2(H)
// host levels, each one network hop and at most one hop along a chain to where the child host
// hangs, then the last host's chain; the chains pass the message on within hosts, in parallel
// with the links (pipelined in slots: the slowest of the two paces it).
double treeAcrossHostsUs(const CommCostModel& model, int n, const CollArgs& args) {
  const int h = model.hosts;
  const int l = model.ranksPerHost > 0 ? model.ranksPerHost : (n + h - 1) / h;
  const double S = static_cast<double>(args.count) * args.elemSize;
  const double slow = std::max(1.0, model.oversubscribe);
  const double netBeta = slow * 1e-3 / model.cost.gbps;
  const double withinBeta = slow * 1e-3 / model.withinHost.gbps;
  const double gamma = slow * 1e-3 / model.cost.reduceGbps;
  const double levels = ceilLog2(h);
  const CostShape& tree = shapeOf(model, treeAllReduce()->traits().cost, n);
  const CostShape& ring = shapeOf(model, ringAllReduce()->traits().cost, h);
  const double linkFactor = ring.bytesFactor + ring.bytesFactorPerPeer * std::min(h - 1, 3);
  const double chainSteps = l > 1 ? levels + l - 1 : 0;
  const double steps = 2 * (tree.stepFactor * levels * slow * model.cost.alphaUs +
                            chainSteps * slow * model.withinHost.alphaUs);
  // The pipeline fills one slot per network level before the links all carry data.
  const double fill = levels * std::min(S / 2, model.slotBytes) * netBeta * linkFactor;
  const double link = linkFactor * edgesAtBusiestHost(h) * (S / 2) * netBeta;
  // Each rank sends and receives its halves up and down both trees (twice the message), at most
  // one network peer per tree: the tree's own data path, fitted on TCP (kTcpShapes), with one
  // peer's share.
  const double path = (tree.bytesFactor + tree.bytesFactorPerPeer) * 2 * S * netBeta;
  const double chain = (l > 1 ? S : 0) * withinBeta;
  return steps + fill + std::max({link, path, chain}) + S * gamma;
}

// The ring of `coll`: the hierarchical schedules' step between hosts.
const Algorithm& ringOf(CollType coll) {
  switch (coll) {
    case CollType::kBroadcast:
      return *ringBroadcast();
    case CollType::kReduce:
      return *ringReduce();
    case CollType::kAllGather:
      return *ringAllGather();
    case CollType::kReduceScatter:
      return *ringReduceScatter();
    default:
      return *ringAllReduce();
  }
}

// The hierarchical schedules (hierarchy.h): rings within each host over that host's transport,
// and rings between the hosts whose l streams (one per local rank) share each host's link, so
// the link's share is priced as one ring over the H hosts of l times the per-rank data (the
// allreduce's and the rooted collectives': the whole message, sliced l ways). The allreduce's
// step between hosts is a ring or (`treeBetween`) a double binary tree over the hosts.
double hierarchicalUs(const CommCostModel& model, const CollArgs& args, bool treeBetween) {
  const int l = model.ranksPerHost, h = model.hosts;
  const double S = static_cast<double>(args.count) * args.elemSize;
  const double slow = std::max(1.0, model.oversubscribe);
  const LinkCost& within = model.withinHost;
  const double alpha = slow * within.alphaUs, beta = slow * 1e-3 / within.gbps;
  const double gamma = slow * 1e-3 / model.cost.reduceGbps, part = (l - 1.0) / l;
  CommCostModel across = model;
  across.hosts = 1;
  CollArgs wide = args;
  switch (args.coll) {
    case CollType::kAllReduce: {  // reduce-scatter, allreduce of a slice between hosts, allgather
      CommCostModel counterparts = model;  // between hosts: one rank on each
      counterparts.ranksPerHost = 1;
      const double betweenUs = treeBetween
                                   ? treeAcrossHostsUs(counterparts, h, args)
                                   : estimateCollectiveUs(across, h, args, *ringAllReduce());
      return 2 * (l - 1) * alpha + 2 * part * S * beta + part * S * gamma + betweenUs;
    }
    case CollType::kAllGather:  // between hosts, then H blocks a step within the host
      wide.count *= l;
      return estimateCollectiveUs(across, h, wide, ringOf(args.coll)) +
             (l - 1) * h * (alpha + S * beta);
    case CollType::kReduceScatter:  // H blocks a step within the host, then between hosts
      wide.count *= l;
      return (l - 1) * h * (alpha + S * (beta + gamma)) +
             estimateCollectiveUs(across, h, wide, ringOf(args.coll));
    case CollType::kBroadcast:  // the root's host's chain, slices between hosts, allgather
      return (l - 1) * alpha + S * beta + estimateCollectiveUs(across, h, args, ringOf(args.coll)) +
             (l - 1) * alpha + part * S * beta;
    case CollType::kReduce:  // reduce-scatter, slices to the root's host, gathered at the root
      return (l - 1) * alpha + part * S * (beta + gamma) +
             estimateCollectiveUs(across, h, args, ringOf(args.coll)) + alpha + part * S * beta;
    default:
      return 1e300;
  }
}

}  // namespace

namespace {

/// The tuner file's keys of the device line, in the order they travel from rank 0.
struct DeviceCostKey {
  const char* key;
  double DeviceCosts::*member;
};
constexpr DeviceCostKey kDeviceCostKeys[kDeviceCostFigures] = {
    {"launch_us", &DeviceCosts::launchUs},
    {"hop_simple_us", &DeviceCosts::hopUsSimple},
    {"hop_ll_us", &DeviceCosts::hopUsLL},
    {"hop_ll128_us", &DeviceCosts::hopUsLL128},
    {"channel_gbps", &DeviceCosts::channelGBps},
    {"ll_efficiency", &DeviceCosts::llEfficiency},
    {"ll128_efficiency", &DeviceCosts::ll128Efficiency},
    {"channel_bytes", &DeviceCosts::bytesPerChannel}};

}  // namespace

bool parseLinkCosts(const std::string& text, LinkCosts* costs, std::string* error) {
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    number++;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    LinkCost* target = strcasecmp(name.c_str(), "local") == 0 ? &costs->local
                       : strcasecmp(name.c_str(), "shm") == 0 ? &costs->shm
                       : strcasecmp(name.c_str(), "tcp") == 0 ? &costs->tcp
                                                              : nullptr;
    const bool device = strcasecmp(name.c_str(), "device") == 0;
    if (!target && !device) {
      *error = "line " + std::to_string(number) + ": unknown transport '" + name + "'";
      return false;
    }
    for (std::string field; words >> field;) {
      size_t eq = field.find('=');
      char* end = nullptr;
      double value = eq == std::string::npos ? 0 : strtod(field.c_str() + eq + 1, &end);
      std::string key = field.substr(0, eq);
      if (eq == std::string::npos || !end || *end != '\0' || !(value > 0) ||
          !std::isfinite(value)) {
        *error = "line " + std::to_string(number) + ": '" + field + "' is not key=positive number";
        return false;
      }
      if (device) {
        const DeviceCostKey* found = nullptr;
        for (const DeviceCostKey& k : kDeviceCostKeys)
          if (key == k.key) found = &k;
        if (!found) {
          *error = "line " + std::to_string(number) + ": unknown key '" + key + "'";
          return false;
        }
        costs->device.*found->member = value;
      } else if (key == "alpha_us")
        target->alphaUs = value;
      else if (key == "gbps")
        target->gbps = value;
      else if (key == "reduce_gbps")
        target->reduceGbps = value;
      else {
        *error = "line " + std::to_string(number) + ": unknown key '" + key + "'";
        return false;
      }
    }
  }
  return true;
}

DeviceCosts defaultDeviceCosts() {
  return DeviceCosts{};
}

void deviceCostFigures(const DeviceCosts& costs, double* figures) {
  for (int i = 0; i < kDeviceCostFigures; ++i) figures[i] = costs.*kDeviceCostKeys[i].member;
}

DeviceCosts deviceCostsFromFigures(const double* figures) {
  DeviceCosts costs;
  for (int i = 0; i < kDeviceCostFigures; ++i) costs.*kDeviceCostKeys[i].member = figures[i];
  return costs;
}

LinkCosts defaultLinkCosts() {
  LinkCosts c;
  // What the calibration measures on the reference machine (docs/performance.md, "Where the
  // constants come from"; the figures: docs/results.md): kernels' copy and reduce at 4 MiB, TCP
  // loopback between two pinned threads; the shm alpha is the ring's step on shared cores.
  c.local = {1.2, 12.6, 22.5};
  c.shm = {1.6, 10.8, 22.5};
  c.tcp = {57.0, 1.5, 22.5};
  return c;
}

std::string formatLinkCosts(const LinkCosts& costs) {
  std::string text;
  const std::pair<const char*, const LinkCost*> rows[] = {
      {"local", &costs.local}, {"shm", &costs.shm}, {"tcp", &costs.tcp}};
  for (auto [name, c] : rows) {
    char line[160];
    snprintf(line, sizeof(line), "%s alpha_us=%.4g gbps=%.4g reduce_gbps=%.4g\n", name, c->alphaUs,
             c->gbps, c->reduceGbps);
    text += line;
  }
  text += "device";
  for (const DeviceCostKey& k : kDeviceCostKeys) {
    char field[64];
    snprintf(field, sizeof(field), " %s=%.6g", k.key, costs.device.*k.member);
    text += field;
  }
  return text + "\n";
}

const char* linkClassName(LinkClass c) {
  return c == LinkClass::kLocal ? "local" : c == LinkClass::kShm ? "shm" : "tcp";
}

double estimateCollectiveUs(const CommCostModel& model, int n, const CollArgs& args,
                            const Algorithm& algorithm) {
  const LinkCost& c = model.cost;
  const double S = static_cast<double>(args.count) * args.elemSize;  // bytes per rank's buffer
  // Ranks beyond the cores take turns: every step and every byte waits for a core.
  const double slow = std::max(1.0, model.oversubscribe);
  const double beta = slow * 1e-3 / c.gbps, gamma = slow * 1e-3 / c.reduceGbps;  // us per byte
  const double a = slow * c.alphaUs, part = (n - 1.0) / n, lg = ceilLog2(n);
  const CostModelShapes& cost = algorithm.traits().cost;
  if (n == 1 || cost.formula == CostFormula::kCopy)
    return args.sendbuff == args.recvbuff ? 0 : S * beta;
  if (cost.formula == CostFormula::kHierarchicalRing ||
      cost.formula == CostFormula::kHierarchicalTree) {
    if (model.hosts < 2 || model.ranksPerHost < 2) return 1e300;  // (never supported there)
    return hierarchicalUs(model, args, cost.formula == CostFormula::kHierarchicalTree);
  }
  if (cost.treeAcrossHosts && model.hosts > 1) return treeAcrossHostsUs(model, n, args);
  const CostShape& shape = shapeOf(model, cost, n);
  // A binary tree of n ranks is floor(log2 n) deep: the broadcast tree's depth.
  const double depth = std::floor(std::log2(n));
  // Recursive doubling folds the ranks beyond a power of two in before its steps and out after
  // them: two steps more than log2 of that power.
  const double doublings = cost.foldsBeyondPowerOfTwo ? depth + ((n & (n - 1)) ? 2 : 0) : lg;
  double steps =
      shape.stepFactor * (shape.c0 + shape.c1 * (n - 1) + shape.c2 * doublings + shape.c3 * depth);
  // A chain pays each hop's latency once: across hosts, in host order, H-1 of its n-1 hops cross
  // the network and the rest stay within a host (a ring reduce-scatter or allgather waits on its
  // slowest hop at every step instead).
  if (shape.chain && model.hosts > 1 && model.cost.alphaUs > 0)
    steps = shape.stepFactor *
            ((model.hosts - 1) + (n - model.hosts) * model.withinHost.alphaUs / model.cost.alphaUs);
  const CollectiveInfo& info = collectiveInfo(args.coll);
  const Traffic& moved = shape.ownTraffic ? shape.moved : info.moved;
  const Traffic& reduced = shape.ownTraffic ? shape.reduced : info.reduced;
  auto amount = [&](const Traffic& t) {
    return t.once * S + t.part * part * S + t.peers * (n - 1) * S +
           t.fill * std::max(0, n - 2) * std::min(S, model.slotBytes) + t.logs * lg * S;
  };
  const double bytes = amount(moved) * beta + amount(reduced) * gamma;
  // The per-peer term was fitted on 2-4 ranks (1-3 peers): it is not extrapolated beyond them.
  const double factor = shape.bytesFactor + shape.bytesFactorPerPeer * std::min(n - 1, 3);
  return steps * a + factor * bytes;
}

double estimateP2pUs(const CommCostModel& m, size_t transfers, size_t bytes) {
  const double slow = std::max(1.0, m.oversubscribe);
  return slow * (static_cast<double>(transfers > 0) * m.cost.alphaUs +
                 static_cast<double>(bytes) * 1e-3 / m.cost.gbps);
}

}  // namespace braid
