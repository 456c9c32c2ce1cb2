// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file pool2d.hpp
/// \brief kcnn::pool2d_forward: max or average pooling (subsampling), optionally in the
///        classic form y = activation(pool(x) + bias[c]).
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/pool2d/pool2d_kernels.hpp"
#include "types.hpp"

namespace kcnn {

namespace Impl {

template <class ExecSpace, class XView, class BView, class YView>
constexpr void static_check_pool2d_views() {
  static_check_tensor<ExecSpace, XView, 4, false>();
  static_check_tensor<ExecSpace, BView, 1, false>();
  static_check_tensor<ExecSpace, YView, 4, true>();
  using T = view_scalar_t<YView>;
  static_assert(std::is_same_v<view_scalar_t<XView>, T> && std::is_same_v<view_scalar_t<BView>, T>,
                "kcnn::pool2d_forward: x, bias and y must have the same scalar type");
}

}  // namespace Impl

/// \brief 2-D pooling forward with per-channel bias: y = activation(pool(x) + bias[c]),
///        the subsampling layer of LeNet-style networks (Average + bias + Sigmoid).
///
/// Asynchronous on `space`, like any Kokkos kernel: it does not fence. All checks happen
/// before anything is written; on invalid input it throws kcnn::Error (a
/// std::invalid_argument) naming the offending values and leaves y untouched.
///
/// \param space  [in]  execution space instance (stream) to run on
/// \param x      [in]  input, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C)
/// \param bias   [in]  rank 1, extent C, or extent 0 for no bias
/// \param y      [out] output, rank 4: NCHW (N, C, P, Q) or NHWC (N, P, Q, C), with
///                     P = (H + 2*pad_h - window_h)/stride_h + 1 (floor), Q likewise
/// \param params [in]  mode, window, stride, padding, count_include_pad, layout,
///                     activation (see Pool2dParams)
///
/// Semantics: the window of output (p, q) covers input rows p*stride_h - pad_h + [0,
/// window_h) and likewise columns; cells outside the input are padding. Max ignores
/// padding (and propagates NaN); Average sums the real cells and divides by
/// window_h*window_w when count_include_pad, else by the number of real cells. Since
/// pad < window and an input with rows and columns (H, W >= 1) are required, every window
/// holds at least one real cell. The window has fewer than 2^31 cells.
///
/// Views hold one element type (float, double, or half_t / kcnn::bfloat16: pooled in float
/// and rounded once; Max is exact; inputs may be const), are contiguous
/// (LayoutRight or LayoutLeft) and accessible from `ExecSpace`; y must not overlap x or
/// bias. An empty batch (N = 0) or no channels (C = 0) is a valid no-op.
/// \throws kcnn::Error on window or stride < 1, negative padding, padding >= window, a
///         window of 2^31 cells or more, H or W = 0, a window larger than the padded
///         input (empty output), Views of 2^63 elements or more, wrong y extents (batch,
///         channels, P, Q), bias extent other than 0 or C, overlap, non-contiguous Views.
template <class ExecSpace, class XView, class BView, class YView>
void pool2d_forward(const ExecSpace& space, const XView& x, const BView& bias, const YView& y,
                    const Pool2dParams& params) {
  Impl::static_check_pool2d_views<ExecSpace, XView, BView, YView>();
  constexpr const char* op = "kcnn::pool2d_forward";
  const Impl::Pool2dProblem pb = Impl::make_pool2d_problem(op, x, bias, y, params);

  Impl::ProfilingRegion region(std::string(op) + "[" + to_string(params.mode) + "]");
  if (pb.empty()) return;
  Impl::pool2d_launch(space, Impl::as_kernel_view<ExecSpace, false>(x),
                      Impl::as_kernel_view<ExecSpace, false>(bias),
                      Impl::as_kernel_view<ExecSpace, true>(y), pb);
}

/// \brief pool2d_forward without bias: y = activation(pool(x)).
template <class ExecSpace, class XView, class YView>
void pool2d_forward(const ExecSpace& space, const XView& x, const YView& y,
                    const Pool2dParams& params) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  pool2d_forward(space, x, NoBias(), y, params);
}

}  // namespace kcnn
