// A check inside a fuzz target: a violated property aborts, which libFuzzer (or the plain
// driver, fuzz_main.cc) reports as a crash together with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      abort();                                                                       \
    }                                                                                \
  } while (0)
