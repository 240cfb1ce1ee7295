#include "oracle/oracle_runner.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "comm/communicator.h"
#include "oracle/case_buffer.h"
#include "patterns/tree.h"

namespace braid::oracle {
namespace {

constexpr size_t kGuardBytes = 64;  // poisoned bytes past the end of each buffer
constexpr int kMaxListed = 5;       // mismatching elements listed per case

uint64_t fnv1a(uint64_t h, const void* data, size_t len) {
  auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void fillPoison(const DTypeInfo& t, unsigned char* buf, size_t elements) {
  for (size_t i = 0; i < elements; i++) storeElement(t, buf, i, t.poison);
}

// The transports of this rank's connections, checked against the allowed list.
std::string checkTransports(test::RankContext& ctx, ncclComm_t comm,
                            const std::vector<std::string>& allowed) {
  std::set<std::string> used;
  for (int peer : patterns::neighbourRanks(comm->rank(), comm->nranks())) {
    const SendConnection* s = comm->team.sendTo[peer].get();
    const RecvConnection* r = comm->team.recvFrom[peer].get();
    if (!s || !r) {
      ctx.fail("no connection to neighbour rank " + std::to_string(peer));
      continue;
    }
    for (std::string name : {s->transportName(), r->transportName()}) {
      used.insert(name);
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), name) == allowed.end())
        ctx.fail("connection to rank " + std::to_string(peer) + " uses transport " + name);
    }
  }
  std::string list;
  for (const std::string& name : used) list += (list.empty() ? "" : ",") + name;
  return list;
}

// Runs one case; false when the communicator can no longer be used.
bool runCase(test::RankContext& ctx, ncclComm_t comm, const OracleCase& c, uint64_t seed,
             Registration registration, uint64_t* digest) {
  const int rank = ctx.rank(), n = ctx.nranks();
  const std::string name = caseName(c);
  ElementOracle oracle(c.dtype, c.op, n, seed);
  const DTypeInfo& t = oracle.info();
  const size_t bytes = c.count * t.size;

  std::vector<unsigned char> expected(bytes), input(bytes);
  CaseBuffer send(comm, rank, bytes + kGuardBytes, registration);
  CaseBuffer recvStore(comm, rank, c.inPlace ? 0 : bytes + kGuardBytes,
                       c.inPlace ? Registration::kNone : registration);
  for (const std::string& e : {send.error(), recvStore.error()}) {
    if (e.empty()) continue;
    ctx.fail(name + ": " + e);
    return false;
  }
  std::vector<uint64_t> all(n);
  for (size_t i = 0; i < c.count; i++) {
    uint64_t want;
    oracle.element(i, all.data(), &want);
    storeElement(t, input.data(), i, all[rank]);
    storeElement(t, expected.data(), i, want);
  }
  if (bytes) memcpy(send.data(), input.data(), bytes);  // data() may be null when empty
  memset(send.data() + bytes, 0xA5, kGuardBytes);
  unsigned char* recv = send.data();
  if (!c.inPlace) {
    recv = recvStore.data();
    fillPoison(t, recv, c.count);
    memset(recv + bytes, 0xA5, kGuardBytes);
  }

  ncclRedOp_t op;
  uint64_t scalar = 0;  // the scalar variable the op was created from
  if (isPreMulSum(c.op)) {
    // Host scalars are captured at creation: changing the variable afterwards must not matter.
    // Device scalars are read at call time: the variable changes to the real one just before.
    bool host = c.op == OpKind::kPreMulSumHost;
    scalar = host ? oracle.scalarOf(rank) : oracle.decoyScalarOf(rank);
    ncclResult_t r = ncclRedOpCreatePreMulSum(
        &op, &scalar, c.dtype, host ? ncclScalarHostImmediate : ncclScalarDevice, comm);
    if (r != ncclSuccess) {
      ctx.fail(name + ": ncclRedOpCreatePreMulSum: " + ncclGetLastError(comm));
      return true;
    }
    scalar = host ? oracle.decoyScalarOf(rank) : oracle.scalarOf(rank);
  } else {
    op = builtinOp(c.op);
  }

  const uint64_t zeroCopyBefore = comm->ops.zeroCopyRuns;
  ncclResult_t r = ncclAllReduce(send.data(), recv, c.count, c.dtype, op, comm, nullptr);
  if (r != ncclSuccess) {
    ctx.fail(name + ": ncclAllReduce: " + ncclGetErrorString(r) + ": " + ncclGetLastError(comm));
    return false;
  }
  // Registered buffers on every rank must be read in place (when ZeroCopy runs: n > 1, data);
  // registration on some ranks only must fall back to the FIFOs, with the same exact results.
  const bool wantZeroCopy =
      (registration == Registration::kRegister || registration == Registration::kWindow) && n > 1 &&
      bytes > 0;
  if (registration != Registration::kNone &&
      (comm->ops.zeroCopyRuns > zeroCopyBefore) != wantZeroCopy)
    ctx.fail(name + (wantZeroCopy ? ": registered buffers were not read in place"
                                  : ": ran zero-copy without registered buffers on every rank"));
  if (isPreMulSum(c.op) && ncclRedOpDestroy(op, comm) != ncclSuccess)
    ctx.fail(name + ": ncclRedOpDestroy: " + ncclGetLastError(comm));

  if (bytes && memcmp(recv, expected.data(), bytes) != 0) {
    std::ostringstream msg;
    size_t wrong = 0;
    for (size_t i = 0; i < c.count; i++) {
      uint64_t got = loadElement(t, recv, i), want = loadElement(t, expected.data(), i);
      if (maskBits(t, got) == maskBits(t, want)) continue;
      if (wrong++ < kMaxListed) {
        msg << "\n      [" << i << "] got " << describeElement(t, got) << ", expected "
            << describeElement(t, want) << "; inputs";
        oracle.element(i, all.data(), &want);
        for (int q = 0; q < n; q++) msg << " " << describeElement(t, all[q]);
      }
    }
    ctx.fail(name + ": " + std::to_string(wrong) + " of " + std::to_string(c.count) +
             " elements wrong" + msg.str());
  }
  for (size_t g = 0; g < kGuardBytes; g++) {
    if (recv[bytes + g] != 0xA5 || send.data()[bytes + g] != 0xA5) {
      ctx.fail(name + ": wrote past the end of a buffer (guard byte " + std::to_string(g) + ")");
      break;
    }
  }
  if (!c.inPlace && bytes && memcmp(send.data(), input.data(), bytes) != 0)
    ctx.fail(name + ": the send buffer changed in an out-of-place call");
  *digest = fnv1a(*digest, recv, bytes);
  return true;
}

}  // namespace

std::string caseName(const OracleCase& c) {
  return std::string(dtypeInfo(c.dtype).name) + "/" + opKindName(c.op) +
         "/count=" + std::to_string(c.count) + (c.inPlace ? "/in-place" : "/out-of-place");
}

void runOracleRank(test::RankContext& ctx, const OracleRun& run) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  ctx.report("transports", checkTransports(ctx, comm, run.transports));
  uint64_t digest = 1469598103934665603ull;
  size_t done = 0;
  for (size_t k = 0; k < run.cases.size(); k++) {
    // Each case gets its own data; all ranks derive the same seed.
    uint64_t seed = run.seed * 0x9E3779B97F4A7C15ull + k;
    if (!runCase(ctx, comm, run.cases[k], seed, run.registration, &digest)) break;
    done++;
  }
  ctx.report("digest", std::to_string(digest));
  ctx.report("cases", std::to_string(done));
  if (done == run.cases.size()) {
    if (ncclCommDestroy(comm) != ncclSuccess)
      ctx.fail(std::string("ncclCommDestroy: ") + ncclGetLastError(nullptr));
  } else {
    ncclCommAbort(comm);
  }
}

std::string verifyOracleReport(const test::RunReport& report, const OracleRun& run) {
  if (test::isNamespaceChild()) return "";  // the parent checks
  if (!report.ok()) return "seed " + std::to_string(run.seed) + ": " + report.describe();
  std::ostringstream problems;
  std::vector<std::string> digests = report.valuesOf("digest");
  std::vector<std::string> cases = report.valuesOf("cases");
  for (size_t r = 0; r < digests.size(); r++) {
    if (digests[r] != digests[0])
      problems << "rank " << r << "'s outputs differ from rank 0's (digest " << digests[r] << " vs "
               << digests[0] << ")\n";
    if (cases[r] != std::to_string(run.cases.size()))
      problems << "rank " << r << " ran " << cases[r] << " of " << run.cases.size() << " cases\n";
  }
  return problems.str();
}

}  // namespace braid::oracle
