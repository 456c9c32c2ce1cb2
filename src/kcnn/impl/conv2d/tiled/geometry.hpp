// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/geometry.hpp
/// \brief ConvAlgo::Tiled: micro-tiles, team geometry, pooling paths and tuning knobs
///        (host-side choices the launch makes before a kernel runs).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/host_simd.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../epilogue/pool_window.hpp"

namespace kcnn::Impl {

/// Outputs one logical thread computes: BM output channels x BH rows x BW columns.
template <int BM_, int BH_, int BW_>
struct TiledMicroTile {
  static constexpr int BM = BM_, BH = BH_, BW = BW_;
};

/// Micro-tiles per backend and problem class, with the reasons.
///
/// GPU (one CUDA thread per logical thread): 32 to 64 accumulators per thread keeps
/// the register count near 64-96 so that two or more 256-thread teams fit an SM; two
/// output columns and two rows per thread let neighbouring taps reuse loaded inputs.
/// BM follows M: LeNet's C1 has M = 4 (BM = 4 wastes nothing), layers with M >= 8 take
/// BM = 8 so each staged input feeds 8 FMAs.
///
/// CPU (an OpenMP thread walks the tile; TiledHostMainloop keeps the micro-tile in
/// vector registers). float (and 16-bit types, staged as float): BW = one vector of
/// columns and BM x BH accumulator vectors, half the ISA's vector registers: AVX-512 4 x
/// 4 or 8 x 2 (x 16), AVX2 4 x 2 or 8 x 1 (x 8). double and builds without the
/// intrinsics keep the earlier 4 x 2 or 8 x 1 (x 16). Chosen on a 2-core AMD EPYC (Zen
/// 5; 2026-11-28, session 28), NCHW float, ReLU, LeNet C3 (4 -> 16 channels, 7x7,
/// 40x40) and C1 (1 -> 4 channels, 7x7, 86x86) at batch 1,000, without and with their
/// fused max pooling (4x4, 2x2), ms, median of 7 (AVX2: 5) calls, one driver run each,
/// all with this main loop (runs on this VM vary by up to 20%: compare within a column):
///
///   AVX-512            C3     C3 + max4    C1     C1 + max2
///   8 x 1 x 16       49.9      31.3      33.2      38.3     (before: LargeM)
///   4 x 2 x 16       92.7      52.3      30.5      34.6     (before: SmallM)
///   16 x 1 x 16      41.7      28.1      48.2      56.1
///   8 x 2 x 16       41.9      24.2      26.3      30.9     LargeM
///   4 x 4 x 16       84.5      48.2      31.1      31.3     SmallM
///   8 x 1 x 32       44.3      25.0      29.5      37.3
///   4 x 2 x 32      109        47.9      34.0      38.2
///
///   AVX2 (-mno-avx512f)
///   8 x 1 x 16      99.9      57.8      67.3      60.6     (before: LargeM)
///   4 x 2 x 16     158.6      82.2      47.3      47.8     (before: SmallM)
///   8 x 1 x 8       65.9      50.4      46.9      52.8     LargeM
///   4 x 2 x 8      115.5      76.5      37.5      39.9     SmallM
///   8 x 2 x 8      105.5      67.7      59.0      62.7
///   4 x 4 x 8      129.8      82.8      41.8      41.9
///
/// (On AVX-512, 8 x 2 x 16 also led C1 unfused, but with M = 4 half its multiply-adds are
/// zeros; 4 x 4 x 16 computes none and matched it fused, the stack's case.) Measured
/// before the main loop held a tap's weights in registers (kWeightsInRegisters), which
/// then took 4 x 4 x 16's C1 from 30.9 to 20.6 ms and left 8 x 2 x 16's C3 as it was.
/// Rechecked with it (the same driver, unfused / fused): C1 4 x 4 x 16 20.0 / 20.9 ms,
/// 4 x 2 x 32 20.3 / 23.0, 4 x 6 x 16 21.7 / 21.4, 8 x 2 x 16 26.5 / 31.1; C3 8 x 2 x 16
/// 40.9 / 24.5, 4 x 6 x 16 41.3 / 36.3, 4 x 4 x 16 44.3 / 25.2, 8 x 1 x 32 45.7 / 25.1.
template <class ExecSpace, class Accumulator = float>
struct TiledMicroTiles {
  static constexpr bool on_host = runs_on_host_v<ExecSpace>;
  static constexpr bool host_float = on_host && sizeof(Accumulator) == 4 && kHostVectorIntrinsics;
  static constexpr bool host_avx512 = host_float && kHostVectorRegisters == 32;
  using HostSmallM = std::conditional_t<
      host_avx512, TiledMicroTile<4, 4, 16>,
      std::conditional_t<host_float, TiledMicroTile<4, 2, 8>, TiledMicroTile<4, 2, 16>>>;
  using HostLargeM = std::conditional_t<
      host_avx512, TiledMicroTile<8, 2, 16>,
      std::conditional_t<host_float, TiledMicroTile<8, 1, 8>, TiledMicroTile<8, 1, 16>>>;
  using SmallM = std::conditional_t<on_host, HostSmallM, TiledMicroTile<4, 2, 4>>;
  using LargeM = std::conditional_t<on_host, HostLargeM, TiledMicroTile<8, 2, 4>>;
};

/// Team geometry for one problem: how many logical threads along each output
/// dimension, the tile they cover, the staged halo tile and the channel chunk.
struct TiledGeometry {
  int threads_m = 1, threads_p = 1, threads_q = 1;  ///< logical threads per team
  int tile_m = 1, tile_p = 1, tile_q = 1;           ///< outputs per team
  int tiles_m = 1, tiles_p = 1, tiles_q = 1;        ///< tiles per image
  int in_h = 1, in_w = 1;                           ///< staged halo tile
  int in_pitch = 1;   ///< scratch row stride: in_w, padded to 4 floats for vector loads
  int c_chunk = 1;    ///< input channels per stage
  int team_size = 1;  ///< hardware threads per team
  /// Fused pooling only: pooled rows and columns per team. The team's conv tile (tile_p
  /// x tile_q per channel) then starts at conv row (tile index * pool_p) * pool stride -
  /// pool padding and holds every conv output its pooled outputs' windows read;
  /// tiles_p and tiles_q count pooled tiles.
  int pool_p = 0, pool_q = 0;
  /// GPUs: row tiles one team computes one after the other (see TiledKernelBase::
  /// kMultiTile), and the number of such groups per column of tiles.
  int tiles_per_team = 1, row_groups = 1;
  /// False when even the smallest tile's halo (one output, or one pooling window, with
  /// its stride and dilation) does not fit the scratch budget; the other fields are then
  /// meaningless and the launch refuses the problem.
  bool fits = true;
  KOKKOS_INLINE_FUNCTION int logical_threads() const { return threads_m * threads_p * threads_q; }
  KOKKOS_INLINE_FUNCTION int in_plane() const { return in_h * in_pitch; }
  /// Elements of the fused pooling's conv tile: [tile_m][tile_p][tile_q].
  KOKKOS_INLINE_FUNCTION int conv_tile_elems() const { return tile_m * tile_p * tile_q; }
  std::int64_t league_size(std::int64_t N) const { return N * tiles_m * row_groups * tiles_q; }
};

/// GPU scratch rows and the weight block start on 16-byte boundaries, so that a thread
/// reads 4 floats with one vector load (see TiledDeviceMainloop::accumulate_vec).
inline constexpr int kScratchRowAlign = 4;

/// At most `cap` threads along a dimension that needs `need`, spread evenly over the
/// tiles so the last tile is not mostly empty (34 columns in 4-wide blocks: 9 threads,
/// one tile; 80 rows in 2-row blocks with cap 12: 4 tiles of 10 threads).
inline int balanced_threads(int need, int cap) {
  const int tiles = ceil_div(need, cap);
  return ceil_div(need, tiles);
}

/// Chooses the team geometry for micro-tile `Micro` within `scratch_bytes` of scratch;
/// Staged: the staged operands' element type, ConvTile: a fused pooling's conv tile's.
template <class Micro, class Staged, class ConvTile>
TiledGeometry make_tiled_geometry(const Conv2dProblem& pb, bool on_host, std::size_t scratch_bytes,
                                  bool pad_rows, bool warp_aware = true) {
  TiledGeometry g;
  // With a fused pooling only the conv outputs its windows read are computed, and a
  // team's tile must hold at least one whole window.
  const Pool2dParams& pool = pb.pool;
  // The smallest halo a team stages: one output (or one pooling window) with its filter
  // footprint, one channel. Huge strides, dilations or windows make it exceed the budget;
  // then no int below may be formed from them. In double: its factors reach 2^62.
  auto halo = [](double outputs, int stride, std::int64_t kernel, int dilation) {
    return (outputs - 1) * stride + double(kernel - 1) * dilation + 1;
  };
  const double min_halo = halo(pb.has_pool ? pool.window_h : 1, pb.stride_h, pb.R, pb.dilation_h) *
                          halo(pb.has_pool ? pool.window_w : 1, pb.stride_w, pb.S, pb.dilation_w);
  if (min_halo * sizeof(Staged) > double(scratch_bytes) || min_halo > double(1 << 30)) {
    g.fits = false;
    return g;
  }
  const std::int64_t rows =
      pb.has_pool ? pool_read_extent(pb.P_pooled, pool.window_h, pool.stride_h, pool.pad_h, pb.P)
                  : pb.P;
  const std::int64_t cols =
      pb.has_pool ? pool_read_extent(pb.Q_pooled, pool.window_w, pool.stride_w, pool.pad_w, pb.Q)
                  : pb.Q;
  const int min_p = pb.has_pool ? ceil_div(pool.window_h, Micro::BH) : 1;
  const int min_q = pb.has_pool ? ceil_div(pool.window_w, Micro::BW) : 1;
  const int need_m = ceil_div(pb.M, Micro::BM);
  const int need_p = std::max(ceil_div(rows, Micro::BH), min_p);
  const int need_q = std::max(ceil_div(cols, Micro::BW), min_q);
  if (on_host) {
    // One OpenMP thread per team: up to 64 columns x 8 rows x 32 channels, so the halo
    // tile of a few channels stays in L1 and each staged input serves many filters.
    g.threads_q = balanced_threads(need_q, std::max(1, 64 / Micro::BW));
    g.threads_p = balanced_threads(need_p, std::max(1, 8 / Micro::BH));
    g.threads_m = balanced_threads(need_m, std::max(1, 32 / Micro::BM));
    g.team_size = 1;
  } else {
    // CUDA: columns fastest (coalesced stores), at most 256 threads per team and up to
    // 4 channel groups sharing one staged input tile. The rows and channel groups are
    // chosen to waste the fewest lanes: a team's threads round up to whole warps, and
    // tiles that stick out of the output compute nothing. LeNet C3 (34x34 outputs, 9
    // column threads): 17 rows x 1 group = 153 threads in 5 warps, 90% of the lanes
    // useful, where 9 rows x 2 groups (162 threads, 6 warps, two row tiles of 18) had
    // 75%. LeNet C1 (80x80, 20 column threads): 8 rows = 160 threads, 100%.
    g.threads_q = balanced_threads(need_q, kWarpSize);
    if (!warp_aware) {
      // Strided and runtime-size kernels: up to 4 channel groups first, then rows (their
      // scalar reads of the staged tile were slower with the warp-aware shapes: LeNet
      // C3 at stride 2, 3.1 -> 3.5 ms).
      g.threads_m = balanced_threads(need_m, 4);
      g.threads_p = balanced_threads(need_p, std::max(1, 256 / (g.threads_q * g.threads_m)));
    } else {
      double best = -1.0;
      for (int tm = 1; tm <= std::min(need_m, 4); ++tm) {
        for (int tp = 1; tp <= need_p; ++tp) {
          const int threads = g.threads_q * tp * tm;
          if (threads > 256) break;
          const std::int64_t warps = (threads + kWarpSize - 1) / kWarpSize;
          const std::int64_t tiles = std::int64_t(ceil_div(need_m, tm)) * ceil_div(need_p, tp);
          const double useful = double(pb.P) * double(pb.M);  // per column tile: same for all
          const double lanes = double(tiles) * double(warps * kWarpSize) * Micro::BM * Micro::BH;
          // Small teams restage the halo more often: prefer >= 4 warps when they exist.
          const double score = useful / lanes * (warps >= 4 ? 1.0 : 0.8);
          if (score > best + 1e-9) {
            best = score;
            g.threads_p = tp;
            g.threads_m = tm;
          }
        }
      }
    }
    g.team_size = g.logical_threads();
  }
  // In double while the tile may still be far too large (huge strides): compared with
  // the budget only, and converted once it fits.
  auto per_channel_bytes = [&] {
    const double in_h = halo(double(g.threads_p) * Micro::BH, pb.stride_h, pb.R, pb.dilation_h);
    const double in_w = halo(double(g.threads_q) * Micro::BW, pb.stride_w, pb.S, pb.dilation_w);
    const double pitch = pad_rows ? std::ceil(in_w / kScratchRowAlign) * kScratchRowAlign : in_w;
    return double(sizeof(Staged)) *
           (in_h * pitch + double(pb.R) * double(pb.S) * g.threads_m * Micro::BM);
  };
  g.threads_p = std::max(g.threads_p, min_p);
  g.threads_q = std::max(g.threads_q, min_q);
  // GPUs keep a fused pooling's conv tile in the same level-0 scratch as the staged
  // operands (after them in time); hosts in level 1.
  auto conv_tile_bytes = [&] {
    return on_host || !pb.has_pool ? 0.0
                                   : double(sizeof(ConvTile)) * g.threads_m * Micro::BM *
                                         g.threads_p * Micro::BH * g.threads_q * Micro::BW;
  };
  // Large strides or dilations widen the halo: shrink the tile until one channel fits
  // (and the conv tile), halving the largest dimension that may shrink.
  while (per_channel_bytes() > double(scratch_bytes) || conv_tile_bytes() > double(scratch_bytes)) {
    int* largest = nullptr;
    for (int* d : {&g.threads_p, &g.threads_q, &g.threads_m}) {
      const int floor = d == &g.threads_p ? min_p : d == &g.threads_q ? min_q : 1;
      if (*d > floor && (largest == nullptr || *d > *largest)) largest = d;
    }
    if (largest == nullptr) {  // the launch reports the scratch overflow
      g.fits = false;
      return g;
    }
    const int floor = largest == &g.threads_p ? min_p : largest == &g.threads_q ? min_q : 1;
    *largest = std::max((*largest + 1) / 2, floor);
  }
  if (!on_host) g.team_size = g.logical_threads();
  g.tile_m = g.threads_m * Micro::BM;
  g.tile_p = g.threads_p * Micro::BH;
  g.tile_q = g.threads_q * Micro::BW;
  g.tiles_m = ceil_div(pb.M, g.tile_m);
  g.tiles_p = ceil_div(pb.P, g.tile_p);
  g.tiles_q = ceil_div(pb.Q, g.tile_q);
  if (pb.has_pool) {
    // As many whole windows as the conv tile holds; neighbouring teams recompute the
    // conv outputs that overlapping windows (stride < window) share.
    g.pool_p = (g.tile_p - pool.window_h) / pool.stride_h + 1;
    g.pool_q = (g.tile_q - pool.window_w) / pool.stride_w + 1;
    g.tiles_p = ceil_div(pb.P_pooled, g.pool_p);
    g.tiles_q = ceil_div(pb.Q_pooled, g.pool_q);
  }
  g.row_groups = g.tiles_p;
  // Below the budget (the loop above), so these fit int.
  g.in_h =
      static_cast<int>(std::int64_t(g.tile_p - 1) * pb.stride_h + (pb.R - 1) * pb.dilation_h + 1);
  g.in_w =
      static_cast<int>(std::int64_t(g.tile_q - 1) * pb.stride_w + (pb.S - 1) * pb.dilation_w + 1);
  g.in_pitch = pad_rows ? static_cast<int>(round_up(g.in_w, kScratchRowAlign)) : g.in_w;
  // As many input channels per stage as the scratch budget allows (at least one).
  const auto per_channel = static_cast<std::size_t>(per_channel_bytes());
  g.c_chunk = static_cast<int>(
      std::clamp<std::int64_t>(static_cast<std::int64_t>(scratch_bytes / per_channel), 1, pb.C));
  return g;
}

/// How a Tiled kernel applies a fused pooling (Conv2dParams::pool).
enum class TiledPooling {
  None,     ///< no pooling: the conv outputs go to y
  Scratch,  ///< any window: the team's conv tile goes to scratch, then the team pools it
  /// GPUs, 2x2 windows at stride 2 without padding (most CNNs' pooling, LeNet's C1):
  /// each thread pools its own micro-tile in registers (2x2-aligned: the conv tile
  /// starts on a window, BH and BW are even) and stores the pooled values directly. The
  /// scratch round trip with its generic window loops cost LeNet C1 48% more
  /// instructions than the unpooled kernel (Nsight Compute, H100).
  Registers2x2,
  /// GPUs, 4x4 windows at stride 4 without padding (LeNet's C3): as Registers2x2 where
  /// the micro-tile holds whole windows (BH = 4); with BH = 2 a window's other half is in
  /// the registers of the thread one row below (t + threads_q, same warp: see
  /// tiled_pool_pairs_share_warps) and comes over with a warp shuffle. Through scratch
  /// the pooling phase was 9% of LeNet C3's fused kernel's instructions (Nsight Compute).
  Registers4x4,
};

/// The pooling window of the register paths (0: not a register path).
KOKKOS_INLINE_FUNCTION constexpr int tiled_register_window(TiledPooling p) {
  return p == TiledPooling::Registers2x2 ? 2 : p == TiledPooling::Registers4x4 ? 4 : 0;
}

/// Launch choices of ConvAlgo::Tiled that tests steer (Impl::conv2d_tiled's last
/// argument).
struct TiledTuning {
  /// GPU kernels that may take several row tiles per team (kMultiTile), with the input
  /// in one channel chunk: as many as keep at least this many teams per multiprocessor
  /// (several waves of the 3-5 teams a multiprocessor holds at once, so that the last
  /// wave's imbalance stays small).
  std::int64_t min_teams_per_sm = 16;
  /// If > 0: this many row tiles per team (at most the image's), whatever the league.
  int force_tiles_per_team = 0;
};

/// Whether every thread of an even row of threads (t / threads_q even) finds the thread
/// below it, t + threads_q, in its own warp, and all warps are full: the condition of
/// TiledPooling::Registers4x4 with two rows per micro-tile.
inline bool tiled_pool_pairs_share_warps(const TiledGeometry& g) {
  if (g.team_size % kWarpSize != 0 || g.threads_p % 2 != 0) return false;
  for (int t = 0; t < g.team_size; ++t)
    if ((t / g.threads_q) % 2 == 0 && t % kWarpSize + g.threads_q >= kWarpSize) return false;
  return true;
}

}  // namespace kcnn::Impl
