// The STREAM "add" loop, c[i] = a[i] + b[i] on doubles, compiled for each ISA variant so the
// kernels are compared with plain compiler-vectorised code of the same width.
#pragma once

#include <cstddef>

#include "kernels/cpu/isa.h"

namespace braid::bench {

using StreamAddFn = void (*)(double* c, const double* a, const double* b, std::size_t n);

/// The STREAM add for a variant's ISA (the caller checks the CPU runs it).
StreamAddFn streamAddFor(kernels::cpu::Variant variant);
/// The same add writing c with non-temporal (streaming) stores, which skip reading c's lines
/// before writing them: AVX2 only (nullptr elsewhere). It tells whether the kernels would gain
/// from such stores for outputs that are not re-read soon.
StreamAddFn streamAddNonTemporalFor(kernels::cpu::Variant variant);

}  // namespace braid::bench
