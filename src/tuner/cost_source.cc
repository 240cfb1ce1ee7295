#include "tuner/cost_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "tuner/calibration.h"
#include "util/log.h"
#include "util/settings.h"

namespace braid {

std::string tunerCachePath() {
  std::string path = settingText(Setting::kTunerCache);
  if (!path.empty()) return path;
  std::string dir = settingText(Setting::kXdgCacheHome);
  if (dir.empty()) {
    std::string home = settingText(Setting::kHome);
    if (home.empty()) return "";
    dir = home + "/.cache";
  }
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  return dir + "/braid/tuner-" + host + ".txt";
}

bool readLinkCostsFile(const std::string& path, LinkCosts* costs, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot be read";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  LinkCosts parsed = *costs;
  if (!parseLinkCosts(text.str(), &parsed, error)) return false;
  *costs = parsed;
  return true;
}

bool writeLinkCostsFile(const std::string& path, const LinkCosts& costs, std::string* error) {
  // mkdir -p of the parent folders; existing ones are fine.
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1))
    mkdir(path.substr(0, slash).c_str(), 0755);
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(temp.c_str(), "w");
  if (!f) {
    *error = "cannot create " + temp;
    return false;
  }
  std::string text = "# Braid cost model constants, measured at init (docs/performance.md)\n" +
                     formatLinkCosts(costs);
  bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = fclose(f) == 0 && ok;
  if (ok && rename(temp.c_str(), path.c_str()) == 0) return true;
  unlink(temp.c_str());
  *error = "cannot write " + path;
  return false;
}

namespace {

HostCosts resolveHostCosts() {
  HostCosts h{defaultLinkCosts(), "built-in"};
  std::string error;
  if (std::string file = settingText(Setting::kTunerFile); !file.empty()) {
    if (readLinkCostsFile(file, &h.costs, &error))
      h.source = "file " + file;
    else
      BRAID_WARN("BRAID_TUNER_FILE=%s: %s; using the built-in costs", file.c_str(), error.c_str());
    return h;
  }
  if (settingInt(Setting::kTunerCalibrate) == 0) return h;
  const std::string cache = tunerCachePath();
  if (!cache.empty() && access(cache.c_str(), F_OK) == 0) {
    if (readLinkCostsFile(cache, &h.costs, &error)) {
      h.source = "cache " + cache;
      return h;
    }
    BRAID_WARN("tuner cache %s: %s; measuring again", cache.c_str(), error.c_str());
    h.costs = defaultLinkCosts();
  }
  auto start = std::chrono::steady_clock::now();
  CalibrationFigures f = measureHost();
  h.costs = linkCostsFromFigures(f);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  BRAID_INFO(kSubsysTune | kSubsysInit,
             "tuner calibration in %.1f ms: copy %.2f GB/s, reduce %.2f GB/s, thread one-way "
             "%.3f us, tcp one-way %.2f us, tcp %.2f GB/s",
             ms, f.copyGbps, f.reduceGbps, f.threadOneWayUs, f.tcpOneWayUs, f.tcpGbps);
  h.source = "calibration";
  if (cache.empty()) return h;
  // No batch of the thread ping-pong fit its budget: every core was busy, so the figures are
  // this moment's neighbours as much as the host's. They serve this process; the cache, which
  // every later process on the host would read, waits for a measurement of the host itself.
  if (!calibratedOnFreeCores(f)) {
    h.source += " with every core busy, not cached";
    return h;
  }
  if (writeLinkCostsFile(cache, h.costs, &error))
    h.source += ", cached at " + cache;
  else
    BRAID_WARN("tuner cache: %s (the next process measures again)", error.c_str());
  return h;
}

}  // namespace

const HostCosts& hostLinkCosts() {
  static const HostCosts costs = [] {
    HostCosts h = resolveHostCosts();
    std::string text = formatLinkCosts(h.costs);
    for (char& c : text)
      if (c == '\n') c = ';';
    BRAID_INFO(kSubsysTune | kSubsysInit, "tuner constants from %s: %s", h.source.c_str(),
               text.c_str());
    return h;
  }();
  return costs;
}

TunerWire tunerWireFor(const LinkCosts& c, int cores) {
  TunerWire w;
  const LinkCost* rows[] = {&c.local, &c.shm, &c.tcp};
  for (int i = 0; i < 3; i++) {
    w.figures[3 * i] = rows[i]->alphaUs;
    w.figures[3 * i + 1] = rows[i]->gbps;
    w.figures[3 * i + 2] = rows[i]->reduceGbps;
  }
  deviceCostFigures(c.device, w.device);
  w.cores = cores;
  w.valid = 1;
  return w;
}

CommCostModel commCostModel(const TunerWire& rank0, const std::vector<PeerInfo>& peers,
                            const std::vector<std::string>& allowed) {
  LinkCosts costs = defaultLinkCosts();
  if (rank0.valid) {
    LinkCost* rows[] = {&costs.local, &costs.shm, &costs.tcp};
    for (int i = 0; i < 3; i++)
      *rows[i] = {rank0.figures[3 * i], rank0.figures[3 * i + 1], rank0.figures[3 * i + 2]};
    costs.device = deviceCostsFromFigures(rank0.device);
  }
  // One representative pair per relation (other host, other process on this host, same
  // process): each relation's transport is the same for every such pair.
  const int n = static_cast<int>(peers.size());
  std::map<uint64_t, int> firstOnHost, firstInProcess, ranksOnHost;
  std::vector<std::pair<int, int>> pairs;
  bool otherHost = false, otherProcess = false, sameProcess = false;
  for (int r = 0; r < n; r++) {
    const PeerInfo& p = peers[r];
    ranksOnHost[p.hostHash]++;
    if (!otherHost && p.hostHash != peers[0].hostHash) otherHost = true, pairs.push_back({0, r});
    auto [host, newHost] = firstOnHost.emplace(p.hostHash, r);
    auto [proc, newProcess] = firstInProcess.emplace(p.processHash, r);
    if (!newProcess && !sameProcess) sameProcess = true, pairs.push_back({proc->second, r});
    if (newProcess && !newHost && !otherProcess)
      otherProcess = true, pairs.push_back({host->second, r});
  }
  CommCostModel m;
  m.device = costs.device;
  m.link = LinkClass::kLocal;
  LinkClass within = LinkClass::kLocal;  // the slowest transport between ranks of one host
  TransportContext ctx;
  ctx.nranks = n;
  ctx.peers = &peers;
  ctx.allowed = allowed;
  for (auto [from, to] : pairs) {
    ctx.rank = from;
    Transport* t = chooseHostTransport(ctx, to);
    const LinkClass c = t ? t->traits().link : LinkClass::kTcp;
    m.link = std::max(m.link, c);
    if (peers[from].hostHash == peers[to].hostHash) within = std::max(within, c);
  }
  m.cost = m.link == LinkClass::kTcp   ? costs.tcp
           : m.link == LinkClass::kShm ? costs.shm
                                       : costs.local;
  int busiest = 1;
  for (auto& [host, count] : ranksOnHost) busiest = std::max(busiest, count);
  m.hosts = static_cast<int>(ranksOnHost.size());
  m.ranksPerHost = ranksOnHost.begin()->second;
  for (auto& [host, count] : ranksOnHost)
    if (count != m.ranksPerHost) m.ranksPerHost = 0;
  m.withinHost = within == LinkClass::kTcp   ? costs.tcp
                 : within == LinkClass::kShm ? costs.shm
                                             : costs.local;
  m.oversubscribe = std::max(1.0, static_cast<double>(busiest) / std::max(1, rank0.cores));
  return m;
}

}  // namespace braid
