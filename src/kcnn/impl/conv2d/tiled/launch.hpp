// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/launch.hpp
/// \brief ConvAlgo::Tiled's launch: the kernel instantiation (micro-tile, filter
///        extents, unit stride, pooling path), its geometry and limits, and the
///        parallel_for (Impl::conv2d_tiled, the entry point).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "device_kernel.hpp"
#include "geometry.hpp"
#include "host_kernel.hpp"
#include "host_simd_kernel.hpp"

namespace kcnn::Impl {

/// The kernel of ExecSpace's backend: TiledHostKernel on hosts, TiledDeviceKernel on
/// GPUs (the other one is named, never instantiated).
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
using Conv2dTiledKernel = std::conditional_t<
    runs_on_host_v<ExecSpace>,
    TiledHostKernel<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>,
    TiledDeviceKernel<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>>;

/// Launches one instantiation of the kernel; Pooling is None exactly when !pb.has_pool.
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
void conv2d_tiled_launch(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                         const YView& y, const Conv2dProblem& pb, const TiledTuning& tuning,
                         LaunchMode mode = LaunchMode::Run) {
  using Kernel =
      Conv2dTiledKernel<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>;
  using Staged = typename Kernel::staged;
  using Accumulator = typename Kernel::accumulator;
  constexpr bool on_host = runs_on_host_v<ExecSpace>;
  constexpr bool Pooled = Kernel::Pooled;
  // GPUs, unit-stride kernels with compile-time filters and 64-accumulator micro-tiles:
  // at most 128 registers per thread (launch bound 256 threads x 2 teams), so that a
  // team of up to 5 warps keeps 3 teams per multiprocessor. LeNet C3's kernel came out
  // at 130 registers once, which left 2 teams per SM (15.6% occupancy) and took 4.54 ms
  // instead of 3.93; the bound also took the NCHW ResNet 3x3 layers from 152 registers
  // to 127 (64 channels at 56x56: 1.03 -> 0.75 ms). Other kernels stay unbounded: with
  // the bound the compiler spent more registers on the 32-accumulator ones (LeNet C1:
  // 84 -> 96, 1.45 -> 1.52 ms) and lost speed on the strided ones (C1 at stride 2: 1.03 ->
  // 1.28 ms). H100, Nsight Compute and kcnn_perf.
  constexpr bool bounded = Kernel::vector_loads && Micro::BM * Micro::BH * Micro::BW >= 64;
  using Policy = std::conditional_t<bounded, BoundedTeamPolicy<ExecSpace, 256, 2>,
                                    Kokkos::TeamPolicy<ExecSpace>>;
  // Leave room for the block's alignment and the halo tile's rounding to 16 bytes.
  const std::size_t budget = static_cast<std::size_t>(Policy::scratch_size_max(0)) - 256;
  // Rows padded to 16 bytes only for the vector loads: the scalar strided path reads
  // with fewer bank conflicts from unpadded (often odd) row pitches.
  TiledGeometry g = make_tiled_geometry<Micro, Staged, Accumulator>(
      pb, on_host, budget, Kernel::vector_loads, Kernel::vector_loads);
  auto refuse_if_scratch_exceeded = [&](bool exceeded, const std::string& bytes) {
    throw_if(exceeded, "kcnn::conv2d_forward", "ConvAlgo::Tiled: a ", pb.R, "x", pb.S,
             " filter with dilation ", pb.dilation_h, "x", pb.dilation_w, " and stride ",
             pb.stride_h, "x", pb.stride_w, Pooled ? " and the fused pooling's window" : "",
             " needs a tile larger than team scratch memory (", bytes, Policy::scratch_size_max(0),
             " bytes); use another algorithm");
  };
  refuse_if_scratch_exceeded(!g.fits, "more than ");

  if constexpr (tiled_register_window(Pooling) > Micro::BH) {
    // Windows spanning two rows of threads need each pair in one full warp; other
    // team shapes pool through scratch.
    if (!tiled_pool_pairs_share_warps(g)) {
      return conv2d_tiled_launch<L, KR, KS, Unit, TiledPooling::Scratch, Micro>(
          space, x, w, bias, y, pb, tuning, mode);
    }
  }
  if constexpr (Kernel::kMultiTile) {
    if (g.c_chunk >= pb.C && g.tiles_p > 1) {
      const std::int64_t sms = multiprocessor_count(space);
      const std::int64_t keep = std::max<std::int64_t>(1, tuning.min_teams_per_sm * sms);
      const std::int64_t per_team = tuning.force_tiles_per_team > 0 ? tuning.force_tiles_per_team
                                                                    : g.league_size(pb.N) / keep;
      g.tiles_per_team = static_cast<int>(std::clamp<std::int64_t>(per_team, 1, g.tiles_p));
      g.row_groups = ceil_div(g.tiles_p, g.tiles_per_team);
    }
  }
  const std::int64_t league = g.league_size(pb.N);
  throw_if(league > std::int64_t(0x7fffffff), "kcnn::conv2d_forward", "ConvAlgo::Tiled: ", league,
           " tiles exceed the launch limit; split the batch");
  // One 16-byte aligned block (get_shmem_aligned may skip up to 15 bytes).
  const std::size_t scratch =
      Kernel::block_bytes(g, static_cast<int>(pb.R), static_cast<int>(pb.S)) + 16;
  refuse_if_scratch_exceeded(scratch > static_cast<std::size_t>(Policy::scratch_size_max(0)),
                             msg(scratch, " > "));
  // Hosts: a fused pooling's conv tile, or 16-bit partial sums over several chunks, in
  // level-1 scratch (plus its 64-byte alignment). After it, two rows for the pooling
  // phase (pool_conv_tile_host).
  const bool host_tile = on_host && (Pooled || (Kernel::kFloatPartials && g.c_chunk < pb.C));
  const std::size_t host_conv_tile =
      host_tile ? sizeof(Accumulator) * std::size_t(g.conv_tile_elems() + 2 * g.tile_q) + 64 : 0;

  Policy policy(space, static_cast<int>(league), g.team_size);
  policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
  if (host_conv_tile > 0) policy.set_scratch_size(1, Kokkos::PerTeam(host_conv_tile));
  Kernel kernel{x, w, bias, y, pb, g};
  if constexpr (!on_host) {
    throw_if(!offsets_fit_int(w), "kcnn::conv2d_forward", "ConvAlgo::Tiled: ", w.span(),
             " filter elements exceed 32-bit offsets; use another algorithm");
    kernel.w_strides32 = logical_strides32<L>(w);
    kernel.w_taps_linear = kernel.w_strides32.h == pb.S * kernel.w_strides32.w;
    kernel.x_strides = logical_strides<L>(x);
    kernel.x_offsets_fit_int = offsets_fit_int(x);
    if (kernel.x_offsets_fit_int) kernel.x_strides32 = logical_strides32<L>(x);
  }
  if (mode == LaunchMode::Check) return;  // every limit above held
  Kokkos::parallel_for(Pooled ? "kcnn::conv2d::tiled_pool" : "kcnn::conv2d::tiled", policy, kernel);
}

/// Picks the compile-time filter extents. GPUs, float: 1, 3, 5, 7 unroll fully (square
/// filters; with non-unit stride or dilation only 3 and 7, the sizes of the strided
/// layers we target); 16-bit: 7 at unit stride; anything else runs with runtime extents,
/// still tiled. CPUs and double: runtime extents.
template <Layout L, bool Unit, class Micro, class ExecSpace, class XView, class WView, class BView,
          class YView>
void conv2d_tiled_filter_dispatch(const ExecSpace& space, const XView& x, const WView& w,
                                  const BView& bias, const YView& y, const Conv2dProblem& pb,
                                  const TiledTuning& tuning, LaunchMode mode) {
  const std::int64_t k = pb.R == pb.S ? pb.R : 0;
  constexpr bool on_host = runs_on_host_v<ExecSpace>;
  const Pool2dParams& pool = pb.pool;
  // Square windows at their own stride without padding: the register pooling paths.
  const int square_window = pool.window_h == pool.window_w && pool.stride_h == pool.window_h &&
                                    pool.stride_w == pool.window_w && pool.pad_h == 0 &&
                                    pool.pad_w == 0
                                ? pool.window_h
                                : 0;
  auto go = [&](auto extent) {
    constexpr int K = decltype(extent)::value;
    if (!pb.has_pool) {
      conv2d_tiled_launch<L, K, K, Unit, TiledPooling::None, Micro>(space, x, w, bias, y, pb,
                                                                    tuning, mode);
    } else if constexpr (!on_host && Micro::BH % 2 == 0 && Micro::BW % 2 == 0) {
      // (4x4 windows pair threads with a warp shuffle: CUDA only.)
      constexpr bool can_4x4 = Micro::BW % 4 == 0 && (Micro::BH % 4 == 0 || Micro::BH == 2) &&
                               has_warp_shuffle_v<ExecSpace>;
      if (square_window == 2) {
        conv2d_tiled_launch<L, K, K, Unit, TiledPooling::Registers2x2, Micro>(space, x, w, bias, y,
                                                                              pb, tuning, mode);
      } else if (can_4x4 && square_window == 4) {
        conv2d_tiled_launch<L, K, K, Unit, TiledPooling::Registers4x4, Micro>(space, x, w, bias, y,
                                                                              pb, tuning, mode);
      } else {
        conv2d_tiled_launch<L, K, K, Unit, TiledPooling::Scratch, Micro>(space, x, w, bias, y, pb,
                                                                         tuning, mode);
      }
    } else {
      conv2d_tiled_launch<L, K, K, Unit, TiledPooling::Scratch, Micro>(space, x, w, bias, y, pb,
                                                                       tuning, mode);
    }
  };
  constexpr ElementKind kind = ElementTraits<view_scalar_t<YView>>::kind;
  constexpr bool is_16bit = kind == ElementKind::Float16 || kind == ElementKind::BFloat16;
  if constexpr (runs_on_host_v<ExecSpace> || (kind != ElementKind::Float32 && !is_16bit)) {
    // CPUs vectorize across output columns; unrolled taps buy little there and cost
    // minutes of compile time per instantiation, so the host keeps runtime extents. So
    // does double on GPUs: supported, but not what the unrolled kernels are tuned for.
    go(std::integral_constant<int, 0>{});
  } else if constexpr (is_16bit) {
    // 16-bit tensors on GPUs (staged as float): 7x7 at unit stride unrolled, LeNet's
    // layers, where Auto picks Tiled for 16 bits; other extents at runtime, since each
    // unrolled extent adds minutes to the build (float's six: 21 minutes on 2 cores).
    if constexpr (Unit) {
      if (k == 7) return go(std::integral_constant<int, 7>{});
    }
    go(std::integral_constant<int, 0>{});
  } else if constexpr (Unit) {
    switch (k) {
      case 1:
        return go(std::integral_constant<int, 1>{});
      case 3:
        return go(std::integral_constant<int, 3>{});
      case 5:
        return go(std::integral_constant<int, 5>{});
      case 7:
        return go(std::integral_constant<int, 7>{});
      default:
        return go(std::integral_constant<int, 0>{});
    }
  } else {
    switch (k) {
      case 3:
        return go(std::integral_constant<int, 3>{});
      case 7:
        return go(std::integral_constant<int, 7>{});
      default:
        return go(std::integral_constant<int, 0>{});
    }
  }
}

/// Hosts, NHWC float with at most the small micro-tile's filters (4) at unit stride and
/// dilation: the staged kernel, whose micro-tile holds all the filters, rather than the
/// register-blocked one, whose filter vector would be a quarter full or less, where the
/// staged kernel can take the problem (its halo tile within scratch, its league within
/// int; else the register-blocked kernel serves it, as before). LeNet C1 NHWC (4
/// filters, batch 1,000, 2-core Zen 5, a driver, medians of 7 calls): 22 ms staged
/// against 55-58 register-blocked (AVX-512), 40 against 62 (AVX2); for C3's 16 filters
/// the register-blocked kernel leads, 27-30 against 46 (AVX-512), 45 against 88 (AVX2).
template <class ExecSpace, class T>
bool tiled_host_prefers_staged(const Conv2dProblem& pb) {
  using Small = typename TiledMicroTiles<ExecSpace, T>::SmallM;
  if (!std::is_same_v<T, float> || pb.M > Small::BM) return false;
  if (pb.stride_h != 1 || pb.stride_w != 1 || pb.dilation_h != 1 || pb.dilation_w != 1)
    return false;
  const std::size_t budget =
      static_cast<std::size_t>(Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0)) - 256;
  const TiledGeometry g = make_tiled_geometry<Small, T, T>(pb, true, budget, false, false);
  return g.fits && g.league_size(pb.N) <= std::int64_t(0x7fffffff);
}

/// Runs ConvAlgo::Tiled; `pb` has been validated against the Views. Returns the
/// workspace bytes (the host register-blocked kernel's packed weights; else 0).
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_tiled(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                         const YView& y, const Conv2dProblem& pb,
                         const TiledTuning& tuning = TiledTuning{},
                         LaunchMode mode = LaunchMode::Run) {
  if constexpr (runs_on_host_v<ExecSpace> && tiled_host_simd_types_v<view_scalar_t<XView>>) {
    using T = view_scalar_t<XView>;
    if (tiled_host_simd_applies<T>(pb, logical_strides<Layout::NHWC>(x).c) &&
        !tiled_host_prefers_staged<ExecSpace, T>(pb))
      return conv2d_tiled_host_simd(space, x, w, bias, y, pb, mode);
  }
  using Tiles = TiledMicroTiles<ExecSpace, accumulator_t<view_scalar_t<YView>>>;
  const bool unit =
      pb.stride_h == 1 && pb.stride_w == 1 && pb.dilation_h == 1 && pb.dilation_w == 1;
  auto with_micro = [&](auto layout_tag, auto unit_tag) {
    constexpr Layout L = decltype(layout_tag)::value;
    constexpr bool U = decltype(unit_tag)::value;
    if (pb.M <= Tiles::SmallM::BM) {
      conv2d_tiled_filter_dispatch<L, U, typename Tiles::SmallM>(space, x, w, bias, y, pb, tuning,
                                                                 mode);
    } else {
      conv2d_tiled_filter_dispatch<L, U, typename Tiles::LargeM>(space, x, w, bias, y, pb, tuning,
                                                                 mode);
    }
  };
  auto with_unit = [&](auto layout_tag) {
    if (unit) {
      with_micro(layout_tag, std::true_type{});
    } else {
      with_micro(layout_tag, std::false_type{});
    }
  };
  if (pb.layout == Layout::NCHW) {
    with_unit(std::integral_constant<Layout, Layout::NCHW>{});
  } else {
    with_unit(std::integral_constant<Layout, Layout::NHWC>{});
  }
  return 0;
}

}  // namespace kcnn::Impl
