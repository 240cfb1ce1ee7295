// Bad input to ncclCommShrink and ncclCommRevoke is refused with ncclInvalidArgument and a text
// naming the argument and its value, and leaves the communicator usable; a revoked communicator
// refuses collectives and finalize (ncclInvalidUsage) but can still be destroyed.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "shrink/shrink_test_util.h"

namespace braid::shrinktest {
namespace {

using test::RankContext;

// "" when `r` is `code` and the last error mentions every fragment; otherwise the story.
std::string refusal(ncclResult_t r, ncclResult_t code, std::initializer_list<std::string> parts,
                    const char* call) {
  const std::string text = ncclGetLastError(nullptr);
  if (r != code)
    return std::string(call) + " returned " + std::to_string(r) + ", expected " +
           std::to_string(code) + " (" + text + ")";
  for (const std::string& p : parts)
    if (text.find(p) == std::string::npos)
      return std::string(call) + ": \"" + text + "\" does not mention \"" + p + "\"";
  return "";
}

void badShrinks(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int me = ctx.rank(), other = (me + 1) % 3;
  ncclComm_t out = reinterpret_cast<ncclComm_t>(0x1);
  auto shrink = [&](std::vector<int> list, int count, ncclComm_t* newcomm, int flags,
                    ncclConfig_t* config = nullptr) {
    return ncclCommShrink(comm, list.empty() ? nullptr : list.data(), count, newcomm, config,
                          flags);
  };
  ncclConfig_t badConfig = NCCL_CONFIG_INITIALIZER;
  badConfig.magic = 0;
  int otherCopy = other;
  const std::vector<std::string> problems = {
      refusal(shrink({3}, 1, &out, 0), ncclInvalidArgument, {"excludeRanksList[0]=3", "nranks=3"},
              "out of range"),
      refusal(shrink({other, -1}, 2, &out, 0), ncclInvalidArgument, {"excludeRanksList[1]=-1"},
              "negative"),
      refusal(shrink({other, other}, 2, &out, 0), ncclInvalidArgument,
              {"rank " + std::to_string(other), "more than once"}, "duplicate"),
      refusal(shrink({0, 1, 2}, 3, &out, 0), ncclInvalidArgument, {"excludes all 3 ranks"},
              "everyone"),
      refusal(shrink({0, 1, 2, 0}, 4, &out, 0), ncclInvalidArgument, {"excludeRanksCount=4"},
              "too many"),
      refusal(shrink({me}, 1, &out, 0), ncclInvalidArgument, {"calling rank " + std::to_string(me)},
              "self"),
      refusal(shrink({other}, 1, nullptr, 0), ncclInvalidArgument, {"newcomm"}, "NULL newcomm"),
      refusal(shrink({}, 1, &out, 0), ncclInvalidArgument, {"excludeRanksList is NULL"},
              "NULL list"),
      refusal(shrink({other}, 0, &out, 0), ncclInvalidArgument, {"excludeRanksCount=0"},
              "empty list"),
      refusal(shrink({other}, 1, &out, 2), ncclInvalidArgument, {"shrinkFlags=2"}, "flags"),
      refusal(shrink({other}, 1, &out, 0, &badConfig), ncclInvalidArgument, {"magic"}, "config"),
      refusal(ncclCommShrink(nullptr, &otherCopy, 1, &out, nullptr, 0), ncclInvalidArgument,
              {"comm is NULL"}, "NULL comm"),
      refusal(ncclCommRevoke(comm, 1), ncclInvalidArgument, {"revokeFlags=1"}, "revoke flags"),
  };
  for (const std::string& p : problems)
    if (!p.empty()) ctx.fail(p);
  if (out != nullptr && out != reinterpret_cast<ncclComm_t>(0x1))
    ctx.fail("a refused shrink returned a communicator");
  if (ncclCommRevoke(nullptr, 0) != ncclSuccess) ctx.fail("ncclCommRevoke(NULL) is not a no-op");
  // Nothing above touched the communicator.
  if (std::string e = allReduceChecked(comm, me, {0, 1, 2}, 0); !e.empty())
    ctx.fail("after bad input: " + e);

  // Revoked: refuses work and a second revoke, reads ncclSuccess, is destroyed cleanly.
  if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess)
    return ctx.fail(std::string("revoke: ") + ncclGetLastError(comm));
  int x = 1;
  for (const std::string& p :
       {refusal(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, nullptr), ncclInvalidUsage,
                {"revoked"}, "allreduce after revoke"),
        refusal(ncclCommFinalize(comm), ncclInvalidUsage, {"revoked"}, "finalize after revoke"),
        refusal(ncclCommRevoke(comm, 0), ncclInvalidArgument, {"already revoked"},
                "second revoke")})
    if (!p.empty()) ctx.fail(p);
  ncclResult_t state = ncclInternalError;
  if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclSuccess)
    ctx.fail("a revoked communicator's state is " + std::to_string(state) + ", not ncclSuccess");
  if (ncclCommDestroy(comm) != ncclSuccess)
    ctx.fail(std::string("destroy after revoke: ") + ncclGetLastError(nullptr));
}

TEST(ShrinkArguments, RefusedByNameAndCommunicatorStillWorks) {
  auto report = test::runThreads(3, badShrinks);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::shrinktest
