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

// Per-algorithm corrections of the textbook counts, fitted to the all_reduce_perf sweep
// (docs/performance.md, "Tuner"). steps = c0 + c1 (n-1) + c2 ceil(log2 n) latencies; the byte
// terms are multiplied by bytesFactor: how far an algorithm's data path falls short of the ring's
// pipelined one (extra scratch copies, slot handoffs that wait on every peer, sockets in
// parallel on TCP).
struct Shape {
  const char* name;
  double c0, c1, c2, bytesFactor;
};
// Shared memory and same-process FIFOs: memory bandwidth is the limit.
constexpr Shape kMemoryShapes[] = {{"Ring", 0, 2, 0, 1.0},
                                   {"Direct", 1, 0.5, 0, 1.23},
                                   {"Tree", 2, 0, 2, 1.35},
                                   {"TwoShot", 3, 1.25, 0, 1.4},
                                   {"Rabenseifner", 3, 1, 2, 2.5}};
// TCP: the sockets are the limit, and peers' sockets run in parallel.
constexpr Shape kTcpShapes[] = {{"Ring", 0, 2, 0, 1.0},
                                {"Direct", 1, 0.5, 0, 0.95},
                                {"Tree", 1, 0, 2, 1.0},
                                {"TwoShot", 2, 0.5, 0, 1.05},
                                {"Rabenseifner", 1.5, 0, 2, 1.4}};

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
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
  switch (args.coll) {
    case CollType::kAllReduce: {
      Shape shape = kMemoryShapes[0];
      for (const Shape& s : model.link == LinkClass::kTcp ? kTcpShapes : kMemoryShapes)
        if (is(s.name)) shape = s;
      const double steps = shape.c0 + shape.c1 * (n - 1) + shape.c2 * lg;
      double bytes = 2 * part * S * beta + part * S * gamma;  // Ring, TwoShot, Rabenseifner
      if (is("Direct")) bytes = (n - 1) * S * (beta + gamma);
      if (is("Tree")) bytes = 2 * S * beta + S * gamma;
      return steps * a + shape.bytesFactor * bytes;
    }
    case CollType::kBroadcast:
      if (is("Tree")) return lg * a + 2 * S * beta;
      return (n - 1) * a + S * beta;
    case CollType::kReduce:
      return (n - 1) * a + S * (beta + gamma);
    case CollType::kAllGather:  // count is per rank: the gathered buffer is n times it
      return (is("Bruck") ? lg : n - 1.0) * a + (n - 1) * S * beta;
    case CollType::kReduceScatter:  // count is per rank: each rank's input is n times it
      return (is("Bruck") ? lg : n - 1.0) * a + (n - 1) * S * (beta + gamma);
  }
  return 0;
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
