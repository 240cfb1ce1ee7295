// Ring math (patterns/ring.h): neighbours form one cycle, each rank visits every chunk once per
// lap, and what arrives from the previous rank is the chunk this rank needs next. The last test
// plays the ring allreduce schedule (as algorithms/allreduce_ring.cc runs it) symbolically and
// checks that every chunk collects each rank's contribution exactly once, in FIFO order.
#include <gtest/gtest.h>

#include <bitset>
#include <deque>
#include <vector>

#include "patterns/ring.h"

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
std::vector<Step> ringSchedule(int rank, int n) {
  Ring ring{rank, n};
  std::vector<Step> steps;
  steps.push_back({Op::kSend, ring.chunkAt(1)});
  for (int s = 2; s < n; s++) steps.push_back({Op::kRecvReduceSend, ring.chunkAt(s)});
  steps.push_back({Op::kRecvReduceCopySend, ring.chunkAt(0)});
  for (int s = 1; s < n - 1; s++) steps.push_back({Op::kRecvCopySend, ring.chunkAt(s)});
  steps.push_back({Op::kRecv, ring.chunkAt(n - 1)});
  return steps;
}

void playRingAllReduce(int n) {
  SCOPED_TRACE("nranks " + std::to_string(n));
  std::vector<std::vector<Step>> programs;
  for (int r = 0; r < n; r++) programs.push_back(ringSchedule(r, n));
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
      const int next = Ring{r, n}.next();
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

}  // namespace
}  // namespace braid::patterns
