// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/launch.hpp
/// \brief ConvAlgo::ImplicitGemm's launch: operands from the Views, the fused-pooling
///        rule, the GPU (plain and split K) and host launches, and conv2d_implicit_gemm
///        (the entry point).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "device_kernel.hpp"
#include "host_kernel.hpp"
#include "operands.hpp"
#include "tile_choice.hpp"

namespace kcnn::Impl {

// ---------------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------------

/// Largest pooling window (cells) ImplicitGemm fuses: the narrowest GPU tile's BN, so
/// every tile holds at least one whole window.
inline constexpr int kImplicitGemmMaxFusedWindowCells = 64;

/// Whether ImplicitGemm pools in the same kernel: windows that do not overlap (stride >=
/// window; overlapping ones would recompute the conv outputs they share, 2.25x the
/// work for 3x3 windows at stride 2, more than the saved pass costs) of at most
/// kImplicitGemmMaxFusedWindowCells cells. Other poolings run as a second pass.
inline bool implicit_gemm_fuses_pool(const Pool2dParams& pool) {
  return pool.stride_h >= pool.window_h && pool.stride_w >= pool.window_w &&
         pool.window_h * pool.window_w <= kImplicitGemmMaxFusedWindowCells;
}

template <class Tile, bool Pooled, Layout L, class ExecSpace, class T, class Y>
void implicit_gemm_device_launch_as(const ExecSpace& space, const ImplicitGemmOperands<L, T, Y>& o,
                                    LaunchMode mode) {
  using Kernel = ImplicitGemmDeviceKernel<L, Tile, ExecSpace, T, Pooled, false, Y>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t per_team = o.pooling.columns_per_team(Tile::BN);
  const std::int64_t league = m_blocks * ((o.J + per_team - 1) / per_team);
  throw_if(league > std::numeric_limits<int>::max(), "kcnn::conv2d_forward",
           "ConvAlgo::ImplicitGemm: ", league, " tiles exceed the launch limit; split the batch");
  if (mode == LaunchMode::Check) return;
  Policy policy(space, static_cast<int>(league), Tile::threads);
  Kokkos::parallel_for(Pooled ? "kcnn::conv2d::implicit_gemm_pool" : "kcnn::conv2d::implicit_gemm",
                       policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes(Pooled))),
                       Kernel{o, static_cast<int>(m_blocks)});
}

/// Tile `Tile` with K split into about `k_slices` slices (implicit_gemm_k_slices): the
/// partial sums in the cached workspace, then SplitKReduce.
template <class Tile, Layout L, class ExecSpace, class T, class Y>
void implicit_gemm_device_launch_split(const ExecSpace& space,
                                       const ImplicitGemmOperands<L, T, Y>& o, int k_slices,
                                       LaunchMode mode) {
  using Kernel = ImplicitGemmDeviceKernel<L, Tile, ExecSpace, T, false, true, Y>;
  using Acc = accumulator_t<T>;  // the partial sums
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  const int steps_per_slice = implicit_gemm_steps_per_slice<Tile>(o.K, k_slices);
  k_slices = implicit_gemm_nonempty_slices<Tile>(o.K, k_slices);
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t teams = implicit_gemm_teams<Tile>(o.M, o.J);
  throw_if(teams * k_slices > std::numeric_limits<int>::max(), "kcnn::conv2d_forward",
           "internal: ImplicitGemm split K over ", teams, " tiles");
  if (mode == LaunchMode::Check) return;
  auto lease =
      WorkspaceCache<ExecSpace>::acquire(space, static_cast<std::size_t>(k_slices) * sizeof(Acc) *
                                                    std::size_t(o.M) * std::size_t(o.J));
  Acc* const partial = reinterpret_cast<Acc*>(lease.data());
  Policy policy(space, static_cast<int>(teams * k_slices), Tile::threads);
  Kokkos::parallel_for(
      "kcnn::conv2d::implicit_gemm_split_k",
      policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes(false))),
      Kernel{o, static_cast<int>(m_blocks), steps_per_slice, static_cast<int>(teams), partial});
  Kokkos::parallel_for("kcnn::conv2d::implicit_gemm_split_k_reduce",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, std::int64_t(o.M) * o.J),
                       SplitKReduce<L, T, false, Y>{o, partial, k_slices});
}

/// Launches tile `Tile`, with the fused pooling when o.pooling.enabled (only tiles whose
/// BM x BN conv tile fits team scratch are compiled for it; the tile choice never hands
/// a pooling to the others).
template <class Tile, Layout L, class ExecSpace, class T, class Y>
void implicit_gemm_device_launch(const ExecSpace& space, const ImplicitGemmOperands<L, T, Y>& o,
                                 LaunchMode mode = LaunchMode::Run) {
  if (!o.pooling.enabled) return implicit_gemm_device_launch_as<Tile, false>(space, o, mode);
  if constexpr (Tile::BM <= 64) {
    implicit_gemm_device_launch_as<Tile, true>(space, o, mode);
  } else {
    throw_if(true, "kcnn::conv2d_forward", "internal: ImplicitGemm tile ", Tile::BM, "x", Tile::BN,
             " chosen for a fused pooling");
  }
}

template <Layout L, class ExecSpace, class T, class Y>
void implicit_gemm_host_launch(const ExecSpace& space, const ImplicitGemmOperands<L, T, Y>& o,
                               LaunchMode mode) {
  using Kernel = ImplicitGemmHostKernel<L, ExecSpace, T, Y>;
  using Tile = ImplicitGemmHostTile;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  // The widest panel within the byte target, then narrower until every thread has
  // several teams (load balance on few-pixel problems).
  const std::int64_t pixels = (o.J + Tile::TN - 1) / Tile::TN * Tile::TN;
  // A fused pooling needs whole windows per team.
  const std::int64_t min_bn = (o.pooling.cells + Tile::TN - 1) / Tile::TN * Tile::TN;
  std::int64_t bn =
      static_cast<std::int64_t>(Tile::panel_bytes / (sizeof(T) * o.K)) / Tile::TN * Tile::TN;
  bn = std::clamp<std::int64_t>(bn, Tile::TN, std::min<std::int64_t>(Tile::max_bn, pixels));
  const std::int64_t want_teams = 4 * std::int64_t(space.concurrency());
  while (bn > Tile::TN && (o.J + bn - 1) / bn < want_teams)
    bn -= Tile::TN;
  bn = std::max(bn, min_bn);
  throw_if(bn > std::numeric_limits<int>::max() / 2, "kcnn::conv2d_forward",
           "ConvAlgo::ImplicitGemm: a pooling window of ", o.pooling.cells, " cells is too large");
  const std::int64_t per_team = o.pooling.columns_per_team(static_cast<int>(bn));
  const std::int64_t league = (o.J + per_team - 1) / per_team;
  throw_if(league > std::numeric_limits<int>::max(), "kcnn::conv2d_forward",
           "ConvAlgo::ImplicitGemm: ", league, " tiles exceed the launch limit; split the batch");
  const std::size_t scratch =
      Kernel::scratch_bytes(o.K, static_cast<int>(bn), o.M, o.pooling.enabled);
  throw_if(scratch > static_cast<std::size_t>(Policy::scratch_size_max(1)), "kcnn::conv2d_forward",
           "ConvAlgo::ImplicitGemm: C*R*S = ", o.K, " needs ", scratch,
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(1),
           "; use another algorithm");
  if (mode == LaunchMode::Check) return;
  Policy policy(space, static_cast<int>(league), 1);
  Kokkos::parallel_for(
      o.pooling.enabled ? "kcnn::conv2d::implicit_gemm_pool" : "kcnn::conv2d::implicit_gemm",
      policy.set_scratch_size(1, Kokkos::PerTeam(scratch)), Kernel{o, static_cast<int>(bn)});
}

/// Runs (or with LaunchMode::Check only plans and checks) ConvAlgo::ImplicitGemm; `pb`
/// has been validated against the Views. Returns the workspace bytes the run takes.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_implicit_gemm(const ExecSpace& space, const XView& x, const WView& w,
                                 const BView& bias, const YView& y, const Conv2dProblem& pb,
                                 LaunchMode mode = LaunchMode::Run) {
  using T = view_scalar_t<XView>;
  auto run = [&](auto layout_tag) -> std::size_t {
    constexpr Layout L = decltype(layout_tag)::value;
    const auto o = implicit_gemm_operands<L>(x, w, bias, y, pb);
    if constexpr (runs_on_host_v<ExecSpace>) {
      implicit_gemm_host_launch(space, o, mode);
      return 0;
    } else {
      using Tiles = ImplicitGemmDeviceTiles;
      using Id = ImplicitGemmDeviceTile;
      const ImplicitGemmDevicePlan plan =
          implicit_gemm_device_plan(o, multiprocessor_count(space), pb.workspace_limit_bytes);
      if constexpr (!implicit_gemm_has_tuned_tiles_v<T>) {
        implicit_gemm_device_launch<Tiles::Double>(space, o, mode);
      } else {
        switch (plan.tile) {
          case Id::SmallM:
            implicit_gemm_device_launch<Tiles::SmallM>(space, o, mode);
            break;
          case Id::MidM:
            implicit_gemm_device_launch<Tiles::MidM>(space, o, mode);
            break;
          case Id::HugeM:
            if (plan.k_slices > 1) {
              implicit_gemm_device_launch_split<Tiles::HugeM>(space, o, plan.k_slices, mode);
            } else {
              implicit_gemm_device_launch<Tiles::HugeM>(space, o, mode);
            }
            break;
          case Id::LargeM:
            implicit_gemm_device_launch<Tiles::LargeM>(space, o, mode);
            break;
          default:
            implicit_gemm_device_launch<Tiles::Narrow>(space, o, mode);
            break;
        }
      }
      return implicit_gemm_workspace_bytes(o, plan);
    }
  };
  if (pb.layout == Layout::NCHW) return run(std::integral_constant<Layout, Layout::NCHW>{});
  return run(std::integral_constant<Layout, Layout::NHWC>{});
}

}  // namespace kcnn::Impl
