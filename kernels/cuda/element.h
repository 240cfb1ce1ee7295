// One output element of a reduce, as the CUDA kernels compute it: post(acc OP pre(local)) over
// the op definitions of kernels/ops.h. The same function runs on the host in the tests, which
// check it against the CPU kernels and the independent reference for every dtype x op.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::kernels::cuda {

/// A reduce call's run-time options, resolved once per launch.
template <int D>
struct ElementParams {
  typename ElementType<D>::Compute scalar;  ///< premul factor, widened to the compute type
  std::uint32_t divisor;                    ///< post-divide by this when `post`
  bool hasAcc;                              ///< false: the result is post(pre(local))
  bool pre;                                 ///< multiply local by scalar, rounded to the dtype
  bool post;                                ///< divide the result (ncclAvg)
};

/// The parameters of one reduce call (kernels::reduce's op, operand and flags), resolved on the
/// host before a launch.
template <int D>
ElementParams<D> elementParams(const ReduceOp& op, bool hasAcc, unsigned flags) {
  using E = ElementType<D>;
  ElementParams<D> params{};
  typename E::Storage scalarBits;
  std::memcpy(&scalarBits, op.scalar, sizeof(scalarBits));
  params.scalar = E::load(scalarBits);
  params.divisor = op.postDiv;
  params.hasAcc = hasAcc;
  params.pre = (flags & kApplyPre) != 0 && op.preMul;
  params.post = (flags & kApplyPost) != 0 && op.postDiv > 1;
  return params;
}

template <int D, class Op>
struct ReduceElement {
  using E = ElementType<D>;
  using Storage = typename E::Storage;
  using Compute = typename E::Compute;

  BRAID_HOST_DEVICE BRAID_INLINE static Storage apply(const ElementParams<D>& p, Storage acc,
                                                      Storage local) {
    // Neither an operand nor a pre/post step: the bits pass through (a NaN keeps its payload),
    // exactly as the CPU kernels copy them.
    if (!p.hasAcc && !p.pre && !p.post) return local;
    Compute value = E::load(local);
    if (p.pre) value = preMultiply<E>(value, p.scalar);
    if (p.hasAcc) value = Op()(E::load(acc), value);
    if (p.post) value = postDivide(value, p.divisor);
    return E::store(value);
  }
};

}  // namespace braid::kernels::cuda
