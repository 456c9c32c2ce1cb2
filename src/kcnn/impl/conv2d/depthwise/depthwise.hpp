// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise.hpp
/// \brief ConvAlgo::Depthwise's planning and launch: which layers it computes (groups =
///        C, M = k C), the work item per backend and the vector accesses the tensors
///        allow (depthwise_kernel.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "../../../types.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "depthwise_kernel.hpp"

namespace kcnn::Impl {

/// Why ConvAlgo::Depthwise cannot compute pb, or nothing: it computes depthwise layers,
/// one input channel per group (groups = C) and M a multiple of C (channel multiplier
/// M / C), any filter, stride, padding and dilation.
inline std::optional<std::string> depthwise_reason(const Conv2dProblem& pb) {
  if (!pb.depthwise())
    return msg(
        "ConvAlgo::Depthwise computes depthwise layers only (groups = C and M a multiple "
        "of C); this one has C=",
        pb.C, ", M=", pb.M, ", groups=", pb.groups);
  return {};
}

namespace depthwise_detail {

template <class T>
bool aligned_to(const T* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}
inline bool strides_multiple_of(const LogicalStrides& s, std::int64_t k) {
  return s.n % k == 0 && s.c % k == 0 && s.h % k == 0 && s.w % k == 0;
}

template <Layout L, int Taps, int Cols, int Lanes, bool Vector, class ExecSpace, class XView,
          class WView, class BView, class YView>
void launch(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
            const YView& y, const Conv2dProblem& pb) {
  using Kernel = DepthwiseKernel<L, Taps, Cols, Lanes, Vector, XView, YView>;
  Kernel k;
  k.x = x.data(), k.w = w.data(), k.y = y.data();
  k.bias = pb.has_bias ? bias.data() : nullptr;
  k.bias_stride = pb.has_bias ? static_cast<std::int64_t>(bias.stride(0)) : 0;
  k.xs = logical_strides<L>(x), k.ws = logical_strides<L>(w), k.ys = logical_strides<L>(y);
  k.N = pb.N, k.H = pb.H, k.W = pb.W, k.M = pb.M, k.P = pb.P, k.Q = pb.Q;
  k.R = static_cast<int>(pb.R), k.S = static_cast<int>(pb.S);
  k.stride_h = pb.stride_h, k.stride_w = pb.stride_w, k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  k.dilation_h = pb.dilation_h, k.dilation_w = pb.dilation_w;
  k.multiplier = pb.M / pb.C;
  k.activation = pb.activation;
  k.col_blocks = (pb.Q + Cols - 1) / Cols;
  k.lane_blocks = (pb.M + Lanes - 1) / Lanes;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("kcnn::conv2d::depthwise", Policy(space, 0, k.items()), k);
}

/// launch with the compile-time filter extent: 3, 5 or 7 for square filters of those,
/// else 0 (R, S at run time).
template <Layout L, int Cols, int Lanes, bool Vector, class ExecSpace, class... Views>
void launch_taps(const ExecSpace& space, const Conv2dProblem& pb, const Views&... views) {
  const bool square = pb.R == pb.S;
  if (square && pb.R == 3) return launch<L, 3, Cols, Lanes, Vector>(space, views..., pb);
  if (square && pb.R == 5) return launch<L, 5, Cols, Lanes, Vector>(space, views..., pb);
  if (square && pb.R == 7) return launch<L, 7, Cols, Lanes, Vector>(space, views..., pb);
  launch<L, 0, Cols, Lanes, Vector>(space, views..., pb);
}

}  // namespace depthwise_detail

/// Runs (LaunchMode::Run) or checks ConvAlgo::Depthwise on kernel Views of validated
/// problem pb (unpooled: dispatch.hpp pools). No workspace.
///
/// Work items (depthwise_kernel.hpp): GPUs NHWC 4 channels x 2 columns (one 16-byte
/// access of x and y per column where multiplier 1, C a multiple of 4 and the tensors
/// aligned), NCHW 1 channel x 4 columns (one 16-byte store where Q is a multiple of 4);
/// CPUs NHWC 16 channels x 1 column, NCHW 1 channel x 16 columns, the loops over them
/// left to the compiler's vectorizer.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_depthwise(const ExecSpace& space, const XView& x, const WView& w,
                             const BView& bias, const YView& y, const Conv2dProblem& pb,
                             LaunchMode mode) {
  if (auto reason = depthwise_reason(pb)) throw_if(true, "kcnn::conv2d_forward", *reason);
  if (mode == LaunchMode::Check) return 0;
  namespace D = depthwise_detail;
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  constexpr Layout NHWC = Layout::NHWC, NCHW = Layout::NCHW;
  if constexpr (runs_on_host_v<ExecSpace>) {
    if (pb.layout == NHWC) {
      D::launch_taps<NHWC, 1, 16, false>(space, pb, x, w, bias, y);
    } else {
      D::launch_taps<NCHW, 16, 1, false>(space, pb, x, w, bias, y);
    }
  } else if (pb.layout == NHWC) {
    const LogicalStrides xs = logical_strides<NHWC>(x), ys = logical_strides<NHWC>(y);
    const bool vector = pb.M == pb.C && xs.c == 1 && ys.c == 1 && pb.C % 4 == 0 &&
                        D::strides_multiple_of(xs, 4) && D::strides_multiple_of(ys, 4) &&
                        D::aligned_to(x.data(), 4 * sizeof(T)) &&
                        D::aligned_to(y.data(), 4 * sizeof(Y));
    if (vector) {
      D::launch_taps<NHWC, 2, 4, true>(space, pb, x, w, bias, y);
    } else {
      D::launch_taps<NHWC, 2, 4, false>(space, pb, x, w, bias, y);
    }
  } else {
    const LogicalStrides ys = logical_strides<NCHW>(y);
    const bool vector = ys.w == 1 && pb.Q % 4 == 0 && D::strides_multiple_of(ys, 4) &&
                        D::aligned_to(y.data(), 4 * sizeof(Y));
    if (vector) {
      D::launch_taps<NCHW, 4, 1, true>(space, pb, x, w, bias, y);
    } else {
      D::launch_taps<NCHW, 4, 1, false>(space, pb, x, w, bias, y);
    }
  }
  return 0;
}

}  // namespace kcnn::Impl
