// The soak (label soak with -DBRAID_SOAK=ON; tools/soak runs it): rounds of a random mix of
// collectives, sizes, datatypes, ops, algorithms and transports on 4 ranks, every element of
// every result checked exactly, and the process's resident memory, open descriptors and
// /dev/shm compared before and after. BRAID_SOAK_OPS (default 400) operations in all,
// BRAID_SOAK_SEED picks the mix (printed, so a failure can be replayed).
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* collName(Coll c) {
  const char* names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  return names[static_cast<int>(c)];
}

struct Op {
  Coll coll;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  size_t count;
  int root;
};

// Inputs are small integers (0..3 for unsigned types, -3..3 otherwise), so sums, products and
// extremes over 4 ranks are exact in every datatype and the reference is plain int64 math.
int64_t input(const Op& o, int rank, size_t i, int salt) {
  uint64_t h = (i * 2654435761u) ^ (rank * 40503u) ^ (salt * 97u);
  bool unsignedType = o.dtype == ncclUint8 || o.dtype == ncclUint32 || o.dtype == ncclUint64;
  return unsignedType ? static_cast<int64_t>(h % 4) : static_cast<int64_t>(h % 7) - 3;
}

int64_t combine(ncclRedOp_t op, int64_t a, int64_t b) {
  switch (op) {
    case ncclProd:
      return a * b;
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

size_t dtypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 4;
  }
}

void store(ncclDataType_t t, void* base, size_t i, int64_t v) {
  switch (t) {
    case ncclInt8:
      static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v);
      break;
    case ncclUint8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case ncclInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case ncclUint32:
      static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(v);
      break;
    case ncclInt64:
      static_cast<int64_t*>(base)[i] = v;
      break;
    case ncclUint64:
      static_cast<uint64_t*>(base)[i] = static_cast<uint64_t>(v);
      break;
    case ncclFloat32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    default:
      static_cast<double*>(base)[i] = static_cast<double>(v);
      break;
  }
}

int64_t load(ncclDataType_t t, const void* base, size_t i) {
  switch (t) {
    case ncclInt8:
      return static_cast<const int8_t*>(base)[i];
    case ncclUint8:
      return static_cast<const uint8_t*>(base)[i];
    case ncclInt32:
      return static_cast<const int32_t*>(base)[i];
    case ncclUint32:
      return static_cast<const uint32_t*>(base)[i];
    case ncclInt64:
      return static_cast<const int64_t*>(base)[i];
    case ncclUint64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(base)[i]);
    case ncclFloat32:
      return static_cast<int64_t>(static_cast<const float*>(base)[i]);
    default:
      return static_cast<int64_t>(static_cast<const double*>(base)[i]);
  }
}

Op randomOp(std::mt19937_64& rng, int nranks) {
  const ncclDataType_t dtypes[] = {ncclInt8,  ncclUint8,  ncclInt32,   ncclUint32,
                                   ncclInt64, ncclUint64, ncclFloat32, ncclFloat64};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin};
  Op o;
  o.coll = static_cast<Coll>(rng() % 5);
  o.dtype = dtypes[rng() % 8];
  o.op = ops[rng() % 4];
  // Log-uniform sizes from 0 to 256 Ki elements, with the odd ones that split chunks unevenly.
  const size_t odd[] = {0, 1, 7, 4099, 65537};
  o.count = rng() % 4 == 0 ? odd[rng() % 5] : (size_t(1) << (rng() % 19)) + rng() % 3;
  o.root = static_cast<int>(rng() % nranks);
  return o;
}

// Runs one op on this rank and checks every element; false (with a failure) when wrong.
bool runAndCheck(RankContext& ctx, ncclComm_t comm, const Op& o, int salt) {
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t es = dtypeSize(o.dtype);
  const bool gathers = o.coll == Coll::kAllGather, scatters = o.coll == Coll::kReduceScatter;
  const size_t inCount = scatters ? o.count * n : o.count;
  const size_t outCount = gathers ? o.count * n : o.count;
  std::vector<char> in(inCount * es + 1), out(outCount * es + 1, static_cast<char>(0x5A));
  for (size_t i = 0; i < inCount; i++) store(o.dtype, in.data(), i, input(o, me, i, salt));
  ncclResult_t r = ncclSuccess;
  switch (o.coll) {
    case Coll::kAllReduce:
      r = ncclAllReduce(in.data(), out.data(), o.count, o.dtype, o.op, comm, nullptr);
      break;
    case Coll::kBroadcast:
      r = ncclBroadcast(in.data(), out.data(), o.count, o.dtype, o.root, comm, nullptr);
      break;
    case Coll::kReduce:
      r = ncclReduce(in.data(), out.data(), o.count, o.dtype, o.op, o.root, comm, nullptr);
      break;
    case Coll::kAllGather:
      r = ncclAllGather(in.data(), out.data(), o.count, o.dtype, comm, nullptr);
      break;
    case Coll::kReduceScatter:
      r = ncclReduceScatter(in.data(), out.data(), o.count, o.dtype, o.op, comm, nullptr);
      break;
  }
  std::string what = std::string(collName(o.coll)) + " count " + std::to_string(o.count) +
                     " dtype " + std::to_string(o.dtype) + " op " + std::to_string(o.op) +
                     " root " + std::to_string(o.root) + " (op #" + std::to_string(salt) + ")";
  if (r != ncclSuccess) {
    ctx.fail(what + ": " + ncclGetLastError(comm));
    return false;
  }
  if (o.coll == Coll::kReduce && me != o.root) return true;  // output undefined off the root
  for (size_t i = 0; i < outCount; i++) {
    int64_t expected;
    if (o.coll == Coll::kBroadcast) {
      expected = input(o, o.root, i, salt);
    } else if (gathers) {
      expected = input(o, static_cast<int>(i / o.count), i % o.count, salt);
    } else {
      const size_t at = scatters ? me * o.count + i : i;
      expected = input(o, 0, at, salt);
      for (int q = 1; q < n; q++) expected = combine(o.op, expected, input(o, q, at, salt));
    }
    int64_t got = load(o.dtype, out.data(), i);
    if (o.dtype == ncclUint8) expected &= 0xff;
    if (o.dtype == ncclUint32) expected &= 0xffffffff;
    if (got != expected) {
      ctx.fail("WRONG RESULT " + what + " element " + std::to_string(i) + ": " +
               std::to_string(got) + ", expected " + std::to_string(expected));
      return false;
    }
  }
  return true;
}

// Resident memory once freed heap memory went back to the system: what stays is in use.
long residentKiB() {
  malloc_trim(0);
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n - 1;  // the directory stream itself
}

TEST(Soak, RandomMixStaysExactAndLeaksNothing) {
  const long totalOps = getenv("BRAID_SOAK_OPS") ? atol(getenv("BRAID_SOAK_OPS")) : 400;
  const uint64_t seed =
      getenv("BRAID_SOAK_SEED") ? strtoull(getenv("BRAID_SOAK_SEED"), nullptr, 10) : 1;
  constexpr int kOpsPerRound = 40;
  const int rounds = static_cast<int>((totalOps + kOpsPerRound - 1) / kOpsPerRound);
  printf("soak: %ld operations in %d rounds on 4 ranks, BRAID_SOAK_SEED=%llu\n", totalOps, rounds,
         static_cast<unsigned long long>(seed));
  const auto shmBefore = braidShmEntries();
  long rssWarm = 0;
  int fdsBefore = openFds();
  for (int round = 0; round < rounds; round++) {
    std::mt19937_64 pick(seed * 1000003 + round);
    const char* transports[] = {"local", "shm", "tcp"};
    // Only AllReduce has a Tree; the others always run their ring.
    const char* algos[] = {"allreduce:ring", "allreduce:tree", ""};
    const bool processes = pick() % 3 == 0;  // forked ranks: shm or tcp between processes
    const char* transport = processes ? transports[1 + pick() % 2] : transports[pick() % 3];
    const char* algo = algos[pick() % 3];
    test::RunOptions options;
    options.env = {{"BRAID_TRANSPORTS", transport},
                   {"NCCL_SOCKET_IFNAME", "lo"},
                   {"BRAID_TIMEOUT_S", "60"},
                   {"BRAID_SLOT_BYTES", "65536"},
                   {"NCCL_ALGO", algo[0] ? algo : "Ring,Tree"}};  // all allowed: the size rule
    options.timeoutS = 600;
    const uint64_t opSeed = pick();
    auto body = [opSeed](RankContext& ctx) {
      ncclComm_t comm = ctx.initComm();
      if (!comm) return;
      std::mt19937_64 rng(opSeed);  // the same sequence on every rank
      for (int k = 0; k < kOpsPerRound; k++)
        if (!runAndCheck(ctx, comm, randomOp(rng, ctx.nranks()), k)) break;
      ncclCommDestroy(comm);
    };
    test::RunReport report =
        processes ? test::runProcesses(4, body, options) : test::runThreads(4, body, options);
    const long rss = residentKiB();
    printf("soak round %d: %s %s, %s: %s (%.1f s, resident %ld KiB)\n", round, transport,
           algo[0] ? algo : "auto", processes ? "processes" : "threads",
           report.ok() ? "exact" : "FAILED", report.seconds, rss);
    ASSERT_TRUE(report.ok()) << "seed " << seed << " round " << round << "\n" << report.describe();
    // Warm-up: the allocator's per-thread arenas and caches grow while new sizes and transports
    // come up, then stay flat; a leak keeps growing through the second half.
    if (round <= rounds / 2) rssWarm = std::max(rssWarm, rss);
  }
  const long rssEnd = residentKiB();
  const int fdsAfter = openFds();
  printf(
      "soak: resident %ld KiB at most in the first half, %ld KiB at the end; %d fds before, "
      "%d after\n",
      rssWarm, rssEnd, fdsBefore, fdsAfter);
  EXPECT_EQ(fdsAfter, fdsBefore) << "file descriptors leaked";
  // Short runs are still warming up (new sizes and transports each round): asserted from 20
  // rounds (800 operations) on, reported always.
  if (rounds >= 20) {
    EXPECT_LT(rssEnd - rssWarm, 64 * 1024) << "resident memory kept growing after the first half";
  }
  EXPECT_EQ(leftoverShm(shmBefore), "") << "left in /dev/shm";
}

}  // namespace
}  // namespace braid::fault
