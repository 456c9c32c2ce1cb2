// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/tiled.hpp
/// \brief ConvAlgo::Tiled: direct convolution with team scratch memory and register
///        blocking, one source for GPUs and CPUs.
///
/// A team owns a tile of outputs of one image: tile_p rows x tile_q columns x tile_m
/// output channels. Input channels are walked in chunks; for each chunk the team stages
/// the input halo tile (the rows and columns its outputs read, zeros where the window
/// leaves the image) and the chunk's filter taps for its output channels into level-0
/// scratch. Each logical thread then computes a compile-time micro-tile of
/// BM channels x BH rows x BW columns held in registers: every staged input value it
/// reads feeds BM multiply-adds, every staged weight feeds BH*BW.
///
/// The filter extent is a template parameter for the common sizes (1, 3, 5, 7) so
/// the tap loops unroll; other sizes take the same kernel with runtime extents. Unit
/// stride and dilation get their own instantiation: then every scratch index is a
/// compile-time offset from a per-thread base and the compiler keeps reused input
/// values in registers instead of reloading them per tap.
///
/// On GPUs a logical thread is a CUDA thread and the micro-tile is small (registers
/// are per thread); on CPUs a team is one OpenMP thread that walks all logical threads
/// of its tile, and BW spans a SIMD register so the innermost loop over the output
/// width vectorizes.
///
/// Fused pooling (Conv2dParams::pool): a team owns a tile of pooled outputs instead and
/// computes the conv outputs their windows read (its conv tile starts where its first
/// window does, and holds as many whole windows as the micro-tiles cover). The
/// activated conv outputs go to scratch (GPUs: the staging block, once the last chunk
/// is read; CPUs: level 1), then the team reduces each window from there into y. Any
/// window, stride and padding: overlapping windows at tile edges are recomputed by both
/// neighbouring teams.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../../arch/async_copy.hpp"
#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../epilogue/bias_activation.hpp"
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
/// CPU (an OpenMP thread walks the tile): BW = 16 floats is one AVX-512 register (two
/// AVX2 ones); BM x BH = 4 x 2 or 8 x 1 accumulator vectors keep 8 of the 32 vector
/// registers busy and leave room for the staged input rows.
template <class ExecSpace>
struct TiledMicroTiles {
  static constexpr bool on_host = runs_on_host_v<ExecSpace>;
  using SmallM = std::conditional_t<on_host, TiledMicroTile<4, 2, 16>, TiledMicroTile<4, 2, 4>>;
  using LargeM = std::conditional_t<on_host, TiledMicroTile<8, 1, 16>, TiledMicroTile<8, 2, 4>>;
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
  /// GPUs: row tiles one team computes one after the other (see Conv2dTiledKernel::
  /// kMultiTile), and the number of such groups per column of tiles.
  int tiles_per_team = 1, row_groups = 1;
  KOKKOS_INLINE_FUNCTION int logical_threads() const { return threads_m * threads_p * threads_q; }
  KOKKOS_INLINE_FUNCTION int in_plane() const { return in_h * in_pitch; }
  /// Elements of the fused pooling's conv tile: [tile_m][tile_p][tile_q].
  KOKKOS_INLINE_FUNCTION int conv_tile_elems() const { return tile_m * tile_p * tile_q; }
  std::int64_t league_size(std::int64_t N) const { return N * tiles_m * row_groups * tiles_q; }
};

/// GPU scratch rows and the weight block start on 16-byte boundaries, so that a thread
/// reads 4 floats with one vector load (see Conv2dTiledKernel::accumulate_vec).
inline constexpr int kScratchRowAlign = 4;

/// At most `cap` threads along a dimension that needs `need`, spread evenly over the
/// tiles so the last tile is not mostly empty (34 columns in 4-wide blocks: 9 threads,
/// one tile; 80 rows in 2-row blocks with cap 12: 4 tiles of 10 threads).
inline int balanced_threads(int need, int cap) {
  const int tiles = ceil_div(need, cap);
  return ceil_div(need, tiles);
}

/// Chooses the team geometry for micro-tile `Micro` within `scratch_bytes` of scratch.
template <class Micro, class Scalar>
TiledGeometry make_tiled_geometry(const Conv2dProblem& pb, bool on_host, std::size_t scratch_bytes,
                                  bool pad_rows, bool warp_aware = true) {
  TiledGeometry g;
  // With a fused pooling only the conv outputs its windows read are computed, and a
  // team's tile must hold at least one whole window.
  const Pool2dParams& pool = pb.pool;
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
  auto per_channel_bytes = [&] {
    const std::int64_t in_h =
        (std::int64_t(g.threads_p) * Micro::BH - 1) * pb.stride_h + (pb.R - 1) * pb.dilation_h + 1;
    const std::int64_t in_w =
        (std::int64_t(g.threads_q) * Micro::BW - 1) * pb.stride_w + (pb.S - 1) * pb.dilation_w + 1;
    const std::int64_t pitch = pad_rows ? round_up(in_w, kScratchRowAlign) : in_w;
    return static_cast<std::size_t>(sizeof(Scalar) *
                                    (in_h * pitch + pb.R * pb.S * g.threads_m * Micro::BM));
  };
  g.threads_p = std::max(g.threads_p, min_p);
  g.threads_q = std::max(g.threads_q, min_q);
  // GPUs keep a fused pooling's conv tile in the same level-0 scratch as the staged
  // operands (after them in time); hosts in level 1.
  auto conv_tile_bytes = [&] {
    return on_host || !pb.has_pool ? std::size_t(0)
                                   : sizeof(Scalar) * std::size_t(g.threads_m) * Micro::BM *
                                         g.threads_p * Micro::BH * g.threads_q * Micro::BW;
  };
  // Large strides or dilations widen the halo: shrink the tile until one channel fits
  // (and the conv tile), halving the largest dimension that may shrink.
  while (per_channel_bytes() > scratch_bytes || conv_tile_bytes() > scratch_bytes) {
    int* largest = nullptr;
    for (int* d : {&g.threads_p, &g.threads_q, &g.threads_m}) {
      const int floor = d == &g.threads_p ? min_p : d == &g.threads_q ? min_q : 1;
      if (*d > floor && (largest == nullptr || *d > *largest)) largest = d;
    }
    if (largest == nullptr) break;  // the launch reports the scratch overflow
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
  g.in_h = static_cast<int>((g.tile_p - 1) * pb.stride_h + (pb.R - 1) * pb.dilation_h + 1);
  g.in_w = static_cast<int>((g.tile_q - 1) * pb.stride_w + (pb.S - 1) * pb.dilation_w + 1);
  g.in_pitch = pad_rows ? static_cast<int>(round_up(g.in_w, kScratchRowAlign)) : g.in_w;
  // As many input channels per stage as the scratch budget allows (at least one).
  const std::size_t per_channel = per_channel_bytes();
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

/// The kernel. KR/KS: compile-time filter extents (0: runtime). Unit: stride and
/// dilation are 1 (scratch offsets become compile-time constants). Pooling: how the
/// fused pooling (pb.has_pool) is applied; a template parameter so that the kernels
/// without it keep their registers and code size.
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
struct Conv2dTiledKernel {
  static constexpr bool Pooled = Pooling != TiledPooling::None;
  using scalar = view_scalar_t<YView>;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchView = Kokkos::View<scalar*, typename ExecSpace::scratch_memory_space,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int BM = Micro::BM, BH = Micro::BH, BW = Micro::BW;
  static constexpr bool on_host = runs_on_host_v<ExecSpace>;

  XView x;
  WView w;
  BView bias;
  YView y;
  Conv2dProblem pb;
  TiledGeometry g;
  /// GPU staging: 32-bit element offsets (set by the launch; x's only where they fit).
  bool x_offsets_fit_int = false;
  LogicalStrides32 x_strides32{}, w_strides32{};
  LogicalStrides x_strides{};  ///< x's 64-bit strides, for inputs beyond 32-bit offsets
  bool w_taps_linear = false;  ///< tap (r, s) of the filters at (r * S + s) * w_strides32.w

  /// Where a team's tile starts: image, first output channel/row/column, and the
  /// input coordinate its halo tile starts at (may be negative: padding).
  struct TileOrigin {
    std::int64_t n;
    int m0, p0, q0;  ///< first conv output (p0, q0 < 0 for a fused pooling's padding)
    std::int64_t h0, w0;
    int pp0 = 0, pq0 = 0;  ///< fused pooling: first pooled output
  };

  /// The tile of team `league_rank` (its first, with several row tiles per team):
  /// (image, channel tile, row tile, column tile), columns fastest. With a fused pooling the row
  /// and column tiles are pooled ones and the conv tile starts where their first window does. (The
  /// league size fits int, see conv2d_tiled_launch: 32-bit divisions, where 64-bit ones are
  /// emulated on GPUs with dozens of instructions each.)
  struct TileIndex {
    int n, tm, tp, tq;  ///< image, channel tile, (first) row tile, column tile
  };
  KOKKOS_INLINE_FUNCTION TileIndex tile_index(int league_rank) const {
    int rest = league_rank;
    const int tq = rest % g.tiles_q;
    rest /= g.tiles_q;
    const int tp = (rest % g.row_groups) * g.tiles_per_team;
    rest /= g.row_groups;
    const int tm = rest % g.tiles_m;
    return {rest / g.tiles_m, tm, tp, tq};
  }
  KOKKOS_INLINE_FUNCTION TileOrigin tile_origin(const TileIndex& i) const {
    const int tm = i.tm, tp = i.tp, tq = i.tq;
    TileOrigin o{i.n, tm * g.tile_m, tp * g.tile_p, tq * g.tile_q, 0, 0};
    if constexpr (Pooled) {
      o.pp0 = tp * g.pool_p;
      o.pq0 = tq * g.pool_q;
      o.p0 = o.pp0 * pb.pool.stride_h - pb.pool.pad_h;
      o.q0 = o.pq0 * pb.pool.stride_w - pb.pool.pad_w;
    }
    o.h0 = std::int64_t(o.p0) * pb.stride_h - pb.pad_h;
    o.w0 = std::int64_t(o.q0) * pb.stride_w - pb.pad_w;
    return o;
  }

  /// Scratch elements of the halo tile (padded to the weights' 16-byte alignment) and
  /// of the weights.
  static std::size_t KOKKOS_INLINE_FUNCTION in_tile_elems(const TiledGeometry& geo) {
    return static_cast<std::size_t>(
        round_up(std::int64_t(geo.c_chunk) * geo.in_plane(), kScratchRowAlign));
  }
  static std::size_t KOKKOS_INLINE_FUNCTION w_tile_elems(const TiledGeometry& geo, int r, int s) {
    return static_cast<std::size_t>(geo.c_chunk) * r * s * geo.tile_m;
  }
  /// Level-0 scratch elements: the staged operands, or on GPUs with a fused pooling the
  /// conv tile if it is larger (it takes the block over after the last chunk).
  static std::size_t KOKKOS_INLINE_FUNCTION block_elems(const TiledGeometry& geo, int r, int s) {
    const std::size_t staged = in_tile_elems(geo) + w_tile_elems(geo, r, s);
    const std::size_t conv =
        !on_host && Pooling == TiledPooling::Scratch ? geo.conv_tile_elems() : 0;
    return staged > conv ? staged : conv;
  }

  KOKKOS_INLINE_FUNCTION int R() const { return KR > 0 ? KR : static_cast<int>(pb.R); }
  KOKKOS_INLINE_FUNCTION int S() const { return KS > 0 ? KS : static_cast<int>(pb.S); }
  KOKKOS_INLINE_FUNCTION int stride_h() const { return Unit ? 1 : pb.stride_h; }
  KOKKOS_INLINE_FUNCTION int stride_w() const { return Unit ? 1 : pb.stride_w; }
  KOKKOS_INLINE_FUNCTION int dil_h() const { return Unit ? 1 : pb.dilation_h; }
  KOKKOS_INLINE_FUNCTION int dil_w() const { return Unit ? 1 : pb.dilation_w; }

  /// GPU kernels with 32-accumulator micro-tiles may take several row tiles per team
  /// (TiledGeometry::tiles_per_team, set at launch when the input is staged in one
  /// channel chunk and teams stay plentiful): the filters are staged once, and the team's
  /// setup and index arithmetic are paid once per group of tiles. In LeNet C1's kernels
  /// (one input channel) those were about a fifth of the instructions (Nsight Compute,
  /// H100). Not for the scratch pooling, whose conv tile overwrites the staged filters.
  static constexpr bool kMultiTile =
      !on_host && BM * BH * BW <= 32 && Pooling != TiledPooling::Scratch;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const TileIndex first_tile = tile_index(team.league_rank());

    // One scratch block: the halo tile, then (16-byte aligned) the weights. On GPUs a
    // fused pooling's conv tile reuses the block once the last chunk has been read.
    const std::size_t in_elems = in_tile_elems(g);
    const std::size_t w_elems = w_tile_elems(g, R(), S());
    auto* block = static_cast<scalar*>(
        team.team_scratch(0).get_shmem_aligned(block_elems(g, R(), S()) * sizeof(scalar), 16));
    const ScratchView in_tile(block, in_elems);
    const ScratchView w_tile(block + in_elems, w_elems);

    const int logical = g.logical_threads();
    const int C = static_cast<int>(pb.C);
    if constexpr (!on_host) {
      // GPUs: one logical thread per hardware thread; its micro-tile stays in registers
      // across all channel chunks and is stored once. (The host path below is not even
      // compiled for the device: its loops would push the micro-tile to local memory.)
      const int t = team.team_rank();
      int tiles = 1;
      if constexpr (kMultiTile) {
        tiles = g.tiles_p - first_tile.tp < g.tiles_per_team ? g.tiles_p - first_tile.tp
                                                             : g.tiles_per_team;
      }
      for (int k = 0; k < tiles; ++k) {
        TileIndex index = first_tile;
        index.tp += k;
        const TileOrigin o = tile_origin(index);
        scalar acc[BM][BH][BW];
        zero(acc);
        for (int c0 = 0; c0 < C; c0 += g.c_chunk) {
          const int cc = C - c0 < g.c_chunk ? C - c0 : g.c_chunk;
          // All reads of the previous chunk (or tile) are done.
          if (c0 > 0 || k > 0) team.team_barrier();
          // Several tiles per team only with one chunk: the filters stay staged.
          stage(team, in_tile, w_tile, o, c0, cc, /*with_filters=*/k == 0);
          team.team_barrier();
          if (t < logical) {
            if constexpr (vector_loads) {
              accumulate_vec(acc, in_tile, w_tile, t, cc);
            } else {
              accumulate(acc, in_tile, w_tile, t, cc);
            }
          }
        }
        if constexpr (Pooling == TiledPooling::None) {
          if (t < logical) store_device(acc, o, t);
        } else if constexpr (tiled_register_window(Pooling) > 0) {
          if (t < logical) store_pooled_device(acc, o, t);
        } else {
          team.team_barrier();  // the staged operands are read: the block is the conv tile
          if (t < logical) store_conv_tile_device(acc, o, t, block);
          team.team_barrier();
          pool_conv_tile(team, o, block);
        }
      }
    } else {
      const TileOrigin o = tile_origin(first_tile);
      // CPUs: few hardware threads walk many micro-tiles. With one chunk (the usual
      // case: the host scratch budget is sized for it) each micro-tile is computed and
      // stored once; with several, partial sums go to the outputs (y, or a fused
      // pooling's conv tile in level-1 scratch; cache-resident either way: the team's
      // outputs are a few KB) and the last chunk applies bias and activation.
      // (The conv tile is followed by two rows for the pooling phase.)
      scalar* const conv_tile =
          Pooled ? static_cast<scalar*>(team.team_scratch(1).get_shmem_aligned(
                       (g.conv_tile_elems() + 2 * g.tile_q) * sizeof(scalar), 64))
                 : nullptr;
      for (int c0 = 0; c0 < C; c0 += g.c_chunk) {
        const int cc = C - c0 < g.c_chunk ? C - c0 : g.c_chunk;
        const bool first = c0 == 0, last = c0 + cc >= C;
        if (!first) team.team_barrier();
        stage(team, in_tile, w_tile, o, c0, cc, true);
        team.team_barrier();
        for (int t = team.team_rank(); t < logical; t += team.team_size()) {
          scalar acc[BM][BH][BW];
          if (first) {
            zero(acc);
          } else {
            load_partial(acc, o, t, conv_tile);
          }
          accumulate(acc, in_tile, w_tile, t, cc);
          store(acc, o, t, last, conv_tile);
        }
      }
      if constexpr (Pooled) {
        team.team_barrier();
        pool_conv_tile(team, o, conv_tile);
      }
    }
  }

  KOKKOS_FORCEINLINE_FUNCTION static void zero(scalar (&acc)[BM][BH][BW]) {
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm)
      KCNN_DEVICE_UNROLL
    for (int bh = 0; bh < BH; ++bh)
      KCNN_DEVICE_UNROLL
    for (int bw = 0; bw < BW; ++bw)
      acc[bm][bh][bw] = scalar(0);
  }

  /// Stages input channels [c0, c0 + cc) of the halo tile and (GPUs: with_filters)
  /// their filter taps.
  KOKKOS_INLINE_FUNCTION void stage(const member_type& team, const ScratchView& in_tile,
                                    const ScratchView& w_tile, const TileOrigin& o, int c0, int cc,
                                    bool with_filters) const {
    if constexpr (on_host) {
      stage_host(in_tile, w_tile, o, c0, cc);
    } else {
      stage_device(team, in_tile, w_tile, o, c0, cc, with_filters);
    }
  }

  /// GPUs: all threads of the team stride through the tile in global-memory order (NCHW:
  /// columns fastest; NHWC: channels fastest), so a warp reads consecutive addresses.
  /// Each thread decomposes its first index once and then steps its position by the team
  /// size with carries (GridWalker): integer divisions per staged element were the
  /// largest part of LeNet C1's instructions (Nsight Compute: the integer pipe busier
  /// than the FMA pipe).
  KOKKOS_INLINE_FUNCTION void stage_device(const member_type& team, const ScratchView& in_tile,
                                           const ScratchView& w_tile, const TileOrigin& o, int c0,
                                           int cc, bool with_filters) const {
    const int t = team.team_rank(), T = team.team_size();
    // 32-bit offsets where they fit (the 64-bit chains and bounds tests were most of the
    // staging instructions, which weigh on LeNet C1 with its 49 multiply-adds per output).
    if (x_offsets_fit_int) {
      stage_input<std::uint32_t>(t, T, in_tile, o, c0, cc, x_strides32);
    } else {
      stage_input<std::uint64_t>(t, T, in_tile, o, c0, cc, x_strides);
    }
    // Weights, stored [c][r][s][m] so a thread's BM channels are adjacent: the grid
    // (channel, tap, filter). (Filters always fit 32-bit offsets, checked at launch.)
    const int taps = R() * S(), w_total = cc * taps * g.tile_m;
    const int s_extent = S(), tile_m = g.tile_m;
    const scalar* const w_any = w.data();
    if (!with_filters) {
      // staged already
    } else if (w_taps_linear) {
      // Tap (r, s) at offset (r * S + s) * w.w: the usual OIHW / OHWI filters.
      using U = std::uint32_t;
      LinearGridWalker<U> it(
          t, T, tile_m, taps, U(o.m0) * U(w_strides32.n) + U(c0) * U(w_strides32.c),
          {U(w_strides32.c), U(w_strides32.w), U(w_strides32.n)}, {taps * tile_m, tile_m, 1});
      for (int i = t; i < w_total; i += T, it.advance()) {
        const bool inside = o.m0 + it.pos.c < pb.M;
        scratch_copy_async(w_tile.data() + it.dst, inside ? w_any + it.src : w_any, inside);
      }
    } else {
      copy_to_scratch(
          t, T, w_total, GridWalker(t, T, tile_m, taps), w_tile.data(),
          [&](const GridWalker& pos, bool& inside) {
            inside = o.m0 + pos.c < pb.M;
            return inside ? w.data() + w_strides32.offset(o.m0 + pos.c, c0 + pos.a,
                                                          pos.b / s_extent, pos.b % s_extent)
                          : w_any;
          },
          [&](const GridWalker& pos) { return (pos.a * taps + pos.b) * tile_m + pos.c; });
    }
    scratch_copies_wait();  // the caller's barrier then publishes the staged tile
  }

  /// The input part of stage_device: element offsets in the unsigned type Offset, x's
  /// logical strides `xs`. Threads stride through the halo tile in x's memory order
  /// (NCHW: (channel, row, column); NHWC: (row, column, channel)), so a warp reads
  /// consecutive addresses; cells outside the image are zero-filled.
  template <class Offset, class Strides>
  KOKKOS_FORCEINLINE_FUNCTION void stage_input(int t, int T, const ScratchView& in_tile,
                                               const TileOrigin& o, int c0, int cc,
                                               const Strides& xs) const {
    using U = Offset;
    const int in_plane = g.in_plane(), total = cc * g.in_h * g.in_w;
    // Image coordinates as unsigned: negative ones (padding) wrap above the extent, so
    // one comparison per coordinate tests both ends.
    const U H = U(pb.H), W = U(pb.W), h0 = U(o.h0), w0 = U(o.w0);
    const U base = U(o.n) * U(xs.n) + U(c0) * U(xs.c) + h0 * U(xs.h) + w0 * U(xs.w);
    const scalar* const x0 = x.data();  // also the (unread) source of zero-filled cells
    scalar* const dst = in_tile.data();
    if constexpr (L == Layout::NCHW) {
      LinearGridWalker<U> it(t, T, g.in_w, g.in_h, base, {U(xs.c), U(xs.h), U(xs.w)},
                             {in_plane, g.in_pitch, 1});
      for (int i = t; i < total; i += T, it.advance()) {
        const bool inside = h0 + U(it.pos.b) < H && w0 + U(it.pos.c) < W;
        scratch_copy_async(dst + it.dst, inside ? x0 + it.src : x0, inside);
      }
    } else {
      LinearGridWalker<U> it(t, T, cc, g.in_w, base, {U(xs.h), U(xs.w), U(xs.c)},
                             {g.in_pitch, 1, in_plane});
      for (int i = t; i < total; i += T, it.advance()) {
        const bool inside = h0 + U(it.pos.a) < H && w0 + U(it.pos.b) < W;
        scratch_copy_async(dst + it.dst, inside ? x0 + it.src : x0, inside);
      }
    }
  }

  /// dst[offset(pos)] = *source(pos, inside), or 0 where !inside (source then returns
  /// any valid address of the tensor), for the elements t, t + T, ... below `total` of a
  /// GridWalker grid, as asynchronous copies (scratch_copy_async; the caller waits for
  /// them). Element by element with plain loads, every staged element
  /// cost a whole memory latency (the compiler cannot move a load above the previous
  /// element's scratch store), and the team's warps then waited at the barrier: LeNet
  /// C3 on the H100 spent 27% of its stall samples on those loads and that barrier
  /// (Nsight Compute).
  template <class Source, class Offset>
  KOKKOS_FORCEINLINE_FUNCTION static void copy_to_scratch(int t, int T, int total, GridWalker pos,
                                                          scalar* dst, const Source& source,
                                                          const Offset& offset) {
    for (int i = t; i < total; i += T, pos.advance()) {
      bool inside = false;
      const scalar* src = source(pos, inside);
      scratch_copy_async(dst + offset(pos), src, inside);
    }
  }

  /// CPUs: one thread per team, so plain nested loops without index division; the
  /// in-image part of each staged row is a contiguous copy for NCHW.
  KOKKOS_INLINE_FUNCTION void stage_host(const ScratchView& in_tile, const ScratchView& w_tile,
                                         const TileOrigin& o, int c0, int cc) const {
    const int in_plane = g.in_plane();
    // Columns of the halo row that fall inside the image: [iw_lo, iw_hi).
    const int iw_lo = static_cast<int>(o.w0 < 0 ? -o.w0 : 0);
    const int iw_hi = static_cast<int>(o.w0 + g.in_w > pb.W ? pb.W - o.w0 : g.in_w);
    for (int ih = 0; ih < g.in_h; ++ih) {
      const std::int64_t h = o.h0 + ih;
      const bool row_inside = h >= 0 && h < pb.H;
      for (int c = 0; c < cc; ++c) {
        scalar* dst = in_tile.data() + c * in_plane + ih * g.in_pitch;
        if (!row_inside || iw_lo >= iw_hi) {
          for (int iw = 0; iw < g.in_w; ++iw)
            dst[iw] = scalar(0);
          continue;
        }
        for (int iw = 0; iw < iw_lo; ++iw)
          dst[iw] = scalar(0);
        if constexpr (L == Layout::NCHW) {
          KCNN_HOST_SIMD
          for (int iw = iw_lo; iw < iw_hi; ++iw)
            dst[iw] = x(o.n, c0 + c, h, o.w0 + iw);
        } else {
          for (int iw = iw_lo; iw < iw_hi; ++iw)
            dst[iw] = x(o.n, h, o.w0 + iw, c0 + c);
        }
        for (int iw = iw_hi; iw < g.in_w; ++iw)
          dst[iw] = scalar(0);
      }
    }
    const int r_extent = R(), s_extent = S();
    scalar* wdst = w_tile.data();
    for (int c = 0; c < cc; ++c)
      for (int r = 0; r < r_extent; ++r)
        for (int s = 0; s < s_extent; ++s)
          for (int m = 0; m < g.tile_m; ++m)
            *wdst++ = o.m0 + m < pb.M ? at<L>(w, o.m0 + m, c0 + c, r, s) : scalar(0);
  }

  /// Adds the staged chunk's contribution to logical thread t's micro-tile.
  KOKKOS_FORCEINLINE_FUNCTION void accumulate(scalar (&acc)[BM][BH][BW], const ScratchView& in_tile,
                                              const ScratchView& w_tile, int t, int cc) const {
    const int tq = t % g.threads_q;
    const int tp = (t / g.threads_q) % g.threads_p;
    const int tmi = t / (g.threads_q * g.threads_p);
    const int r_extent = R(), s_extent = S();
    const int in_plane = g.in_plane(), pitch = g.in_pitch;
    const int sh = stride_h(), sw = stride_w(), dh = dil_h(), dw = dil_w();
    const scalar* in_base = in_tile.data() + (tp * BH * sh) * pitch + tq * BW * sw;
    const scalar* w_base = w_tile.data() + tmi * BM;
    for (int c = 0; c < cc; ++c) {
      const scalar* in_c = in_base + c * in_plane;
      const scalar* w_c = w_base + c * r_extent * s_extent * g.tile_m;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < r_extent; ++r) {
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < s_extent; ++s) {
          const scalar* w_rs = w_c + (r * s_extent + s) * g.tile_m;
          KCNN_DEVICE_UNROLL
          for (int bh = 0; bh < BH; ++bh) {
            const scalar* row = in_c + (bh * sh + r * dh) * pitch + s * dw;
            KCNN_DEVICE_UNROLL
            for (int bm = 0; bm < BM; ++bm) {
              const scalar wv = w_rs[bm];
              // Innermost over output columns: contiguous in scratch for unit stride,
              // so it is one SIMD multiply-add on CPUs.
              KCNN_DEVICE_UNROLL
              KCNN_HOST_SIMD
              for (int bw = 0; bw < BW; ++bw)
                acc[bm][bh][bw] += row[bw * sw] * wv;
            }
          }
        }
      }
    }
  }

  /// Whether the GPU kernel reads staged inputs and weights with 16-byte vector loads
  /// (accumulate_vec): float, unit stride and dilation, compile-time filter, BW and BM
  /// multiples of 4. A warp's lanes then read consecutive 16-byte words of a scratch row
  /// (no bank conflicts, where 4-float steps between lanes' scalar loads give 2- to
  /// 4-way conflicts), and one load brings 4 values instead of 1.
  static constexpr bool vector_loads = !on_host && Unit && KR > 0 && KS > 0 &&
                                       std::is_same_v<scalar, float>&& BW % 4 == 0 && BM % 4 == 0;

  using Vec4 = AlignedVec4<scalar>;

  /// accumulate() for the vector_loads case: per filter row, each micro-tile row's
  /// BW + KS - 1 input columns come into registers with (BW + KS + 2) / 4 vector loads
  /// (the halo row's pitch is a multiple of 4, so the over-read stays inside the row),
  /// and each tap's BM weights with BM / 4.
  KOKKOS_FORCEINLINE_FUNCTION void accumulate_vec(scalar (&acc)[BM][BH][BW],
                                                  const ScratchView& in_tile,
                                                  const ScratchView& w_tile, int t, int cc) const {
    const int tq = t % g.threads_q;
    const int tp = (t / g.threads_q) % g.threads_p;
    const int tmi = t / (g.threads_q * g.threads_p);
    const int pitch = g.in_pitch, in_plane = g.in_plane(), w_chunk = KR * KS * g.tile_m;
    const scalar* in_base = in_tile.data() + tp * BH * pitch + tq * BW;
    const scalar* w_base = w_tile.data() + tmi * BM;
    for (int c = 0; c < cc; ++c) {
      const scalar* in_c = in_base + c * in_plane;
      const scalar* w_c = w_base + c * w_chunk;
      // Filter rows: unrolled only for 64-accumulator micro-tiles with small filters
      // (kUnrollFilterRows). Measured on the H100, LeNet at batch 10,000: C1 (32
      // accumulators) ran 1.71 -> 1.55 ms with the rows kept a loop. C3 (64 accumulators,
      // 7x7) ran 4.13 -> 4.39 ms as a loop before the launch bound, because the loop
      // needed 144 registers instead of 121 and halved the resident warps; unrolled
      // under the bound (124 registers) half of its stall cycles were instruction
      // fetches (Nsight Compute): 49 taps x 64 multiply-adds overflow the instruction
      // cache.
      if constexpr (kUnrollFilterRows) {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < KR; ++r)
          accumulate_vec_row(acc, in_c, w_c, r, pitch);
      } else {
        KCNN_DEVICE_NO_UNROLL
        for (int r = 0; r < KR; ++r)
          accumulate_vec_row(acc, in_c, w_c, r, pitch);
      }
    }
  }

  /// Unrolled filter rows: only where the whole unrolled body (KR x KS taps x the
  /// micro-tile's multiply-adds) stays near the instruction cache (3x3 filters of the
  /// 64-accumulator tiles: 576 multiply-adds) and the micro-tile needs the registers
  /// the loop would cost.
  static constexpr bool kUnrollFilterRows = BM * BH * BW >= 64 && KR * KS <= 9;

  /// One filter row r of accumulate_vec: the micro-tile rows' input windows into
  /// registers, then every tap of the row.
  KOKKOS_FORCEINLINE_FUNCTION void accumulate_vec_row(scalar (&acc)[BM][BH][BW], const scalar* in_c,
                                                      const scalar* w_c, int r, int pitch) const {
    constexpr int kWindow = BW + KS - 1;
    constexpr int kVecs = (kWindow + 3) / 4;
    scalar window[BH][kVecs * 4];
    KCNN_DEVICE_UNROLL
    for (int bh = 0; bh < BH; ++bh) {
      const Vec4* row = reinterpret_cast<const Vec4*>(in_c + (bh + r) * pitch);
      KCNN_DEVICE_UNROLL
      for (int v = 0; v < kVecs; ++v) {
        const Vec4 f = row[v];
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 4; ++e)
          window[bh][4 * v + e] = f.v[e];
      }
    }
    KCNN_DEVICE_UNROLL
    for (int s = 0; s < KS; ++s) {
      scalar wv[BM];
      const Vec4* w_rs = reinterpret_cast<const Vec4*>(w_c + (r * KS + s) * g.tile_m);
      KCNN_DEVICE_UNROLL
      for (int v = 0; v < BM / 4; ++v) {
        const Vec4 f = w_rs[v];
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 4; ++e)
          wv[4 * v + e] = f.v[e];
      }
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh)
        KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int bw = 0; bw < BW; ++bw)
        acc[bm][bh][bw] += window[bh][bw + s] * wv[bm];
    }
  }

  /// Output coordinates of logical thread t's micro-tile origin.
  KOKKOS_FORCEINLINE_FUNCTION void micro_origin(const TileOrigin& o, int t, int& m, int& p,
                                                int& q) const {
    q = o.q0 + (t % g.threads_q) * BW;
    p = o.p0 + ((t / g.threads_q) % g.threads_p) * BH;
    m = o.m0 + (t / (g.threads_q * g.threads_p)) * BM;
  }

  /// Stores the micro-tile (host): with `final`, bias and activation applied;
  /// otherwise the raw partial sums (multi-chunk path). Into y, masked at the problem's
  /// edges, or whole into a fused pooling's conv tile.
  KOKKOS_INLINE_FUNCTION void store(const scalar (&acc)[BM][BH][BW], const TileOrigin& o, int t,
                                    bool final, scalar* conv_tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    const Activation activation = final ? pb.activation : Activation::Identity;
    if (conv_tile) {
      scalar* dst = conv_tile + conv_tile_offset(o, m_first, p_first, q_first);
      for (int bm = 0; bm < BM; ++bm) {
        const int m = m_first + bm;
        const scalar b = final && pb.has_bias && m < pb.M ? scalar(bias(m)) : scalar(0);
        for (int bh = 0; bh < BH; ++bh)
          bias_activation_row<BW>(activation, acc[bm][bh], b,
                                  dst + bm * conv_tile_plane() + bh * g.tile_q);
      }
      return;
    }
    const int q_count = static_cast<int>(pb.Q - q_first < BW ? pb.Q - q_first : BW);
    for (int bm = 0; bm < BM; ++bm) {
      const int m = m_first + bm;
      if (m >= pb.M) break;
      const scalar b = final && pb.has_bias ? scalar(bias(m)) : scalar(0);
      for (int bh = 0; bh < BH; ++bh) {
        const int p = p_first + bh;
        if (p >= pb.P) break;
        // Epilogue on the whole row first (vectorizes), then the masked store.
        scalar out[BW];
        bias_activation_row<BW>(activation, acc[bm][bh], b, out);
        KCNN_HOST_SIMD
        for (int bw = 0; bw < q_count; ++bw)
          at<L>(y, o.n, m, p, q_first + bw) = out[bw];
      }
    }
  }

  // --- fused pooling ---------------------------------------------------------------

  /// The conv tile: [tile_m][tile_p][tile_q], conv output (m, p, q) of the team at
  /// (m - m0, p - p0, q - q0).
  KOKKOS_INLINE_FUNCTION int conv_tile_plane() const { return g.tile_p * g.tile_q; }
  KOKKOS_INLINE_FUNCTION int conv_tile_offset(const TileOrigin& o, int m, int p, int q) const {
    return (m - o.m0) * conv_tile_plane() + (p - o.p0) * g.tile_q + (q - o.q0);
  }

  /// GPU: bias + activation of the micro-tile into the conv tile, with compile-time
  /// indices into acc only (see store_device).
  KOKKOS_FORCEINLINE_FUNCTION void store_conv_tile_device(const scalar (&acc)[BM][BH][BW],
                                                          const TileOrigin& o, int t,
                                                          scalar* conv_tile) const {
    with_activation(pb.activation, [&](auto act) {
      store_conv_tile_device_as<decltype(act)::value>(acc, o, t, conv_tile);
    });
  }
  template <Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_conv_tile_device_as(const scalar (&acc)[BM][BH][BW],
                                                             const TileOrigin& o, int t,
                                                             scalar* conv_tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    scalar* dst = conv_tile + conv_tile_offset(o, m_first, p_first, q_first);
    const int plane = conv_tile_plane();
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm) {
      const int m = m_first + bm;
      const scalar b = m < pb.M && pb.has_bias ? scalar(bias(m)) : scalar(0);
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh)
        KCNN_DEVICE_UNROLL
      for (int bw = 0; bw < BW; ++bw)
        dst[bm * plane + bh * g.tile_q + bw] = apply_activation(Act, acc[bm][bh][bw] + b);
    }
  }

  /// GPU, TiledPooling::Registers2x2 / Registers4x4: bias + activation, then each
  /// window of the micro-tile reduced in registers (PoolReduce), the pooling's
  /// activation, and the stores (vector runs as in store_device). Windows taller than
  /// the micro-tile (4x4 with BH = 2) combine the halves of two vertically adjacent
  /// threads; the upper one stores.
  KOKKOS_FORCEINLINE_FUNCTION void store_pooled_device(const scalar (&acc)[BM][BH][BW],
                                                       const TileOrigin& o, int t) const {
    with_activation(pb.activation, [&](auto act) {
      constexpr Activation Act = decltype(act)::value;
      if (pb.pool.mode == PoolMode::Max) {
        store_pooled_device<PoolMode::Max, Act>(acc, o, t);
      } else {
        store_pooled_device<PoolMode::Average, Act>(acc, o, t);
      }
    });
  }
  template <PoolMode Mode, Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_pooled_device(const scalar (&acc)[BM][BH][BW],
                                                       const TileOrigin& o, int t) const {
    using Op = PoolReduce<Mode, scalar>;
    constexpr int Win = tiled_register_window(Pooling);
    constexpr bool kPair = BH < Win;  // the window's lower half: the thread below
    static_assert(BW % Win == 0 && (BH % Win == 0 || 2 * BH == Win),
                  "register pooling: whole windows in the micro-tile or in a thread pair");
    constexpr int PH = kPair ? 1 : BH / Win, PW = BW / Win, rows = kPair ? BH : Win;
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    // The conv tile starts on a window (no pooling padding), so these are exact.
    const int pp_first = p_first / Win, pq_first = q_first / Win;
    const int m_valid = static_cast<int>(pb.M - m_first);
    const int pq_valid = static_cast<int>(pb.Q_pooled - pq_first);
    scalar pooled[BM][PH][PW];
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm) {
      const scalar b = bm < m_valid && pb.has_bias ? scalar(bias(m_first + bm)) : scalar(0);
      KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw) {
        scalar v = Op::init();
        KCNN_DEVICE_UNROLL
        for (int dh = 0; dh < rows; ++dh)
          KCNN_DEVICE_UNROLL
        for (int dw = 0; dw < Win; ++dw)
          v = Op::add(v, apply_activation(Act, acc[bm][rows * ph + dh][Win * pw + dw] + b));
        if constexpr (kPair) v = Op::add(v, warp_shuffle_down(v, g.threads_q));
        pooled[bm][ph][pw] = Op::finish(v, Win * Win);
      }
    }
    // Pairs: the lower thread (odd row of threads) has nothing to store.
    if (kPair && (t / g.threads_q) % 2 != 0) return;
    with_activation(pb.pool.activation, [&](auto pool_act) {
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw)
        pooled[bm][ph][pw] = pool_output(decltype(pool_act)::value, pooled[bm][ph][pw]);
    });
    const auto run_stride = static_cast<std::int64_t>(y.stride(3));  // q (NCHW) or m (NHWC)
    if constexpr (L == Layout::NCHW) {
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph) {
        const int pp = pp_first + ph;
        if (bm < m_valid && pp < pb.P_pooled && pq_valid > 0)
          store_run<PW>(&at<L>(y, o.n, m_first + bm, pp, pq_first), run_stride, pooled[bm][ph],
                        pq_valid);
      }
    } else {
      KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw) {
        scalar column[BM];
        KCNN_DEVICE_UNROLL
        for (int bm = 0; bm < BM; ++bm)
          column[bm] = pooled[bm][ph][pw];
        const int pp = pp_first + ph, pq = pq_first + pw;
        if (pp < pb.P_pooled && pq < pb.Q_pooled && m_valid > 0)
          store_run<BM>(&at<L>(y, o.n, m_first, pp, pq), run_stride, column, m_valid);
      }
    }
  }

  /// The team's pooled outputs from its conv tile, into y. Threads take consecutive
  /// pooled columns (NCHW) or channels (NHWC): y's contiguous dimension.
  KOKKOS_INLINE_FUNCTION void pool_conv_tile(const member_type& team, const TileOrigin& o,
                                             scalar* conv_tile) const {
    if constexpr (on_host) {
      // One thread per team: nested loops without index divisions, vectorized across a
      // row of windows (see pool_conv_tile_host).
      if (pb.pool.mode == PoolMode::Max) {
        pool_conv_tile_host<PoolMode::Max>(o, conv_tile);
      } else {
        pool_conv_tile_host<PoolMode::Average>(o, conv_tile);
      }
      return;
    }
    const int count = g.tile_m * g.pool_p * g.pool_q;
    for (int e = team.team_rank(); e < count; e += team.team_size()) {
      int ml, pl, ql;
      if constexpr (L == Layout::NCHW) {
        ql = e % g.pool_q;
        pl = (e / g.pool_q) % g.pool_p;
        ml = e / (g.pool_q * g.pool_p);
      } else {
        ml = e % g.tile_m;
        ql = (e / g.tile_m) % g.pool_q;
        pl = e / (g.tile_m * g.pool_q);
      }
      const int m = o.m0 + ml, pp = o.pp0 + pl, pq = o.pq0 + ql;
      if (m >= pb.M || pp >= pb.P_pooled || pq >= pb.Q_pooled) continue;
      const PoolWindow<int> win =
          pool_window(pb.pool, static_cast<int>(pb.P), static_cast<int>(pb.Q), pp, pq);
      const scalar* plane = conv_tile + ml * conv_tile_plane();
      const scalar v = pool_reduce_dynamic<scalar>(pb.pool.mode, win, [&](int h, int w) {
        return plane[(h - o.p0) * g.tile_q + (w - o.q0)];
      });
      at<L>(y, o.n, m, pp, pq) = pool_output(pb.pool.activation, v);
    }
  }

  /// pool_conv_tile for CPUs (one thread per team), with the mode at compile time.
  template <PoolMode Mode>
  KOKKOS_INLINE_FUNCTION void pool_conv_tile_host(const TileOrigin& o, scalar* conv_tile) const {
    using Op = PoolReduce<Mode, scalar>;
    const Pool2dParams& pool = pb.pool;
    const int P = static_cast<int>(pb.P), Q = static_cast<int>(pb.Q);
    const auto at_most = [](std::int64_t a, std::int64_t b) {
      return static_cast<int>(a < b ? a : b);
    };
    const int m_count = at_most(g.tile_m, pb.M - o.m0);
    const int p_count = at_most(g.pool_p, pb.P_pooled - o.pp0);
    const int q_count = at_most(g.pool_q, pb.Q_pooled - o.pq0);
    if (pool.pad_h == 0 && pool.pad_w == 0) {
      // Windows without padding never leave the conv output (floor mode), overlapping or
      // not: no clipping, the full divisor, fixed offsets. Per row of pooled outputs, the
      // windows' rows are reduced first along the contiguous conv row, then each window's
      // columns, a window cell at a time across the row: every loop vectorizes, and Max
      // becomes compare-and-blend. (Window by window, the maximum was a scalar compare and
      // branch per cell, mispredicted on real data: LeNet C1 + ReLU + 2x2 max, batch 1,000,
      // 2 cores, 101 -> 52 ms, the convolution alone 46-54 ms.)
      const int wh = pool.window_h, ww = pool.window_w, sh = pool.stride_h, sw = pool.stride_w;
      const auto y_step = static_cast<std::int64_t>(L == Layout::NCHW ? y.stride(3) : y.stride(2));
      const int cols = (q_count - 1) * sw + ww;  // conv columns the row's windows read
      scalar* const rows_reduced = conv_tile + g.conv_tile_elems();
      scalar* const pooled = rows_reduced + g.tile_q;
      for (int ml = 0; ml < m_count; ++ml) {
        const scalar* plane = conv_tile + ml * conv_tile_plane();
        for (int pl = 0; pl < p_count; ++pl) {
          const int pp = o.pp0 + pl;
          const scalar* first = plane + (pp * sh - o.p0) * g.tile_q + (o.pq0 * sw - o.q0);
          KCNN_HOST_SIMD
          for (int c = 0; c < cols; ++c)
            rows_reduced[c] = Op::init();
          for (int dh = 0; dh < wh; ++dh) {
            const scalar* row = first + dh * g.tile_q;
            KCNN_HOST_SIMD
            for (int c = 0; c < cols; ++c)
              rows_reduced[c] = Op::add(rows_reduced[c], row[c]);
          }
          KCNN_HOST_SIMD
          for (int ql = 0; ql < q_count; ++ql)
            pooled[ql] = Op::init();
          for (int dw = 0; dw < ww; ++dw) {
            KCNN_HOST_SIMD
            for (int ql = 0; ql < q_count; ++ql)
              pooled[ql] = Op::add(pooled[ql], rows_reduced[ql * sw + dw]);
          }
          KCNN_HOST_SIMD
          for (int ql = 0; ql < q_count; ++ql)
            pooled[ql] = pool_output(pool.activation, Op::finish(pooled[ql], wh * ww));
          scalar* out = &at<L>(y, o.n, o.m0 + ml, pp, o.pq0);
          for (int ql = 0; ql < q_count; ++ql)
            out[ql * y_step] = pooled[ql];
        }
      }
      return;
    }
    // Any other window: clipped by pool_window, reduced by pool_reduce (the definitions
    // pool2d_forward uses).
    for (int ml = 0; ml < m_count; ++ml) {
      const scalar* plane = conv_tile + ml * conv_tile_plane();
      for (int pl = 0; pl < p_count; ++pl)
        for (int ql = 0; ql < q_count; ++ql) {
          const int pp = o.pp0 + pl, pq = o.pq0 + ql;
          const PoolWindow<int> win = pool_window(pool, P, Q, pp, pq);
          const scalar v = pool_reduce<Mode, scalar>(
              win, [&](int h, int w) { return plane[(h - o.p0) * g.tile_q + (w - o.q0)]; });
          at<L>(y, o.n, o.m0 + ml, pp, pq) = pool_output(pool.activation, v);
        }
    }
  }

  struct alignas(8) Vec2 {
    scalar v[2];
  };

  /// Stores `Count` outputs that are `stride` elements apart in y, starting at dst, up to
  /// `valid` of them: with 16- or 8-byte stores when all are in range, they are adjacent
  /// (stride 1, LayoutRight) and dst is aligned (float only), else one by one. A warp's
  /// lanes then write whole 32-byte sectors instead of every 4th float of them.
  template <int Count>
  KOKKOS_FORCEINLINE_FUNCTION static void store_run(scalar* dst, std::int64_t stride,
                                                    const scalar (&out)[Count], int valid) {
    if constexpr (std::is_same_v<scalar, float> && Count % 2 == 0) {
      if (stride == 1 && valid >= Count) {
        const auto addr = reinterpret_cast<std::uintptr_t>(dst);
        if constexpr (Count % 4 == 0) {
          if (addr % 16 == 0) {
            KCNN_DEVICE_UNROLL
            for (int v = 0; v < Count / 4; ++v)
              reinterpret_cast<Vec4*>(dst)[v] =
                  Vec4{{out[4 * v], out[4 * v + 1], out[4 * v + 2], out[4 * v + 3]}};
            return;
          }
        }
        if (addr % 8 == 0) {
          KCNN_DEVICE_UNROLL
          for (int v = 0; v < Count / 2; ++v)
            reinterpret_cast<Vec2*>(dst)[v] = Vec2{{out[2 * v], out[2 * v + 1]}};
          return;
        }
      }
    }
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < Count; ++i)
      if (i < valid) dst[i * stride] = out[i];
  }

  /// GPU store: every loop has a compile-time trip count and indexes the micro-tile
  /// with constants only, so the accumulators stay in registers (a loop with an early
  /// exit or a pointer to a row of them sends the whole array to local memory). NCHW
  /// stores runs of BW columns, NHWC runs of BM channels (store_run): y's last index.
  KOKKOS_FORCEINLINE_FUNCTION void store_device(const scalar (&acc)[BM][BH][BW],
                                                const TileOrigin& o, int t) const {
    with_activation(pb.activation,
                    [&](auto act) { store_device_as<decltype(act)::value>(acc, o, t); });
  }
  template <Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_device_as(const scalar (&acc)[BM][BH][BW],
                                                   const TileOrigin& o, int t) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    const auto run_stride = static_cast<std::int64_t>(y.stride(3));  // q (NCHW) or m (NHWC)
    if constexpr (L == Layout::NCHW) {
      const int q_valid = static_cast<int>(pb.Q - q_first);
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm) {
        const int m = m_first + bm;
        const bool m_ok = m < pb.M;
        const scalar b = m_ok && pb.has_bias ? scalar(bias(m)) : scalar(0);
        KCNN_DEVICE_UNROLL
        for (int bh = 0; bh < BH; ++bh) {
          const int p = p_first + bh;
          scalar out[BW];
          KCNN_DEVICE_UNROLL
          for (int bw = 0; bw < BW; ++bw)
            out[bw] = apply_activation(Act, acc[bm][bh][bw] + b);
          if (m_ok && p < pb.P && q_valid > 0)
            store_run<BW>(&at<L>(y, o.n, m, p, q_first), run_stride, out, q_valid);
        }
      }
    } else {
      const int m_valid = static_cast<int>(pb.M - m_first);
      scalar b[BM];
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        b[bm] = bm < m_valid && pb.has_bias ? scalar(bias(m_first + bm)) : scalar(0);
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh) {
        const int p = p_first + bh;
        KCNN_DEVICE_UNROLL
        for (int bw = 0; bw < BW; ++bw) {
          const int q = q_first + bw;
          scalar out[BM];
          KCNN_DEVICE_UNROLL
          for (int bm = 0; bm < BM; ++bm)
            out[bm] = apply_activation(Act, acc[bm][bh][bw] + b[bm]);
          if (p < pb.P && q < pb.Q && m_valid > 0)
            store_run<BM>(&at<L>(y, o.n, m_first, p, q), run_stride, out, m_valid);
        }
      }
    }
  }

  /// Reloads partial sums stored by a previous chunk (host multi-chunk path): from y,
  /// or from a fused pooling's conv tile.
  KOKKOS_INLINE_FUNCTION void load_partial(scalar (&acc)[BM][BH][BW], const TileOrigin& o, int t,
                                           const scalar* conv_tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    for (int bm = 0; bm < BM; ++bm)
      for (int bh = 0; bh < BH; ++bh)
        for (int bw = 0; bw < BW; ++bw) {
          const int m = m_first + bm, p = p_first + bh, q = q_first + bw;
          if (conv_tile) {
            acc[bm][bh][bw] = conv_tile[conv_tile_offset(o, m, p, q)];
          } else {
            acc[bm][bh][bw] =
                (m < pb.M && p < pb.P && q < pb.Q) ? scalar(at<L>(y, o.n, m, p, q)) : scalar(0);
          }
        }
  }
};

/// Launches one instantiation of the kernel; Pooling is None exactly when !pb.has_pool.
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
void conv2d_tiled_launch(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                         const YView& y, const Conv2dProblem& pb, const TiledTuning& tuning,
                         LaunchMode mode) {
  using Kernel =
      Conv2dTiledKernel<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>;
  using Scalar = typename Kernel::scalar;
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
  TiledGeometry g = make_tiled_geometry<Micro, Scalar>(pb, on_host, budget, Kernel::vector_loads,
                                                       Kernel::vector_loads);

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
      sizeof(Scalar) * Kernel::block_elems(g, static_cast<int>(pb.R), static_cast<int>(pb.S)) + 16;
  throw_if(scratch > static_cast<std::size_t>(Policy::scratch_size_max(0)), "kcnn::conv2d_forward",
           "ConvAlgo::Tiled: a ", pb.R, "x", pb.S, " filter with dilation ", pb.dilation_h, "x",
           pb.dilation_w, " and stride ", pb.stride_h, "x", pb.stride_w,
           Pooled ? " and the fused pooling's window" : "",
           " needs a tile larger than team scratch memory (", scratch, " > ",
           Policy::scratch_size_max(0), " bytes); use another algorithm");
  // Hosts: a fused pooling's conv tile in level-1 scratch (plus its 64-byte alignment).
  // After it, two rows for its pooling phase (pool_conv_tile_host).
  const std::size_t host_conv_tile =
      on_host && Pooled ? sizeof(Scalar) * std::size_t(g.conv_tile_elems() + 2 * g.tile_q) + 64 : 0;

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
/// layers we target); anything else runs with runtime extents, still tiled. CPUs and
/// double: runtime extents.
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
  if constexpr (std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace> ||
                !std::is_same_v<view_scalar_t<YView>, float>) {
    // CPUs vectorize across output columns; unrolled taps buy little there and cost
    // minutes of compile time per instantiation, so the host keeps runtime extents. So
    // does double on GPUs: supported, but not what the unrolled kernels are tuned for.
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

/// Runs ConvAlgo::Tiled; `pb` has been validated against the Views.
template <class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_tiled(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                  const YView& y, const Conv2dProblem& pb,
                  const TiledTuning& tuning = TiledTuning{}, LaunchMode mode = LaunchMode::Run) {
  using Tiles = TiledMicroTiles<ExecSpace>;
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
}

}  // namespace kcnn::Impl
