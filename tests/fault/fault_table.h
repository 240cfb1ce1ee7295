// The fault suite's table of figures: one row per scenario and transport (outcome of every rank,
// time to error, leftovers, the error text). Each row is printed as soon as its scenario ends;
// when the test process ends the whole table is printed again and, with
// BRAID_FAULT_TABLE=<file>, written there as Markdown (docs/reliability.md quotes it).
#pragma once

#include <string>
#include <vector>

namespace braid::fault {

struct FaultRow {
  std::string scenario;
  std::string wire;
  std::vector<std::string> ranks;  ///< one cell per rank
  std::string timeToError;         ///< slowest survivor's failing call, or "-"
  std::string leftovers;           ///< /dev/shm entries left behind, or "none"
  std::string error;               ///< the first failing rank's error text (shortened)
  bool passed = true;
};

/// Prints the row and keeps it for the final table.
void recordRow(const FaultRow& row);
/// The rows so far as a Markdown table.
std::string renderTable(const std::vector<FaultRow>& rows);

}  // namespace braid::fault
