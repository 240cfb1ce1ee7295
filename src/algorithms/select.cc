// Algorithm choice per call. NCCL_ALGO forces (a list such as "Tree", "ring,tree", "^tree", or
// the per-collective form "allreduce:tree;broadcast:ring"); otherwise a rule on size and rank
// count: Direct (one hop) up to 16 KiB, the tree (log n hops) up to 64 KiB at 3+ ranks, the ring
// (bandwidth-optimal) above. An algorithm that does not support a call hands over to the next.
#include <strings.h>

#include <sstream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/mismatch_watch.h"
#include "core/comm.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr size_t kTreeMaxBytes = 64 * 1024;
// One hop instead of 2(n-1) or 2 log2(n), for n-1 sends of the whole message per rank.
constexpr size_t kDirectMaxBytes = 16 * 1024;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(c));
  return s;
}

// The algorithm list NCCL_ALGO gives for this collective ("" = no constraint).
std::string algoSpecFor(const std::string& env, CollType coll) {
  if (env.find(':') == std::string::npos) return lower(env);
  std::stringstream ss(env);
  for (std::string part; std::getline(ss, part, ';');) {
    size_t colon = part.find(':');
    if (colon == std::string::npos) continue;
    if (lower(part.substr(0, colon)) == lower(collName(coll))) return lower(part.substr(colon + 1));
  }
  return "";
}

bool allowedBySpec(const std::string& spec, const char* name) {
  if (spec.empty()) return true;
  bool exclude = spec[0] == '^';
  std::stringstream ss(exclude ? spec.substr(1) : spec);
  bool listed = false;
  for (std::string tok; std::getline(ss, tok, ',');)
    if (lower(tok) == lower(name)) listed = true;
  return exclude ? !listed : listed;
}

}  // namespace

const Algorithm* chooseAlgorithm(const ncclComm& comm, const CollArgs& args,
                                 const Algorithm* skip) {
  const auto& algos = algorithmsFor(args.coll);
  std::string spec = algoSpecFor(comm.config.algo, args.coll);
  const Algorithm* chosen = nullptr;
  size_t bytes = args.count * args.elemSize;
  // The rule's choices in order (Self always first), then everything else in registry order.
  // ZeroCopy supports only large messages on one host and hands over to the others itself when
  // some rank's buffers are not registered.
  std::vector<const char*> preferred = {"Self", "ZeroCopy"};
  if (bytes <= kDirectMaxBytes) preferred.push_back("Direct");
  if (comm.nranks > 2 && bytes <= kTreeMaxBytes) preferred.push_back("Tree");
  preferred.push_back("Ring");
  auto usable = [&](const Algorithm* a) {
    bool self = strcasecmp(a->name(), "Self") == 0;
    return a != skip && (self || allowedBySpec(spec, a->name())) && a->supports(args, comm);
  };
  for (const char* name : preferred)
    for (const Algorithm* a : algos)
      if (!chosen && strcasecmp(a->name(), name) == 0 && usable(a)) chosen = a;
  for (const Algorithm* a : algos)
    if (!chosen && usable(a)) chosen = a;
  return chosen;
}

ncclResult_t runCollective(ncclComm& comm, CollArgs& args) {
  comm.opCount++;
  // NCCL_PROTO takes NCCL_ALGO's syntax. Braid moves every message with one protocol, Simple
  // (slots with the data and a separate flag); LL and LL128 are NCCL's GPU protocols. A spec
  // that rules Simple out for this collective leaves nothing to run it with.
  if (!comm.config.proto.empty() &&
      !allowedBySpec(algoSpecFor(comm.config.proto, args.coll), "simple"))
    return fail(ncclInvalidUsage,
                "NCCL_PROTO=%s leaves no protocol for %s: Braid implements Simple only (LL and "
                "LL128 are GPU protocols)",
                comm.config.proto.c_str(), collName(args.coll));
  const Algorithm* chosen = chooseAlgorithm(comm, args);
  const size_t bytes = args.count * args.elemSize;
  if (!chosen)
    return fail(ncclInvalidUsage, "NCCL_ALGO=%s leaves no algorithm for %s on %d ranks",
                comm.config.algo.c_str(), collName(args.coll), comm.nranks);
  BRAID_INFO(kSubsysColl,
             "%s: opCount %llu sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
             "[nranks=%d] algorithm %s",
             collName(args.coll), static_cast<unsigned long long>(comm.opCount), args.sendbuff,
             args.recvbuff, args.count, args.op.dtype, static_cast<int>(args.op.op), args.root,
             static_cast<void*>(&comm), comm.nranks, chosen->name());
  args.fingerprint = collectiveFingerprint(comm.opCount, args, chosen->name());
  const int64_t entry =
      comm.recorder.begin(comm.opCount, collName(args.coll), bytes, chosen->name());
  ncclResult_t r;
  {
    MismatchWatch watch(comm, args);
    r = chosen->run(args, comm);
  }
  for (int i = 0; i < 3; i++) comm.lastCollective[i] = args.fingerprint.words[i];
  comm.recorder.setState(entry, r == ncclSuccess ? OpState::kDone : OpState::kFailed);
  if (r != ncclSuccess) {
    addContext(r, "rank %d: %s #%llu (%s)", comm.rank, collName(args.coll),
               static_cast<unsigned long long>(comm.opCount), chosen->name());
    commSetError(&comm, r, lastError());
    comm.recorder.dumpOnFirstFailure(lastError());
  }
  return r;
}

}  // namespace braid
