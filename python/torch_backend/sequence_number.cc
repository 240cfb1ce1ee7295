// The group's sequence number, as gloo keeps it: rank 0 draws a random start and publishes it in
// the group's store, the others read it, and every collective advances it by one on every rank.
// torch reads it to check that the ranks call the same collectives in the same order
// (TORCH_DISTRIBUTED_DEBUG=DETAIL wraps the group in a ProcessGroupWrapper that compares each
// call's fingerprint, sequence number included, across ranks before it runs).
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <c10/util/Exception.h>

#include "process_group_braid.h"
#include "store_poll.h"

namespace braid_torch {

namespace {
constexpr const char* kSequenceNumberKey = "braid_sequence_number";
}  // namespace

void ProcessGroupBraid::setSequenceNumberForGroup() {
  requireOpen("setSequenceNumberForGroup");
  uint64_t start = 0;
  if (getRank() == 0) {
    start = 1 + std::random_device{}() % (1u << 30);
    std::vector<uint8_t> bytes(sizeof(start));
    std::memcpy(bytes.data(), &start, sizeof(start));
    store_->set(kSequenceNumberKey, bytes);
  } else {
    const double seconds = commTimeoutSeconds();
    const auto begin = std::chrono::steady_clock::now();
    StorePoll poll;
    while (!store_->check({kSequenceNumberKey})) {
      TORCH_CHECK(seconds <= 0 || std::chrono::steady_clock::now() - begin <
                                      std::chrono::duration<double>(seconds),
                  "braid setSequenceNumberForGroup: rank 0 published no sequence number within ",
                  seconds, " s");
      poll.pause();
    }
    std::vector<uint8_t> bytes = store_->get(kSequenceNumberKey);
    TORCH_CHECK(bytes.size() == sizeof(start), "braid setSequenceNumberForGroup: the store's ",
                kSequenceNumberKey, " holds ", bytes.size(), " bytes, expected ", sizeof(start));
    std::memcpy(&start, bytes.data(), sizeof(start));
  }
  sequenceNumber_.store(start);
}

uint64_t ProcessGroupBraid::getSequenceNumberForGroup() {
  return sequenceNumber_.load();  // 0 until set, as gloo's
}

}  // namespace braid_torch
