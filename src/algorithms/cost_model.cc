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

LinkCosts defaults() {
  LinkCosts c;
  // 2-core VM, docs/measurements.md: 8 B allreduce 1.3 us over 2 ring steps at 2 ranks (shm),
  // 55 us over TCP loopback; busbw 4.6 GB/s shm and 1.3 GB/s TCP at 1-4 MiB; reduction at
  // STREAM-add speed, about 15 GB/s.
  c.local = {0.5, 6.0, 15.0};
  c.shm = {0.7, 5.0, 15.0};
  c.tcp = {25.0, 1.3, 15.0};
  return c;
}

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

const LinkCosts& linkCosts() {
  static const LinkCosts costs = [] {
    LinkCosts c = defaults();
    const char* path = getenv("BRAID_TUNER_FILE");
    if (!path || !*path) return c;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    LinkCosts fromFile = c;
    std::string error;
    if (!in)
      BRAID_WARN("BRAID_TUNER_FILE=%s cannot be read; using the built-in costs", path);
    else if (!parseLinkCosts(text.str(), &fromFile, &error))
      BRAID_WARN("BRAID_TUNER_FILE=%s: %s; using the built-in costs", path, error.c_str());
    else
      c = fromFile;
    return c;
  }();
  return costs;
}

LinkCost linkCostFor(const ncclComm& comm) {
  const LinkCosts& all = linkCosts();
  LinkCost cost = all.local;
  int localRanks = 1;
  for (size_t p = 0; p < comm.sendTo.size(); p++) {
    if (!comm.sendTo[p]) continue;
    const char* t = comm.sendTo[p]->transportName();
    if (strcmp(t, "tcp") == 0)
      cost = all.tcp;
    else if (strcmp(t, "shm") == 0 && cost.alphaUs < all.shm.alphaUs)
      cost = all.shm;
    if (strcmp(t, "tcp") != 0) localRanks++;
  }
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  if (localRanks > cores) cost.alphaUs *= static_cast<double>(localRanks) / cores;
  return cost;
}

double estimateCollectiveUs(const ncclComm& comm, const CollArgs& args, const char* algorithm) {
  const LinkCost c = linkCostFor(comm);
  const int n = comm.nranks;
  const double S = static_cast<double>(args.count) * args.elemSize;  // bytes per rank's buffer
  const double beta = 1e-3 / c.gbps, gamma = 1e-3 / c.reduceGbps;    // us per byte
  const double a = c.alphaUs, part = (n - 1.0) / n, lg = ceilLog2(n);
  auto is = [algorithm](const char* name) { return strcasecmp(algorithm, name) == 0; };
  if (n == 1 || is("Self")) return args.sendbuff == args.recvbuff ? 0 : S * beta;
  switch (args.coll) {
    case CollType::kAllReduce:
      if (is("Direct")) return a + (n - 1) * S * (beta + gamma);
      if (is("TwoShot")) return 2 * a + 2 * part * S * beta + part * S * gamma;
      if (is("Tree")) return 2 * lg * a + 2 * S * beta + S * gamma;
      if (is("Rabenseifner")) return 2 * lg * a + 2 * part * S * beta + part * S * gamma;
      return 2 * (n - 1) * a + 2 * part * S * beta + part * S * gamma;  // Ring
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

double estimateP2pUs(const ncclComm& comm, size_t transfers, size_t bytes) {
  const LinkCost c = linkCostFor(comm);
  return static_cast<double>(transfers > 0) * c.alphaUs +
         static_cast<double>(bytes) * 1e-3 / c.gbps;
}

}  // namespace braid
