// The formats of at most 16 bits (half, bfloat16, fp8) as a table of every value: decoding reads
// it, encoding rounds between two of its neighbours. The generators and checkers convert millions
// of elements per case, and the layout code (element_codec.h) takes a logarithm and two scalings
// per element. The table is filled by that same layout code (decodeFloatByLayout); encoding
// takes the pattern below from the double's bits and rounds by the table's midpoints, checked
// against encodeFloatByLayout on every value, midpoint and more (verifiable/tests).
#pragma once

#include <cstdint>
#include <vector>

#include "braid/datatypes.h"

namespace braid::verifiable {

class NarrowFormatTable {
 public:
  /// Every pattern of the format's width, decoded by the layout code.
  explicit NarrowFormatTable(const FloatFormat& format);

  /// The table of format (built on first use; one per format of at most 16 bits), or nullptr
  /// for a wider format or one that is not among the data types.
  static const NarrowFormatTable* of(const FloatFormat& format);

  double decode(std::uint64_t bits) const { return values_[bits & widthMask_]; }
  /// Nearest-even encoding, with the layout code's overflow: past the largest finite value by
  /// half a step or more (a tie going to the even pattern), infinity or the NaN pattern.
  std::uint64_t encode(double value) const;

 private:
  std::vector<double> values_;  ///< by bit pattern
  std::uint64_t widthMask_;
  std::uint64_t signBit_;
  std::uint64_t maxFinite_;  ///< pattern of the largest finite value
  std::uint64_t overflow_;   ///< what a positive overflow encodes to (infinity or the NaN pattern)
  std::uint64_t nan_;
  int mantissaBits_;
  int minNormalExponent_;     ///< 1 - bias
  double subnormalsPerUnit_;  ///< 1 / the smallest subnormal
};

}  // namespace braid::verifiable
