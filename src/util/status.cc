#include "util/status.h"

#include <cstdio>

#include "util/log.h"

namespace braid {
namespace {
thread_local std::string tlsLastError;

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}
}  // namespace

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tlsLastError = vformat(fmt, ap);
  va_end(ap);
  BRAID_LOG(kLogInfo, kSubsysAll, "error %d: %s", static_cast<int>(code), tlsLastError.c_str());
  return code;
}

ncclResult_t addContext(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string ctx = vformat(fmt, ap);
  va_end(ap);
  tlsLastError = tlsLastError.empty() ? ctx : ctx + ": " + tlsLastError;
  return code;
}

const std::string& lastError() {
  return tlsLastError;
}
void setLastError(const std::string& text) {
  tlsLastError = text;
}
void clearLastError() {
  tlsLastError.clear();
}

}  // namespace braid
