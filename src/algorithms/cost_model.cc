#include "algorithms/cost_model.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/comm.h"
#include "util/log.h"

namespace braid {
namespace {

// Per-algorithm corrections of the textbook counts, fitted to the *_perf sweeps with NCCL_ALGO
// forced (docs/performance.md, "Tuner"): steps = c0 + c1 (n-1) + c2 log2(n) latencies, and the
// byte terms times bytesFactor, how far an algorithm's data path falls short of the ring's
// pipelined one (scratch copies, slot handoffs that wait on every peer; on TCP, peers' sockets
// that run in parallel narrow the gap).
struct Shape {
  CollType coll;
  const char* name;
  double c0, c1, c2, bytesFactor;
  double bytesFactorPerPeer = 0;  ///< added per peer (n-1): parallel sockets help more peers
};
using C = CollType;
// Shared memory and same-process FIFOs: memory bandwidth is the limit.
constexpr Shape kMemoryShapes[] = {{C::kAllReduce, "Ring", 0, 2, 0, 1.0},
                                   {C::kAllReduce, "Direct", 1, 0.5, 0, 1.23},
                                   {C::kAllReduce, "LowLatency", 0.25, 0.25, 0, 1.0},
                                   {C::kAllReduce, "Tree", 2, 0, 2, 1.35},
                                   // Its two phases wait on all peers at once: fewer
                                   // rounds than the ring's 2(n-1) once n > 2 (4 ranks on
                                   // 2 cores: 12.5 us at 8 B against the ring's 20).
                                   {C::kAllReduce, "TwoShot", 1.875, 0.625, 0, 1.2},
                                   {C::kAllReduce, "Rabenseifner", 3, 1, 2, 2.5}};
// TCP: the sockets are the limit.
constexpr Shape kTcpShapes[] = {{C::kAllReduce, "Ring", 0, 2, 0, 1.0},
                                // One-shot per slot, unpipelined, while the ring sends from
                                // and lands in the user's buffers: the ring overtook it at
                                // 32-64 KiB (2 ranks), 64-128 KiB (3, 4) on the idle VM.
                                {C::kAllReduce, "Direct", 1, 0.5, 0, 1.65},
                                // Never the fastest in the idle sweeps; at 1.0 it was picked
                                // at 4 ranks, 128 KiB, 1.13x behind.
                                {C::kAllReduce, "Tree", 1, 0, 2, 1.2},
                                {C::kAllReduce, "TwoShot", 0, 2, 0, 1.3},
                                {C::kAllReduce, "Rabenseifner", 1.5, 0, 2, 1.4}};
// The other collectives, on every transport (docs/design.md, "Selection"): Bruck's log2(n) steps
// move its blocks twice through scratch, and its reduce-scatter measured behind the ring even
// at 4 KiB.
constexpr Shape kOtherShapes[] = {
    {C::kBroadcast, "Ring", 0, 1, 0, 1.0},     {C::kBroadcast, "Tree", 0, 0, 1, 1.0},
    {C::kReduce, "Ring", 0, 1, 0, 1.0},        {C::kAllGather, "Ring", 0, 1, 0, 1.0},
    {C::kAllGather, "Bruck", 0, 0, 1, 2.0},    {C::kReduceScatter, "Ring", 0, 1, 0, 1.0},
    {C::kReduceScatter, "Bruck", 4, 0, 1, 2.0}};

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

Shape shapeOf(LinkClass link, CollType coll, const char* algorithm) {
  auto find = [&](const auto& table) -> const Shape* {
    for (const Shape& s : table)
      if (s.coll == coll && strcasecmp(s.name, algorithm) == 0) return &s;
    return nullptr;
  };
  const Shape* s = find(kOtherShapes);
  if (!s) s = link == LinkClass::kTcp ? find(kTcpShapes) : find(kMemoryShapes);
  return s ? *s : Shape{coll, algorithm, 0, 1, 0, 1.0};  // unknown: ring-like
}

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
    if (!target) {
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
      if (key == "alpha_us")
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

LinkCosts defaultLinkCosts() {
  LinkCosts c;
  // 2-core VM, all_reduce_perf with NCCL_ALGO forced (docs/performance.md, "Tuner"): 8 B ring
  // allreduce 3.3 us over 2 steps at 2 ranks on shm, 110 us over TCP loopback; 16 MiB at 3.8 GB/s
  // (shm) and 1.1 GB/s (TCP) per direction; reduction at STREAM-add speed, about 15 GB/s.
  c.local = {1.2, 4.5, 15.0};
  c.shm = {1.6, 3.8, 15.0};
  c.tcp = {55.0, 1.1, 15.0};
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
  return text;
}

const char* linkClassName(LinkClass c) {
  return c == LinkClass::kLocal ? "local" : c == LinkClass::kShm ? "shm" : "tcp";
}

double estimateCollectiveUs(const CommCostModel& model, int n, const CollArgs& args,
                            const char* algorithm) {
  const LinkCost& c = model.cost;
  const double S = static_cast<double>(args.count) * args.elemSize;  // bytes per rank's buffer
  // Ranks beyond the cores take turns: every step and every byte waits for a core.
  const double slow = std::max(1.0, model.oversubscribe);
  const double beta = slow * 1e-3 / c.gbps, gamma = slow * 1e-3 / c.reduceGbps;  // us per byte
  const double a = slow * c.alphaUs, part = (n - 1.0) / n, lg = ceilLog2(n);
  auto is = [algorithm](const char* name) { return strcasecmp(algorithm, name) == 0; };
  if (n == 1 || is("Self")) return args.sendbuff == args.recvbuff ? 0 : S * beta;
  const Shape shape = shapeOf(model.link, args.coll, algorithm);
  // A binary tree of n ranks is floor(log2 n) deep: the broadcast tree's depth.
  const double depth = std::floor(std::log2(n));
  const double steps =
      shape.c0 + shape.c1 * (n - 1) + shape.c2 * (args.coll == CollType::kBroadcast ? depth : lg);
  double bytes = 0;
  switch (args.coll) {
    case CollType::kAllReduce:
      bytes = 2 * part * S * beta + part * S * gamma;  // Ring, TwoShot, Rabenseifner
      if (is("Direct") || is("LowLatency")) bytes = (n - 1) * S * (beta + gamma);
      if (is("Tree")) bytes = 2 * S * beta + S * gamma;
      break;
    case CollType::kBroadcast:
      // The tree's parents send each slot twice; the ring's first slot crosses n-2 more hops
      // before the pipeline fills.
      bytes = is("Tree") ? 2 * S * beta : S * beta + (n - 2) * std::min(S, model.slotBytes) * beta;
      break;
    case CollType::kReduce:
      bytes = S * (beta + gamma);
      break;
    case CollType::kAllGather:  // count is per rank: the gathered buffer is n times it
      bytes = (n - 1) * S * beta;
      break;
    case CollType::kReduceScatter:  // count is per rank: each rank's input is n times it
      bytes = (n - 1) * S * (beta + gamma);
      break;
  }
  // Kept at 0.9 or more: fitted on 2-4 ranks, not to be extrapolated below the ring's cost.
  const double factor = std::max(0.9, shape.bytesFactor + shape.bytesFactorPerPeer * (n - 1));
  return steps * a + factor * bytes;
}

double estimateCollectiveUs(const ncclComm& comm, const CollArgs& args, const char* algorithm) {
  return estimateCollectiveUs(comm.costModel, comm.nranks, args, algorithm);
}

double estimateP2pUs(const ncclComm& comm, size_t transfers, size_t bytes) {
  const CommCostModel& m = comm.costModel;
  const double slow = std::max(1.0, m.oversubscribe);
  return slow * (static_cast<double>(transfers > 0) * m.cost.alphaUs +
                 static_cast<double>(bytes) * 1e-3 / m.cost.gbps);
}

}  // namespace braid
