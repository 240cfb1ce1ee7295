// Ring math (patterns/ring.h): neighbours form one cycle, each rank visits every chunk once per
// lap, and what arrives from the previous rank is the chunk this rank needs next. The last test
// plays the ring allreduce schedule (as algorithms/allreduce_ring.cc runs it) symbolically and
// checks that every chunk collects each rank's contribution exactly once, in FIFO order.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <deque>
#include <vector>

#include "patterns/ring.h"
#include "patterns/tree.h"

namespace braid::patterns {
namespace {

constexpr int kMaxRanks = 130;

TEST(Ring, NeighboursFormOneCycle) {
  for (int n = 1; n <= kMaxRanks; n++) {
    std::vector<bool> seen(n, false);
    int at = 0;
    for (int step = 0; step < n; step++) {
      ASSERT_FALSE(seen[at]) << "nranks " << n << ": rank " << at << " visited twice";
      seen[at] = true;
      Ring ring{at, n};
      ASSERT_GE(ring.next(), 0);
      ASSERT_LT(ring.next(), n);
      EXPECT_EQ((Ring{ring.next(), n}.prev()), at) << "nranks " << n;
      at = ring.next();
    }
    EXPECT_EQ(at, 0) << "nranks " << n << ": the ring does not close after n steps";
  }
}

TEST(Ring, EachLapVisitsEveryChunkOnceStartingWithTheOwnChunk) {
  for (int n = 1; n <= kMaxRanks; n++) {
    for (int r = 0; r < n; r++) {
      Ring ring{r, n};
      EXPECT_EQ(ring.chunkAt(0), r);
      std::vector<int> count(n, 0);
      for (int step = 0; step < n; step++) {
        int c = ring.chunkAt(step);
        ASSERT_GE(c, 0);
        ASSERT_LT(c, n);
        count[c]++;
      }
      for (int c = 0; c < n; c++) EXPECT_EQ(count[c], 1) << "nranks " << n << " rank " << r;
      EXPECT_EQ(ring.chunkAt(n), ring.chunkAt(0)) << "laps repeat";
    }
  }
}

TEST(Ring, WhatArrivesIsWhatThePreviousRankWorkedOnOneStepEarlier) {
  for (int n = 2; n <= kMaxRanks; n++)
    for (int r = 0; r < n; r++) {
      Ring ring{r, n};
      Ring prev{ring.prev(), n};
      for (int step = 1; step <= n; step++)
        EXPECT_EQ(ring.chunkAt(step), prev.chunkAt(step - 1))
            << "nranks " << n << " rank " << r << " step " << step;
    }
}

// --- Symbolic ring allreduce ------------------------------------------------------------------

using Contributors = std::bitset<kMaxRanks>;

struct Message {
  int chunk;
  Contributors from;
  bool final;
};

enum class Op { kSend, kRecvReduceSend, kRecvReduceCopySend, kRecvCopySend, kRecv };

struct Step {
  Op op;
  int chunk;
};

// One lap of allreduce_ring.cc: reduce-scatter (send, recvReduceSend...), the owner's final
// reduction, then the allgather (recvCopySend..., recv).
// Rank `rank`'s view of the ring visiting `order` (position -> rank; empty: rank order).
Ring ringOf(int rank, int n, const std::vector<int>& order) {
  return Ring::ofRank(rank, order, n);
}

std::vector<Step> ringSchedule(int rank, int n, const std::vector<int>& order) {
  const Ring ring = ringOf(rank, n, order);
  std::vector<Step> steps;
  steps.push_back({Op::kSend, ring.chunkAt(1)});
  for (int s = 2; s < n; s++) steps.push_back({Op::kRecvReduceSend, ring.chunkAt(s)});
  steps.push_back({Op::kRecvReduceCopySend, ring.chunkAt(0)});
  for (int s = 1; s < n - 1; s++) steps.push_back({Op::kRecvCopySend, ring.chunkAt(s)});
  steps.push_back({Op::kRecv, ring.chunkAt(n - 1)});
  return steps;
}

void playRingAllReduce(int n, const std::vector<int>& order = {}) {
  SCOPED_TRACE("nranks " + std::to_string(n) + (order.empty() ? "" : ", ring in host order"));
  std::vector<std::vector<Step>> programs;
  for (int r = 0; r < n; r++) programs.push_back(ringSchedule(r, n, order));
  std::vector<size_t> pc(n, 0);
  std::vector<std::deque<Message>> inbox(n);  // inbox[r]: FIFO from prev(r)
  std::vector<std::vector<Contributors>> result(n, std::vector<Contributors>(n));
  Contributors everyone;
  for (int r = 0; r < n; r++) everyone.set(r);

  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; r++) {
      if (pc[r] == programs[r].size()) continue;
      const Step& step = programs[r][pc[r]];
      const int next = ringOf(r, n, order).next();
      if (step.op == Op::kSend) {
        Contributors mine;
        mine.set(r);
        inbox[next].push_back({step.chunk, mine, false});
      } else {
        if (inbox[r].empty()) continue;  // blocked until the previous rank sends
        Message m = inbox[r].front();
        inbox[r].pop_front();
        ASSERT_EQ(m.chunk, step.chunk) << "rank " << r << " expected chunk " << step.chunk;
        switch (step.op) {
          case Op::kRecvReduceSend:
          case Op::kRecvReduceCopySend:
            ASSERT_FALSE(m.final) << "rank " << r;
            ASSERT_FALSE(m.from.test(r)) << "rank " << r << " would add itself twice";
            m.from.set(r);
            if (step.op == Op::kRecvReduceCopySend) {
              ASSERT_EQ(m.from, everyone)
                  << "rank " << r << " finishes chunk " << m.chunk << " without every contribution";
              m.final = true;
              result[r][m.chunk] = m.from;
            }
            inbox[next].push_back(m);
            break;
          case Op::kRecvCopySend:
            ASSERT_TRUE(m.final) << "rank " << r;
            result[r][m.chunk] = m.from;
            inbox[next].push_back(m);
            break;
          case Op::kRecv:
            ASSERT_TRUE(m.final) << "rank " << r;
            result[r][m.chunk] = m.from;
            break;
          case Op::kSend:
            break;
        }
      }
      pc[r]++;
      progress = true;
    }
  }
  for (int r = 0; r < n; r++) {
    ASSERT_EQ(pc[r], programs[r].size()) << "rank " << r << " is stuck (deadlock)";
    EXPECT_TRUE(inbox[r].empty()) << "rank " << r << " has unread messages";
    for (int c = 0; c < n; c++) EXPECT_EQ(result[r][c], everyone) << "rank " << r << " chunk " << c;
  }
}

TEST(Ring, AllReduceScheduleReducesEveryChunkOnceAndDeliversItEverywhere) {
  for (int n = 2; n <= kMaxRanks; n++) playRingAllReduce(n);
}

// --- Rings in host order ---------------------------------------------------------------------

// Ranks dealt round robin over `hosts` hosts, as schedulers often number them.
std::vector<uint64_t> interleavedHosts(int n, int hosts) {
  std::vector<uint64_t> hostOf(n);
  for (int r = 0; r < n; r++) hostOf[r] = 1000 + static_cast<uint64_t>(r % hosts);
  return hostOf;
}

TEST(HostOrder, GroupsEachHostsRanksInRankOrderHostsByLowestRank) {
  const uint64_t hostOf[] = {7, 3, 7, 9, 3, 9, 7};
  EXPECT_EQ(hostContiguousOrder(hostOf), (std::vector<int>{0, 2, 6, 1, 4, 3, 5}));
  const uint64_t blocks[] = {5, 5, 2, 2, 2, 8};
  EXPECT_TRUE(hostContiguousOrder(blocks).empty()) << "numbered host by host: rank order";
  const uint64_t oneHost[] = {4, 4, 4};
  EXPECT_TRUE(hostContiguousOrder(oneHost).empty());
  EXPECT_TRUE(hostContiguousOrder({}).empty());
}

TEST(HostOrder, TheRingCrossesBetweenHostsOncePerHost) {
  for (int hosts = 2; hosts <= 5; hosts++)
    for (int n = hosts; n <= 40; n++) {
      const std::vector<uint64_t> hostOf = interleavedHosts(n, hosts);
      const std::vector<int> order = hostContiguousOrder(hostOf);
      ASSERT_EQ(order.size(), n == hosts ? 0u : size_t(n)) << n << " ranks on " << hosts;
      int crossings = 0, at = 0;
      std::vector<bool> seen(n, false);
      for (int step = 0; step < n; step++) {
        ASSERT_FALSE(seen[at]) << "rank " << at << " visited twice";
        seen[at] = true;
        const Ring ring = ringOf(at, n, order);
        EXPECT_EQ(ringOf(ring.next(), n, order).prev(), at);
        EXPECT_EQ(ring.chunkAt(0), at) << "a rank's own chunk is its rank's";
        crossings += hostOf[ring.next()] != hostOf[at];
        at = ring.next();
      }
      EXPECT_EQ(at, 0) << "the ring closes";
      EXPECT_EQ(crossings, hosts) << n << " ranks on " << hosts << " hosts";
    }
}

TEST(HostOrder, AllReduceScheduleStillReducesEveryChunkOnce) {
  for (int hosts = 2; hosts <= 4; hosts++)
    for (int n = hosts + 1; n <= 33; n++)
      playRingAllReduce(n, hostContiguousOrder(interleavedHosts(n, hosts)));
}

TEST(SecondRing, ReversesEachHostsRanksAndExistsOnlyWithTwoHostsOfTwoOrMore) {
  const std::vector<std::vector<int>> hosts = {{0, 2, 4}, {1, 3, 5}};
  EXPECT_EQ(reversedWithinHosts(hosts), (std::vector<int>{4, 2, 0, 5, 3, 1}));
  EXPECT_TRUE(reversedWithinHosts(std::vector<std::vector<int>>{{0, 1, 2}}).empty());
  EXPECT_TRUE(reversedWithinHosts(std::vector<std::vector<int>>{{0, 2}, {1}}).empty());
}

// The two rings share no connection in the same direction (so one thread can alternate their
// steps without either waiting on the other), each crosses between hosts once per host, from
// two different ranks of each host, and the second's all-reduce schedule is sound.
TEST(SecondRing, SharesNoHopWithTheFirstAndSendsAcrossFromOtherRanks) {
  for (int hosts = 2; hosts <= 5; hosts++)
    for (int l = 2; l <= 6; l++) {
      const int n = hosts * l;
      const std::vector<uint64_t> hostOf = interleavedHosts(n, hosts);
      std::vector<std::vector<int>> ranksOf(hosts);
      for (int r = 0; r < n; r++) ranksOf[r % hosts].push_back(r);
      const std::vector<int> first = hostContiguousOrder(hostOf);
      const std::vector<int> second = reversedWithinHosts(ranksOf);
      ASSERT_EQ(second.size(), size_t(n));
      std::vector<int> crossesIn(n, 0);
      for (int r = 0; r < n; r++) {
        const int a = ringOf(r, n, first).next(), b = ringOf(r, n, second).next();
        EXPECT_NE(a, b) << "rank " << r << " sends to " << a << " on both rings";
        EXPECT_EQ(ringOf(b, n, second).prev(), r);
        crossesIn[r] += hostOf[a] != hostOf[r];
        crossesIn[r] += hostOf[b] != hostOf[r];
      }
      std::vector<int> sendersOn(hosts, 0);
      for (int r = 0; r < n; r++) {
        EXPECT_LE(crossesIn[r], 1) << "rank " << r << ", " << hosts << " hosts of " << l;
        sendersOn[r % hosts] += crossesIn[r];
      }
      for (int h = 0; h < hosts; h++) EXPECT_EQ(sendersOn[h], 2) << "host " << h;
      playRingAllReduce(n, second);
    }
}

TEST(HostOrder, TreesOverPositionsKeepMostEdgesWithinAHost) {
  // 16 ranks interleaved over 2 hosts: the rank-numbered trees cross at every edge.
  const int n = 16;
  const std::vector<uint64_t> hostOf = interleavedHosts(n, 2);
  const std::vector<int> order = hostContiguousOrder(hostOf);
  for (int which = 0; which < 2; which++) {
    int edges = 0, crossing = 0, roots = 0;
    for (int p = 0; p < n; p++) {
      const TreeNode node = doubleBinaryTreeInOrder(order, p, n, which);
      if (node.parent < 0) {
        roots++;
        continue;
      }
      edges++;
      crossing += hostOf[node.parent] != hostOf[order[p]];
    }
    EXPECT_EQ(roots, 1);
    EXPECT_EQ(edges, n - 1);
    EXPECT_LE(crossing, 2) << "tree " << which;
  }
}

}  // namespace
}  // namespace braid::patterns
