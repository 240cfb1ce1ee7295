#include <cstring>

#include "api/api.h"
#include "device/device_runtime.h"
#include "kernels/ops.h"

namespace braid {

ncclResult_t checkComm(ncclComm_t comm, bool mustBeHealthy) {
  if (!comm) return fail(ncclInvalidArgument, "comm is NULL");
  if (!commIsLive(comm))
    return fail(ncclInvalidArgument,
                "comm %p is not a live communicator (destroyed or never created)",
                static_cast<void*>(comm));
  if (!mustBeHealthy) return ncclSuccess;
  if (!comm->health.initialized)
    return fail(ncclInvalidUsage, "comm %p has not completed initialisation",
                static_cast<void*>(comm));
  if (comm->health.revoked.load())
    return fail(ncclInvalidUsage,
                "comm %p was revoked (ncclCommRevoke or NCCL_SHRINK_ABORT): only ncclCommShrink, "
                "ncclCommAbort and ncclCommDestroy remain valid",
                static_cast<void*>(comm));
  if (comm->health.abortFlag.load())
    return fail(ncclInvalidUsage, "comm %p was aborted", static_cast<void*>(comm));
  const ncclResult_t err = comm->health.state();
  if (err != ncclSuccess && err != ncclInProgress)
    return fail(err, "comm %p failed earlier and can only be aborted or destroyed: %s",
                static_cast<void*>(comm), comm->health.errorText().c_str());
  return ncclSuccess;
}

ncclResult_t checkDataType(ncclDataType_t dtype) {
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) >= ncclNumTypes)
    return fail(ncclInvalidArgument, "datatype=%d is not a valid ncclDataType_t (0..%d)",
                static_cast<int>(dtype), ncclNumTypes - 1);
  return ncclSuccess;
}

bool avgPreMultiplier(ncclDataType_t dtype, int nranks, unsigned char* scalar) {
  namespace k = kernels;
  // NCCL's hostToDevRedOp: 1/nranks in double, narrowed to float for every type but double,
  // then to the element type.
  const double inverse = 1.0 / nranks;
  const float f = static_cast<float>(inverse);
  auto put = [&](auto value) { memcpy(scalar, &value, sizeof(value)); };
  switch (static_cast<int>(dtype)) {
    case k::dtype::kFloat64:
      put(inverse);
      return true;
    case k::dtype::kFloat32:
      put(f);
      return true;
    case k::dtype::kFloat16:
      put(k::floatToHalf(f));
      return true;
    case k::dtype::kBfloat16:
      put(k::floatToBf16(f));
      return true;
    case k::dtype::kFp8E4M3:
      put(k::floatToFp8<k::Fp8E4M3Format>(f));
      return true;
    case k::dtype::kFp8E5M2:
      put(k::floatToFp8<k::Fp8E5M2Format>(f));
      return true;
    default:
      return false;
  }
}

ncclResult_t resolveOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t dtype,
                       kernels::ReduceOp* out, const void** deviceScalar) {
  *deviceScalar = nullptr;
  kernels::ReduceOp r;
  r.dtype = dtype;
  int v = static_cast<int>(op);
  if (v >= 0 && v < ncclNumOps) {
    if (op == ncclAvg) {
      r.op = kernels::BaseOp::kSum;
      if (!avgPreMultiplier(dtype, comm->nranks(), r.scalar))
        r.postDiv = static_cast<uint32_t>(comm->nranks());  // integers: sum, then truncate
      else
        r.preMul = true;
    } else {
      r.op = static_cast<kernels::BaseOp>(v);
    }
    *out = r;
    return ncclSuccess;
  }
  size_t index = static_cast<size_t>(v) - ncclNumOps;
  if (v < ncclNumOps || index >= comm->userOps.size() || !comm->userOps[index].inUse)
    return fail(ncclInvalidArgument,
                "op=%d is neither a built-in ncclRedOp_t nor an op created on comm %p "
                "(ncclRedOpCreatePreMulSum ops belong to the communicator that made them)",
                v, static_cast<void*>(comm));
  const UserRedOp& u = comm->userOps[index];
  if (u.dtype != dtype)
    return fail(ncclInvalidArgument,
                "op=%d was created for datatype %d but is used with datatype %d", v, u.dtype,
                static_cast<int>(dtype));
  r.op = kernels::BaseOp::kSum;
  r.preMul = true;
  size_t es = kernels::typeSize(dtype);
  DeviceRuntime& rt = deviceRuntime();
  if (u.residence == ncclScalarHostImmediate)
    memcpy(r.scalar, u.value, es);
  else if (rt.deviceCount() > 0 && rt.place(u.pointer).kind == MemoryKind::kDevice)
    *deviceScalar = u.pointer;  // read when the call runs
  else
    memcpy(r.scalar, u.pointer, es);  // host memory named as the scalar's place: read now
  *out = r;
  return ncclSuccess;
}

}  // namespace braid
