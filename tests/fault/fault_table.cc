#include "fault/fault_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "harness/rank_harness.h"

namespace braid::fault {
namespace {

std::mutex rowsMutex;
std::vector<FaultRow>& rows() {
  static std::vector<FaultRow> all;
  return all;
}

std::string cell(std::string text) {
  for (char& c : text)
    if (c == '|' || c == '\n') c = c == '|' ? '/' : ' ';
  return text;
}

// Prints the whole table once every test ran (and writes it where BRAID_FAULT_TABLE says).
class TableEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (test::isNamespaceChild()) return;
    std::lock_guard<std::mutex> lock(rowsMutex);
    if (rows().empty()) return;
    std::string table = renderTable(rows());
    printf("\nFault table (%zu scenarios):\n%s", rows().size(), table.c_str());
    if (const char* path = getenv("BRAID_FAULT_TABLE")) {
      std::ofstream out(path);
      out << table;
      printf("written to %s\n", path);
    }
    fflush(stdout);
  }
};

[[maybe_unused]] const bool registered = [] {
  ::testing::AddGlobalTestEnvironment(new TableEnvironment);
  return true;
}();

}  // namespace

std::string renderTable(const std::vector<FaultRow>& all) {
  size_t maxRanks = 0;
  for (const FaultRow& r : all) maxRanks = std::max(maxRanks, r.ranks.size());
  std::ostringstream out;
  out << "| scenario | transport |";
  for (size_t i = 0; i < maxRanks; i++) out << " rank " << i << " |";
  out << " time to error | /dev/shm left | error text (first rank to fail) |\n|---|---|";
  for (size_t i = 0; i < maxRanks; i++) out << "---|";
  out << "---|---|---|\n";
  for (const FaultRow& r : all) {
    out << "| " << cell(r.scenario) << (r.passed ? "" : " **FAILED**") << " | " << r.wire << " |";
    for (size_t i = 0; i < maxRanks; i++)
      out << " " << (i < r.ranks.size() ? cell(r.ranks[i]) : "") << " |";
    out << " " << r.timeToError << " | " << cell(r.leftovers) << " | " << cell(r.error) << " |\n";
  }
  return out.str();
}

void recordRow(const FaultRow& row) {
  std::lock_guard<std::mutex> lock(rowsMutex);
  rows().push_back(row);
  printf("%s", renderTable({row}).c_str());
  fflush(stdout);
}

}  // namespace braid::fault
