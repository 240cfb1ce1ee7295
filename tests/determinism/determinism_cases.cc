#include "determinism_cases.h"

#include <cstring>

#include "kernels/cpu/isa.h"
#include "verifiable/input_words.h"

namespace braid::determinism {
namespace {

constexpr std::uint64_t kSeed = 0x5eed;

std::size_t elementBytes(ncclDataType_t type) {
  return type == ncclFloat32 ? 4 : 2;
}

// Random sign and mantissa (the shared words of verifiable/input_words.h), exponents over a
// 2^-7..2^7 range: sums of such values round differently for different orders, so a changed
// order shows up in the bits.
void fillInput(void* buffer, std::size_t count, ncclDataType_t type, int rank) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t h = verifiable::inputWord(kSeed, rank, i);
    std::uint32_t sign = static_cast<std::uint32_t>(h >> 63);
    std::uint32_t shift = static_cast<std::uint32_t>((h >> 32) % 15);  // 0..14
    if (type == ncclFloat32) {
      std::uint32_t bits =
          (sign << 31) | ((120 + shift) << 23) | (static_cast<std::uint32_t>(h) & 0x7fffff);
      std::memcpy(static_cast<char*>(buffer) + 4 * i, &bits, 4);
    } else if (type == ncclFloat16) {
      auto bits = static_cast<std::uint16_t>((sign << 15) | ((8 + shift) << 10) | (h & 0x3ff));
      std::memcpy(static_cast<char*>(buffer) + 2 * i, &bits, 2);
    } else {  // bfloat16
      auto bits = static_cast<std::uint16_t>((sign << 15) | ((120 + shift) << 7) | (h & 0x7f));
      std::memcpy(static_cast<char*>(buffer) + 2 * i, &bits, 2);
    }
  }
}

std::string digest(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  char text[32];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce:
      return "allreduce";
    case Coll::kReduceScatter:
      return "reducescatter";
    default:
      return "reduce";
  }
}

const char* typeName(ncclDataType_t type) {
  return type == ncclFloat32 ? "float" : type == ncclFloat16 ? "half" : "bfloat16";
}

// One call (in place: NCCL's layouts, the input in the receive buffer); returns the bytes of
// this rank's result (empty for a reduce on a non-root rank).
std::vector<unsigned char> runOnce(test::RankContext& ctx, ncclComm_t comm, const Case& c,
                                   bool inPlace) {
  int n = ctx.nranks(), me = ctx.rank();
  std::size_t size = elementBytes(c.type);
  std::size_t in = c.coll == Coll::kReduceScatter ? c.count * n : c.count;
  std::vector<unsigned char> send(in * size), recv(in * size, 0xff);  // 0xff..: NaN
  fillInput(inPlace ? recv.data() : send.data(), in, c.type, me);
  const void* source = inPlace ? recv.data() : send.data();
  unsigned char* result = recv.data();
  if (inPlace && c.coll == Coll::kReduceScatter) result += me * c.count * size;
  ncclResult_t r = ncclSuccess;
  switch (c.coll) {
    case Coll::kAllReduce:
      r = ncclAllReduce(source, result, c.count, c.type, ncclSum, comm, nullptr);
      break;
    case Coll::kReduceScatter:
      r = ncclReduceScatter(source, result, c.count, c.type, ncclSum, comm, nullptr);
      break;
    case Coll::kReduce:
      r = ncclReduce(source, result, c.count, c.type, ncclSum, c.root, comm, nullptr);
      break;
  }
  if (r != ncclSuccess) {
    ctx.fail(c.key() + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(comm) + ")");
    return {};
  }
  if (c.coll == Coll::kReduce && me != c.root) return {};
  return std::vector<unsigned char>(result, result + c.count * size);
}

}  // namespace

std::string Case::key() const {
  std::string k = std::string(collName(coll)) + "/" + typeName(type) + "/" + std::to_string(count);
  if (coll == Coll::kReduce) k += "/root" + std::to_string(root);
  return k;
}

std::vector<Case> standardCases(int nranks) {
  std::vector<Case> cases;
  for (ncclDataType_t type : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    // 100003 elements are 25+ slots of 16 KiB for every type (and 400 KB of float).
    for (std::size_t count : {std::size_t{1}, std::size_t{1021}, std::size_t{100003}}) {
      cases.push_back({Coll::kAllReduce, type, count});
      cases.push_back({Coll::kReduceScatter, type, count / nranks + 1});
      cases.push_back({Coll::kReduce, type, count, 0});
      cases.push_back({Coll::kReduce, type, count, nranks - 1});
    }
  }
  return cases;
}

void runCases(test::RankContext& ctx, const std::vector<Case>& cases, int repeats) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  ctx.report("isa", kernels::cpu::variantName(kernels::cpu::selectedVariant()));
  for (const Case& c : cases) {
    std::string first;
    for (int rep = 0; rep < repeats; ++rep) {
      // The middle repeat runs in place: the order must not depend on where the input is.
      std::vector<unsigned char> out = runOnce(ctx, comm, c, rep % 2 == 1);
      std::string d = out.empty() ? "-" : digest(out.data(), out.size());
      if (rep == 0) {
        first = d;
      } else if (d != first) {
        ctx.fail(c.key() + ": repeat " + std::to_string(rep) + " gave digest " + d +
                 ", the first gave " + first);
      }
    }
    ctx.report(c.key(), first);
  }
  ncclCommDestroy(comm);
}

}  // namespace braid::determinism
