// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_backward_data.hpp
/// \brief conv2d_backward_data of a depthwise layer (groups = C > 1, M = k C) in one
///        pass over dy, not one backward convolution per channel.
///
///   dx(n, c, h, w) = sum over j < k, r, s of dy(n, c k + j, p, q) w(c k + j, r, s),
///   h = p stride_h - pad_h + r dilation_h (likewise w, q).
///
/// - Unit stride, multiplier 1, pad <= (R - 1) dilation: dx is a forward depthwise
///   convolution of dy with the filters rotated by 180 degrees and padding
///   (R - 1) dilation - pad (backward_data_as_forward), so ConvAlgo::Depthwise's kernels
///   compute it (conv2d_depthwise_run), the filters read from their last tap with the tap
///   strides negated: no copy, no workspace, the forward's memory-bound kernels.
/// - Otherwise, 3x3, 5x5 and 7x7 filters at the same stride 1 or 2 along both axes and no
///   dilation (stride-2 layers, multipliers, wide paddings): DepthwiseDataWalkKernel, a
///   thread a line of dx, the taps that reach it found once per line.
/// - The rest: DepthwiseBackwardDataKernel, one dx element per work index, gathering the
///   dy elements whose windows hold it (the taps whose offset the stride divides). Both
///   backends.
/// Deterministic (a fixed order of the sums), accumulation in float (double for double),
/// one rounding at the store.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../conv2d/depthwise/depthwise.hpp"
#include "../conv2d_backward_data_direct.hpp"
#include "depthwise_data_walk_kernel.hpp"

namespace kcnn::Impl {

/// One dx element per index: NHWC channels fastest, NCHW columns fastest (neighbouring
/// threads, neighbouring addresses of dx and dy).
template <Layout L, class T>
struct DepthwiseBackwardDataKernel {
  using Acc = accumulator_t<T>;
  DepthwiseBackwardDataOperands<T> op;
  std::int64_t N, C, H, W, P, Q, multiplier;
  int R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;

  std::int64_t items() const { return N * C * H * W; }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    std::int64_t rest = i, n, c, h, col;
    if constexpr (L == Layout::NHWC) {
      c = rest % C, rest /= C;
      col = rest % W, rest /= W;
      h = rest % H, n = rest / H;
    } else {
      col = rest % W, rest /= W;
      h = rest % H, rest /= H;
      c = rest % C, n = rest / C;
    }
    Acc acc = 0;
    const T* const dyn = op.dy + n * op.dys.n;
    // Output row p's tap r reads row p stride_h - pad_h + r dilation_h = h: p exists
    // where stride_h divides h + pad_h - r dilation_h (decreasing in r) and p < P.
    for (int r = 0; r < R; ++r) {
      const std::int64_t ph = h + pad_h - std::int64_t(r) * dilation_h;
      if (ph < 0) break;
      if (ph % stride_h != 0 || ph / stride_h >= P) continue;
      const std::int64_t p = ph / stride_h;
      for (int s = 0; s < S; ++s) {
        const std::int64_t qw = col + pad_w - std::int64_t(s) * dilation_w;
        if (qw < 0) break;
        if (qw % stride_w != 0 || qw / stride_w >= Q) continue;
        const std::int64_t q = qw / stride_w;
        for (std::int64_t j = 0; j < multiplier; ++j) {
          const std::int64_t m = c * multiplier + j;
          acc += Acc(dyn[m * op.dys.c + p * op.dys.h + q * op.dys.w]) *
                 Acc(op.w[m * op.ws.n + r * op.ws.h + s * op.ws.w]);
        }
      }
    }
    op.dx[n * op.dxs.n + c * op.dxs.c + h * op.dxs.h + col * op.dxs.w] = from_compute<T>(acc);
  }
};

/// Runs DepthwiseDataWalkKernel where it takes pb (then returns true): on GPUs its 3x3
/// stride-2 layer (N = 64, 128 channels 56x56) took 0.104 ms in both layouts, the
/// gather kernel 1.35 / 0.82 ms (H200, session 40).
template <class ExecSpace, class T>
bool conv2d_backward_data_depthwise_walk(const ExecSpace& space,
                                         const DepthwiseBackwardDataOperands<T>& op,
                                         const Conv2dProblem& pb) {
  auto run = [&](auto layout, auto taps, auto stride) {
    using Kernel = DepthwiseDataWalkKernel<decltype(layout)::value, decltype(taps)::value,
                                           decltype(stride)::value, T>;
    if (!Kernel::takes(pb, op.dys, op.dxs)) return false;
    const Kernel k = Kernel::make(op, pb);
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kcnn::conv2d_backward_data::depthwise_walk", Policy(space, 0, k.items()),
                         k);
    return true;
  };
  auto with_stride = [&](auto layout, auto taps) {
    if (pb.stride_h == 1) return run(layout, taps, std::integral_constant<int, 1>{});
    return run(layout, taps, std::integral_constant<int, 2>{});
  };
  auto with_taps = [&](auto layout) {
    if (pb.R != pb.S) return false;
    switch (pb.R) {
      case 3:
        return with_stride(layout, std::integral_constant<int, 3>{});
      case 5:
        return with_stride(layout, std::integral_constant<int, 5>{});
      case 7:
        return with_stride(layout, std::integral_constant<int, 7>{});
      default:
        return false;
    }
  };
  if (pb.layout == Layout::NHWC) return with_taps(std::integral_constant<Layout, Layout::NHWC>{});
  return with_taps(std::integral_constant<Layout, Layout::NCHW>{});
}

/// Computes dx of depthwise problem pb (pb.depthwise(), dx not empty, M > 0): see the
/// file comment. A prebuilt instance (conv2d/prebuilt_instances.hpp).
template <class ExecSpace, class T>
void conv2d_backward_data_depthwise_run(const ExecSpace& space,
                                        const DepthwiseBackwardDataOperands<T>& op,
                                        const Conv2dProblem& pb) {
  const BackwardDataAsForward as = backward_data_as_forward(pb);
  if (as.ok && pb.M == pb.C) {
    Conv2dProblem forward = as.forward;  // C = M: one channel per group again
    forward.groups = forward.C;
    const LogicalStrides rotated{op.ws.n, op.ws.c, -op.ws.h, -op.ws.w};
    const T* const last_tap = op.w + (pb.R - 1) * op.ws.h + (pb.S - 1) * op.ws.w;
    const DepthwiseOperands<T, T> fop{op.dy, op.dys, last_tap, rotated, nullptr, 0, op.dx, op.dxs};
    conv2d_depthwise_run(space, fop, forward);
    return;
  }
  if (conv2d_backward_data_depthwise_walk(space, op, pb)) return;
  auto run = [&](auto layout) {
    constexpr Layout L = decltype(layout)::value;
    DepthwiseBackwardDataKernel<L, T> k{op,
                                        pb.N,
                                        pb.C,
                                        pb.H,
                                        pb.W,
                                        pb.P,
                                        pb.Q,
                                        pb.M / pb.C,
                                        static_cast<int>(pb.R),
                                        static_cast<int>(pb.S),
                                        pb.stride_h,
                                        pb.stride_w,
                                        pb.pad_h,
                                        pb.pad_w,
                                        pb.dilation_h,
                                        pb.dilation_w};
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kcnn::conv2d_backward_data::depthwise", Policy(space, 0, k.items()), k);
  };
  if (pb.layout == Layout::NHWC) {
    run(std::integral_constant<Layout, Layout::NHWC>{});
  } else {
    run(std::integral_constant<Layout, Layout::NCHW>{});
  }
}

}  // namespace kcnn::Impl
