// The 128-byte ncclUniqueId: packing and unpacking, rejection of anything ncclGetUniqueId did
// not make, and the deterministic ids of NCCL_COMM_ID / MASTER_ADDR + BRAID_COMM_SECRET that let
// separately started processes agree on a communicator without passing an id around.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>

#include "core/unique_id.h"
#include "harness/harness_internal.h"
#include "harness/rank_harness.h"
#include "util/status.h"

namespace braid {
namespace {

using test::internal::ScopedEnv;

UniqueIdFields sampleFields(bool v6) {
  UniqueIdFields f{};
  f.magic = kUniqueIdMagic;
  f.flags = 0;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(12345);
    inet_pton(AF_INET6, "fd00::7", &a.sin6_addr);
    memcpy(f.addr, &a, sizeof(a));
    f.addrLen = sizeof(a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(29500);
    inet_pton(AF_INET, "10.1.2.3", &a.sin_addr);
    memcpy(f.addr, &a, sizeof(a));
    f.addrLen = sizeof(a);
  }
  for (int i = 0; i < 16; i++) f.secret[i] = static_cast<unsigned char>(0xA0 + i);
  f.nonce = 0x0123456789abcdefull;
  return f;
}

std::string idBytes(const ncclUniqueId& id) {
  return std::string(id.internal, sizeof(id.internal));
}

TEST(UniqueId, PackUnpackRoundTripsIPv4AndIPv6) {
  for (bool v6 : {false, true}) {
    UniqueIdFields in = sampleFields(v6);
    ncclUniqueId id = packUniqueId(in);
    UniqueIdFields out;
    SockAddr addr;
    ASSERT_EQ(unpackUniqueId(id, &out, &addr), ncclSuccess) << lastError();
    EXPECT_EQ(memcmp(&in, &out, sizeof(in)), 0);
    EXPECT_EQ(addr.family(), v6 ? AF_INET6 : AF_INET);
    EXPECT_EQ(addr.port(), v6 ? 12345 : 29500);
    EXPECT_EQ(addr.len, in.addrLen);
  }
}

// Each corruption must be refused with ncclInvalidArgument and a text naming the id.
TEST(UniqueId, CorruptFieldsAreRejected) {
  struct Corruption {
    const char* what;
    void (*apply)(ncclUniqueId*);
  };
  const Corruption corruptions[] = {
      {"magic", [](ncclUniqueId* id) { id->internal[0] ^= 0x01; }},
      {"address length",
       [](ncclUniqueId* id) {
         uint32_t bad = 3;
         memcpy(id->internal + offsetof(UniqueIdFields, addrLen), &bad, sizeof(bad));
       }},
      {"address family",
       [](ncclUniqueId* id) {
         sa_family_t unix_family = AF_UNIX;
         memcpy(id->internal + offsetof(UniqueIdFields, addr), &unix_family, sizeof(unix_family));
       }},
      {"port 0",
       [](ncclUniqueId* id) {
         memset(id->internal + offsetof(UniqueIdFields, addr) + offsetof(sockaddr_in, sin_port), 0,
                2);
       }},
      {"padding", [](ncclUniqueId* id) { id->internal[sizeof(id->internal) - 1] = 1; }},
  };
  for (const Corruption& c : corruptions) {
    ncclUniqueId id = packUniqueId(sampleFields(false));
    c.apply(&id);
    UniqueIdFields f;
    SockAddr addr;
    clearLastError();
    EXPECT_EQ(unpackUniqueId(id, &f, &addr), ncclInvalidArgument) << c.what;
    EXPECT_NE(lastError().find("commId"), std::string::npos) << c.what << ": " << lastError();
  }
}

TEST(UniqueId, RandomBytesAndZerosAreRejected) {
  std::mt19937_64 rng(20240611);
  UniqueIdFields f;
  SockAddr addr;
  ncclUniqueId zeros;
  memset(&zeros, 0, sizeof(zeros));
  EXPECT_EQ(unpackUniqueId(zeros, &f, &addr), ncclInvalidArgument);
  for (int trial = 0; trial < 10000; trial++) {
    ncclUniqueId id;
    for (char& b : id.internal) b = static_cast<char>(rng());
    ASSERT_EQ(unpackUniqueId(id, &f, &addr), ncclInvalidArgument) << "trial " << trial;
  }
  // Even with the right magic, random remaining bytes are caught (address or padding checks).
  for (int trial = 0; trial < 10000; trial++) {
    ncclUniqueId id;
    for (char& b : id.internal) b = static_cast<char>(rng());
    memcpy(id.internal, &kUniqueIdMagic, sizeof(kUniqueIdMagic));
    ASSERT_EQ(unpackUniqueId(id, &f, &addr), ncclInvalidArgument) << "trial " << trial;
  }
}

TEST(UniqueId, FreshIdsDifferAndCarryASecret) {
  ScopedEnv env({{std::string("NCCL_SOCKET_IFNAME"), std::string("lo")}});
  unsetenv("NCCL_COMM_ID");
  unsetenv("MASTER_ADDR");
  std::set<std::string> seen;
  for (int i = 0; i < 4; i++) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
    UniqueIdFields f;
    SockAddr addr;
    ASSERT_EQ(unpackUniqueId(id, &f, &addr), ncclSuccess);
    EXPECT_EQ(f.flags & kRootHostedByRank0, 0u) << "the caller hosts the root";
    unsigned char zero[16] = {};
    EXPECT_NE(memcmp(f.secret, zero, 16), 0) << "no secret";
    seen.insert(idBytes(id));
  }
  EXPECT_EQ(seen.size(), 4u);
}

constexpr const char* kSecret = "0123456789abcdef0123456789ABCDEF";

ncclUniqueId idFromEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
  ScopedEnv env(vars);
  ncclUniqueId id;
  memset(&id, 0x5A, sizeof(id));
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  return id;
}

class EnvironmentId : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"NCCL_COMM_ID", "MASTER_ADDR", "MASTER_PORT", "BRAID_COMM_SECRET"})
      unsetenv(v);
  }
};

TEST_F(EnvironmentId, NcclCommIdIsDeterministic) {
  ncclUniqueId a = idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29555"}, {"BRAID_COMM_SECRET", kSecret}});
  ncclUniqueId b = idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29555"}, {"BRAID_COMM_SECRET", kSecret}});
  EXPECT_EQ(idBytes(a), idBytes(b));
  UniqueIdFields f;
  SockAddr addr;
  ASSERT_EQ(unpackUniqueId(a, &f, &addr), ncclSuccess);
  EXPECT_NE(f.flags & kRootHostedByRank0, 0u);
  EXPECT_EQ(addr.port(), 29555);
  EXPECT_EQ(f.secret[0], 0x01);
  EXPECT_EQ(f.secret[15], 0xEF);
}

TEST_F(EnvironmentId, MasterAddrAndPortGiveTheSameIdAsNcclCommId) {
  ncclUniqueId a = idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29556"}, {"BRAID_COMM_SECRET", kSecret}});
  ncclUniqueId b = idFromEnv(
      {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29556"}, {"BRAID_COMM_SECRET", kSecret}});
  EXPECT_EQ(idBytes(a), idBytes(b));
}

TEST_F(EnvironmentId, SecretAndAddressChangeTheId) {
  ncclUniqueId base =
      idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29557"}, {"BRAID_COMM_SECRET", kSecret}});
  ncclUniqueId otherSecret =
      idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29557"}, {"BRAID_COMM_SECRET", std::string(32, 'f')}});
  ncclUniqueId otherPort =
      idFromEnv({{"NCCL_COMM_ID", "127.0.0.1:29558"}, {"BRAID_COMM_SECRET", kSecret}});
  EXPECT_NE(idBytes(base), idBytes(otherSecret));
  EXPECT_NE(idBytes(base), idBytes(otherPort));
}

TEST_F(EnvironmentId, MalformedSettingsAreRejected) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> bad = {
      {{"NCCL_COMM_ID", "127.0.0.1:29559"}, {"BRAID_COMM_SECRET", "not-hex"}},
      {{"NCCL_COMM_ID", "127.0.0.1:29559"}, {"BRAID_COMM_SECRET", std::string(31, 'a')}},
      {{"NCCL_COMM_ID", "127.0.0.1:29559"}, {"BRAID_COMM_SECRET", std::string(30, 'a') + "zz"}},
      {{"NCCL_COMM_ID", "127.0.0.1"}},
      {{"NCCL_COMM_ID", "127.0.0.1:notaport"}},
  };
  for (const auto& vars : bad) {
    ScopedEnv env(vars);
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    EXPECT_NE(r, ncclSuccess) << vars[0].second << " " << (vars.size() > 1 ? vars[1].second : "");
    EXPECT_STRNE(ncclGetLastError(nullptr), "");
  }
}

// Ranks that never exchange an id: each computes it and rank 0 hosts the rendezvous.
TEST_F(EnvironmentId, RanksComputingTheirOwnIdFormOneCommunicator) {
  test::RunOptions options;
  options.idFromEnvironment = true;
  options.env = {{"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(test::freeLocalPort())},
                 {"BRAID_COMM_SECRET", kSecret},
                 {"NCCL_SOCKET_IFNAME", "lo"},
                 {"BRAID_TIMEOUT_S", "20"}};
  options.timeoutS = 60;
  for (auto run : {&test::runThreads, &test::runProcesses}) {
    test::RunReport report = run(
        3,
        [](test::RankContext& ctx) {
          ctx.report("id", idBytes(ctx.id()));
          ncclComm_t comm = ctx.initComm();
          if (!comm) return;
          double in = ctx.rank() + 0.5, out = 0;
          if (ncclAllReduce(&in, &out, 1, ncclFloat64, ncclSum, comm, nullptr) != ncclSuccess)
            ctx.fail(ncclGetLastError(comm));
          EXPECT_EQ(out, 4.5);
          ncclCommDestroy(comm);
        },
        options);
    BRAID_EXPECT_ALL_RANKS_OK(report);
    std::vector<std::string> ids = report.valuesOf("id");
    EXPECT_EQ(ids[0], ids[1]);
    EXPECT_EQ(ids[0], ids[2]);
  }
}

}  // namespace
}  // namespace braid
