// How a wait behaves when its peer sits on the waiting thread's own core (util/wait.h): it never
// spins (the peer cannot answer until the core is given up); a wait on sockets sleeps at once
// where a core is free for every rank (sleepWhenPeerHere: the wake-up moves it to a free core),
// and yields a few times first otherwise (the peer may only need this time slice).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "util/wait.h"

namespace braid {
namespace {

// A sender on this core; records, at each sleep, how many times the wait had looked for data.
class PeerOnThisCore : public WaitSleeper {
 public:
  explicit PeerOnThisCore(const int* looks) : looks_(looks) {}
  void sleepFor(int64_t) override { looksAtSleep.push_back(*looks_); }
  bool senderOnThisCore() override { return true; }
  std::vector<int> looksAtSleep;

 private:
  const int* looks_;
};

// Looks for data until the wait has slept once; the looks made before that first sleep.
int looksBeforeFirstSleep(bool sleepWhenPeerHere) {
  std::atomic<uint32_t> word{0}, sleepers{0};
  int looks = 0;
  PeerOnThisCore sleeper(&looks);
  WaitPolicy policy;
  policy.timeoutS = 5;
  policy.sleepWhenPeerHere = sleepWhenPeerHere;
  auto ready = [&] {
    looks++;
    return !sleeper.looksAtSleep.empty();
  };
  EXPECT_EQ(waitUntil(policy, WakeWord{&word, &sleepers, nullptr, &sleeper}, ready, nullptr,
                      "waiting in a test"),
            ncclSuccess);
  EXPECT_EQ(sleeper.looksAtSleep.size(), 1u);
  return sleeper.looksAtSleep.empty() ? -1 : sleeper.looksAtSleep[0];
}

TEST(WaitWithPeerOnThisCore, SleepsAtOnceWhereACoreIsFreeForEveryRank) {
  EXPECT_EQ(looksBeforeFirstSleep(true), 1) << "only the look before waiting: no spin, no yield";
}

TEST(WaitWithPeerOnThisCore, YieldsFirstWhereRanksOutnumberCores) {
  EXPECT_EQ(looksBeforeFirstSleep(false), 5) << "the look before waiting and one per yield";
}

}  // namespace
}  // namespace braid
