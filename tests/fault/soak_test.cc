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

#include "braid/datatypes.h"
#include "fault/fault_run.h"
#include "verifiable/element_codec.h"
#include "verifiable/exact_inputs.h"

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

// Inputs from the shared generator (verifiable/exact_inputs.h): integers bounded so that
// sums, products and extremes over the ranks are exact in every datatype, the expected value
// their exact reduction in double. Every op draws its own inputs (the op number seeds them).
verifiable::ExactInputs inputsOf(const Op& o, int nranks, int salt) {
  return verifiable::ExactInputs(verifiable::InputSpec{
      o.dtype, static_cast<verifiable::Reduction>(o.op), nranks, static_cast<uint64_t>(salt)});
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
  const size_t es = braid::dataType(o.dtype).size;
  const verifiable::ExactInputs inputs = inputsOf(o, n, salt);
  const bool gathers = o.coll == Coll::kAllGather, scatters = o.coll == Coll::kReduceScatter;
  const size_t inCount = scatters ? o.count * n : o.count;
  const size_t outCount = gathers ? o.count * n : o.count;
  std::vector<char> in(inCount * es + 1), out(outCount * es + 1, static_cast<char>(0x5A));
  for (size_t i = 0; i < inCount; i++)
    verifiable::storeElement(in.data(), i, o.dtype, inputs.value(me, i));
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
    double expected;
    if (o.coll == Coll::kBroadcast) {
      expected = inputs.value(o.root, i);
    } else if (gathers) {
      expected = inputs.value(static_cast<int>(i / o.count), i % o.count);
    } else {
      expected = inputs.reduced(scatters ? me * o.count + i : i);
    }
    const double got = verifiable::loadElement(out.data(), i, o.dtype);
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
