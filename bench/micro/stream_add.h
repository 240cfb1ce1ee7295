// The STREAM "add" loop, c[i] = a[i] + b[i] on doubles, compiled for each ISA variant so the
// kernels are compared with plain compiler-vectorised code of the same width.
#pragma once

#include <cstddef>

#include "kernels/cpu/isa.h"

namespace braid::bench {

using StreamAddFn = void (*)(double* c, const double* a, const double* b, std::size_t n);

/// The STREAM add for a variant's ISA (the caller checks the CPU runs it).
StreamAddFn streamAddFor(kernels::cpu::Variant variant);

}  // namespace braid::bench
