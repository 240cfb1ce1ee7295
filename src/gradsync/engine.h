// The state behind braid::GradSync and the operations on it, split over a few files:
// registration.cc (addGradient, finalize, bucket building), step.cc (markReady, finish, launch,
// rebuild), faults.cc (the exchanges that let every rank see every rank's errors),
// parameters.cc (broadcast and verification of parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "braid/gradsync.h"
#include "gradsync/bucket_assignment.h"
#include "gradsync/shared_buffer.h"
#include "nccl.h"

namespace braid::gradsync {

/// Zeroed, 64-byte aligned bytes (bucket storage, wire copies, accumulators).
class AlignedBuffer {
 public:
  void allocate(size_t bytes);
  std::byte* data() const { return bytes_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], Free> bytes_;
  size_t size_ = 0;
};

/// What went wrong on one rank during registration or a step; exchanged between ranks as three
/// int64 words {kind, gradient, detail} so that every rank can name every rank's problem.
enum class FaultKind : int64_t {
  kNone = 0,
  kRegistration = 1,  ///< addGradient refused a gradient (gradient = the index it would have had)
  kMarkedTwice = 2,   ///< gradient marked ready twice in one step
  kNeverMarked = 3,   ///< gradient never marked; detail = how many were not
  kLaunchFailed = 4,  ///< queueing a bucket's allreduce failed; detail = ncclResult_t
  kHookFailed = 5,    ///< the comm hook failed; gradient = bucket, detail = ncclResult_t
};

struct Fault {
  FaultKind kind = FaultKind::kNone;
  int64_t gradient = -1;
  int64_t detail = 0;
  ncclResult_t code = ncclSuccess;  ///< what the local call returns
  std::string text;                 ///< the local, detailed account
  explicit operator bool() const { return kind != FaultKind::kNone; }
};

struct GradientSlot {
  TensorRef user;
  std::string name;
  size_t bytes = 0;
  int bucket = -1;
  size_t offset = 0;  ///< elements from the start of its bucket
  bool ready = false;
};

struct BucketState {
  int index = 0;
  std::vector<int> gradients;
  std::vector<size_t> offsets;  ///< of each gradient, in elements
  ncclDataType_t dtype = ncclFloat32;
  ncclDataType_t wireType = ncclFloat32;  ///< what ncclAllReduce gets (== dtype when native)
  size_t count = 0;
  size_t elementBytes = 0;
  SharedBuffer storage;       ///< the flat bucket (the gradients themselves with views)
  SharedBuffer wire;          ///< fp16/bf16 copy of an fp32 bucket
  AlignedBuffer accumulator;  ///< with views: local sums of no-sync steps
  int pending = 0;            ///< gradients not yet marked ready in this synced step
  bool launched = false;
  // Used on the stream thread while the bucket is in flight (read back after synchronizing).
  CommHook hook;
  Bucket hookView;
  ncclComm_t comm = nullptr;
  ncclResult_t hookResult = ncclSuccess;
  std::string hookError;

  std::byte* gradientAddress(const GradientSlot& g) const {
    return storage.data() + g.offset * elementBytes;
  }
};

struct StepState {
  bool modeLatched = false;  ///< sync mode fixed by the step's first markReady
  bool sync = true;
  int marked = 0;
  size_t nextLaunch = 0;
  std::vector<int> readyOrder;  ///< recorded in the first synced step, for the rebuild
  StepStats stats;              ///< counted as buckets launch; lastStep() once finish() ends
};

class Engine {
 public:
  Engine(ncclComm_t comm, GradSyncOptions options);
  ~Engine();

  // registration.cc
  ncclResult_t addGradient(const TensorRef& gradient, const std::string& name, int* index);
  ncclResult_t finalize();
  void* gradientData(int index) const;
  std::vector<std::vector<int>> bucketLayout() const;

  // step.cc
  ncclResult_t markReady(int index);
  ncclResult_t finish();
  void setSyncEnabled(bool enabled) { syncEnabled_ = enabled; }
  bool syncEnabled() const { return syncEnabled_; }
  void setCommHook(CommHook hook) { hook_ = std::move(hook); }

  // parameters.cc
  ncclResult_t broadcastParameters(const std::vector<TensorRef>& params, int root);
  ncclResult_t verifyParametersEqual(const std::vector<TensorRef>& params,
                                     const std::vector<std::string>& names);

  const StepStats& lastStep() const { return stats_; }
  const std::string& lastError() const { return error_; }
  /// An exception escaped an operation: the object's state is unknown, so it is failed.
  ncclResult_t failWithException(ncclResult_t code, const std::string& text) {
    return failObject(code, text);
  }

 private:
  // registration.cc
  ncclResult_t refuse(ncclResult_t code, const std::string& text);
  ncclResult_t failObject(ncclResult_t code, const std::string& text);
  std::vector<GradientShape> shapes() const;
  std::vector<std::unique_ptr<BucketState>> buildBuckets(
      const std::vector<std::vector<int>>& layout);
  void placeGradients();
  ncclResult_t checkModelsAgree();
  ncclResult_t createAveragingOps();

  // step.cc
  void moveGradientIn(GradientSlot& g);
  void launchReadyBuckets(bool force);
  void launch(BucketState& bucket);
  void recordFault(FaultKind kind, int64_t gradient, int64_t detail, ncclResult_t code,
                   const std::string& text);
  ncclResult_t finishSynced();
  void endStep();
  ncclResult_t rebuildBuckets();
  ncclRedOp_t averagingOp(ncclDataType_t dtype) const;

  // parameters.cc
  ncclResult_t checkParameterLists(const char* what, const std::vector<TensorRef>& params,
                                   const std::vector<std::string>& names, int root);

  // faults.cc
  ncclResult_t allgatherWords(const std::vector<int64_t>& mine,
                              std::vector<std::vector<int64_t>>* rows, const char* what);
  std::string describeRemoteFault(int rank, const std::vector<int64_t>& words) const;
  ncclResult_t agreeOnStep();
  std::string gradientLabel(int64_t index) const;

  ncclComm_t comm_;
  GradSyncOptions options_;
  int rank_ = 0;
  int nranks_ = 1;
  std::vector<GradientSlot> gradients_;
  std::map<uintptr_t, std::pair<uintptr_t, int>> buffersByAddress_;  // begin -> (end, gradient)
  std::vector<std::unique_ptr<BucketState>> buckets_;                // in launch order
  braidStream_t stream_ = nullptr;
  std::map<int, ncclRedOp_t> preMulSumOps_;  // by dtype, with Averaging::kPreMulSum
  CommHook hook_;
  bool finalized_ = false;
  bool syncEnabled_ = true;
  bool accumulated_ = false;  ///< no-sync sums are waiting for the next synced step
  bool rebuilt_ = false;
  int64_t stepNumber_ = 1;  ///< 1-based, counts finish() calls
  StepState step_;
  Fault fault_;                        ///< first problem of the registration or of the current step
  ncclResult_t failed_ = ncclSuccess;  ///< sticky: set once an error was reported collectively
  StepStats stats_;
  std::string error_;
};

}  // namespace braid::gradsync
