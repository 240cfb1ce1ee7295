#include "datatypes.h"

#include <cstring>

namespace braid::bench {

const char* const kOpNames[kNumOps] = {"sum", "prod", "max", "min", "avg", "mulsum"};

const TypeInfo& typeInfo(ncclDataType_t type) {
  return braid::dataType(type);
}

int typeIndexFromName(const char* name) {
  for (int t = 0; t < kNumTypes; ++t) {
    if (std::strcmp(name, kTypes[t].testsName) == 0) return t;
  }
  return std::strcmp(name, "all") == 0 ? -1 : -2;
}

int opIndexFromName(const char* name) {
  for (int o = 0; o < kNumOps; ++o) {
    if (std::strcmp(name, kOpNames[o]) == 0) return o;
  }
  return std::strcmp(name, "all") == 0 ? -1 : -2;
}

}  // namespace braid::bench
