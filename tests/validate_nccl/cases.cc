#include "cases.h"

#include <algorithm>
#include <cmath>

#include "validate_data.h"
#include "verifiable/element_codec.h"
#include "verifiable/input_words.h"

namespace braid::validate_nccl {
namespace {

// NCCL adds fp8 in half precision and rounds the half sum to fp8: two roundings per step, so
// its unit is fp8's plus half's.
validate::Precision precisionOf(ncclDataType_t type) {
  validate::Precision p = validate::precisionOf(type);
  if (type == ncclFloat8e4m3 || type == ncclFloat8e5m2) p.unit += std::ldexp(1.0, -11);
  return p;
}

using validate::gamma;

}  // namespace

const char* collName(Coll coll) {
  static const char* const kNames[kNumColls] = {
      "allreduce", "reduce",  "reducescatter", "broadcast",    "allgather",  "alltoall",
      "gather",    "scatter", "sendrecv",      "alltoall.api", "gather.api", "scatter.api"};
  return kNames[static_cast<int>(coll)];
}

bool isReducing(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
}

bool isRooted(Coll coll) {
  switch (coll) {
    case Coll::kReduce:
    case Coll::kBroadcast:
    case Coll::kGather:
    case Coll::kScatter:
    case Coll::kGatherApi:
    case Coll::kScatterApi:
      return true;
    default:
      return false;
  }
}

bool hasInPlace(Coll coll) {
  // The calls whose in-place form NCCL documents; p2p and alltoall have none.
  return isReducing(coll) || coll == Coll::kBroadcast || coll == Coll::kAllGather;
}

std::string describe(const CaseKey& key) {
  Coll coll = static_cast<Coll>(key.coll);
  std::string text = collName(coll);
  text += std::string(" ") + validate::typeName(static_cast<ncclDataType_t>(key.type));
  if (key.op >= 0) {
    text += std::string(" ") + validate::opName(static_cast<Op>(key.op));
    text += static_cast<Values>(key.values) == Values::kExact ? " exact" : " real";
  } else {
    text += " copy";
  }
  text += " count " + std::to_string(key.count);
  if (isRooted(coll)) text += " root " + std::to_string(key.root);
  text += key.inPlace ? " in place" : " out of place";
  return text + " rank " + std::to_string(key.rank);
}

Layout layoutOf(const CaseKey& key, int nranks) {
  Layout l;
  std::size_t c = key.count, all = c * static_cast<std::size_t>(nranks);
  std::size_t mine = c * static_cast<std::size_t>(key.rank);
  bool isRoot = key.rank == key.root;
  switch (static_cast<Coll>(key.coll)) {
    case Coll::kAllReduce:
    case Coll::kSendRecv:
      l.send = l.recv = l.output = c;
      break;
    case Coll::kReduce:
      l.send = l.recv = l.output = c;
      l.hasOutput = isRoot;
      break;
    case Coll::kBroadcast:
      l.send = l.recv = l.output = c;
      l.placesInput = !key.inPlace || isRoot;  // NCCL reads only the root's buffer
      break;
    case Coll::kReduceScatter:
      // In place: recvbuff = sendbuff + rank * recvcount.
      l.send = all;
      l.recv = l.output = c;
      if (key.inPlace) l.recvAt = l.outputAt = mine;
      break;
    case Coll::kAllGather:
      // In place: sendbuff = recvbuff + rank * sendcount.
      l.send = c;
      l.recv = l.output = all;
      if (key.inPlace) l.inputAt = l.sendAt = mine;
      break;
    case Coll::kAlltoAll:
    case Coll::kAlltoAllApi:
      l.send = l.recv = l.output = all;
      break;
    case Coll::kGather:
    case Coll::kGatherApi:
      l.send = c;
      l.recv = l.output = all;
      l.hasOutput = isRoot;
      break;
    case Coll::kScatter:
    case Coll::kScatterApi:
      l.send = all;
      l.recv = l.output = c;
      break;
  }
  l.buffer = std::max(l.send, l.recv);
  return l;
}

validate::ValueSpec specOf(const CaseKey& key, int nranks, std::uint64_t seed) {
  Op op = key.op >= 0 ? static_cast<Op>(key.op) : Op::kSum;
  return validate::ValueSpec{static_cast<ncclDataType_t>(key.type), op,
                             static_cast<Values>(key.values), nranks, seed};
}

void fillInput(const CaseKey& key, int nranks, std::uint64_t seed, unsigned char* out,
               std::size_t elements) {
  auto type = static_cast<ncclDataType_t>(key.type);
  if (key.op < 0) {
    std::size_t bytes = elements * validate::typeBytes(type);
    const std::uint64_t key64 = verifiable::rankKey(seed, key.rank);
    for (std::size_t i = 0; i < bytes; ++i)
      out[i] = static_cast<unsigned char>(verifiable::streamWord(key64, i));
    return;
  }
  validate::ValueSpec spec = specOf(key, nranks, seed);
  for (std::size_t i = 0; i < elements; ++i)
    verifiable::storeElement(out, i, type, validate::inputValue(spec, key.rank, i));
}

double allowedDifference(const CaseKey& key, int nranks, std::uint64_t seed, std::size_t index) {
  auto type = static_cast<ncclDataType_t>(key.type);
  if (key.op < 0 || !validate::isFloatType(type)) return 0;  // copies, integers: exact
  Op op = static_cast<Op>(key.op);
  if (op == Op::kMax || op == Op::kMin) return 0;  // no rounding at all
  // One rank: the output is the input (sum, prod, avg's x * 1) or one rounding of x * s
  // (premul-sum), the same rounding in both libraries.
  if (nranks == 1) return 0;
  validate::ValueSpec spec = specOf(key, nranks, seed);
  // Exact data: every partial sum is representable (a float avg's too: it sums the rounded
  // products of x_r and round(1/n), which the inputs make exact, in both libraries).
  if (spec.values == Values::kExact) return 0;
  // The element of the reduction this output element comes from.
  if (static_cast<Coll>(key.coll) == Coll::kReduceScatter) index += key.count * key.rank;
  double magnitude = op == Op::kProd ? 1.0 : 0.0;
  for (int r = 0; r < nranks; ++r) {
    double v = std::fabs(validate::contribution(spec, r, index));
    magnitude = op == Op::kProd ? magnitude * v : magnitude + v;
  }
  validate::Precision p = precisionOf(type);
  int n = nranks;
  // A float avg is, in both libraries, the sum of round(x_r * round(1/n)): the contributions
  // above, summed like any other sum.
  // Each library is within gamma_{n-1}(u) S of the exact result whatever its order (Higham),
  // so within twice that of the other; plus the subnormal spacing once per rounding step.
  return 2 * gamma(n - 1, p.unit) * magnitude + 2 * n * p.tiny;
}

std::vector<unsigned char> oneRankOutput(const CaseKey& key, std::uint64_t seed) {
  auto type = static_cast<ncclDataType_t>(key.type);
  Layout l = layoutOf(key, 1);
  // At 1 rank every layout sends and receives the same count, the output is where the input was.
  std::vector<unsigned char> output(l.output * validate::typeBytes(type) + 1);
  if (key.op < 0) {
    fillInput(key, 1, seed, output.data(), l.output);
  } else {
    validate::ValueSpec spec = specOf(key, 1, seed);
    for (std::size_t i = 0; i < l.output; ++i)
      verifiable::storeElement(output.data(), i, type, validate::contribution(spec, 0, i));
  }
  output.pop_back();
  return output;
}

std::vector<CaseKey> enumerateCases(int nranks, const std::vector<std::size_t>& counts,
                                    const std::vector<Coll>& colls) {
  std::vector<CaseKey> cases;
  for (Coll coll : colls) {
    std::vector<int> roots = {0};
    if (isRooted(coll) && nranks > 1) roots.push_back(nranks - 1);
    for (int t = 0; t < ncclNumTypes; ++t) {
      auto type = static_cast<ncclDataType_t>(t);
      // (op, values) pairs: every op on exact data, and on real data for the float types.
      std::vector<std::pair<int, Values>> flavours;
      if (!isReducing(coll)) {
        flavours.push_back({-1, Values::kExact});
      } else {
        for (int op = 0; op < validate::kNumOps; ++op) {
          flavours.push_back({op, Values::kExact});
          if (validate::isFloatType(type)) flavours.push_back({op, Values::kReal});
        }
      }
      for (auto [op, values] : flavours) {
        for (std::size_t count : counts) {
          for (int root : roots) {
            for (int inPlace = 0; inPlace <= (hasInPlace(coll) ? 1 : 0); ++inPlace) {
              CaseKey key;
              key.coll = static_cast<std::int32_t>(coll);
              key.type = t;
              key.op = op;
              key.values = static_cast<std::int32_t>(values);
              key.root = root;
              key.inPlace = inPlace;
              key.count = count;
              cases.push_back(key);
            }
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace braid::validate_nccl
