// Error reporting inside the library: functions return ncclResult_t and record the reason as the
// calling thread's last-error text, so the C API can hand it to ncclGetLastError unchanged.
#pragma once

#include <cstdarg>
#include <string>

#include "nccl.h"

namespace braid {

/// Records `fmt` as this thread's last error and returns `code` (so: `return fail(...)`).
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/// Prefixes the current last error with context ("while X: <old text>") and returns `code`.
ncclResult_t addContext(ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// This thread's last error text ("" when none).
const std::string& lastError();
void setLastError(const std::string& text);
void clearLastError();

/// While one lives, the error text that fail(), addContext() and setLastError() record on this
/// thread goes to it instead of the thread's last error (and lastError() reads it): for work
/// whose failures belong to something other than the call the thread is in, such as a
/// connection that a pull finds broken while the call waits on another one. Nests.
class ErrorCapture {
 public:
  ErrorCapture();
  ~ErrorCapture();
  ErrorCapture(const ErrorCapture&) = delete;
  ErrorCapture& operator=(const ErrorCapture&) = delete;

 private:
  std::string text_;
  std::string* outer_;
};

}  // namespace braid

/// Propagates a failure from a call that already recorded its reason.
#define BRAID_TRY(expr)                                       \
  do {                                                        \
    ncclResult_t braid_try_res_ = (expr);                     \
    if (braid_try_res_ != ncclSuccess) return braid_try_res_; \
  } while (0)
