// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/device_kernel.hpp
/// \brief ConvAlgo::ImplicitGemm on GPUs: ImplicitGemmDeviceKernel (block tile per team,
///        double-buffered gathers, register micro-tiles); its split K adds its slices with
///        SplitKReduce (split_k.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/index_math.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../epilogue/pool_window.hpp"
#include "operands.hpp"
#include "split_k.hpp"

namespace kcnn::Impl {

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

/// Stores `count` values (accumulators, rounded once to T here) to p[0], p[stride], ...;
/// as 4-vectors where the run is contiguous, complete and aligned to one.
template <int N, class T, class V>
KOKKOS_FORCEINLINE_FUNCTION void implicit_gemm_store_run(T* p, std::int64_t stride, const V* v,
                                                         int count) {
  using Vec = AlignedVec4<T>;
  if (count == N && stride == 1 && reinterpret_cast<std::uintptr_t>(p) % alignof(Vec) == 0) {
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < N / 4; ++i)
      reinterpret_cast<Vec*>(p)[i] =
          Vec{{from_compute<T>(v[4 * i]), from_compute<T>(v[4 * i + 1]),
               from_compute<T>(v[4 * i + 2]), from_compute<T>(v[4 * i + 3])}};
    return;
  }
  KCNN_DEVICE_UNROLL
  for (int i = 0; i < N; ++i)
    if (i < count) p[i * stride] = from_compute<T>(v[i]);
}

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
/// to partial[slice][m][j]; SplitKReduce then adds the slices, the bias
/// and the activation and writes y. (A template parameter too: the other kernels keep
/// their epilogue and registers.)
///
/// T: the storage type of x and w (staged as stored; 16-bit types are converted to float
/// as the multiply-adds read them); Y: y's (see ImplicitGemmOperands).
template <Layout L, class Tile, class ExecSpace, class T, bool Pooled, bool SplitK = false,
          class Y = T>
struct ImplicitGemmDeviceKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Acc = accumulator_t<T>;  ///< the micro-tile's sums (T: the storage type)
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
  static_assert(!(SplitK && Pooled), "a split K has no fused pooling");
  ImplicitGemmOperands<L, T, Y> op;
  int m_blocks;  ///< ceil(M / BM): the league walks the M blocks fastest, so the teams
                 ///< gathering the same pixels run together and share them in L2
  // SplitK only: K steps per slice, teams per slice (the tile grid), the partial sums.
  int steps_per_slice = 0;
  int teams_per_slice = 0;
  Acc* partial = nullptr;

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
    const std::size_t conv_tile = fused_pool ? sizeof(Acc) * BM * Tile::x_pitch : 0;
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
    Acc acc[TM][TN] = {};
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
          acc[i][jj] += to_compute(a[i]) * to_compute(b[jj]);
      }

      if (step + 1 < steps) store((step + 1) % 2);
      team.team_barrier();
    }
    if constexpr (SplitK) {
      store_partial(acc, slice, m0 + tm * TM, j0 + tn * TN);
    } else if constexpr (!Pooled) {
      epilogue(acc, m0 + tm * TM, j0 + tn * TN);
    } else {
      // Fused pooling: the tile's conv outputs (accumulators) into scratch (the loop's
      // last barrier has released the operand tiles), then the team pools them into y.
      Acc* const conv_tile = reinterpret_cast<Acc*>(x_tiles);
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < TM; ++i) {
        const int m = m0 + tm * TM + i < op.M ? m0 + tm * TM + i : op.M - 1;
        const Acc b = op.bias ? to_compute(op.bias[m]) : Acc(0);
        Acc out[TN];
        KCNN_DEVICE_UNROLL
        for (int jj = 0; jj < TN; ++jj)
          out[jj] = apply_activation(op.activation, acc[i][jj] + b);
        implicit_gemm_store_run<TN>(conv_tile + (tm * TM + i) * Tile::x_pitch + tn * TN, 1, out,
                                    TN);
      }
      team.team_barrier();
      op.pool_tile(conv_tile, Tile::x_pitch, BM, m0, block, BN, t, Tile::threads);
    }
  }

  /// SplitK: the raw sums to partial[slice][m][j] (SplitKPartials<false>: rows of J,
  /// vector runs along j).
  KOKKOS_INLINE_FUNCTION void store_partial(const Acc (&acc)[TM][TN], int slice, int m_first,
                                            std::int64_t j_first) const {
    if (m_first >= op.M || j_first >= op.J) return;
    const int j_count = op.J - j_first < TN ? static_cast<int>(op.J - j_first) : TN;
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < TM; ++i)
      if (m_first + i < op.M)
        implicit_gemm_store_run<TN>(
            partial + SplitKPartials<false>{op.M, op.J}.offset(slice, m_first + i, j_first), 1,
            acc[i], j_count);
  }

  /// bias + activation, then the stores: per pixel run inside one output row (NCHW,
  /// pixels contiguous) or per pixel over the TM channels (NHWC, channels contiguous),
  /// as vectors where the run allows.
  KOKKOS_INLINE_FUNCTION void epilogue(Acc (&acc)[TM][TN], int m_first,
                                       std::int64_t j_first) const {
    if (m_first >= op.M || j_first >= op.J) return;
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < TM; ++i) {
      const int m = m_first + i < op.M ? m_first + i : op.M - 1;
      const Acc b = op.bias ? to_compute(op.bias[m]) : Acc(0);
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
        Y* dst = op.y + op.y_offset(px) + std::int64_t(m_first) * op.ys.c;
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < TM; ++i)
          if (i < m_count) implicit_gemm_store_run<TN>(dst + i * op.ys.c, op.ys.w, acc[i], TN);
        return;
      }
    }
    KCNN_DEVICE_UNROLL
    for (int jj = 0; jj < TN; ++jj) {
      if (jj < j_count) {
        Acc column[TM];
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

}  // namespace kcnn::Impl
