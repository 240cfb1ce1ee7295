// The comparer: lines up two results files record by record and checks every element (bitwise
// where both libraries are exact by construction, within cases.h's bound otherwise).
#pragma once

#include <string>

namespace braid::validate_nccl {

/// Prints the collective x type table and the first `shown` differing elements of every
/// mismatching record. Returns 0 (all equal), 1 (any mismatch) or 2 (unreadable file).
int compareFiles(const std::string& pathA, const std::string& pathB, int shown);

}  // namespace braid::validate_nccl
