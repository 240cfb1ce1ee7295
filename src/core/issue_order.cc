#include "core/issue_order.h"

namespace braid {

ncclResult_t IssueOrder::waitTurn(uint32_t ticket, double timeoutS,
                                  const std::atomic<uint32_t>* abort) {
  // The wait has its own policy: the communicator's belongs to the thread that calls it.
  WaitPolicy policy;
  policy.spinIters = 200;
  policy.timeoutS = timeoutS;
  policy.abort = abort;
  const WakeWord word{&done_, &sleepers_};
  return waitUntil(
      policy, word, [&] { return done_.load(std::memory_order_acquire) == ticket; }, nullptr,
      "the communicator's earlier device-buffer calls");
}

void IssueOrder::finish(uint32_t ticket) {
  done_.store(ticket + 1, std::memory_order_seq_cst);
  notify(WakeWord{&done_, &sleepers_});
}

}  // namespace braid
