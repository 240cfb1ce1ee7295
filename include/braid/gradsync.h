// Gradient synchronisation for data-parallel training, over Braid's public API (as PyTorch DDP's
// reducer does it): gradients grouped into buckets in reverse registration order, each bucket
// all-reduced on a host stream as soon as its gradients are ready so communication overlaps the
// rest of the backward pass, averaging over ranks, local accumulation (no-sync steps),
// fp16/bf16 wire formats with fp32 accumulation, and per-step statistics.
//
// Errors: every call returns ncclResult_t; the text (naming the gradient, step and ranks) is in
// lastError(). Calls that change nothing (an index out of range, addGradient after finalize, a
// call before finalize) are refused and the object stays usable. Problems that spoil the model or
// a step (a refused addGradient, a gradient marked twice or never marked, a failed allreduce or
// comm hook) are returned at once and also reported by the next collective call (finalize, or the
// next synced finish) on every rank, naming the rank and the gradient, so no rank waits for a
// peer that gave up; from then on the object is unusable except for destruction.
// One thread drives a GradSync; the comm hook runs on its stream's thread. The communicator must
// not be used by other calls between the first markReady and finish() of a synced step.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "nccl.h"

namespace braid {

/// What travels on the wire. kNative: the gradient's own type. kFloat16/kBFloat16: fp32
/// gradients are converted for the allreduce and widened back (DDP's fp16/bf16 compress hooks);
/// the reduction itself is computed in fp32 by the kernels.
enum class WireFormat { kNative, kFloat16, kBFloat16 };

/// How the average over ranks is taken: ncclAvg, or ncclRedOpCreatePreMulSum with 1/nranks.
enum class Averaging { kAvgOp, kPreMulSum };

/// Must be equal on every rank (finalize() checks, except gradientsAsBucketViews, which is local).
struct GradSyncOptions {
  size_t bucketCapBytes = size_t{25} << 20;      ///< DDP's bucket_cap_mb default
  size_t firstBucketCapBytes = size_t{1} << 20;  ///< the first bucket of each dtype
  bool gradientsAsBucketViews = false;           ///< gradients live inside the buckets (no copy)
  bool rebuildBucketsAfterFirstStep = true;      ///< re-bucket in the order seen in step 1
  WireFormat wire = WireFormat::kNative;
  Averaging averaging = Averaging::kAvgOp;
};

/// A bucket as a comm hook sees it: one flat buffer holding its gradients back to back.
struct Bucket {
  int index = 0;
  void* data = nullptr;
  size_t count = 0;  ///< elements
  ncclDataType_t dtype = ncclFloat32;
  std::vector<int> gradients;  ///< gradient indices, in bucket order
};

/// A user transform of a bucket (DDP's comm hook). It runs on the GradSync's stream thread in
/// place of the built-in allreduce and must leave in bucket.data the average over ranks.
using CommHook = std::function<ncclResult_t(ncclComm_t comm, Bucket& bucket)>;

/// Measured by the last finish() (a no-sync finish reports synced = false and zeros).
struct StepStats {
  size_t bytesReduced = 0;  ///< gradient bytes averaged (in the gradients' own type)
  size_t wireBytes = 0;  ///< bytes handed to ncclAllReduce (smaller with fp16/bf16; 0 with a hook)
  int buckets = 0;       ///< allreduces launched
  double finishWaitSeconds = 0;  ///< time finish() spent waiting for communication
  bool synced = false;           ///< the step communicated (sync was enabled)
};

/// A parameter or gradient buffer.
struct TensorRef {
  void* data = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
};

class GradSync {
 public:
  /// `comm` stays owned by the caller and must outlive this object.
  explicit GradSync(ncclComm_t comm, GradSyncOptions options = {});
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  /// Registers gradient buffer `index` (registration order = model order, as parameters are
  /// created). Buffers must not overlap. Only before finalize(). Types: fp16, bf16, fp32, fp64.
  /// A gradient of 0 elements is allowed (it must still be marked ready every step). With
  /// gradientsAsBucketViews, `data` may be NULL: the gradient lives at gradientData(index).
  ncclResult_t addGradient(const TensorRef& gradient, const std::string& name, int* index);
  /// Builds the buckets and checks, collectively, that every rank registered the same model
  /// (count and dtype of every gradient). Call once, on every rank, after the last addGradient.
  ncclResult_t finalize();
  /// With gradientsAsBucketViews: where gradient `index` lives now (backward must write there).
  /// The address can change when buckets are rebuilt after the first synced step. Without
  /// views: the registered buffer. NULL for an index out of range.
  void* gradientData(int index) const;

  /// Backward has written gradient `index` for the current micro-batch (it must not be written
  /// again until finish()). When every gradient of a bucket is ready, the bucket's allreduce is
  /// queued (in synced steps), after every bucket before it in bucketLayout() order.
  ncclResult_t markReady(int index);
  /// Waits for every bucket; afterwards each gradient holds the average over ranks of the sum of
  /// its micro-batch gradients since the last synced step. Every gradient must have been marked.
  ncclResult_t finish();

  /// Accumulation: while disabled, markReady only adds gradients to a local accumulator and
  /// finish() does no communication; the next enabled step reduces the accumulated sum. A step's
  /// mode is fixed by its first markReady. Every rank must use the same pattern of steps.
  void setSyncEnabled(bool enabled);
  bool syncEnabled() const;
  /// RAII form of setSyncEnabled(false), like DDP's no_sync().
  class NoSync {
   public:
    explicit NoSync(GradSync& g) : g_(g), was_(g.syncEnabled()) { g_.setSyncEnabled(false); }
    ~NoSync() { g_.setSyncEnabled(was_); }

   private:
    GradSync& g_;
    bool was_;
  };

  /// Replaces the built-in allreduce of each bucket (nullptr restores it); takes effect for
  /// buckets launched afterwards. With a hook the wire format is not applied (the hook sees the
  /// gradients' own type).
  void setCommHook(CommHook hook);

  /// Broadcasts `params` from `root` so every replica starts equal. Collective.
  ncclResult_t broadcastParameters(const std::vector<TensorRef>& params, int root = 0);
  /// Checks, collectively, that every rank holds bitwise-identical `params` (rank 0's copy is
  /// broadcast and compared exactly); an error (ncclInvalidUsage) names the first parameter that
  /// differs (by `names` where given), the ranks, the first element and both values.
  ncclResult_t verifyParametersEqual(const std::vector<TensorRef>& params,
                                     const std::vector<std::string>& names = {});

  const StepStats& lastStep() const;
  /// Gradient indices of each bucket, in launch order.
  std::vector<std::vector<int>> bucketLayout() const;
  const std::string& lastError() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace braid
