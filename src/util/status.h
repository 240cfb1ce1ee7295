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

}  // namespace braid

/// Propagates a failure from a call that already recorded its reason.
#define BRAID_TRY(expr)                                       \
  do {                                                        \
    ncclResult_t braid_try_res_ = (expr);                     \
    if (braid_try_res_ != ncclSuccess) return braid_try_res_; \
  } while (0)
