#include "tuner/algo_filter.h"

#include <strings.h>

#include <algorithm>

#include "algorithms/algorithm_registry.h"

namespace braid {
namespace {

bool equalNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string_view algoSpecFor(std::string_view env, CollType coll) {
  if (env.find(':') == std::string_view::npos) return env;
  while (!env.empty()) {
    size_t end = std::min(env.find(';'), env.size());
    std::string_view part = env.substr(0, end);
    env.remove_prefix(std::min(end + 1, env.size()));
    size_t colon = part.find(':');
    if (colon != std::string_view::npos && equalNoCase(part.substr(0, colon), collName(coll)))
      return part.substr(colon + 1);
  }
  return {};
}

bool allowedBySpec(std::string_view spec, const char* name) {
  if (spec.empty()) return true;
  bool exclude = spec[0] == '^';
  if (exclude) spec.remove_prefix(1);
  bool listed = false;
  for (;;) {
    size_t end = std::min(spec.find(','), spec.size());
    if (equalNoCase(spec.substr(0, end), name)) listed = true;
    if (end == spec.size()) break;
    spec.remove_prefix(end + 1);
  }
  return exclude ? !listed : listed;
}

const char* protocolOf(const Algorithm* a) {
  return wireProtocolName(a->traits().protocol);
}

}  // namespace braid
