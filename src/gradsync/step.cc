// One training step: markReady moves a gradient into its bucket (or into the local accumulator
// in no-sync steps) and queues every bucket that became complete, in bucket order, on the host
// stream; finish() waits, agrees with the other ranks that the step went well, and hands the
// averages back.
#include <chrono>
#include <cstring>

#include "gradsync/element_ops.h"
#include "gradsync/engine.h"

namespace braid::gradsync {

namespace {

// Host functions run on the stream's thread, in order with the bucket's allreduce.
int narrowBucket(void* arg) {
  auto* b = static_cast<BucketState*>(arg);
  narrowFloats(reinterpret_cast<const float*>(b->storage.data()),
               reinterpret_cast<uint16_t*>(b->wire.data()), b->count, b->wireType);
  return 0;
}

int widenBucket(void* arg) {
  auto* b = static_cast<BucketState*>(arg);
  widenFloats(reinterpret_cast<const uint16_t*>(b->wire.data()),
              reinterpret_cast<float*>(b->storage.data()), b->count, b->wireType);
  return 0;
}

int runCommHook(void* arg) {
  auto* b = static_cast<BucketState*>(arg);
  try {
    b->hookResult = b->hook(b->comm, b->hookView);
    if (b->hookResult != ncclSuccess) b->hookError = ncclGetErrorString(b->hookResult);
  } catch (const std::exception& e) {
    b->hookResult = ncclInternalError;
    b->hookError = std::string("it threw: ") + e.what();
  } catch (...) {
    b->hookResult = ncclInternalError;
    b->hookError = "it threw a non-standard exception";
  }
  // A failure is reported by finish(), not by failing the stream: the stream must go on to run
  // the later buckets, whose collectives the other ranks are waiting for.
  return 0;
}

}  // namespace

void Engine::recordFault(FaultKind kind, int64_t gradient, int64_t detail, ncclResult_t code,
                         const std::string& text) {
  if (fault_) return;  // the first problem is the one worth reporting
  fault_ = Fault{kind, gradient, detail, code, text};
}

ncclRedOp_t Engine::averagingOp(ncclDataType_t dtype) const {
  if (options_.averaging == Averaging::kAvgOp) return ncclAvg;
  return preMulSumOps_.at(static_cast<int>(dtype));
}

// Copy mode: the bucket holds this step's gradient (or, after no-sync steps, the running sum).
// Views: backward wrote into the bucket; no-sync steps keep their sums in the accumulator.
void Engine::moveGradientIn(GradientSlot& g) {
  if (g.bytes == 0) return;
  BucketState& bucket = *buckets_[g.bucket];
  std::byte* inBucket = bucket.gradientAddress(g);
  const size_t count = g.user.count;
  if (!options_.gradientsAsBucketViews) {
    if (accumulated_)
      accumulate(inBucket, g.user.data, count, g.user.dtype);
    else
      std::memcpy(inBucket, g.user.data, g.bytes);
    return;
  }
  if (step_.sync) {
    if (accumulated_)
      accumulate(inBucket, bucket.accumulator.data() + g.offset * bucket.elementBytes, count,
                 g.user.dtype);
    return;
  }
  if (!bucket.accumulator.data()) bucket.accumulator.allocate(bucket.count * bucket.elementBytes);
  std::byte* sum = bucket.accumulator.data() + g.offset * bucket.elementBytes;
  if (accumulated_)
    accumulate(sum, inBucket, count, g.user.dtype);
  else
    std::memcpy(sum, inBucket, g.bytes);
}

ncclResult_t Engine::markReady(int index) {
  if (failed_) return failed_;
  if (!finalized_) return refuse(ncclInvalidUsage, "markReady: called before finalize()");
  if (index < 0 || static_cast<size_t>(index) >= gradients_.size())
    return refuse(ncclInvalidArgument,
                  "markReady: gradient index " + std::to_string(index) + " is out of range (" +
                      std::to_string(gradients_.size()) + " gradients registered)");
  if (!step_.modeLatched) {
    step_.modeLatched = true;
    step_.sync = syncEnabled_;
  }
  GradientSlot& g = gradients_[index];
  if (g.ready) {
    std::string text = "markReady: gradient " + gradientLabel(index) +
                       " was marked ready twice in step " + std::to_string(stepNumber_) +
                       (step_.sync ? " (this step's finish() fails on every rank)"
                                   : " (the next synced finish() fails on every rank)");
    recordFault(FaultKind::kMarkedTwice, index, 0, ncclInvalidUsage, text);
    return refuse(ncclInvalidUsage, text);
  }
  g.ready = true;
  step_.marked++;
  if (step_.sync && options_.rebuildBucketsAfterFirstStep && !rebuilt_)
    step_.readyOrder.push_back(index);
  moveGradientIn(g);
  if (step_.sync) {
    buckets_[g.bucket]->pending--;
    launchReadyBuckets(/*force=*/false);
  }
  return ncclSuccess;
}

// Buckets are launched strictly in bucket order, which is the same on every rank: a bucket that
// completes early waits for the ones before it, as in DDP, so ranks whose backward passes finish
// gradients in different orders still issue the same sequence of allreduces.
void Engine::launchReadyBuckets(bool force) {
  while (step_.nextLaunch < buckets_.size()) {
    BucketState& bucket = *buckets_[step_.nextLaunch];
    if (!force && bucket.pending > 0) return;
    launch(bucket);
    step_.nextLaunch++;
  }
}

void Engine::launch(BucketState& bucket) {
  bucket.launched = true;
  if (bucket.count == 0) return;  // only empty gradients: nothing to reduce on any rank
  step_.stats.buckets++;
  step_.stats.bytesReduced += bucket.count * bucket.elementBytes;
  cudaStream_t stream = braidStreamAsCuda(stream_);
  ncclResult_t r = ncclSuccess;
  if (hook_) {
    bucket.hook = hook_;
    bucket.comm = comm_;
    bucket.hookResult = ncclSuccess;
    bucket.hookError.clear();
    bucket.hookView =
        Bucket{bucket.index, bucket.storage.data(), bucket.count, bucket.dtype, bucket.gradients};
    r = braidStreamLaunchHostFunc(stream_, runCommHook, &bucket);
  } else if (bucket.wireType != bucket.dtype) {
    step_.stats.wireBytes += bucket.count * elementSize(bucket.wireType);
    r = braidStreamLaunchHostFunc(stream_, narrowBucket, &bucket);
    if (r == ncclSuccess)
      r = ncclAllReduce(bucket.wire.data(), bucket.wire.data(), bucket.count, bucket.wireType,
                        averagingOp(bucket.wireType), comm_, stream);
    if (r == ncclSuccess) r = braidStreamLaunchHostFunc(stream_, widenBucket, &bucket);
  } else {
    step_.stats.wireBytes += bucket.count * bucket.elementBytes;
    r = ncclAllReduce(bucket.storage.data(), bucket.storage.data(), bucket.count, bucket.dtype,
                      averagingOp(bucket.dtype), comm_, stream);
  }
  if (r != ncclSuccess)
    recordFault(FaultKind::kLaunchFailed, bucket.index, r, r,
                "queueing the allreduce of bucket " + std::to_string(bucket.index) +
                    " failed: " + ncclGetLastError(comm_));
}

ncclResult_t Engine::finish() {
  if (failed_) return failed_;
  if (!finalized_) return refuse(ncclInvalidUsage, "finish: called before finalize()");
  if (!step_.modeLatched) step_.sync = syncEnabled_;
  if (step_.marked < static_cast<int>(gradients_.size())) {
    std::string names;
    int first = -1, missing = 0;
    for (size_t i = 0; i < gradients_.size(); i++) {
      if (gradients_[i].ready) continue;
      if (first < 0) first = static_cast<int>(i);
      if (++missing <= 8) names += (missing > 1 ? ", " : "") + gradientLabel(i);
    }
    if (missing > 8) names += " and " + std::to_string(missing - 8) + " more";
    recordFault(FaultKind::kNeverMarked, first, missing, ncclInvalidUsage,
                "finish: gradients never marked ready in step " + std::to_string(stepNumber_) +
                    ": " + names);
  }
  stats_ = StepStats{};
  if (step_.sync) return finishSynced();
  // No-sync: nothing leaves this rank. A fault is reported now, and to every rank by the next
  // synced finish() (which keeps the others from waiting for this rank's buckets).
  if (fault_) {
    endStep();
    return refuse(fault_.code, fault_.text);
  }
  accumulated_ = true;
  endStep();
  return ncclSuccess;
}

ncclResult_t Engine::finishSynced() {
  launchReadyBuckets(/*force=*/true);  // even after a fault: the peers wait for these buckets
  stats_ = step_.stats;
  stats_.synced = true;
  const auto start = std::chrono::steady_clock::now();
  ncclResult_t streamResult = braidStreamSynchronize(stream_);
  if (streamResult != ncclSuccess) {
    // A collective failed on the stream: the communicator is failed too, and every peer hears of
    // it from there (an exchange of faults over it could not run).
    std::string text = "finish: step " + std::to_string(stepNumber_) + " failed: ";
    if (fault_) text += fault_.text + "; then ";
    return failObject(streamResult,
                      text + "the communication stream failed: " + ncclGetLastError(comm_));
  }
  for (const auto& bucket : buckets_) {
    if (bucket->hookResult == ncclSuccess) continue;
    recordFault(FaultKind::kHookFailed, bucket->index, bucket->hookResult, bucket->hookResult,
                "the comm hook failed on bucket " + std::to_string(bucket->index) + ": " +
                    bucket->hookError);
    break;
  }
  ncclResult_t agreed = agreeOnStep();
  stats_.finishWaitSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (agreed != ncclSuccess) return agreed;

  if (!options_.gradientsAsBucketViews) {
    for (GradientSlot& g : gradients_)
      if (g.bytes > 0) std::memcpy(g.user.data, buckets_[g.bucket]->gradientAddress(g), g.bytes);
  }
  accumulated_ = false;
  const bool rebuildNow = options_.rebuildBucketsAfterFirstStep && !rebuilt_;
  std::vector<int> order = std::move(step_.readyOrder);
  endStep();
  if (rebuildNow) {
    step_.readyOrder = std::move(order);
    return rebuildBuckets();
  }
  return ncclSuccess;
}

void Engine::endStep() {
  for (GradientSlot& g : gradients_) g.ready = false;
  for (auto& bucket : buckets_) {
    bucket->pending = static_cast<int>(bucket->gradients.size());
    bucket->launched = false;
  }
  step_ = StepState{};
  stepNumber_++;
}

// DDP's rebuild: the first synced step showed the order backward really produces gradients;
// buckets built in that order complete one after the other. Rank 0's order is broadcast so
// every rank builds the same buckets.
ncclResult_t Engine::rebuildBuckets() {
  rebuilt_ = true;
  const size_t n = gradients_.size();
  std::vector<int32_t> order(n);
  for (size_t i = 0; i < n && i < step_.readyOrder.size(); i++) order[i] = step_.readyOrder[i];
  step_.readyOrder.clear();
  if (n > 0 &&
      ncclBroadcast(order.data(), order.data(), n, ncclInt32, 0, comm_, nullptr) != ncclSuccess)
    return failObject(ncclSystemError, std::string("finish: broadcasting the gradient order for "
                                                   "the bucket rebuild failed: ") +
                                           ncclGetLastError(comm_));
  std::vector<bool> seen(n, false);
  for (int32_t g : order) {
    if (g < 0 || static_cast<size_t>(g) >= n || seen[g])
      return failObject(ncclInternalError,
                        "finish: rank 0's gradient order for the bucket "
                        "rebuild is not a permutation (entry " +
                            std::to_string(g) + ")");
    seen[g] = true;
  }
  auto rebuilt = buildBuckets(assignBuckets(shapes(), std::vector<int>(order.begin(), order.end()),
                                            options_.firstBucketCapBytes, options_.bucketCapBytes));
  if (options_.gradientsAsBucketViews) {
    // The averages of this step move with the gradients to their new places.
    for (const auto& bucket : rebuilt) {
      for (size_t k = 0; k < bucket->gradients.size(); k++) {
        const GradientSlot& g = gradients_[bucket->gradients[k]];
        if (g.bytes == 0) continue;
        std::memcpy(bucket->storage.data() + bucket->offsets[k] * bucket->elementBytes,
                    buckets_[g.bucket]->gradientAddress(g), g.bytes);
      }
    }
  }
  buckets_ = std::move(rebuilt);
  placeGradients();
  return ncclSuccess;
}

}  // namespace braid::gradsync
