#include "util/env.h"

#include <cstdlib>

#include "util/log.h"

namespace braid {

std::string envString(const char* name, const char* fallback) {
  const char* v = getenv(name);
  if (!v) return fallback;
  BRAID_INFO(kSubsysEnv, "%s set by environment to %s", name, v);
  return v;
}

int64_t envInt(const char* name, int64_t fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = strtoll(v, &end, 0);
  if (*end != 0) {
    BRAID_WARN("Invalid value %s for %s, using default %lld", v, name, (long long)fallback);
    return fallback;
  }
  BRAID_INFO(kSubsysEnv, "%s set by environment to %lld", name, x);
  return x;
}

double envDouble(const char* name, double fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double x = strtod(v, &end);
  if (*end != 0) {
    BRAID_WARN("Invalid value %s for %s, using default %g", v, name, fallback);
    return fallback;
  }
  BRAID_INFO(kSubsysEnv, "%s set by environment to %g", name, x);
  return x;
}

bool envIsSet(const char* name) {
  return getenv(name) != nullptr;
}

}  // namespace braid
