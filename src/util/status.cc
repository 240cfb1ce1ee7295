#include "util/status.h"

#include <cstdio>

#include "util/log.h"

namespace braid {
namespace {
thread_local std::string tlsThreadError;
// Where error text goes now: the thread's last error, or the innermost ErrorCapture.
thread_local std::string* tlsErrorText = nullptr;

std::string& errorText() {
  return tlsErrorText ? *tlsErrorText : tlsThreadError;
}

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}
}  // namespace

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string& text = errorText();
  text = vformat(fmt, ap);
  va_end(ap);
  BRAID_LOG(kLogInfo, kSubsysAll, "error %d: %s", static_cast<int>(code), text.c_str());
  return code;
}

ncclResult_t addContext(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string ctx = vformat(fmt, ap);
  va_end(ap);
  std::string& text = errorText();
  text = text.empty() ? ctx : ctx + ": " + text;
  return code;
}

const std::string& lastError() {
  return errorText();
}
void setLastError(const std::string& text) {
  errorText() = text;
}
void clearLastError() {
  errorText().clear();
}

ErrorCapture::ErrorCapture() : outer_(tlsErrorText) {
  tlsErrorText = &text_;
}
ErrorCapture::~ErrorCapture() {
  tlsErrorText = outer_;
}

}  // namespace braid
