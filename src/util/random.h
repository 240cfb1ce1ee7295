// Unpredictable bytes for secrets and segment names.
#pragma once

#include <cstddef>
#include <string>

namespace braid {

/// Fills buf with bytes from the kernel's CSPRNG. Returns false if none could be had.
bool secureRandom(void* buf, size_t len);
/// Lowercase hex of len random bytes.
std::string randomHex(size_t len);

}  // namespace braid
