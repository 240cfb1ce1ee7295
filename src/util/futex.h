// Futex wait/wake on 32-bit words that may live in memory shared between processes.
#pragma once

#include <atomic>
#include <cstdint>

namespace braid {

/// Sleeps while *word == expected, at most timeoutNs. Spurious returns are allowed.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs);
/// Wakes every waiter on word.
void futexWakeAll(std::atomic<uint32_t>* word);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace braid
