// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/few_channels_launch.hpp
/// \brief ConvAlgo::TensorCoreGemm's launch of the few-channel kernel
///        (few_channels_kernel.hpp): when it applies, the weights' packing into
///        fragment order, the kernel with its fused pooling; one-channel layers with
///        filters at most 9 wide take the single-channel kernel
///        (single_channel_kernel.hpp) instead.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../../arch/device_traits.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "few_channels_kernel.hpp"
#include "single_channel_kernel.hpp"

namespace kcnn::Impl {

/// Team scratch the few-channel kernel plans for (a team's window copies, weights and
/// chunk table), and the most output rows of a block: 6 teams of 128 threads per H100
/// multiprocessor at LeNet's shapes (C1: 16 rows x 80 columns in 35 KB; C3: 16 x 32 in
/// 29 KB). With 4 teams per multiprocessor (128 registers) C3 took 0.92-1.06 ms, with 6
/// (80 registers) 0.72 (bfloat16, batch 10,000, fused 4x4 max; 8 rows: 1.87, 28: 2.17
/// with 4 teams; perf_tests/data/h100-2026-11-26-s19-few-channels.txt).
inline constexpr std::size_t kFewChannelsScratchBytes = 40 * 1024;
inline constexpr int kFewChannelsMaxRows = 16;
inline constexpr int kFewChannelsThreads = 128;
inline constexpr int kFewChannelsTeamsPerMultiprocessor = 6;

/// The single-channel kernel's most output rows of a block and resident teams (its
/// plan shares kFewChannelsScratchBytes): see TUNING.md and
/// perf_tests/data/h100-2026-11-26-s20-single-channel.txt.
inline constexpr int kSingleChannelMaxRows = 80;
inline constexpr int kSingleChannelTeamsPerMultiprocessor = 5;

/// Whether TensorCoreGemm runs problem `pb` on T tensors with the few-channel kernel:
/// 16-bit T, at most 4 input channels and 16 filters, stride and dilation 1, no pooling
/// or 2x2 / 4x4 windows at their stride (fused), and a block of 4 rows fits the scratch.
/// (The launch further needs each image's offsets to fit int.)
template <class T>
bool tensor_core_few_channels_fit(const Conv2dProblem& pb) {
  return is_16bit_storage_v<T> && few_channels_unfit(pb) == nullptr && pb.P > 0 && pb.Q > 0 &&
         few_channels_plan(pb, kFewChannelsScratchBytes, kFewChannelsMaxRows).TH > 0;
}

/// Whether the few-channel family runs `pb` with the single-channel kernel (on 16-bit
/// tensors): one input channel, filters at most 9 wide, a block of 16 rows in scratch.
inline bool single_channel_kernel_fits(const Conv2dProblem& pb) {
  return few_channels_unfit(pb) == nullptr &&
         single_channel_plan(pb, kFewChannelsScratchBytes, kSingleChannelMaxRows).TH > 0;
}

/// single_channel_kernel_fits where TensorCoreGemm runs the family on T tensors.
template <class T>
bool tensor_core_single_channel_fit(const Conv2dProblem& pb) {
  return tensor_core_few_channels_fit<T>(pb) && single_channel_kernel_fits(pb);
}

/// The launch limits both kernels of the family check (LaunchMode::Check included): an
/// image's offsets in 32 bits, the league, the team scratch, the packed weights'
/// workspace of `bytes`.
template <class Policy>
void few_channels_check_launch(const Conv2dProblem& pb, const LogicalStrides& xs,
                               const LogicalStrides& ys, std::int64_t league,
                               std::size_t scratch_bytes, std::size_t bytes) {
  constexpr const char* op = "kcnn::conv2d_forward";
  throw_if(!few_channels_image_offsets_fit(pb, xs, ys), op, "ConvAlgo::TensorCoreGemm: with ", pb.C,
           " input channels and ", pb.M,
           " filters it runs its few-channel kernel, whose offsets within one image (x: ", pb.C,
           "x", pb.H, "x", pb.W, ") must fit 32 bits; use another algorithm");
  throw_if(league > std::numeric_limits<int>::max(), op, "ConvAlgo::TensorCoreGemm: ", league,
           " blocks exceed the launch limit; split the batch");
  throw_if(scratch_bytes > static_cast<std::size_t>(Policy::scratch_size_max(0)), op,
           "internal: ConvAlgo::TensorCoreGemm's few-channel kernel needs ", scratch_bytes,
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(0));
  throw_if(bytes > pb.workspace_limit_bytes, op,
           "ConvAlgo::TensorCoreGemm: the packed weights take ", bytes,
           " bytes of workspace, more than the limit of ", pb.workspace_limit_bytes,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
}

/// The operands and shape fields both kernels of the family share (x, y and their
/// strides within an image, the bias, the packed weights, the extents, the epilogue),
/// from layout-L kernel Views.
template <Layout L, class Kernel, class XView, class BView, class YView>
void few_channels_set_operands(Kernel& k, const XView& x, const BView& bias, const YView& y,
                               const Conv2dProblem& pb, const std::uint32_t* fragments) {
  const LogicalStrides xs = logical_strides<L>(x), ys = logical_strides<L>(y);
  k.x = x.data(), k.x_image_stride = xs.n;
  k.xs = {0, static_cast<int>(xs.c), static_cast<int>(xs.h), static_cast<int>(xs.w)};
  k.y = y.data(), k.y_image_stride = ys.n;
  k.ys = {0, static_cast<int>(ys.c), static_cast<int>(ys.h), static_cast<int>(ys.w)};
  k.bias = pb.has_bias ? bias.data() : nullptr;
  k.w_fragments = fragments;
  k.H = static_cast<int>(pb.H), k.W = static_cast<int>(pb.W);
  k.M = static_cast<int>(pb.M), k.S = static_cast<int>(pb.S);
  k.P = static_cast<int>(pb.P), k.Q = static_cast<int>(pb.Q);
  k.pad_h = static_cast<int>(pb.pad_h), k.pad_w = static_cast<int>(pb.pad_w);
  k.P_pooled = static_cast<int>(pb.P_pooled), k.Q_pooled = static_cast<int>(pb.Q_pooled);
  k.activation = pb.activation;
  k.pool_mode = pb.pool.mode, k.pool_activation = pb.pool.activation;
}

/// Runs (or with LaunchMode::Check only plans) the single-channel kernel on layout-L
/// kernel Views (pb fits: tensor_core_single_channel_fit<T>). Returns the workspace
/// bytes: w in fragment order (filter groups x R x 1 KB).
template <Layout L, class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t tensor_core_launch_single_channel(const ExecSpace& space, const XView& x,
                                              const WView& w, const BView& bias, const YView& y,
                                              const Conv2dProblem& pb,
                                              const SingleChannelPlan& plan, LaunchMode mode) {
  using T = view_scalar_t<XView>;
  using Kernel = TensorCoreSingleChannelKernel<T, ExecSpace>;
  using Policy =
      BoundedTeamPolicy<ExecSpace, kFewChannelsThreads, kSingleChannelTeamsPerMultiprocessor>;
  const LogicalStrides xs = logical_strides<L>(x), ys = logical_strides<L>(y);
  const std::int64_t league = pb.N * plan.blocks_h * plan.blocks_w;
  const std::size_t bytes = align_up(std::size_t(plan.weights_bytes()));
  few_channels_check_launch<Policy>(pb, xs, ys, league, plan.scratch_bytes(), bytes);
  if (mode == LaunchMode::Check) return bytes;
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, bytes);
  std::uint32_t* const fragments = reinterpret_cast<std::uint32_t*>(lease.data());
  SingleChannelWeights<T> pack;
  pack.w = w.data(), pack.ws = logical_strides<L>(w), pack.w_fragments = fragments;
  pack.M = static_cast<int>(pb.M), pack.R = static_cast<int>(pb.R), pack.S = static_cast<int>(pb.S);
  Kokkos::parallel_for("kcnn::conv2d::tensor_core_single_channel_weights",
                       Kokkos::RangePolicy<ExecSpace>(space, 0, plan.weights_bytes() / 8), pack);
  Kernel k;
  few_channels_set_operands<L>(k, x, bias, y, pb, fragments);
  k.plan = plan;
  Kokkos::parallel_for("kcnn::conv2d::tensor_core_single_channel",
                       Policy(space, static_cast<int>(league), kFewChannelsThreads)
                           .set_scratch_size(0, Kokkos::PerTeam(plan.scratch_bytes())),
                       k);
  return bytes;
}

template <class T, int Cs, int NI, Layout L, class ExecSpace, class XView, class BView, class YView>
void tensor_core_launch_few_channels_as(const ExecSpace& space, const XView& x, const BView& bias,
                                        const YView& y, const Conv2dProblem& pb,
                                        const FewChannelsPlan& plan, const std::uint32_t* fragments,
                                        std::int64_t league) {
  using Kernel = TensorCoreFewChannelsKernel<T, Cs, NI, ExecSpace>;
  using Policy =
      BoundedTeamPolicy<ExecSpace, kFewChannelsThreads, kFewChannelsTeamsPerMultiprocessor>;
  Kernel k;
  few_channels_set_operands<L>(k, x, bias, y, pb, fragments);
  k.C = static_cast<int>(pb.C);
  k.plan = plan;
  Kokkos::parallel_for("kcnn::conv2d::tensor_core_few_channels",
                       Policy(space, static_cast<int>(league), kFewChannelsThreads)
                           .set_scratch_size(0, Kokkos::PerTeam(plan.scratch_bytes())),
                       k);
}

/// Runs (or with LaunchMode::Check only plans) the few-channel kernel on layout-L kernel
/// Views (pb fits: tensor_core_few_channels_fit<T>, y of type T), pooled or not, or the
/// single-channel kernel where that fits. Returns the workspace bytes: w in fragment
/// order (at most 8 KB; single-channel: filter groups x R x 1 KB).
template <Layout L, class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t tensor_core_launch_few_channels(const ExecSpace& space, const XView& x, const WView& w,
                                            const BView& bias, const YView& y,
                                            const Conv2dProblem& pb, LaunchMode mode) {
  using T = view_scalar_t<XView>;
  using Policy =
      BoundedTeamPolicy<ExecSpace, kFewChannelsThreads, kFewChannelsTeamsPerMultiprocessor>;
  const SingleChannelPlan single =
      single_channel_plan(pb, kFewChannelsScratchBytes, kSingleChannelMaxRows);
  if (single.TH > 0)
    return tensor_core_launch_single_channel<L>(space, x, w, bias, y, pb, single, mode);
  const FewChannelsPlan plan = few_channels_plan(pb, kFewChannelsScratchBytes, kFewChannelsMaxRows);
  const std::int64_t league = pb.N * plan.blocks_h * plan.blocks_w;
  const int entries = plan.k_steps * 32 * plan.NI;
  const std::size_t bytes = align_up(std::size_t(entries) * 8);
  few_channels_check_launch<Policy>(pb, logical_strides<L>(x), logical_strides<L>(y), league,
                                    plan.scratch_bytes(), bytes);
  if (mode == LaunchMode::Check) return bytes;
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, bytes);
  std::uint32_t* const fragments = reinterpret_cast<std::uint32_t*>(lease.data());
  FewChannelsWeights<T> pack;
  pack.w = w.data(), pack.ws = logical_strides<L>(w), pack.w_fragments = fragments;
  pack.C = static_cast<int>(pb.C), pack.M = static_cast<int>(pb.M), pack.S = static_cast<int>(pb.S);
  pack.plan = plan;
  Kokkos::parallel_for("kcnn::conv2d::tensor_core_few_channels_weights",
                       Kokkos::RangePolicy<ExecSpace>(space, 0, entries), pack);
  auto with_tiles = [&](auto cs, auto ni) {
    tensor_core_launch_few_channels_as<T, decltype(cs)::value, decltype(ni)::value, L>(
        space, x, bias, y, pb, plan, fragments, league);
  };
  auto with_channels = [&](auto ni) {
    if (plan.Cs == 1) return with_tiles(std::integral_constant<int, 1>{}, ni);
    if (plan.Cs == 2) return with_tiles(std::integral_constant<int, 2>{}, ni);
    with_tiles(std::integral_constant<int, 4>{}, ni);
  };
  if (plan.NI == 1)
    with_channels(std::integral_constant<int, 1>{});
  else
    with_channels(std::integral_constant<int, 2>{});
  return bytes;
}

}  // namespace kcnn::Impl
