#include "tensor_checks.h"

#include <c10/util/Exception.h>

namespace braid_torch {

ncclDataType_t toBraidType(at::ScalarType type, const char* call, bool forReduction) {
  switch (type) {
    case at::kFloat:
      return ncclFloat32;
    case at::kHalf:
      return ncclFloat16;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kDouble:
      return ncclFloat64;
    case at::kInt:
      return ncclInt32;
    case at::kLong:
      return ncclInt64;
    case at::kChar:
      return ncclInt8;
    case at::kByte:
      return ncclUint8;
    case at::kBool:
      TORCH_CHECK_TYPE(!forReduction, "braid ", call,
                       ": dtype torch.bool cannot be reduced (use uint8 or int32)");
      return ncclUint8;
    default:
      break;
  }
  TORCH_CHECK_TYPE(false, "braid ", call, ": dtype ", type,
                   " is not supported (float32, float16, bfloat16, float64, int32, int64, int8, "
                   "uint8; bool for broadcast, all_gather, send and recv)");
}

void checkTensor(const at::Tensor& t, const char* call, const std::string& what, bool strided) {
  TORCH_CHECK_VALUE(t.defined(), "braid ", call, ": ", what, " is an undefined tensor");
  TORCH_CHECK_VALUE(t.device().is_cpu(), "braid ", call, ": ", what, " is on device ", t.device(),
                    "; the Braid backend takes CPU tensors only");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, "braid ", call, ": ", what, " has layout ",
                    t.layout(), "; only dense (strided) tensors are supported");
  TORCH_CHECK_VALUE(strided || t.is_contiguous(), "braid ", call, ": ", what,
                    " is not contiguous (sizes ", t.sizes(), ", strides ", t.strides(),
                    "); call .contiguous() first");
}

const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* call,
                               const char* what, bool strided) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "braid ", call, ": ", what, " holds ", tensors.size(),
                    " tensors; the Braid backend takes exactly one per call");
  checkTensor(tensors[0], call, std::string(what) + "[0]", strided);
  return tensors[0];
}

Strided::Strided(const at::Tensor& t)
    : tensor(t),
      work(t.is_contiguous() ? t : at::empty_like(t, t.options(), at::MemoryFormat::Contiguous)) {}

void Strided::in() const {
  if (!work.is_same(tensor)) work.copy_(tensor);
}

void Strided::out() const {
  if (!work.is_same(tensor)) tensor.copy_(work);
}

void checkRank(int64_t rank, int size, const char* call, const char* what) {
  TORCH_CHECK_VALUE(rank >= 0 && rank < size, "braid ", call, ": ", what, "=", rank,
                    " is not a rank of this group (size ", size, ")");
}

void checkSameType(const at::Tensor& t, const at::Tensor& reference, const char* call,
                   const std::string& what) {
  TORCH_CHECK_TYPE(t.scalar_type() == reference.scalar_type(), "braid ", call, ": ", what,
                   " has dtype ", t.scalar_type(), ", the input has ", reference.scalar_type());
}

}  // namespace braid_torch
