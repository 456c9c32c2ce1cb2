// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_backward_weights.hpp
/// \brief conv2d_backward_weights of a depthwise layer (groups = C > 1, M = k C) in one
///        pass over x and dy, not one backward convolution per channel.
///
///   dw(m, r, s) = sum over n, p, q of dy(n, m, p, q) x(n, m / k, p sh - ph + r dh,
///                                                         q sw - pw + s dw),
///   dbias(m)    = sum over n, p, q of dy(n, m, p, q).
///
/// Each filter has only R S (+ 1) sums, each over all N P Q output pixels: a reduction,
/// bound by reading x and dy once. Teams own a chunk of the pixels for a block of
/// channels, each thread its sums in registers; the team adds its threads' sums in
/// scratch, the chunks' sums wait in the workspace for DepthwiseWeightsStoreKernel
/// (depthwise_weights_plan.hpp). Four kernels:
///  - DepthwiseWeightsTmaKernel (Hopper builds, float 3x3 at stride 1, multiplier 1, x and
///    dy mappable by tensor maps): bands of rows of x and dy staged by TMA
///    (depthwise_weights_tma_kernel.hpp).
///  - DepthwiseWeightsWalkKernel (3x3, 5x5, 7x7 filters without dilation and with a
///    stride of 1 or 2 along the walk axis; GPUs, and CPUs where the host kernel does
///    not take the problem): a thread walks a line of outputs with a sliding window of
///    input lines in registers.
///  - DepthwiseWeightsHostKernel (CPUs, 3x3, 5x5, 7x7 on contiguous rows): vector
///    accumulators of 8 channels (NHWC) or 8 output columns (NCHW).
///  - DepthwiseWeightsTeamKernel: the rest (other filters in passes of 16 taps).
/// The work split is a function of the problem, the backend and the workspace limit only:
/// the summation order, hence the result, does not depend on the thread count.
/// Accumulation in float (double for double), one rounding at the store.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/device_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/workspace_cache.hpp"
#include "depthwise_weights_host_kernel.hpp"
#include "depthwise_weights_plan.hpp"
#include "depthwise_weights_team_kernel.hpp"
#include "depthwise_weights_tma_kernel.hpp"
#include "depthwise_weights_walk_kernel.hpp"

namespace kcnn::Impl {

/// Calls f(std::integral_constant<Layout, pb.layout>, std::integral_constant<int, taps>)
/// with taps = DepthwiseWeightsPlan::compile_time_taps(pb) (0: a generic filter).
template <class F>
auto depthwise_weights_dispatch(const Conv2dProblem& pb, F&& f) {
  auto with_taps = [&](auto layout) {
    switch (DepthwiseWeightsPlan::compile_time_taps(pb)) {
      case 3:
        return f(layout, std::integral_constant<int, 3>{});
      case 5:
        return f(layout, std::integral_constant<int, 5>{});
      case 7:
        return f(layout, std::integral_constant<int, 7>{});
      default:
        return f(layout, std::integral_constant<int, 0>{});
    }
  };
  if (pb.layout == Layout::NHWC) return with_taps(std::integral_constant<Layout, Layout::NHWC>{});
  return with_taps(std::integral_constant<Layout, Layout::NCHW>{});
}

/// Runs DepthwiseWeightsHostKernel where it takes pb's operands (then returns true).
template <class ExecSpace, class T>
bool conv2d_backward_weights_depthwise_host(const ExecSpace& space,
                                            const DepthwiseBackwardWeightsOperands<T>& op,
                                            const Conv2dProblem& pb) {
  using Acc = accumulator_t<T>;
  return depthwise_weights_dispatch(pb, [&](auto layout, auto taps) {
    constexpr Layout L = decltype(layout)::value;
    constexpr int Taps = decltype(taps)::value;
    if constexpr (Taps == 0) {
      return false;
    } else {
      using Kernel = DepthwiseWeightsHostKernel<L, Taps, T>;
      if (!Kernel::takes(pb, op)) return false;
      const DepthwiseWeightsPlan plan =
          DepthwiseWeightsPlan::make<Acc>(pb, false, L == Layout::NHWC ? Kernel::Lanes : 1);
      auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes);
      Acc* const partial = plan.chunks > 1 ? reinterpret_cast<Acc*>(lease.data()) : nullptr;
      const DepthwiseWeightsSink<T> sink{
          op, pb.M, plan.chunks, static_cast<int>(pb.S), plan.slots, op.dbias != nullptr, partial};
      Kernel k{sink,        op,       pb.N,     pb.H,          pb.W,
               pb.M,        pb.P,     pb.Q,     pb.M / pb.C,   pb.stride_h,
               pb.stride_w, pb.pad_h, pb.pad_w, pb.dilation_h, pb.dilation_w,
               plan,        0,        0};
      interior_columns(pb, k.q_lo, k.q_hi);
      using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
      Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise", Range(space, 0, k.items()),
                           k);
      if (plan.chunks > 1) depthwise_weights_store(space, partial, op, pb, plan, false);
      return true;
    }
  });
}

/// The walk kernel's shape by layout and filter (Taps x Taps): the cross positions a
/// walk covers and the teams of 256 threads an SM its registers must allow (the launch
/// bound; 1: none). Measured on an H200 (session 40, fp32, N = 64, the 128-, 256- and
/// 512-channel layers; times with the store kernel): NCHW 3x3, 2 positions and 4 teams:
/// 0.083 / 0.058 / 0.044 ms (1 position: 0.101 / 0.065 / 0.048; 4 positions and 2
/// teams about the same); NHWC 3x3, 7 rows (CNN extents are multiples of 7) and 2 teams:
/// 0.078 / 0.047 / 0.030 ms (1 row: 0.128 / 0.076 / 0.049; 8 rows 0.081 / 0.049 /
/// 0.030); 5x5 (256 channels 28x28), 4 positions and 2 teams: 0.070 / 0.072 ms NCHW /
/// NHWC (1 position: 0.118 / 0.124); 7x7 (128 channels 56x56): 2 positions NCHW 0.191
/// ms, 4 NHWC 0.250 (1 position: 0.365 / 0.490).
struct DepthwiseWalkShape {
  int cross, min_teams;
};
constexpr DepthwiseWalkShape depthwise_walk_shape(Layout layout, int taps) {
  if (layout == Layout::NCHW)
    return taps == 3   ? DepthwiseWalkShape{2, 4}
           : taps == 5 ? DepthwiseWalkShape{4, 2}
                       : DepthwiseWalkShape{2, 1};
  return taps == 3   ? DepthwiseWalkShape{7, 2}
         : taps == 5 ? DepthwiseWalkShape{4, 2}
                     : DepthwiseWalkShape{4, 1};
}

/// Runs DepthwiseWeightsWalkKernel where it takes pb (then returns true).
template <class ExecSpace, class T>
bool conv2d_backward_weights_depthwise_walk(const ExecSpace& space,
                                            const DepthwiseBackwardWeightsOperands<T>& op,
                                            const Conv2dProblem& pb) {
  using Acc = accumulator_t<T>;
  if (!DepthwiseWeightsPlan::walk_takes(pb, op.xs, op.dys)) return false;
  constexpr bool gpu = !runs_on_host_v<ExecSpace>;
  const int cross =
      depthwise_walk_shape(pb.layout, DepthwiseWeightsPlan::compile_time_taps(pb)).cross;
  const DepthwiseWeightsPlan plan = DepthwiseWeightsPlan::make_walk<Acc>(pb, gpu, cross);
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes);
  Acc* const partial = plan.chunks > 1 ? reinterpret_cast<Acc*>(lease.data()) : nullptr;
  const DepthwiseWeightsSink<T> sink{
      op, pb.M, plan.chunks, static_cast<int>(pb.S), plan.slots, op.dbias != nullptr, partial};
  auto run = [&](auto layout, auto taps, auto stride) {
    constexpr DepthwiseWalkShape shape =
        depthwise_walk_shape(decltype(layout)::value, decltype(taps)::value);
    using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<std::int64_t>,
                                      Kokkos::LaunchBounds<256, shape.min_teams>>;
    using Kernel = DepthwiseWeightsWalkKernel<decltype(layout)::value, decltype(taps)::value,
                                              decltype(stride)::value, shape.cross, T,
                                              typename Policy::member_type>;
    const Kernel k = Kernel::make(sink, plan, pb);
    Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise_walk",
                         Policy(space, plan.chunks * plan.lane_blocks, plan.team_size)
                             .set_scratch_size(0, Kokkos::PerTeam(k.scratch_bytes(plan.team_size))),
                         k);
  };
  depthwise_weights_dispatch(pb, [&](auto layout, auto taps) {
    if constexpr (decltype(taps)::value != 0) {
      if (pb.stride_h == 1)
        run(layout, taps, std::integral_constant<int, 1>{});
      else
        run(layout, taps, std::integral_constant<int, 2>{});
    }
  });
  if (plan.chunks > 1) depthwise_weights_store(space, partial, op, pb, plan, gpu);
  return true;
}

/// Computes dw (and dbias where op.dbias) of depthwise problem pb (pb.depthwise(), N, P,
/// Q > 0, M > 0): see the file comment. A prebuilt instance
/// (conv2d/prebuilt_instances.hpp).
template <class ExecSpace, class T>
void conv2d_backward_weights_depthwise_run(const ExecSpace& space,
                                           const DepthwiseBackwardWeightsOperands<T>& op,
                                           const Conv2dProblem& pb) {
  using Acc = accumulator_t<T>;
  constexpr bool gpu = !runs_on_host_v<ExecSpace>;
  if constexpr (!gpu) {
    if (conv2d_backward_weights_depthwise_host(space, op, pb)) return;
  }
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda> && std::is_same_v<T, float>) {
    if (depthwise_weights_tma_fits(pb, op)) {
      constexpr Layout NHWC = Layout::NHWC, NCHW = Layout::NCHW;
      const bool launched =
          pb.layout == NHWC
              ? launch_depthwise_weights_tma<NHWC, DepthwiseWeightsTmaShapeFor<NHWC>>(space, op, pb)
              : launch_depthwise_weights_tma<NCHW, DepthwiseWeightsTmaShapeFor<NCHW>>(space, op,
                                                                                      pb);
      if (launched) return;
    }
  }
#endif
  if (conv2d_backward_weights_depthwise_walk(space, op, pb)) return;
  const DepthwiseWeightsPlan plan = DepthwiseWeightsPlan::make<Acc>(pb, gpu);
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes);
  Acc* const partial = plan.chunks > 1 ? reinterpret_cast<Acc*>(lease.data()) : nullptr;
  depthwise_weights_dispatch(pb, [&](auto layout, auto taps) {
    constexpr Layout L = decltype(layout)::value;
    constexpr int Taps = decltype(taps)::value;
    using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    using Kernel = DepthwiseWeightsTeamKernel<L, Taps, T, typename Policy::member_type>;
    Kernel k{DepthwiseWeightsSink<T>{op, pb.M, plan.chunks, static_cast<int>(pb.S), plan.slots,
                                     false, partial},
             pb.N,
             pb.H,
             pb.W,
             pb.M,
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
             pb.dilation_w,
             plan};
    const Policy policy(space, plan.chunks * plan.lane_blocks, plan.team_size);
    const auto scratch = Kokkos::PerTeam(k.scratch_bytes(plan.team_size));
    const int passes = Taps ? 1 : (plan.taps + kDepthwiseGenericTaps - 1) / kDepthwiseGenericTaps;
    for (int pass = 0; pass < passes; ++pass) {
      k.tap0 = pass * kDepthwiseGenericTaps;
      k.pass_taps = std::min(kDepthwiseGenericTaps, plan.taps - k.tap0);
      k.sink.with_bias = op.dbias != nullptr && pass == 0;
      Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise",
                           Policy(policy).set_scratch_size(0, scratch), k);
    }
  });
  if (plan.chunks > 1) depthwise_weights_store(space, partial, op, pb, plan, gpu);
}

}  // namespace kcnn::Impl
