// Environment variables, read when a communicator is created (so tests can change them between
// communicators) and logged once at INFO level when set.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

std::string envString(const char* name, const char* fallback = "");
int64_t envInt(const char* name, int64_t fallback);
double envDouble(const char* name, double fallback);
bool envIsSet(const char* name);

}  // namespace braid
