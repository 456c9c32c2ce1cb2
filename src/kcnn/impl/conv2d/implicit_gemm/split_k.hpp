// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/split_k.hpp
/// \brief A split K's partial sums (SplitKPartials: where slice s's sum for filter m and
///        column j lives) and the second pass that adds them (SplitKReduce), shared by
///        the implicit GEMMs (ImplicitGemm's device kernel, TensorCoreGemm).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../common/element_traits.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "operands.hpp"

namespace kcnn::Impl {

/// Slice s, filter m, column j at offset(s, m, j): m-major (runs of J per filter: NCHW
/// y's order, and what ImplicitGemm's register tiles store as vectors) or j-major (runs
/// of M per column: NHWC y's order), so the reduction reads and writes runs.
template <bool JMajor>
struct SplitKPartials {
  std::int64_t M, J;
  KOKKOS_INLINE_FUNCTION std::int64_t offset(int s, std::int64_t m, std::int64_t j) const {
    return JMajor ? (s * J + j) * M + m : (s * M + m) * J + j;
  }
};

/// The second pass of a split K: y(m, j) = act(sum over the slices of the partial sums,
/// in slice order (deterministic), + bias[m]); one thread per output, in the partial
/// sums' order; y of type Y (see ImplicitGemmOperands).
template <Layout L, class T, bool JMajor, class Y = T>
struct SplitKReduce {
  using Acc = accumulator_t<T>;
  ImplicitGemmOperands<L, T, Y> op;
  const Acc* partial;  ///< in the accumulator type: 16-bit results round once, here
  int k_slices;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t e) const {
    const std::int64_t inner = JMajor ? op.M : op.J;
    const std::int64_t a = e / inner, b = e - a * inner;
    const std::int64_t m = JMajor ? b : a, j = JMajor ? a : b;
    const std::int64_t slice_elems = std::int64_t(op.M) * op.J;
    Acc sum = partial[e];
    for (int s = 1; s < k_slices; ++s)
      sum += partial[s * slice_elems + e];
    const Acc bias = op.bias ? to_compute(op.bias[m]) : Acc(0);
    op.y[op.y_offset(op.pixel(j)) + m * op.ys.c] =
        from_compute<Y>(apply_activation(op.activation, sum + bias));
  }
};

}  // namespace kcnn::Impl
