#include "compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>

#include "cases.h"
#include "results.h"
#include "verifiable/element_codec.h"

namespace braid::validate_nccl {
namespace {

struct Cell {
  long long records = 0, mismatched = 0;
};

struct Totals {
  long long records = 0, elements = 0, mismatched = 0, badElements = 0, rejected = 0;
  long long skipped = 0;  ///< records of a collective only one library has
  Cell cells[kNumColls][ncclNumTypes];
  double worst[kNumColls] = {};  ///< max |a - b| / bound over the inexact elements
};

std::string hexOf(const unsigned char* element, std::size_t size) {
  std::string text = "0x";
  char digits[3];
  for (std::size_t i = size; i-- > 0;) {  // little endian: most significant byte last
    std::snprintf(digits, sizeof digits, "%02x", element[i]);
    text += digits;
  }
  return text;
}

class Comparer {
 public:
  Comparer(const ResultsReader& a, const ResultsReader& b, int shown)
      : a_(a), b_(b), shown_(shown), nranks_(a.header().nranks), seed_(a.header().seed) {}

  Totals run() {
    std::uint32_t common = a_.header().collMask & b_.header().collMask;
    std::set<CaseKey> keys;
    for (const auto& [key, record] : a_.records()) keys.insert(key);
    for (const auto& [key, record] : b_.records()) keys.insert(key);
    for (const CaseKey& key : keys) {
      if (!(common >> key.coll & 1)) {
        totals_.skipped++;
        continue;
      }
      compareRecord(key);
    }
    return totals_;
  }

 private:
  void compareRecord(const CaseKey& key) {
    Cell& cell = totals_.cells[key.coll][key.type];
    cell.records++;
    totals_.records++;
    auto inA = a_.records().find(key), inB = b_.records().find(key);
    if (inA == a_.records().end() || inB == b_.records().end()) {
      return fail(cell, key, inA == a_.records().end() ? "missing in A" : "missing in B");
    }
    int statusA = inA->second.status, statusB = inB->second.status;
    if (statusA != 0 || statusB != 0) {
      std::string text = "A: " + (statusA ? a_.errorText(key) : std::string("ran")) +
                         "; B: " + (statusB ? b_.errorText(key) : std::string("ran"));
      // Both refusing the same way is agreement, but nothing was validated: counted apart.
      if (statusA == statusB) {
        if (totals_.rejected++ < shown_)
          std::printf("REJECTED BY BOTH %s: %s\n", describe(key).c_str(), text.c_str());
        return;
      }
      return fail(cell, key, text);
    }
    std::vector<unsigned char> dataA = a_.payload(key), dataB = b_.payload(key);
    if (dataA.size() != dataB.size()) {
      return fail(
          cell, key,
          "A has " + std::to_string(dataA.size()) + " bytes, B " + std::to_string(dataB.size()));
    }
    compareElements(cell, key, dataA, dataB);
  }

  void fail(Cell& cell, const CaseKey& key, const std::string& why) {
    cell.mismatched++;
    totals_.mismatched++;
    std::printf("MISMATCH %s: %s\n", describe(key).c_str(), why.c_str());
  }

  void compareElements(Cell& cell, const CaseKey& key, const std::vector<unsigned char>& a,
                       const std::vector<unsigned char>& b) {
    auto type = static_cast<ncclDataType_t>(key.type);
    std::size_t size = validate::typeBytes(type), count = a.size() / size;
    totals_.elements += static_cast<long long>(count);
    bool isFloat = validate::isFloatType(type) && key.op >= 0;  // copies compare bytes
    bool zeroSignFree =
        key.op == static_cast<int>(Op::kMax) || key.op == static_cast<int>(Op::kMin);
    long long bad = 0;
    std::string details;
    for (std::size_t i = 0; i < count; ++i) {
      const unsigned char* x = &a[i * size];
      const unsigned char* y = &b[i * size];
      if (std::memcmp(x, y, size) == 0) continue;
      double allowed = allowedDifference(key, nranks_, seed_, i);
      double va = verifiable::loadElement(x, 0, type), vb = verifiable::loadElement(y, 0, type);
      bool ok = false;
      if (isFloat) {
        // IEEE 754 leaves the sign of max(+0, -0) open: either zero is right.
        if (zeroSignFree && va == 0 && vb == 0) ok = true;
        double difference = std::fabs(va - vb);
        if (allowed > 0 && !std::isnan(difference)) {
          ok = ok || difference <= allowed;
          totals_.worst[key.coll] = std::max(totals_.worst[key.coll], difference / allowed);
        }
      }
      if (ok) continue;
      if (bad++ < shown_) {
        char line[256];
        if (key.op < 0) {
          std::snprintf(line, sizeof line, "\n    element %zu: A %s, B %s", i,
                        hexOf(x, size).c_str(), hexOf(y, size).c_str());
        } else {
          std::snprintf(line, sizeof line,
                        "\n    element %zu: A %.17g (%s), B %.17g (%s), allowed %g", i, va,
                        hexOf(x, size).c_str(), vb, hexOf(y, size).c_str(), allowed);
        }
        details += line;
      }
    }
    if (!bad) return;
    totals_.badElements += bad;
    fail(cell, key,
         std::to_string(bad) + " of " + std::to_string(count) + " elements differ" + details);
  }

  const ResultsReader& a_;
  const ResultsReader& b_;
  int shown_;
  int nranks_;
  std::uint64_t seed_;
  Totals totals_;
};

void printSource(const char* name, const FileHeader& h) {
  std::printf("# %s: %s, NCCL version code %d, %s memory, %d ranks, seed %llu\n", name, h.library,
              h.libraryVersion, h.memory ? "device" : "host", h.nranks,
              static_cast<unsigned long long>(h.seed));
}

// Rows: collectives; columns: types; cells: mismatching records / records compared.
void printTable(const Totals& t) {
  std::printf("%-14s", "mismatched/of");
  for (int type = 0; type < ncclNumTypes; ++type)
    std::printf(" %9s", validate::typeName(static_cast<ncclDataType_t>(type)));
  std::printf("  worst |A-B|/bound\n");
  for (int c = 0; c < kNumColls; ++c) {
    bool any = false;
    for (int type = 0; type < ncclNumTypes; ++type) any |= t.cells[c][type].records > 0;
    if (!any) continue;
    std::printf("%-14s", collName(static_cast<Coll>(c)));
    for (int type = 0; type < ncclNumTypes; ++type) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "%lld/%lld", t.cells[c][type].mismatched,
                    t.cells[c][type].records);
      std::printf(" %9s", cell);
    }
    std::printf("  %.3g\n", t.worst[c]);
  }
}

}  // namespace

int compareFiles(const std::string& pathA, const std::string& pathB, int shown) {
  try {
    ResultsReader a(pathA), b(pathB);
    printSource("A", a.header());
    printSource("B", b.header());
    if (a.header().nranks != b.header().nranks || a.header().seed != b.header().seed) {
      std::printf("validate-nccl: the files come from different rank counts or seeds\n");
      return 2;
    }
    std::uint32_t onlyOne = a.header().collMask ^ b.header().collMask;
    for (int c = 0; c < kNumColls; ++c)
      if (onlyOne >> c & 1)
        std::printf("# %s: run by only one library, not compared\n",
                    collName(static_cast<Coll>(c)));
    Totals t = Comparer(a, b, shown).run();
    printTable(t);
    std::printf(
        "# %lld records, %lld elements compared: %lld records differ (%lld elements), "
        "%lld rejected by both: %s\n",
        t.records, t.elements, t.mismatched, t.badElements, t.rejected,
        t.mismatched ? "FAILED" : "OK");
    return t.mismatched ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("validate-nccl: %s\n", e.what());
    return 2;
  }
}

}  // namespace braid::validate_nccl
