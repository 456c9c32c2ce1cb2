// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/implicit_gemm.hpp
/// \brief ConvAlgo::ImplicitGemm: the convolution as the GEMM
///        out(m, j) = sum_k W(m, k) * X(k, j), m over output channels, j over output
///        pixels (n, p, q), k over taps (c, r, s), where the unrolled matrix X is never
///        stored: each tile of it is gathered from the input while it is loaded.
///
/// Both layouts are the same GEMM; they differ only in how k decomposes (the weights'
/// memory order, see UnrollMap) and where out(m, j) is stored. Every gather goes through
/// UnrollMap::gather_tap / gather_pixel, the mapping im2col and col2im use.
///
/// GPU kernel (one team per BM x BN output tile, one CUDA thread per TM x TN
/// micro-tile): K is walked in BK steps. Per step the team gathers the BK x BN X tile
/// and the BM x BK W tile into one of two scratch buffers while it multiplies out of the
/// other (the next step's global loads are issued into registers before the current
/// step's math and stored to scratch after it: one barrier per step). A step's taps
/// (the (c, r, s) decomposition of its k, as offsets) are computed two steps ahead by
/// BK threads into a scratch table, so no thread divides per element. Micro-tile
/// operands come out of scratch with 16-byte vector loads.
///
/// Host kernel (a team is one OpenMP thread): the team owns BN output pixels and all M
/// channels. It unrolls its pixels' whole K x BN panel once into scratch (NCHW with
/// the vectorized row copies of the host im2col kernel) and multiplies it with the
/// weights in TM x TN register blocks whose TN columns are SIMD lanes.
///
/// Fused pooling (non-overlapping windows, see implicit_gemm_fuses_pool): the GEMM's
/// columns become the cells of the pooling windows, window by window
/// (ImplicitGemmPoolColumns), and a team takes whole windows only; its activated conv
/// outputs go to scratch and the team reduces them into y (pool_tile).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../epilogue/pool_window.hpp"
#include "../../im2col/im2col_kernels.hpp"

namespace kcnn::Impl {

/// A GPU block tile: BM output channels x BN output pixels per team, K in steps of BK;
/// each thread accumulates TM channels x TN pixels in registers.
template <int BM_, int BN_, int BK_, int TM_, int TN_, int MinTeamsPerSM_>
struct ImplicitGemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int threads = (BM / TM) * (BN / TN);
  /// Launch bound: the compiler keeps registers low enough for this many teams per
  /// multiprocessor (65536 / (threads * MinTeamsPerSM) registers per thread).
  static constexpr int min_teams_per_sm = MinTeamsPerSM_;
  static_assert(BM % TM == 0 && BN % TN == 0, "the micro-tile must divide the block tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "micro-tile operands are read as 4-vectors");

  // The X tile's gather: threads_j threads along the pixels (consecutive threads take
  // consecutive pixels: coalesced NCHW reads, conflict-free scratch stores), the rest
  // along k. Each thread keeps its cols_per_thread pixels' offsets in registers.
  static constexpr int threads_j = threads < BN ? threads : BN;
  static constexpr int threads_k = threads / threads_j;
  static constexpr int cols_per_thread = BN / threads_j;
  static constexpr int rows_per_thread = BK / threads_k;
  static_assert(BN % threads_j == 0 && BK % threads_k == 0, "X tile split");
  // The W tile: k fastest, so that consecutive threads read consecutive weights.
  static constexpr int w_per_thread = BM * BK / threads;
  static_assert(BM * BK % threads == 0, "W tile split");
  static_assert(threads >= BK, "BK threads fill the tap table");

  // Scratch row pitches: multiples of 4 keep every row 16-byte aligned for the vector
  // loads; the extra 4 spreads the W tile's k-fastest stores over distinct banks.
  static constexpr int x_pitch = BN + 4;
  static constexpr int w_pitch = BM + 4;
};

/// GPU tiles by problem class, float. 128 threads (256 for HugeM) so that several
/// teams share an SM. Output channels are the scarce dimension of the layers we target:
///  - SmallM (M <= 16: LeNet's C1 and C3): BM = 16 and a wide BN of 256 pixels; TM = 8,
///    TN = 4, so a warp's 32 threads share one W vector (broadcast) and read 32
///    distinct X vectors: 3 scratch vector loads per 32 FMAs.
///  - MidM (M <= 32): BM = 32, BN = 128, the same micro-tile.
///  - LargeM (M <= 64): BM = 64, BN = 128, TM = TN = 8: 64 accumulators per thread,
///    4 vector loads per 64 FMAs, each gathered X element reused 64 times.
///  - HugeM (M > 64): BM = 128 with 256 threads, the classic SGEMM block: each gathered
///    X element feeds 128 FMAs, halving the gathers per FMA of LargeM.
///  - Narrow: BM = BN = 64 with 64 threads, for problems with few output tiles (late
///    ResNet layers: 512 channels of 7x7 pixels) where the wider tiles leave SMs idle.
/// BK = 8 keeps the two-buffer scratch at 8-17 KiB per team.
///
/// Registers: without a bound nvcc gave SmallM 102, LargeM 166 and HugeM 141 registers
/// per thread (H100, 2026-11-22), i.e. 16, 12 and 8 resident warps per SM, and the
/// kernels stalled with no eligible warp a third of the time. The bounds below ask for
/// 128 registers or fewer (LargeM, HugeM, Narrow) and 102 (SmallM, MidM).
struct ImplicitGemmDeviceTiles {
  using SmallM = ImplicitGemmTile<16, 256, 8, 8, 4, 5>;
  using MidM = ImplicitGemmTile<32, 128, 8, 8, 4, 5>;
  using LargeM = ImplicitGemmTile<64, 128, 8, 8, 8, 4>;
  using HugeM = ImplicitGemmTile<128, 128, 8, 8, 8, 2>;
  using Narrow = ImplicitGemmTile<64, 64, 8, 8, 8, 8>;
  /// double: supported, not tuned; a 4 x 4 micro-tile keeps 32 registers of accumulators.
  using Double = ImplicitGemmTile<32, 64, 8, 4, 4, 1>;
};

/// The number of teams (block tiles) tile `Tile` cuts an M x J output into.
template <class Tile>
std::int64_t implicit_gemm_teams(std::int64_t M, std::int64_t J) {
  return ((M + Tile::BM - 1) / Tile::BM) * ((J + Tile::BN - 1) / Tile::BN);
}

/// out = p[0 .. N) with N / 4 vector loads; p is 16-byte aligned (scratch rows).
template <int N, class T>
KOKKOS_FORCEINLINE_FUNCTION void implicit_gemm_load_run(const T* p, T (&out)[N]) {
  static_assert(N % 4 == 0, "runs of whole 4-vectors");
  KCNN_DEVICE_UNROLL
  for (int v = 0; v < N / 4; ++v) {
    const AlignedVec4<T> f = reinterpret_cast<const AlignedVec4<T>*>(p)[v];
    KCNN_DEVICE_UNROLL
    for (int e = 0; e < 4; ++e)
      out[4 * v + e] = f.v[e];
  }
}

/// Stores `count` values to p[0], p[stride], ...; as 4-vectors where the run is
/// contiguous, complete and 16-byte aligned.
template <int N, class T>
KOKKOS_FORCEINLINE_FUNCTION void implicit_gemm_store_run(T* p, std::int64_t stride, const T* v,
                                                         int count) {
  if (count == N && stride == 1 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < N / 4; ++i)
      reinterpret_cast<AlignedVec4<T>*>(p)[i] =
          AlignedVec4<T>{{v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]}};
    return;
  }
  KCNN_DEVICE_UNROLL
  for (int i = 0; i < N; ++i)
    if (i < count) p[i * stride] = v[i];
}

/// A fused pooling in the GEMM view: the columns are the cells of the pooling windows,
/// window-major (column j: window u = j / cells, cell j % cells, row-major within the
/// window), so a team whose columns hold whole windows pools them without another pass.
/// Overlapping windows (stride < window) recompute the conv outputs they share; cells
/// outside the conv output (the pooling's padding, floor-mode edges) gather nothing and
/// are skipped by the reduction.
struct ImplicitGemmPoolColumns {
  bool enabled = false;
  Pool2dParams pool;
  int cells = 1;                            ///< window_h * window_w
  std::int64_t P_pooled = 0, Q_pooled = 0;  ///< pooled extents
  std::int64_t windows = 0;                 ///< N * P_pooled * Q_pooled

  /// Columns a team of `bn` columns takes: whole windows only (0 if one does not fit).
  KOKKOS_INLINE_FUNCTION int columns_per_team(int bn) const {
    return enabled ? bn / cells * cells : bn;
  }
  /// Pooled output u as (n, p, q), in I (int when every column index fits: 64-bit
  /// divisions are emulated on GPUs, dozens of instructions each).
  template <class I>
  KOKKOS_INLINE_FUNCTION Pixel<I> pooled(I u) const {
    const I plane = static_cast<I>(P_pooled * Q_pooled), Qp = static_cast<I>(Q_pooled);
    const I n = u / plane, rest = u - n * plane;
    const I p = rest / Qp;
    return {n, p, rest - p * Qp};
  }
  /// Conv output pixel of column j (window j / cells, cell j % cells); false if the cell
  /// lies outside the P x Q conv output (padding, floor-mode edges).
  template <class I>
  KOKKOS_INLINE_FUNCTION bool cell_pixel(I j, std::int64_t P, std::int64_t Q,
                                         Pixel<std::int64_t>& px) const {
    const I u = j / static_cast<I>(cells);
    const int cell = static_cast<int>(j - u * static_cast<I>(cells));
    const Pixel<I> pp = pooled(u);
    const int row = cell / pool.window_w;
    px.n = pp.n;
    px.p = window_row(pp.p) + row;
    px.q = window_col(pp.q) + (cell - row * pool.window_w);
    return px.p >= 0 && px.p < P && px.q >= 0 && px.q < Q;
  }
  /// Conv output row / column where pooled output p / q's window starts (may be < 0).
  KOKKOS_INLINE_FUNCTION std::int64_t window_row(std::int64_t p) const {
    return p * pool.stride_h - pool.pad_h;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t window_col(std::int64_t q) const {
    return q * pool.stride_w - pool.pad_w;
  }
};

KOKKOS_INLINE_FUNCTION Pixel<std::int64_t> widen(const Pixel<int>& p) {
  return {p.n, p.p, p.q};
}

/// Raw operands of the GEMM view, shared by the GPU and host kernels.
template <Layout L, class T>
struct ImplicitGemmOperands {
  UnrollMap<L> map;
  const T* x;
  LogicalStrides xs;
  const T* w;
  LogicalStrides ws;
  const T* bias;  ///< nullptr: no bias
  T* y;
  LogicalStrides ys;
  int M, K;        ///< output channels, taps (C*R*S; validated to fit int)
  std::int64_t J;  ///< columns: output pixels N*P*Q, or window cells with a fused pooling
  Activation activation;
  bool j_fits_int;  ///< pixel indices fit int: decompose them with 32-bit divisions
  /// No padding: every window of a real pixel lies inside the image, so a gather needs
  /// no bounds check (the check was a third of the GPU kernel's gather instructions).
  /// Columns without a real pixel (past J, or pooling cells outside the conv output)
  /// gather at offset 0 plus the tap's offset, inside image 0, and their values are
  /// never stored.
  bool unpadded;
  bool x_fits_int;  ///< every element offset of x fits int (and so every gather offset)
  ImplicitGemmPoolColumns pooling;

  /// Column j's part of every gather (outside_pixel() for columns past J and for
  /// window cells outside the conv output).
  template <bool Pooled = true>
  KOKKOS_INLINE_FUNCTION GatherPixel gather_pixel(std::int64_t j) const {
    if (j >= J) return outside_pixel();
    if (Pooled && pooling.enabled) {
      Pixel<std::int64_t> px;
      const bool real = j_fits_int ? pooling.cell_pixel(static_cast<int>(j), map.P, map.Q, px)
                                   : pooling.cell_pixel(j, map.P, map.Q, px);
      return real ? map.gather_pixel_at(px, xs) : outside_pixel();
    }
    return j_fits_int ? map.gather_pixel(static_cast<int>(j), xs) : map.gather_pixel(j, xs);
  }
  /// Column `jc` of the team whose columns start at block * columns_per_team(bn).
  /// Pooled: whether pooling.enabled may hold (false compiles the plain pixel mapping
  /// only, for kernels without a fused pooling).
  template <bool Pooled>
  KOKKOS_INLINE_FUNCTION GatherPixel gather_column(std::int64_t block, int jc, int bn) const {
    if constexpr (!Pooled) {
      return gather_pixel<false>(block * bn + jc);
    } else {
      const int per_team = pooling.columns_per_team(bn);
      return jc < per_team ? gather_pixel(block * per_team + jc) : outside_pixel();
    }
  }

  /// The fused pooling's last phase for one team: `tile` holds the team's conv outputs
  /// (bias and activation applied), row i for channel m0 + i, column jc for the team's
  /// column jc (pitch `pitch`); thread `rank` of `threads` reduces its share of the
  /// team's windows into y. Threads take consecutive windows (NCHW) or channels (NHWC):
  /// y's contiguous dimension.
  KOKKOS_INLINE_FUNCTION void pool_tile(const T* tile, int pitch, int rows, int m0,
                                        std::int64_t block, int bn, int rank, int threads) const {
    const int windows_per_team = bn / pooling.cells;
    const int count = rows * windows_per_team;
    for (int e = rank; e < count; e += threads) {
      const int i = L == Layout::NCHW ? e / windows_per_team : e % rows;
      const int wl = L == Layout::NCHW ? e % windows_per_team : e / rows;
      const int m = m0 + i;
      const std::int64_t u = block * windows_per_team + wl;
      if (m >= M || u >= pooling.windows) continue;
      const Pixel<std::int64_t> pp =
          j_fits_int ? widen(pooling.pooled(static_cast<int>(u))) : pooling.pooled(u);
      const PoolWindow<std::int64_t> win = pool_window(pooling.pool, map.P, map.Q, pp.p, pp.q);
      const std::int64_t h0 = pooling.window_row(pp.p), w0 = pooling.window_col(pp.q);
      const T* cells = tile + std::int64_t(i) * pitch + std::int64_t(wl) * pooling.cells;
      const T v =
          pool_reduce_dynamic<T>(pooling.pool.mode, win, [&](std::int64_t h, std::int64_t w) {
            return cells[(h - h0) * pooling.pool.window_w + (w - w0)];
          });
      y[pp.n * ys.n + std::int64_t(m) * ys.c + pp.p * ys.h + pp.q * ys.w] =
          pool_output(pooling.pool.activation, v);
    }
  }
  KOKKOS_INLINE_FUNCTION GatherTap gather_tap(int k) const {
    return k < K ? map.gather_tap(k, xs, ws) : outside_tap();
  }
  /// (n, p, q) of output pixel j.
  KOKKOS_INLINE_FUNCTION Pixel<std::int64_t> pixel(std::int64_t j) const {
    if (j_fits_int) return widen(map.decompose_pixel(static_cast<int>(j)));
    return map.decompose_pixel(j);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t y_offset(const Pixel<std::int64_t>& px) const {
    return px.n * ys.n + px.p * ys.h + px.q * ys.w;
  }
};

// ---------------------------------------------------------------------------------
// GPU kernel
// ---------------------------------------------------------------------------------

/// Pooled: the kernel applies the fused pooling (op.pooling.enabled); a template
/// parameter because the pooling epilogue as a run-time branch cost the wider tiles
/// registers they did not have (64-120 bytes of spills; ResNet 3x3 layers 14-38% slower,
/// H100).
///
/// SplitK: K is cut into slices, one per copy of the tile grid, for problems with too
/// few output tiles to fill the GPU (ResNet's 512-channel 7x7 layer: 52 tiles of
/// 128 x 128 for 132 multiprocessors, with K = 4,608). Each team stores its raw sums
/// to partial[slice][m][j]; ImplicitGemmSplitKReduce then adds the slices, the bias
/// and the activation and writes y. (A template parameter too: the other kernels keep
/// their epilogue and registers.)
template <Layout L, class Tile, class ExecSpace, class T, bool Pooled, bool SplitK = false>
struct ImplicitGemmDeviceKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
  static_assert(!(SplitK && Pooled), "a split K has no fused pooling");
  ImplicitGemmOperands<L, T> op;
  int m_blocks;  ///< ceil(M / BM): the league walks the M blocks fastest, so the teams
                 ///< gathering the same pixels run together and share them in L2
  // SplitK only: K steps per slice, teams per slice (the tile grid), the partial sums.
  int steps_per_slice = 0;
  int teams_per_slice = 0;
  T* partial = nullptr;

  /// Scratch bytes per team: the double-buffered operand tiles and the tap table; with
  /// a fused pooling at least the BM x BN conv tile, which reuses them at the end.
  /// Whether the kernel has the unchecked gather form besides the checked one: for the
  /// few-channel tiles, where a gathered element feeds only BM FMAs and the gathers'
  /// instructions weigh most (H100, LeNet C3: 3.42 -> 3.22 ms). The wider tiles run at
  /// their 128-register bound already; the second form made them spill (56 -> 64-120
  /// bytes of stack) and 12-21% slower on the ResNet layers.
  static constexpr bool kUncheckedGathers = BM <= 32;

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes(bool fused_pool) {
    const std::size_t operands =
        sizeof(T) * 2 * BK * (Tile::x_pitch + Tile::w_pitch) + sizeof(GatherTap) * 2 * BK;
    const std::size_t conv_tile = fused_pool ? sizeof(T) * BM * Tile::x_pitch : 0;
    return (operands > conv_tile ? operands : conv_tile) +
           16;  // get_shmem_aligned may skip up to 15 bytes
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank();
    int rank = team.league_rank(), slice = 0;
    if constexpr (SplitK) {
      slice = rank / teams_per_slice;
      rank -= slice * teams_per_slice;
    }
    const int mb = rank % m_blocks;
    const int m0 = mb * BM;
    const std::int64_t block = rank / m_blocks;  // the team's column block
    const std::int64_t j0 = block * BN;

    // Scratch: X tiles [2][BK][x_pitch], W tiles [2][BK][w_pitch] (k-major: a thread's
    // TN pixels / TM channels of one k are one contiguous vector run), tap table
    // [2][BK]. Each part's size is a multiple of 64 bytes, so all stay aligned.
    T* const x_tiles =
        static_cast<T*>(team.team_scratch(0).get_shmem_aligned(scratch_bytes(Pooled) - 16, 16));
    T* const w_tiles = x_tiles + 2 * BK * Tile::x_pitch;
    GatherTap* const taps = reinterpret_cast<GatherTap*>(w_tiles + 2 * BK * Tile::w_pitch);

    // This thread's share of the gathers.
    const int jl = t % Tile::threads_j, kl = t / Tile::threads_j;
    GatherPixel pix[Tile::cols_per_thread];
    KCNN_DEVICE_UNROLL
    for (int c = 0; c < Tile::cols_per_thread; ++c)
      pix[c] = op.template gather_column<Pooled>(block, jl + c * Tile::threads_j, BN);

    T x_next[Tile::rows_per_thread][Tile::cols_per_thread];
    T w_next[Tile::w_per_thread];
    // The X gathers of one step, bounds-checked, or (kUncheckedGathers tiles, unpadded
    // problems whose x offsets fit int) unchecked with 32-bit offsets: only the tap can
    // be outside (k >= K; see ImplicitGemmOperands::unpadded), and a gather is one add
    // and one address instruction instead of four plus the bounds tests.
    auto gather_x = [&](const GatherTap* step_taps, auto checked, auto offset) {
      using Offset = decltype(offset);
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Tile::rows_per_thread; ++r) {
        const GatherTap tap = step_taps[kl + r * Tile::threads_k];
        const bool real_tap = tap.dh != kGatherOutside;
        KCNN_DEVICE_UNROLL
        for (int c = 0; c < Tile::cols_per_thread; ++c) {
          const bool inside =
              decltype(checked)::value ? op.map.gathers_inside(pix[c], tap) : real_tap;
          x_next[r][c] =
              inside
                  ? op.x[static_cast<Offset>(pix[c].x_offset) + static_cast<Offset>(tap.x_offset)]
                  : T(0);
        }
      }
    };
    auto load = [&](int slot) {  // global -> registers, step whose taps are in `slot`
      const GatherTap* step_taps = taps + slot * BK;
      if (kUncheckedGathers && op.unpadded && op.x_fits_int) {
        gather_x(step_taps, std::false_type{}, int{});
      } else {
        gather_x(step_taps, std::true_type{}, std::int64_t{});
      }
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < Tile::w_per_thread; ++i) {
        const int e = t + i * Tile::threads, kk = e % BK, m = m0 + e / BK;
        const GatherTap tap = step_taps[kk];
        w_next[i] =
            (m < op.M && tap.dh != kGatherOutside) ? op.w[m * op.ws.n + tap.w_offset] : T(0);
      }
    };
    auto store = [&](int buf) {  // registers -> scratch buffer `buf`
      T* xt = x_tiles + buf * BK * Tile::x_pitch;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Tile::rows_per_thread; ++r)
        KCNN_DEVICE_UNROLL
      for (int c = 0; c < Tile::cols_per_thread; ++c)
        xt[(kl + r * Tile::threads_k) * Tile::x_pitch + jl + c * Tile::threads_j] = x_next[r][c];
      T* wt = w_tiles + buf * BK * Tile::w_pitch;
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < Tile::w_per_thread; ++i) {
        const int e = t + i * Tile::threads;
        wt[(e % BK) * Tile::w_pitch + e / BK] = w_next[i];
      }
    };
    // This team's K steps: all, or (SplitK) its slice's. Steps count from its first.
    const int all_steps = (op.K + BK - 1) / BK;
    const int first_step = SplitK ? slice * steps_per_slice : 0;
    const int slice_steps =
        all_steps - first_step < steps_per_slice ? all_steps - first_step : steps_per_slice;
    const int steps = SplitK ? slice_steps : all_steps;
    auto fill_taps = [&](int step) {  // by threads t < BK, into slot step % 2
      if (t < BK) taps[(step % 2) * BK + t] = op.gather_tap((first_step + step) * BK + t);
    };

    fill_taps(0);
    if (steps > 1) fill_taps(1);
    team.team_barrier();
    load(0);
    store(0);
    team.team_barrier();

    const int tn = t % (BN / TN), tm = t / (BN / TN);
    T acc[TM][TN] = {};
    for (int step = 0; step < steps; ++step) {
      const int buf = step % 2;
      // Slot step % 2 held this step's taps, whose loads were issued last step.
      if (step + 2 < steps) fill_taps(step + 2);
      if (step + 1 < steps) load((step + 1) % 2);

      const T* xt = x_tiles + buf * BK * Tile::x_pitch + tn * TN;
      const T* wt = w_tiles + buf * BK * Tile::w_pitch + tm * TM;
      KCNN_DEVICE_UNROLL
      for (int kk = 0; kk < BK; ++kk) {
        T a[TM], b[TN];
        implicit_gemm_load_run(wt + kk * Tile::w_pitch, a);
        implicit_gemm_load_run(xt + kk * Tile::x_pitch, b);
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < TM; ++i)
          KCNN_DEVICE_UNROLL
        for (int jj = 0; jj < TN; ++jj)
          acc[i][jj] += a[i] * b[jj];
      }

      if (step + 1 < steps) store((step + 1) % 2);
      team.team_barrier();
    }
    if constexpr (SplitK) {
      store_partial(acc, slice, m0 + tm * TM, j0 + tn * TN);
    } else if constexpr (!Pooled) {
      epilogue(acc, m0 + tm * TM, j0 + tn * TN);
    } else {
      // Fused pooling: the tile's conv outputs into scratch (the loop's last barrier has
      // released the operand tiles), then the team pools them into y.
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < TM; ++i) {
        const int m = m0 + tm * TM + i < op.M ? m0 + tm * TM + i : op.M - 1;
        const T b = op.bias ? op.bias[m] : T(0);
        T out[TN];
        KCNN_DEVICE_UNROLL
        for (int jj = 0; jj < TN; ++jj)
          out[jj] = apply_activation(op.activation, acc[i][jj] + b);
        implicit_gemm_store_run<TN>(x_tiles + (tm * TM + i) * Tile::x_pitch + tn * TN, 1, out, TN);
      }
      team.team_barrier();
      op.pool_tile(x_tiles, Tile::x_pitch, BM, m0, block, BN, t, Tile::threads);
    }
  }

  /// SplitK: the raw sums to partial[slice][m][j] (rows of J, vector runs along j).
  KOKKOS_INLINE_FUNCTION void store_partial(const T (&acc)[TM][TN], int slice, int m_first,
                                            std::int64_t j_first) const {
    if (m_first >= op.M || j_first >= op.J) return;
    const int j_count = op.J - j_first < TN ? static_cast<int>(op.J - j_first) : TN;
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < TM; ++i)
      if (m_first + i < op.M)
        implicit_gemm_store_run<TN>(
            partial + (std::int64_t(slice) * op.M + m_first + i) * op.J + j_first, 1, acc[i],
            j_count);
  }

  /// bias + activation, then the stores: per pixel run inside one output row (NCHW,
  /// pixels contiguous) or per pixel over the TM channels (NHWC, channels contiguous),
  /// as vectors where the run allows.
  KOKKOS_INLINE_FUNCTION void epilogue(T (&acc)[TM][TN], int m_first, std::int64_t j_first) const {
    if (m_first >= op.M || j_first >= op.J) return;
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < TM; ++i) {
      const int m = m_first + i < op.M ? m_first + i : op.M - 1;
      const T b = op.bias ? op.bias[m] : T(0);
      KCNN_DEVICE_UNROLL
      for (int jj = 0; jj < TN; ++jj)
        acc[i][jj] = apply_activation(op.activation, acc[i][jj] + b);
    }
    const int m_count = op.M - m_first < TM ? op.M - m_first : TM;
    const int j_count = op.J - j_first < TN ? static_cast<int>(op.J - j_first) : TN;
    // Every index into acc is a compile-time constant (unrolled loops with run-time
    // guards): a run-time index would move the accumulators to local memory.
    Pixel<std::int64_t> px = op.pixel(j_first);
    if constexpr (L == Layout::NCHW) {
      if (j_count == TN && px.q + TN <= op.map.Q) {  // one output row: vector runs
        T* dst = op.y + op.y_offset(px) + std::int64_t(m_first) * op.ys.c;
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < TM; ++i)
          if (i < m_count) implicit_gemm_store_run<TN>(dst + i * op.ys.c, op.ys.w, acc[i], TN);
        return;
      }
    }
    KCNN_DEVICE_UNROLL
    for (int jj = 0; jj < TN; ++jj) {
      if (jj < j_count) {
        T column[TM];
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < TM; ++i)
          column[i] = acc[i][jj];
        implicit_gemm_store_run<TM>(op.y + op.y_offset(px) + std::int64_t(m_first) * op.ys.c,
                                    op.ys.c, column, m_count);
      }
      if (++px.q == op.map.Q) {
        px.q = 0;
        if (++px.p == op.map.P) px.p = 0, ++px.n;
      }
    }
  }
};

/// The second pass of a split K: y(m, j) = act(sum of partial[s][m][j] over the slices
/// + bias[m]), slices in order (deterministic). One thread per output, j fastest, so
/// the partial rows are read coalesced.
template <Layout L, class T>
struct ImplicitGemmSplitKReduce {
  ImplicitGemmOperands<L, T> op;
  const T* partial;
  int k_slices;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t e) const {
    const std::int64_t m = e / op.J, j = e - m * op.J;
    const std::int64_t slice_elems = std::int64_t(op.M) * op.J;
    T sum = partial[e];
    for (int s = 1; s < k_slices; ++s)
      sum += partial[s * slice_elems + e];
    const T b = op.bias ? op.bias[m] : T(0);
    op.y[op.y_offset(op.pixel(j)) + m * op.ys.c] = apply_activation(op.activation, sum + b);
  }
};

// ---------------------------------------------------------------------------------
// Host kernel
// ---------------------------------------------------------------------------------

/// Host register block: TM channels x TN pixels. TN = 32 floats is two AVX-512 vectors
/// (four AVX2 ones); 8 x 32 accumulators fill 16 of the 32 AVX-512 registers and leave
/// room for the two panel vectors and the weight broadcast. Each panel vector loaded
/// feeds TM FMAs, each weight broadcast TN / 16.
struct ImplicitGemmHostTile {
  static constexpr int TM = 8, TN = 32;
  /// The K x BN panel a team unrolls stays within this many bytes (L2-resident: it is
  /// read once per TM channels). 2 cores, N=8, 3x3 NCHW layers, ms for 64/128/256/512
  /// channels: 192 KiB 18.5/-/-/-, 384 KiB 14.7/13.0/13.1/14.5, 512 KiB
  /// 14.5/13.7/14.2/14.0, 640 KiB 15.3/13.0/13.1/14.5 (each +-5% run to run): 512 KiB
  /// keeps BN >= 96 up to 128 channels without leaving the 1 MiB L2.
  static constexpr std::size_t panel_bytes = 512 * 1024;
  static constexpr int max_bn = 256;
};

template <Layout L, class ExecSpace, class T>
struct ImplicitGemmHostKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int TM = ImplicitGemmHostTile::TM, TN = ImplicitGemmHostTile::TN;

  ImplicitGemmOperands<L, T> op;
  int bn;  ///< pixels per team, a multiple of TN

  static std::size_t scratch_bytes(int K, int bn, int M, bool fused_pool) {
    return sizeof(T) * std::size_t(K) * bn + sizeof(std::int64_t) * (std::size_t(K) + bn) +
           sizeof(GatherPixel) * bn + (fused_pool ? sizeof(T) * std::size_t(M) * bn + 64 : 0) + 64;
  }

  void operator()(const member_type& team) const {
    const bool fused_pool = op.pooling.enabled;
    const std::int64_t block = team.league_rank();
    const int per_team = op.pooling.columns_per_team(bn);
    const std::int64_t j0 = block * per_team;
    const int count = static_cast<int>(std::min<std::int64_t>(per_team, op.J - j0));
    auto& scratch = team.team_scratch(1);
    T* const panel =
        static_cast<T*>(scratch.get_shmem_aligned(sizeof(T) * std::size_t(op.K) * bn, 64));
    std::int64_t* const w_off =
        static_cast<std::int64_t*>(scratch.get_shmem_aligned(sizeof(std::int64_t) * op.K, 8));
    std::int64_t* const y_off =
        static_cast<std::int64_t*>(scratch.get_shmem_aligned(sizeof(std::int64_t) * bn, 8));
    // Fused pooling: the team's conv outputs, [M][bn], pooled at the end.
    T* const conv_tile =
        fused_pool
            ? static_cast<T*>(scratch.get_shmem_aligned(sizeof(T) * std::size_t(op.M) * bn, 64))
            : nullptr;

    for (int k = 0; k < op.K; ++k)
      w_off[k] = op.map.gather_tap(k, op.xs, op.ws).w_offset;
    if (!fused_pool) {
      Pixel<std::int64_t> px = op.pixel(j0);
      for (int jj = 0; jj < count; ++jj) {
        y_off[jj] = op.y_offset(px);
        if (++px.q == op.map.Q) {
          px.q = 0;
          if (++px.p == op.map.P) px.p = 0, ++px.n;
        }
      }
    }
    unroll_panel(scratch, panel, j0, count);

    for (int jt = 0; jt < count; jt += TN) {
      const int j_count = std::min(TN, count - jt);
      for (int m0 = 0; m0 < op.M; m0 += TM) {
        T acc[TM][TN];
        multiply(panel + jt, w_off, m0, acc);
        if (fused_pool) {
          store_conv_tile(acc, m0, conv_tile + jt);
        } else {
          store(acc, m0, y_off + jt, j_count);
        }
      }
    }
    if (fused_pool) op.pool_tile(conv_tile, bn, op.M, 0, block, bn, 0, 1);
  }

  /// panel[k * bn + jj] = X(k, j0 + jj); columns past `count` are zero.
  void unroll_panel(const typename member_type::scratch_memory_space& scratch, T* panel,
                    std::int64_t j0, int count) const {
    bool unrolled = false;
    if constexpr (L == Layout::NCHW) {
      if (!op.pooling.enabled) {
        // The host im2col kernel's row copies, into a (K, bn) matrix whose column 0 is
        // pixel j0: one work item per tap, covering the output rows of [j0, j0 + count).
        const std::int64_t Q = op.map.Q, row_first = j0 / Q;
        const std::int64_t rows = (j0 + count - 1) / Q - row_first + 1;
        const Im2colNchwHost<T> unroll{
            op.map,
            op.x,
            op.xs,
            panel,
            UnrolledStorage::nchw_columns(bn, op.map.pixels_per_image(), j0),
            j0,
            count,
            row_first,
            rows,
            rows,
            1};
        for (int k = 0; k < op.K; ++k)
          unroll(k);
        unrolled = true;
      }
    }
    if (!unrolled) {
      // NHWC (channels innermost in x: walk the pixels outside and the taps inside, so
      // that consecutive reads are consecutive channels) and pooling-window columns
      // (not runs of an output row): one gather per element.
      GatherPixel* const pix =
          static_cast<GatherPixel*>(scratch.get_shmem_aligned(sizeof(GatherPixel) * bn, 8));
      for (int jj = 0; jj < count; ++jj)
        pix[jj] = op.gather_pixel(j0 + jj);
      for (int k = 0; k < op.K; ++k) {
        const GatherTap tap = op.map.gather_tap(k, op.xs, op.ws);
        T* row = panel + std::int64_t(k) * bn;
        for (int jj = 0; jj < count; ++jj)
          row[jj] =
              op.map.gathers_inside(pix[jj], tap) ? op.x[pix[jj].x_offset + tap.x_offset] : T(0);
      }
    }
    if (count < bn)
      for (int k = 0; k < op.K; ++k)
        std::fill(panel + std::int64_t(k) * bn + count, panel + std::int64_t(k + 1) * bn, T(0));
  }

  /// acc = W(m0 .. m0 + TM, :) * panel(:, 0 .. TN), rows past M repeating row M - 1;
  /// w_off[k]: tap k's offset within a filter.
  void multiply(const T* KOKKOS_RESTRICT panel, const std::int64_t* KOKKOS_RESTRICT w_off, int m0,
                T (&acc)[TM][TN]) const {
    const T* w_rows[TM];
    for (int i = 0; i < TM; ++i)
      w_rows[i] = op.w + std::int64_t(std::min(m0 + i, op.M - 1)) * op.ws.n;
    for (int i = 0; i < TM; ++i)
      KCNN_HOST_SIMD
    for (int jj = 0; jj < TN; ++jj)
      acc[i][jj] = T(0);
    for (int k = 0; k < op.K; ++k, panel += bn) {
      const std::int64_t wk = w_off[k];
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__)
#pragma GCC unroll 8
#endif
      for (int i = 0; i < TM; ++i) {
        const T a = w_rows[i][wk];
        KCNN_HOST_SIMD
        for (int jj = 0; jj < TN; ++jj)
          acc[i][jj] += a * panel[jj];
      }
    }
  }

  void store(T (&acc)[TM][TN], int m0, const std::int64_t* y_off, int j_count) const {
    for (int i = 0; i < TM && m0 + i < op.M; ++i) {
      const int m = m0 + i;
      T out[TN];
      bias_activation_row<TN>(op.activation, acc[i], op.bias ? op.bias[m] : T(0), out);
      T* y_m = op.y + std::int64_t(m) * op.ys.c;
      for (int jj = 0; jj < j_count; ++jj)
        y_m[y_off[jj]] = out[jj];
    }
  }

  /// Fused pooling: bias + activation into the conv tile's rows m0 .. m0 + TM (pitch bn).
  void store_conv_tile(T (&acc)[TM][TN], int m0, T* tile_column) const {
    for (int i = 0; i < TM && m0 + i < op.M; ++i)
      bias_activation_row<TN>(op.activation, acc[i], op.bias ? op.bias[m0 + i] : T(0),
                              tile_column + std::int64_t(m0 + i) * bn);
  }
};

// ---------------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------------

/// The operands of a validated problem on kernel Views; throws kcnn::Error for
/// geometries the gathers' 32-bit window coordinates cannot express.
template <Layout L, class XView, class WView, class BView, class YView>
auto implicit_gemm_operands(const XView& x, const WView& w, const BView& bias, const YView& y,
                            const Conv2dProblem& pb) {
  using T = view_scalar_t<YView>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::int64_t K = pb.C * pb.R * pb.S;
  throw_if(K > std::numeric_limits<int>::max(), op, "ConvAlgo::ImplicitGemm: C*R*S = ", K,
           " exceeds 2^31 - 1");
  throw_if(pb.M > std::numeric_limits<int>::max(), op, "ConvAlgo::ImplicitGemm: M = ", pb.M,
           " exceeds 2^31 - 1");
  throw_if(pb.H + 2 * pb.pad_h >= kGatherExtentLimit || pb.W + 2 * pb.pad_w >= kGatherExtentLimit,
           op, "ConvAlgo::ImplicitGemm: padded input extents ", pb.H + 2 * pb.pad_h, "x",
           pb.W + 2 * pb.pad_w, " reach its limit of ", kGatherExtentLimit,
           "; use another algorithm");
  ImplicitGemmOperands<L, T> o{};
  o.map = UnrollMap<L>::from(pb);
  o.x = x.data();
  o.xs = logical_strides<L>(x);
  o.w = w.data();
  o.ws = logical_strides<L>(w);
  o.bias = pb.has_bias ? bias.data() : nullptr;
  o.y = y.data();
  o.ys = logical_strides<L>(y);
  o.M = static_cast<int>(pb.M);
  o.K = static_cast<int>(K);
  o.J = pb.N * pb.P * pb.Q;
  o.activation = pb.activation;
  o.unpadded = pb.pad_h == 0 && pb.pad_w == 0;
  o.x_fits_int = static_cast<std::int64_t>(x.span()) <= std::numeric_limits<int>::max();
  if (pb.has_pool) {
    ImplicitGemmPoolColumns& pc = o.pooling;
    pc.enabled = true;
    pc.pool = pb.pool;
    pc.cells = pb.pool.window_h * pb.pool.window_w;
    pc.P_pooled = pb.P_pooled;
    pc.Q_pooled = pb.Q_pooled;
    pc.windows = pb.N * pb.P_pooled * pb.Q_pooled;
    o.J = pc.windows * pc.cells;
  }
  o.j_fits_int = o.J <= std::numeric_limits<int>::max();
  return o;
}

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

template <class Tile, bool Pooled, Layout L, class ExecSpace, class T>
void implicit_gemm_device_launch_as(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                                    LaunchMode mode) {
  using Kernel = ImplicitGemmDeviceKernel<L, Tile, ExecSpace, T, Pooled>;
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

/// A split K's slices are at least this many BK steps (256 taps for BK = 8): each slice
/// then spends far more time in its multiply loop than in its pipeline start and its
/// partial-sum stores.
inline constexpr int kImplicitGemmMinStepsPerSlice = 32;

/// How many slices of K tile `Tile` should split into: the count whose copies of the
/// tile grid fill the GPU's team slots (`sms` multiprocessors x the tile's teams per
/// multiprocessor) best, wave by wave, if it fills them at least a tenth better than
/// no split (ties: fewer slices). Slices keep at least kImplicitGemmMinStepsPerSlice
/// steps, and their partial sums (slices x M x J) fit the workspace limit. H100 (264
/// slots of 128 x 128 tiles): ResNet's 512-channel 7x7 layer, 52 tiles, 5 slices;
/// 256 channels at 14x14, 196 tiles (three quarters of one wave), 4 slices; 128 at
/// 28x28, 392 tiles (one and a half waves), 2. 1: no split.
template <class Tile, Layout L, class T>
int implicit_gemm_k_slices(const ImplicitGemmOperands<L, T>& o, std::int64_t sms,
                           std::size_t workspace_limit) {
  if (o.pooling.enabled) return 1;
  const std::int64_t teams = implicit_gemm_teams<Tile>(o.M, o.J);
  const std::int64_t slots = sms * Tile::min_teams_per_sm;
  const std::int64_t steps = (std::int64_t(o.K) + Tile::BK - 1) / Tile::BK;
  const std::int64_t most = std::min<std::int64_t>(steps / kImplicitGemmMinStepsPerSlice, 16);
  auto fill = [&](std::int64_t slices) {  // busy fraction of the slots over all waves
    const std::int64_t n = teams * slices, waves = (n + slots - 1) / slots;
    return double(n) / double(waves * slots);
  };
  std::int64_t best = 1;
  for (std::int64_t slices = 2; slices <= most; ++slices) {
    const bool fits =
        static_cast<std::size_t>(slices) * sizeof(T) * std::size_t(o.M) * std::size_t(o.J) <=
        workspace_limit;
    if (fits && fill(slices) > 1.1 * fill(best)) best = slices;
  }
  return static_cast<int>(best);
}

/// BK steps per slice when K is split into about `k_slices` slices.
template <class Tile>
int implicit_gemm_steps_per_slice(int K, int k_slices) {
  const int steps = (K + Tile::BK - 1) / Tile::BK;
  return (steps + k_slices - 1) / k_slices;
}
/// The slices that split actually has (none empty): at most `k_slices`.
template <class Tile>
int implicit_gemm_nonempty_slices(int K, int k_slices) {
  const int steps = (K + Tile::BK - 1) / Tile::BK;
  const int per_slice = implicit_gemm_steps_per_slice<Tile>(K, k_slices);
  return (steps + per_slice - 1) / per_slice;
}

/// Tile `Tile` with K split into about `k_slices` slices (implicit_gemm_k_slices): the
/// partial sums in the cached workspace, then ImplicitGemmSplitKReduce.
template <class Tile, Layout L, class ExecSpace, class T>
void implicit_gemm_device_launch_split(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                                       int k_slices, LaunchMode mode) {
  using Kernel = ImplicitGemmDeviceKernel<L, Tile, ExecSpace, T, false, true>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  const int steps_per_slice = implicit_gemm_steps_per_slice<Tile>(o.K, k_slices);
  k_slices = implicit_gemm_nonempty_slices<Tile>(o.K, k_slices);
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t teams = implicit_gemm_teams<Tile>(o.M, o.J);
  throw_if(teams * k_slices > std::numeric_limits<int>::max(), "kcnn::conv2d_forward",
           "internal: ImplicitGemm split K over ", teams, " tiles");
  if (mode == LaunchMode::Check) return;
  auto lease = WorkspaceCache<ExecSpace>::acquire(
      space, static_cast<std::size_t>(k_slices) * sizeof(T) * std::size_t(o.M) * std::size_t(o.J));
  T* const partial = reinterpret_cast<T*>(lease.data());
  Policy policy(space, static_cast<int>(teams * k_slices), Tile::threads);
  Kokkos::parallel_for(
      "kcnn::conv2d::implicit_gemm_split_k",
      policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes(false))),
      Kernel{o, static_cast<int>(m_blocks), steps_per_slice, static_cast<int>(teams), partial});
  Kokkos::parallel_for("kcnn::conv2d::implicit_gemm_split_k_reduce",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, std::int64_t(o.M) * o.J),
                       ImplicitGemmSplitKReduce<L, T>{o, partial, k_slices});
}

/// Launches tile `Tile`, with the fused pooling when o.pooling.enabled (only tiles whose
/// BM x BN conv tile fits team scratch are compiled for it; the tile choice never hands
/// a pooling to the others).
template <class Tile, Layout L, class ExecSpace, class T>
void implicit_gemm_device_launch(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                                 LaunchMode mode = LaunchMode::Run) {
  if (!o.pooling.enabled) return implicit_gemm_device_launch_as<Tile, false>(space, o, mode);
  if constexpr (Tile::BM <= 64) {
    implicit_gemm_device_launch_as<Tile, true>(space, o, mode);
  } else {
    throw_if(true, "kcnn::conv2d_forward", "internal: ImplicitGemm tile ", Tile::BM, "x", Tile::BN,
             " chosen for a fused pooling");
  }
}

template <Layout L, class ExecSpace, class T>
void implicit_gemm_host_launch(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                               LaunchMode mode) {
  using Kernel = ImplicitGemmHostKernel<L, ExecSpace, T>;
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

/// The device tile ImplicitGemm runs a problem with, and its split of K.
enum class ImplicitGemmDeviceTile { SmallM, MidM, LargeM, HugeM, Narrow, Double };
struct ImplicitGemmDevicePlan {
  ImplicitGemmDeviceTile tile = ImplicitGemmDeviceTile::LargeM;
  int k_slices = 1;  ///< > 1: HugeM with K split, partial sums in the workspace
};

/// The device tile choice: by element type, then by the filters M; above 64 filters the
/// widest tile that still gives every multiprocessor two teams, with K split where
/// 128 x 128 tiles fill the GPU's waves poorly (implicit_gemm_k_slices).
template <Layout L, class T>
ImplicitGemmDevicePlan implicit_gemm_device_plan(const ImplicitGemmOperands<L, T>& o,
                                                 std::int64_t multiprocessors,
                                                 std::size_t workspace_limit) {
  using Tiles = ImplicitGemmDeviceTiles;
  using Id = ImplicitGemmDeviceTile;
  if constexpr (!std::is_same_v<T, float>) {
    return {Id::Double, 1};
  } else {
    if (o.M <= Tiles::SmallM::BM) return {Id::SmallM, 1};
    if (o.M <= Tiles::MidM::BM) return {Id::MidM, 1};
    const std::int64_t enough = 2 * multiprocessors;
    if (o.M > Tiles::LargeM::BM) {
      const int slices = implicit_gemm_k_slices<Tiles::HugeM>(o, multiprocessors, workspace_limit);
      if (slices > 1) return {Id::HugeM, slices};
    }
    // A fused pooling's 128 x 128 conv tile would not fit the scratch limit: LargeM.
    if (o.M > Tiles::LargeM::BM && !o.pooling.enabled &&
        implicit_gemm_teams<Tiles::HugeM>(o.M, o.J) >= enough)
      return {Id::HugeM, 1};
    if (implicit_gemm_teams<Tiles::LargeM>(o.M, o.J) >= enough) return {Id::LargeM, 1};
    return {Id::Narrow, 1};
  }
}

/// Workspace bytes of a device plan: the split K's partial sums (slices x M x J).
template <Layout L, class T>
std::size_t implicit_gemm_workspace_bytes(const ImplicitGemmOperands<L, T>& o,
                                          const ImplicitGemmDevicePlan& plan) {
  if (plan.k_slices <= 1) return 0;
  const int slices =
      implicit_gemm_nonempty_slices<ImplicitGemmDeviceTiles::HugeM>(o.K, plan.k_slices);
  return static_cast<std::size_t>(slices) * sizeof(T) * std::size_t(o.M) * std::size_t(o.J);
}

/// Runs (or with LaunchMode::Check only plans and checks) ConvAlgo::ImplicitGemm; `pb`
/// has been validated against the Views. Returns the workspace bytes the run takes.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_implicit_gemm(const ExecSpace& space, const XView& x, const WView& w,
                                 const BView& bias, const YView& y, const Conv2dProblem& pb,
                                 LaunchMode mode = LaunchMode::Run) {
  using T = view_scalar_t<YView>;
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
      if constexpr (!std::is_same_v<T, float>) {
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
