// Registration of the model's gradients, the collective check that every rank registered the
// same model with the same options, and the buckets built from it.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "gradsync/element_ops.h"
#include "gradsync/engine.h"

namespace braid::gradsync {

void AlignedBuffer::allocate(size_t bytes) {
  constexpr size_t kAlign = 64;  // a cache line: buckets never share one, kernels run aligned
  size_t rounded = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, rounded));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  bytes_.reset(p);
  size_ = bytes;
}

Engine::Engine(ncclComm_t comm, GradSyncOptions options) : comm_(comm), options_(options) {
  if (!comm_ || ncclCommCount(comm_, &nranks_) != ncclSuccess ||
      ncclCommUserRank(comm_, &rank_) != ncclSuccess) {
    failed_ = ncclInvalidArgument;
    error_ = "GradSync: comm is not a usable communicator";
  }
}

Engine::~Engine() {
  if (stream_) braidStreamDestroy(stream_);
  for (auto& [dtype, op] : preMulSumOps_) ncclRedOpDestroy(op, comm_);
}

ncclResult_t Engine::refuse(ncclResult_t code, const std::string& text) {
  error_ = text;
  return code;
}

ncclResult_t Engine::failObject(ncclResult_t code, const std::string& text) {
  failed_ = code;
  error_ = text;
  return code;
}

ncclResult_t Engine::addGradient(const TensorRef& gradient, const std::string& name, int* index) {
  if (failed_) return failed_;
  const std::string what = "addGradient(" + std::to_string(gradients_.size()) + ", '" + name + "')";
  if (!index) return refuse(ncclInvalidArgument, what + ": index (the output pointer) is NULL");
  *index = -1;
  if (finalized_)
    return refuse(ncclInvalidUsage, what +
                                        ": called after finalize(); register every gradient "
                                        "before finalize()");
  auto registrationFault = [&](const std::string& why) {
    std::string text = what + ": " + why + " (finalize() fails on every rank)";
    recordFault(FaultKind::kRegistration, static_cast<int64_t>(gradients_.size()), 0,
                ncclInvalidArgument, text);
    return refuse(ncclInvalidArgument, text);
  };
  if (!isGradientType(gradient.dtype))
    return registrationFault("dtype " + dtypeName(gradient.dtype) +
                             " is not a gradient type (float16, bfloat16, float32, float64)");
  const size_t elementBytes = elementSize(gradient.dtype);
  if (gradient.count > SIZE_MAX / elementBytes)
    return registrationFault("count=" + std::to_string(gradient.count) + " overflows size_t bytes");
  const size_t bytes = gradient.count * elementBytes;
  if (!gradient.data && bytes > 0 && !options_.gradientsAsBucketViews)
    return registrationFault("data is NULL for " + std::to_string(gradient.count) + " elements");
  if (gradient.data && bytes > 0) {
    auto begin = reinterpret_cast<uintptr_t>(gradient.data);
    if (begin > UINTPTR_MAX - bytes)
      return registrationFault("the buffer wraps around the address space");
    // Registered buffers do not overlap each other, so only the neighbours of `begin` in address
    // order can overlap the new one.
    int other = -1;
    auto next = buffersByAddress_.upper_bound(begin);
    if (next != buffersByAddress_.end() && next->first < begin + bytes) other = next->second.second;
    if (next != buffersByAddress_.begin() && std::prev(next)->second.first > begin)
      other = std::prev(next)->second.second;
    if (other >= 0)
      return registrationFault("its buffer [" + std::to_string(begin) + ", +" +
                               std::to_string(bytes) + " bytes) overlaps gradient " +
                               gradientLabel(other));
    buffersByAddress_[begin] = {begin + bytes, static_cast<int>(gradients_.size())};
  }
  GradientSlot slot;
  slot.user = gradient;
  slot.name = name;
  slot.bytes = bytes;
  gradients_.push_back(std::move(slot));
  *index = static_cast<int>(gradients_.size() - 1);
  return ncclSuccess;
}

std::vector<GradientShape> Engine::shapes() const {
  std::vector<GradientShape> result;
  result.reserve(gradients_.size());
  for (const GradientSlot& g : gradients_) result.push_back({g.bytes, g.user.dtype});
  return result;
}

std::vector<std::unique_ptr<BucketState>> Engine::buildBuckets(
    const std::vector<std::vector<int>>& layout) {
  std::vector<std::unique_ptr<BucketState>> buckets;
  for (size_t b = 0; b < layout.size(); b++) {
    auto bucket = std::make_unique<BucketState>();
    bucket->index = static_cast<int>(b);
    bucket->gradients = layout[b];
    bucket->dtype = gradients_[layout[b].front()].user.dtype;
    bucket->elementBytes = elementSize(bucket->dtype);
    for (int g : layout[b]) {
      bucket->offsets.push_back(bucket->count);
      bucket->count += gradients_[g].user.count;
    }
    bucket->storage.allocate(comm_, bucket->count * bucket->elementBytes);
    bucket->wireType = bucket->dtype;
    if (bucket->dtype == ncclFloat32 && options_.wire != WireFormat::kNative) {
      bucket->wireType = options_.wire == WireFormat::kFloat16 ? ncclFloat16 : ncclBfloat16;
      bucket->wire.allocate(comm_, bucket->count * sizeof(uint16_t));
    }
    bucket->pending = static_cast<int>(bucket->gradients.size());
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

void Engine::placeGradients() {
  for (const auto& bucket : buckets_) {
    for (size_t k = 0; k < bucket->gradients.size(); k++) {
      GradientSlot& g = gradients_[bucket->gradients[k]];
      g.bucket = bucket->index;
      g.offset = bucket->offsets[k];
    }
  }
}

ncclResult_t Engine::createAveragingOps() {
  if (options_.averaging != Averaging::kPreMulSum) return ncclSuccess;
  for (const auto& bucket : buckets_) {
    ncclDataType_t t = bucket->wireType;
    if (preMulSumOps_.count(static_cast<int>(t))) continue;
    // The scalar is given in the dtype's own representation, as ncclRedOpCreatePreMulSum reads it.
    const double inverse = 1.0 / nranks_;
    unsigned char scalar[8] = {};
    if (t == ncclFloat64) {
      std::memcpy(scalar, &inverse, sizeof(double));
    } else if (t == ncclFloat32) {
      float f = static_cast<float>(inverse);
      std::memcpy(scalar, &f, sizeof(float));
    } else {
      uint16_t h = t == ncclFloat16 ? floatToHalf(static_cast<float>(inverse))
                                    : floatToBfloat16(static_cast<float>(inverse));
      std::memcpy(scalar, &h, sizeof(h));
    }
    ncclRedOp_t op;
    if (ncclRedOpCreatePreMulSum(&op, scalar, t, ncclScalarHostImmediate, comm_) != ncclSuccess)
      return failObject(ncclInternalError, std::string("finalize: ncclRedOpCreatePreMulSum(") +
                                               dtypeName(t) +
                                               ") failed: " + ncclGetLastError(comm_));
    preMulSumOps_[static_cast<int>(t)] = op;
  }
  return ncclSuccess;
}

ncclResult_t Engine::finalize() {
  if (failed_) return failed_;
  if (finalized_) return refuse(ncclInvalidUsage, "finalize: called twice");
  if (ncclResult_t r = checkModelsAgree(); r != ncclSuccess) return r;
  buckets_ = buildBuckets(assignBuckets(shapes(), reverseRegistrationOrder(gradients_.size()),
                                        options_.firstBucketCapBytes, options_.bucketCapBytes));
  placeGradients();
  if (ncclResult_t r = createAveragingOps(); r != ncclSuccess) return r;
  if (braidStreamCreate(&stream_) != ncclSuccess)
    return failObject(ncclSystemError, std::string("finalize: braidStreamCreate failed: ") +
                                           ncclGetLastError(comm_));
  finalized_ = true;
  return ncclSuccess;
}

void* Engine::gradientData(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= gradients_.size()) return nullptr;
  const GradientSlot& g = gradients_[index];
  if (!options_.gradientsAsBucketViews || !finalized_) return g.user.data;
  return buckets_[g.bucket]->gradientAddress(g);
}

std::vector<std::vector<int>> Engine::bucketLayout() const {
  std::vector<std::vector<int>> layout;
  for (const auto& bucket : buckets_) layout.push_back(bucket->gradients);
  return layout;
}

}  // namespace braid::gradsync
