#include "rank_group.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "fatal.h"

namespace braid::bench {

RankGroup::RankGroup(const LaunchInfo& launch, int nThreads)
    : launch_(launch), nThreads_(nThreads), epochs_(static_cast<std::size_t>(nThreads), 0) {}

template <>
RankGroup::Slot<double>* RankGroup::slots<double>() {
  return doubleSlots_;
}
template <>
RankGroup::Slot<std::int64_t>* RankGroup::slots<std::int64_t>() {
  return intSlots_;
}

template <typename T>
void RankGroup::combine(const ThreadComms& self, T* values, std::size_t count, Combine how,
                        bool crossProcess) {
  {
    // Two slots used alternately: a slot is reused only after every thread has finished the
    // call in between, hence after every thread has read its result.
    std::unique_lock<std::mutex> lock(mutex_);
    int epoch = epochs_[self.thread];
    epochs_[self.thread] ^= 1;
    Slot<T>& slot = slots<T>()[epoch];
    if (slot.arrived == 0 || (how == Combine::kRank0 && self.thread == 0)) {
      slot.values.assign(values, values + count);
    } else if (how != Combine::kRank0) {
      for (std::size_t i = 0; i < count; ++i) {
        T& acc = slot.values[i];
        switch (how) {
          case Combine::kMin:
            acc = std::min(acc, values[i]);
            break;
          case Combine::kMax:
            acc = std::max(acc, values[i]);
            break;
          default:
            acc += values[i];
            break;
        }
      }
    }
    if (++slot.arrived == nThreads_) {
      if (crossProcess && launch_.mode == LaunchMode::kMpi) {
        // nccl-tests' semantics: with -a 0 each process keeps its thread 0's value.
        if (how == Combine::kRank0) {
          mpiBarrier();
        } else {
          mpiAllreduce(slot.values.data(), count, how);
        }
      }
      slot.arrived = 0;
      ++slot.generation;
      arrivedAll_.notify_all();
    } else {
      std::uint64_t generation = slot.generation;
      arrivedAll_.wait(lock, [&] { return slot.generation != generation; });
    }
    std::copy(slot.values.begin(), slot.values.end(), values);
  }
  if (crossProcess && launch_.mode == LaunchMode::kBraidrun) {
    combineAcrossProcesses(self, values, count, how);
  }
  if (how == Combine::kAvg) {
    int threads = nThreads_ * (launch_.mode == LaunchMode::kSingleProcess ? 1 : launch_.nProcs);
    for (std::size_t i = 0; i < count; ++i) values[i] /= threads;
  }
}

template <typename T>
void RankGroup::combineAcrossProcesses(const ThreadComms& self, T* values, std::size_t count,
                                       Combine how) {
  // Every rank must take part. For sums one rank per process (thread 0's first) carries the
  // process total and the others add zeros; min and max can take the value from every rank.
  bool sumLike = how == Combine::kSum || how == Combine::kAvg || how == Combine::kRank0;
  ncclRedOp_t op = how == Combine::kMin ? ncclMin : how == Combine::kMax ? ncclMax : ncclSum;
  ncclDataType_t type = std::is_same_v<T, double> ? ncclFloat64 : ncclInt64;
  std::size_t n = std::max<std::size_t>(count, 1);  // a barrier still exchanges one element
  std::vector<T> send(n * self.count, T{}), recv(n * self.count, T{});
  for (int c = 0; c < self.count; ++c) {
    bool carrier = self.thread == 0 && c == 0 && (how != Combine::kRank0 || launch_.proc == 0);
    if (!sumLike || carrier) std::copy(values, values + count, send.begin() + c * n);
  }
  PERF_NCCL_CHECK(ncclGroupStart(), self.firstRank, nullptr);
  for (int c = 0; c < self.count; ++c) {
    PERF_NCCL_CHECK(ncclAllReduce(send.data() + c * n, recv.data() + c * n, n, type, op,
                                  self.comms[c], nullptr),
                    self.firstRank + c, self.comms[c]);
  }
  PERF_NCCL_CHECK(ncclGroupEnd(), self.firstRank, nullptr);
  std::copy(recv.begin(), recv.begin() + count, values);
}

void RankGroup::barrier(const ThreadComms& self) {
  std::int64_t token = 0;
  combine(self, &token, 1, Combine::kSum, true);
}

void RankGroup::allreduce(const ThreadComms& self, double* values, std::size_t count, Combine how) {
  combine(self, values, count, how, true);
}

void RankGroup::allreduce(const ThreadComms& self, std::int64_t* values, std::size_t count,
                          Combine how) {
  combine(self, values, count, how, true);
}

std::string RankGroup::gatherText(const ThreadComms& self, const std::string& processText) {
  std::string text = processText.substr(0, kMaxProcessText - 1);
  if (launch_.mode == LaunchMode::kSingleProcess) return text;
  std::int64_t token = 0;
  std::vector<char> all(kMaxProcessText * launch_.nProcs, '\0');
  if (launch_.mode == LaunchMode::kMpi) {
    combine(self, &token, 0, Combine::kSum, false);  // no thread may be inside MPI now
    if (self.thread == 0) {
      std::vector<char> mine(kMaxProcessText, '\0');
      std::memcpy(mine.data(), text.data(), text.size());
      mpiGatherBytes(mine.data(), kMaxProcessText, all.data());
    }
    combine(self, &token, 0, Combine::kSum, false);
  } else {
    // A byte-wise sum in which each process fills only its own block is a gather.
    std::vector<std::uint8_t> send(all.size() * self.count, 0), recv(send.size(), 0);
    if (self.thread == 0) {
      std::memcpy(send.data() + kMaxProcessText * launch_.proc, text.data(), text.size());
    }
    PERF_NCCL_CHECK(ncclGroupStart(), self.firstRank, nullptr);
    for (int c = 0; c < self.count; ++c) {
      PERF_NCCL_CHECK(ncclAllReduce(send.data() + c * all.size(), recv.data() + c * all.size(),
                                    all.size(), ncclUint8, ncclSum, self.comms[c], nullptr),
                      self.firstRank + c, self.comms[c]);
    }
    PERF_NCCL_CHECK(ncclGroupEnd(), self.firstRank, nullptr);
    std::memcpy(all.data(), recv.data(), all.size());
  }
  std::string gathered;
  for (int p = 0; p < launch_.nProcs; ++p) gathered += all.data() + kMaxProcessText * p;
  return gathered;
}

}  // namespace braid::bench
