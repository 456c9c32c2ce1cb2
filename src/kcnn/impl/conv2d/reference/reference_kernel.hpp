// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/reference/reference_kernel.hpp
/// \brief ConvAlgo::Reference: one thread per output element, a plain loop over input
///        channels and filter taps. Obviously correct, the ground truth for the others.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"

namespace kcnn::Impl {

/// Sums in the accumulator type of x's elements (float for the 16-bit types), the
/// 16-bit factors converted exactly at the load; y may hold another type than x (the
/// float buffer of a two-pass fused pooling), rounded once at the store.
template <Layout L, class XView, class WView, class BView, class YView>
struct Conv2dReferenceKernel {
  using Acc = accumulator_t<view_scalar_t<XView>>;

  XView x;
  WView w;
  BView bias;
  YView y;
  Conv2dProblem pb;

  /// `idx` enumerates y in memory order, so consecutive threads store consecutive
  /// addresses in either layout.
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t idx) const {
    std::int64_t n, m, p, q, rest = idx;
    if constexpr (L == Layout::NCHW) {
      q = rest % pb.Q, rest /= pb.Q;
      p = rest % pb.P, rest /= pb.P;
      m = rest % pb.M, n = rest / pb.M;
    } else {
      m = rest % pb.M, rest /= pb.M;
      q = rest % pb.Q, rest /= pb.Q;
      p = rest % pb.P, n = rest / pb.P;
    }
    const std::int64_t h0 = p * pb.stride_h - pb.pad_h;
    const std::int64_t w0 = q * pb.stride_w - pb.pad_w;

    Acc acc = 0;
    for (std::int64_t c = 0; c < pb.C; ++c) {
      for (std::int64_t r = 0; r < pb.R; ++r) {
        const std::int64_t h = h0 + r * pb.dilation_h;
        if (h < 0 || h >= pb.H) continue;
        for (std::int64_t s = 0; s < pb.S; ++s) {
          const std::int64_t col = w0 + s * pb.dilation_w;
          if (col < 0 || col >= pb.W) continue;
          acc += Acc(at<L>(x, n, c, h, col)) * Acc(at<L>(w, m, c, r, s));
        }
      }
    }
    if (pb.has_bias) acc += Acc(bias(m));
    at<L>(y, n, m, p, q) = from_compute<view_scalar_t<YView>>(apply_activation(pb.activation, acc));
  }
};

template <Layout L, class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_reference_launch(const ExecSpace& space, const XView& x, const WView& w,
                             const BView& bias, const YView& y, const Conv2dProblem& pb) {
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("kcnn::conv2d::reference", Policy(space, 0, pb.output_size()),
                       Conv2dReferenceKernel<L, XView, WView, BView, YView>{x, w, bias, y, pb});
}

/// Runs the reference convolution; `pb` has been validated against the Views.
template <class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_reference(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                      const YView& y, const Conv2dProblem& pb) {
  if (pb.layout == Layout::NCHW) {
    conv2d_reference_launch<Layout::NCHW>(space, x, w, bias, y, pb);
  } else {
    conv2d_reference_launch<Layout::NHWC>(space, x, w, bias, y, pb);
  }
}

}  // namespace kcnn::Impl
