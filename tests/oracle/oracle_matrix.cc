#include "oracle/oracle_matrix.h"

#include "kernels/reduce.h"
#include "transports/mailbox.h"

namespace braid::oracle {

const std::vector<size_t>& smallCounts() {
  static const std::vector<size_t> counts = {0, 1, 7, kPrimeAboveChunk};
  return counts;
}

std::vector<ncclDataType_t> allDTypes() {
  std::vector<ncclDataType_t> out;
  for (int d = 0; d < kNumDTypes; d++) out.push_back(static_cast<ncclDataType_t>(d));
  return out;
}

std::vector<OpKind> allOps() {
  std::vector<OpKind> out;
  for (int o = 0; o < kNumOpKinds; o++) out.push_back(static_cast<OpKind>(o));
  return out;
}

std::vector<OracleCase> crossCases(const std::vector<ncclDataType_t>& dtypes,
                                   const std::vector<OpKind>& ops,
                                   const std::vector<size_t>& counts) {
  std::vector<OracleCase> out;
  for (ncclDataType_t d : dtypes)
    for (OpKind o : ops)
      for (size_t c : counts)
        for (bool inPlace : {false, true}) out.push_back({d, o, c, inPlace});
  return out;
}

std::vector<OracleCase> mailboxCases() {
  std::vector<OracleCase> out = crossCases(allDTypes(), allOps(), {0, 1, 7, 503});
  for (ncclDataType_t d : allDTypes())
    for (bool inPlace : {false, true})
      out.push_back({d, OpKind::kSum, kMailboxBytes / kernels::typeSize(d), inPlace});
  return out;
}

std::vector<std::pair<std::string, std::string>> oracleEnv(const std::string& algo,
                                                           const std::string& transport,
                                                           size_t slotBytes) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"NCCL_ALGO", algo},
      {"BRAID_SLOT_BYTES", std::to_string(slotBytes)},
      {"BRAID_TIMEOUT_S", "60"},
      {"NCCL_SOCKET_IFNAME", "lo"},
  };
  if (!transport.empty()) env.push_back({"BRAID_TRANSPORTS", transport});
  return env;
}

uint64_t seedFrom(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace braid::oracle
