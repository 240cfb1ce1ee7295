// The random words every generated input comes from: one 64-bit word per (seed, rank, index),
// the same on every rank and in every process, so each rank can compute any rank's input and
// with it the exact result. Header only: the hash runs once per element in the checks' loops.
#pragma once

#include <cstdint>

namespace braid::verifiable {

/// splitmix64's finaliser: a bijective mix of all 64 bits.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The key of one rank's stream; rank -1 names a stream shared by all ranks (a per-element
/// choice every rank must agree on).
constexpr std::uint64_t rankKey(std::uint64_t seed, int rank) {
  return mix64(seed * 0x100000001b3ull + static_cast<std::uint64_t>(rank) + 1);
}

/// Word `index` of a stream (rankKey precomputed where a loop runs over indices).
constexpr std::uint64_t streamWord(std::uint64_t key, std::uint64_t index) {
  return mix64(index + key);
}

constexpr std::uint64_t inputWord(std::uint64_t seed, int rank, std::uint64_t index) {
  return streamWord(rankKey(seed, rank), index);
}

/// A seed for an independent family of words drawn under the same seed (the values, a
/// per-element exponent, zeros, ...), or for one part of a larger input (a gradient, a step).
constexpr std::uint64_t subSeed(std::uint64_t seed, std::uint64_t part) {
  return mix64(seed ^ (part * 0xd1b54a32d192ed03ull));
}

/// An integer in [-amplitude, amplitude] (signed) or [0, amplitude] from a word.
constexpr std::int64_t uniformInteger(std::uint64_t word, std::int64_t amplitude, bool isSigned) {
  const auto a = static_cast<std::uint64_t>(amplitude);
  if (!isSigned) return static_cast<std::int64_t>(word % (a + 1));
  return static_cast<std::int64_t>(word % (2 * a + 1)) - amplitude;
}

/// A real in [0, 1) with 53 random bits.
constexpr double unitInterval(std::uint64_t word) {
  return static_cast<double>(word >> 11) * 0x1.0p-53;
}

}  // namespace braid::verifiable
