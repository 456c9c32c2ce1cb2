// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise.hpp
/// \brief ConvAlgo::Depthwise's planning and launch: which layers it computes (groups =
///        C, M = k C), the work item per backend and the vector accesses the tensors
///        allow (GPUs: depthwise_kernel.hpp; CPUs: depthwise_host_kernel.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/device_traits.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "depthwise_args.hpp"
#include "depthwise_host_kernel.hpp"
#include "depthwise_kernel.hpp"
#include "depthwise_tma_kernel.hpp"
#include "depthwise_tma_plane_kernel.hpp"

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

template <Layout L, int Taps, int Cols, int Lanes, bool Vector, class ExecSpace, class T, class Y>
void launch(const ExecSpace& space, const DepthwiseArgs<T, Y>& args) {
  DepthwiseKernel<L, Taps, Cols, Lanes, Vector, T, Y> k;
  static_cast<DepthwiseArgs<T, Y>&>(k) = args;
  k.col_blocks = (args.Q + Cols - 1) / Cols;
  k.lane_blocks = (args.M + Lanes - 1) / Lanes;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("kcnn::conv2d::depthwise", Policy(space, 0, k.items()), k);
}

/// DepthwiseStripKernel with Taps x Taps filters at stride Stride, Rows = 7 (the CNN
/// extents 112, 56, 28, 14, 7 are multiples of it; 7 rows of a 3x3 layer: 27 loads) and
/// Cols columns.
template <Layout L, int Taps, int Stride, int Lanes, int Cols, class ExecSpace, class T, class Y>
void launch_strip(const ExecSpace& space, const DepthwiseArgs<T, Y>& args) {
  constexpr int Rows = 7;
  DepthwiseStripKernel<L, Taps, Stride, Rows, Cols, Lanes, T, Y> k;
  static_cast<DepthwiseArgs<T, Y>&>(k) = args;
  k.row_blocks = (args.P + Rows - 1) / Rows;
  k.col_blocks = (args.Q + Cols - 1) / Cols;
  k.lane_blocks = (args.M + Lanes - 1) / Lanes;
  k.index32 = k.items() <= std::numeric_limits<int>::max();
  k.xh = static_cast<int>(args.xs.h), k.xw = static_cast<int>(args.xs.w);
  k.yh = static_cast<int>(args.ys.h), k.yw = static_cast<int>(args.ys.w);
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("kcnn::conv2d::depthwise", Policy(space, 0, k.items()), k);
}

/// Whether the offsets DepthwiseStripKernel forms within an image (x's window rows and
/// columns, padding included; y's outputs) fit int.
inline bool strip_offsets_fit(const Conv2dProblem& pb, const LogicalStrides& xs,
                              const LogicalStrides& ys) {
  const std::int64_t limit = std::int64_t(1) << 30;
  const std::int64_t rows = pb.H + pb.P * pb.stride_h + pb.R + pb.pad_h + 16;
  const std::int64_t cols = pb.W + pb.Q * pb.stride_w + pb.S + pb.pad_w + 16;
  return xs.h >= 0 && xs.w >= 0 && ys.h >= 0 && ys.w >= 0 && rows < limit && cols < limit &&
         xs.h < limit / rows && xs.w < limit / cols && ys.h < limit / rows && ys.w < limit / cols;
}

/// Whether DepthwiseStripKernel computes pb with Lanes channels an item: square 3x3,
/// 5x5 or 7x7 filters, stride 1 or 2 in both directions, no dilation. 4 channels only
/// with 3x3: on an H200 (session 40, N = 64, NHWC) 4 channels took the 128-channel 56x56
/// layer from 0.140 to 0.123 ms, but the 256-channel 28x28 5x5 one from 0.129 to 0.178 ms
/// (100 weights in registers), and 7x7 would hold 196.
inline bool strip_takes(const Conv2dProblem& pb, int lanes) {
  const bool taps = pb.R == pb.S && (pb.R == 3 || (lanes == 1 && (pb.R == 5 || pb.R == 7)));
  return taps && pb.dilation_h == 1 && pb.dilation_w == 1 && pb.stride_h == pb.stride_w &&
         (pb.stride_h == 1 || pb.stride_h == 2);
}

/// launch_strip with pb's filter extent and stride (strip_takes holds). NCHW items of 2
/// columns where Q >= 28: on an H200 (session 40, N = 64, 3x3) 0.105 -> 0.091 ms at 128
/// channels 56x56, 0.057 -> 0.056 at 256 28x28, but 0.034 -> 0.042 at 512 14x14 (4
/// columns: 0.153 / 0.101 / 0.066).
template <Layout L, int Lanes, class ExecSpace, class T, class Y>
void launch_strip_for(const ExecSpace& space, const Conv2dProblem& pb,
                      const DepthwiseArgs<T, Y>& args) {
  auto with_cols = [&](auto taps, auto stride) {
    constexpr int Taps = decltype(taps)::value, Stride = decltype(stride)::value;
    if constexpr (L == Layout::NCHW) {
      if (pb.Q >= 28) return launch_strip<L, Taps, Stride, Lanes, 2>(space, args);
    }
    launch_strip<L, Taps, Stride, Lanes, 1>(space, args);
  };
  auto with_stride = [&](auto taps) {
    if (pb.stride_h == 1) return with_cols(taps, std::integral_constant<int, 1>{});
    with_cols(taps, std::integral_constant<int, 2>{});
  };
  if (pb.R == 3) return with_stride(std::integral_constant<int, 3>{});
  if constexpr (Lanes == 1) {
    if (pb.R == 5) return with_stride(std::integral_constant<int, 5>{});
    with_stride(std::integral_constant<int, 7>{});
  }
}

/// The CPU kernels (depthwise_host_kernel.hpp).
template <class Kernel, class ExecSpace, class T, class Y>
void launch_host(const ExecSpace& space, const DepthwiseArgs<T, Y>& args, const Conv2dProblem& pb) {
  Kernel k;
  static_cast<DepthwiseArgs<T, Y>&>(k) = args;
  interior_columns(pb, k.q_lo, k.q_hi);
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("kcnn::conv2d::depthwise", Policy(space, 0, k.items()), k);
}

/// launch_host with the compile-time filter extent (3, 5, 7 or 0).
template <Layout L, class ExecSpace, class T, class Y>
void launch_host_taps(const ExecSpace& space, const Conv2dProblem& pb,
                      const DepthwiseArgs<T, Y>& args) {
  auto run = [&](auto taps) {
    constexpr int Taps = decltype(taps)::value;
    using Kernel = std::conditional_t<L == Layout::NCHW, DepthwiseHostRowKernel<Taps, T, Y>,
                                      DepthwiseHostPixelKernel<Taps, T, Y>>;
    launch_host<Kernel>(space, args, pb);
  };
  const bool square = pb.R == pb.S;
  if (square && pb.R == 3) return run(std::integral_constant<int, 3>{});
  if (square && pb.R == 5) return run(std::integral_constant<int, 5>{});
  if (square && pb.R == 7) return run(std::integral_constant<int, 7>{});
  run(std::integral_constant<int, 0>{});
}

}  // namespace depthwise_detail

/// Runs ConvAlgo::Depthwise on operands `op` of depthwise problem pb (unpooled;
/// depthwise_reason holds). No workspace. Also conv2d_backward_data's kernel at unit
/// stride (on dy, the filters read backwards): a prebuilt instance
/// (conv2d/prebuilt_instances.hpp) for Y = T.
///
/// Work items: on Hopper builds, float 3x3 layers at stride 1 (multiplier 1) whose x a
/// tensor map can describe (NCHW: rows of a multiple of 4 floats) run DepthwiseTmaKernel
/// (depthwise_tma_kernel.hpp: bands of rows staged by TMA), NCHW ones with other rows but
/// planes of a multiple of 4 floats up to 256 (14x14) DepthwiseTmaPlaneKernel
/// (depthwise_tma_plane_kernel.hpp: whole planes staged by TMA); other GPU layers
/// (depthwise_kernel.hpp) square 3x3, 5x5, 7x7 filters at stride 1 or 2 without
/// dilation, 7 outputs down a column (DepthwiseStripKernel) of 4 NHWC channels
/// (one 16-byte access where multiplier 1, C a multiple of 4 and the tensors aligned) or
/// of one channel; other geometries NHWC 4 channels x 2 columns, NCHW 1 channel x 4
/// columns (one 16-byte store where Q is a multiple of 4), R and S at run time;
/// CPUs (depthwise_host_kernel.hpp) NCHW an output row (DepthwiseHostRowKernel), NHWC 8
/// rows of 128 float channels (DepthwiseHostPixelKernel: float and double 3x3, 5x5, 7x7
/// filters at row stride 1 or 2 in windowed blocks of 2 rows x 8 columns (AVX2: 4) of
/// one vector of channels, each input vector loaded once a block; others 4 columns x 16
/// channels of accumulators in registers), the interior columns unchecked.
template <class ExecSpace, class T, class Y>
void conv2d_depthwise_run(const ExecSpace& space, const DepthwiseOperands<T, Y>& op,
                          const Conv2dProblem& pb) {
  namespace D = depthwise_detail;
  constexpr Layout NHWC = Layout::NHWC, NCHW = Layout::NCHW;
  const DepthwiseArgs<T, Y> args = make_depthwise_args(op, pb);
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda> && std::is_same_v<T, float> &&
                std::is_same_v<Y, float>) {
    if (depthwise_tma_fits(pb, op)) {
      const bool launched =
          pb.layout == NHWC ? launch_depthwise_tma<NHWC, DepthwiseTmaShapeFor<NHWC>>(space, op, pb)
                            : launch_depthwise_tma<NCHW, DepthwiseTmaShapeFor<NCHW>>(space, op, pb);
      if (launched) return;
    }
    if (depthwise_tma_plane_fits(pb, op) &&
        launch_depthwise_tma_plane<DepthwiseTmaPlaneShapeDefault>(space, op, pb))
      return;
  }
#endif
  if constexpr (runs_on_host_v<ExecSpace>) {
    if (pb.layout == NHWC) {
      D::launch_host_taps<NHWC>(space, pb, args);
    } else {
      D::launch_host_taps<NCHW>(space, pb, args);
    }
  } else if (pb.layout == NHWC) {
    const bool vector = pb.M == pb.C && pb.C % 4 == 0 && channel_vectors_aligned(op.xs, 4) &&
                        channel_vectors_aligned(op.ys, 4) && aligned_to(op.x, 4 * sizeof(T)) &&
                        aligned_to(op.y, 4 * sizeof(Y));
    const bool strip = D::strip_offsets_fit(pb, op.xs, op.ys);
    if (vector && strip && D::strip_takes(pb, 4)) {
      D::launch_strip_for<NHWC, 4>(space, pb, args);
    } else if (strip && D::strip_takes(pb, 1)) {
      D::launch_strip_for<NHWC, 1>(space, pb, args);
    } else if (vector) {  // the other geometries: R, S at run time
      D::launch<NHWC, 0, 2, 4, true>(space, args);
    } else {
      D::launch<NHWC, 0, 2, 4, false>(space, args);
    }
  } else if (D::strip_takes(pb, 1) && D::strip_offsets_fit(pb, op.xs, op.ys)) {
    D::launch_strip_for<NCHW, 1>(space, pb, args);
  } else {
    const bool vector =
        pb.Q % 4 == 0 && column_vectors_aligned(op.ys, 4) && aligned_to(op.y, 4 * sizeof(Y));
    if (vector) {
      D::launch<NCHW, 0, 4, 1, true>(space, args);
    } else {
      D::launch<NCHW, 0, 4, 1, false>(space, args);
    }
  }
}

/// Runs (LaunchMode::Run) or checks ConvAlgo::Depthwise on kernel Views of validated
/// problem pb (unpooled: dispatch.hpp pools). No workspace.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_depthwise(const ExecSpace& space, const XView& x, const WView& w,
                             const BView& bias, const YView& y, const Conv2dProblem& pb,
                             LaunchMode mode) {
  if (auto reason = depthwise_reason(pb)) throw_if(true, "kcnn::conv2d_forward", *reason);
  if (mode == LaunchMode::Check) return 0;
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  const Layout L = pb.layout;
  const DepthwiseOperands<T, Y> op{
      x.data(),    logical_strides(x, L),
      w.data(),    logical_strides(w, L),
      bias.data(), pb.has_bias ? static_cast<std::int64_t>(bias.stride(0)) : 0,
      y.data(),    logical_strides(y, L)};
  conv2d_depthwise_run(space, op, pb);
  return 0;
}

}  // namespace kcnn::Impl
