// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_args.hpp
/// \brief What every depthwise kernel reads, GPU (depthwise_kernel.hpp) and CPU
///        (depthwise_host_kernel.hpp): the operands as pointers and element strides, the
///        problem's extents and geometry, filled in one place (make_depthwise_args).
///
/// The operands are raw pointers with logical strides, not Views, so that a caller may
/// pass tensors no View describes: conv2d_backward_data runs these kernels on dy with
/// the filters read from their last tap backwards (negative tap strides,
/// backward/depthwise/depthwise_backward_data.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"

namespace kcnn::Impl {

/// A depthwise convolution's tensors: x (T), w (T, tap strides may be negative), the
/// bias (T; nullptr: none) and y (Y: T, or float for a 16-bit layer's unpooled output).
template <class T, class Y>
struct DepthwiseOperands {
  const T* x;
  LogicalStrides xs;
  const T* w;
  LogicalStrides ws;
  const T* bias;
  std::int64_t bias_stride;
  Y* y;
  LogicalStrides ys;
};

/// The fields every depthwise kernel reads; the kernels derive from it.
template <class T_, class Y_>
struct DepthwiseArgs {
  using T = T_;
  using Y = Y_;
  using Acc = accumulator_t<T>;

  const T* x;
  const T* w;
  const T* bias;  ///< nullptr: none
  Y* y;
  LogicalStrides xs, ws, ys;
  std::int64_t bias_stride;
  std::int64_t N, H, W, M, P, Q;
  std::int64_t multiplier;  ///< M / C: output channel m reads input channel m / multiplier
  int R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  Activation activation;

  /// The input column of output column q, tap s (and the input row of row p, tap r).
  KOKKOS_INLINE_FUNCTION std::int64_t column(std::int64_t q, int s) const {
    return q * stride_w - pad_w + std::int64_t(s) * dilation_w;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t row(std::int64_t p, int r) const {
    return p * stride_h - pad_h + std::int64_t(r) * dilation_h;
  }
  KOKKOS_INLINE_FUNCTION Acc bias_of(std::int64_t m) const {
    return bias ? Acc(bias[m * bias_stride]) : Acc(0);
  }
};

/// The kernels' fields for operands `op` of validated depthwise problem pb.
template <class T, class Y>
DepthwiseArgs<T, Y> make_depthwise_args(const DepthwiseOperands<T, Y>& op,
                                        const Conv2dProblem& pb) {
  DepthwiseArgs<T, Y> a;
  a.x = op.x, a.w = op.w, a.y = op.y;
  a.bias = pb.has_bias ? op.bias : nullptr;
  a.bias_stride = pb.has_bias ? op.bias_stride : 0;
  a.xs = op.xs, a.ws = op.ws, a.ys = op.ys;
  a.N = pb.N, a.H = pb.H, a.W = pb.W, a.M = pb.M, a.P = pb.P, a.Q = pb.Q;
  a.multiplier = pb.M / pb.C;
  a.R = static_cast<int>(pb.R), a.S = static_cast<int>(pb.S);
  a.stride_h = pb.stride_h, a.stride_w = pb.stride_w, a.pad_h = pb.pad_h, a.pad_w = pb.pad_w;
  a.dilation_h = pb.dilation_h, a.dilation_w = pb.dilation_w;
  a.activation = pb.activation;
  return a;
}

}  // namespace kcnn::Impl
