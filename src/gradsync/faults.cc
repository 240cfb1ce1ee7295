// The exchanges that keep ranks in agreement: at finalize() every rank sees every rank's model
// and options, and at every synced finish() every rank sees every rank's faults of the step. A
// problem on one rank thus becomes the same clear error on all ranks, instead of a peer waiting
// for an allreduce that never comes or averaging mismatched buffers.
#include <string>

#include "gradsync/element_ops.h"
#include "gradsync/engine.h"

namespace braid::gradsync {

std::string Engine::gradientLabel(int64_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= gradients_.size()) return std::to_string(index);
  return std::to_string(index) + " ('" + gradients_[index].name + "')";
}

ncclResult_t Engine::allgatherWords(const std::vector<int64_t>& mine,
                                    std::vector<std::vector<int64_t>>* rows, const char* what) {
  rows->assign(nranks_, {});
  if (mine.empty()) return ncclSuccess;
  std::vector<int64_t> all(mine.size() * nranks_);
  ncclResult_t r =
      ncclAllGather(mine.data(), all.data(), mine.size(), ncclInt64, comm_, /*stream=*/nullptr);
  if (r != ncclSuccess)
    return failObject(r, std::string(what) + ": the exchange with the other ranks failed: " +
                             ncclGetLastError(comm_));
  for (int q = 0; q < nranks_; q++)
    (*rows)[q].assign(all.begin() + q * mine.size(), all.begin() + (q + 1) * mine.size());
  return ncclSuccess;
}

std::string Engine::describeRemoteFault(int rank, const std::vector<int64_t>& words) const {
  const auto kind = static_cast<FaultKind>(words[0]);
  const int64_t gradient = words[1];
  const auto code = static_cast<ncclResult_t>(words[2]);
  std::string who = "rank " + std::to_string(rank) + ": ";
  switch (kind) {
    case FaultKind::kRegistration:
      return who + "addGradient refused its gradient " + std::to_string(gradient);
    case FaultKind::kMarkedTwice:
      return who + "gradient " + gradientLabel(gradient) + " was marked ready twice";
    case FaultKind::kNeverMarked:
      return who + "gradient " + gradientLabel(gradient) + " was never marked ready (" +
             std::to_string(words[2]) + " unmarked in all)";
    case FaultKind::kLaunchFailed:
      return who + "queueing the allreduce of bucket " + std::to_string(gradient) + " failed (" +
             ncclGetErrorString(code) + ")";
    case FaultKind::kHookFailed:
      return who + "the comm hook failed on bucket " + std::to_string(gradient) + " (" +
             ncclGetErrorString(code) + ")";
    default:
      return who + "unknown fault " + std::to_string(words[0]);
  }
}

ncclResult_t Engine::checkModelsAgree() {
  const std::vector<int64_t> header = {static_cast<int64_t>(fault_.kind),
                                       fault_.gradient,
                                       static_cast<int64_t>(gradients_.size()),
                                       static_cast<int64_t>(options_.firstBucketCapBytes),
                                       static_cast<int64_t>(options_.bucketCapBytes),
                                       static_cast<int64_t>(options_.wire),
                                       static_cast<int64_t>(options_.averaging),
                                       options_.rebuildBucketsAfterFirstStep ? 1 : 0};
  std::vector<std::vector<int64_t>> rows;
  if (ncclResult_t r = allgatherWords(header, &rows, "finalize"); r != ncclSuccess) return r;

  std::string faults;
  for (int q = 0; q < nranks_; q++) {
    if (rows[q][0] == 0) continue;
    if (!faults.empty()) faults += "; ";
    faults += q == rank_ ? "rank " + std::to_string(q) + " (this rank): " + fault_.text
                         : describeRemoteFault(q, {rows[q][0], rows[q][1], 0});
  }
  if (!faults.empty())
    return failObject(fault_ ? fault_.code : ncclRemoteError,
                      "finalize: a rank could not register its model: " + faults);

  for (int q = 1; q < nranks_; q++) {
    if (rows[q][2] != rows[0][2])
      return failObject(ncclInvalidUsage,
                        "finalize: the ranks registered different models: rank 0 has " +
                            std::to_string(rows[0][2]) + " gradients, rank " + std::to_string(q) +
                            " has " + std::to_string(rows[q][2]));
  }
  static const char* const kOptionNames[] = {"firstBucketCapBytes", "bucketCapBytes", "wire",
                                             "averaging", "rebuildBucketsAfterFirstStep"};
  for (int q = 1; q < nranks_; q++) {
    for (size_t k = 3; k < header.size(); k++) {
      if (rows[q][k] != rows[0][k])
        return failObject(ncclInvalidUsage,
                          std::string("finalize: GradSyncOptions differ: ") + kOptionNames[k - 3] +
                              " is " + std::to_string(rows[0][k]) + " on rank 0 and " +
                              std::to_string(rows[q][k]) + " on rank " + std::to_string(q));
    }
  }

  // Same number of gradients everywhere: compare every (count, dtype), naming the first
  // gradient that differs and both ranks' values.
  std::vector<int64_t> model;
  for (const GradientSlot& g : gradients_) {
    model.push_back(static_cast<int64_t>(g.user.count));
    model.push_back(static_cast<int64_t>(g.user.dtype));
  }
  if (ncclResult_t r = allgatherWords(model, &rows, "finalize"); r != ncclSuccess) return r;
  auto describe = [](const std::vector<int64_t>& row, size_t g) {
    return std::to_string(row[2 * g]) + " x " +
           dtypeName(static_cast<ncclDataType_t>(row[2 * g + 1]));
  };
  for (size_t g = 0; g < gradients_.size(); g++) {
    for (int q = 1; q < nranks_; q++) {
      if (rows[q][2 * g] != rows[0][2 * g] || rows[q][2 * g + 1] != rows[0][2 * g + 1])
        return failObject(ncclInvalidUsage,
                          "finalize: gradient " + gradientLabel(static_cast<int64_t>(g)) +
                              " differs across ranks: rank 0 has " + describe(rows[0], g) +
                              ", rank " + std::to_string(q) + " has " + describe(rows[q], g));
    }
  }
  return ncclSuccess;
}

ncclResult_t Engine::agreeOnStep() {
  const std::vector<int64_t> mine = {static_cast<int64_t>(fault_.kind), fault_.gradient,
                                     fault_.detail};
  std::vector<std::vector<int64_t>> rows;
  if (ncclResult_t r = allgatherWords(mine, &rows, "finish"); r != ncclSuccess) {
    if (fault_) error_ += " (this rank's own problem: " + fault_.text + ")";
    return r;
  }
  std::string faults;
  for (int q = 0; q < nranks_; q++) {
    if (rows[q][0] == 0) continue;
    if (!faults.empty()) faults += "; ";
    faults += q == rank_ ? "rank " + std::to_string(q) + " (this rank): " + fault_.text
                         : describeRemoteFault(q, rows[q]);
  }
  if (faults.empty()) return ncclSuccess;
  return failObject(fault_ ? fault_.code : ncclRemoteError,
                    "finish: step " + std::to_string(stepNumber_) +
                        " failed, its gradients are not valid: " + faults);
}

}  // namespace braid::gradsync
