// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/host_kernel.hpp
/// \brief ConvAlgo::ImplicitGemm on CPUs: ImplicitGemmHostKernel (a team's K x BN panel
///        unrolled into scratch, multiplied in SIMD register blocks).
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
#include "../../im2col/im2col_kernels.hpp"
#include "operands.hpp"
#include "tile_choice.hpp"

namespace kcnn::Impl {

// ---------------------------------------------------------------------------------
// Host kernel
// ---------------------------------------------------------------------------------

/// T: the storage type of x and w (the panel holds them as stored; 16-bit values are
/// converted to float as the multiply-adds read them); Y: y's (see ImplicitGemmOperands).
template <Layout L, class ExecSpace, class T, class Y = T>
struct ImplicitGemmHostKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Acc = accumulator_t<T>;  ///< the register block's sums (T: the storage type)
  static constexpr int TM = ImplicitGemmHostTile::TM, TN = ImplicitGemmHostTile::TN;

  ImplicitGemmOperands<L, T, Y> op;
  int bn;  ///< pixels per team, a multiple of TN

  static std::size_t scratch_bytes(int K, int bn, int M, bool fused_pool) {
    return sizeof(T) * std::size_t(K) * bn + sizeof(std::int64_t) * (std::size_t(K) + bn) +
           sizeof(GatherPixel) * bn + (fused_pool ? sizeof(Acc) * std::size_t(M) * bn + 64 : 0) +
           64;
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
    Acc* const conv_tile =
        fused_pool
            ? static_cast<Acc*>(scratch.get_shmem_aligned(sizeof(Acc) * std::size_t(op.M) * bn, 64))
            : nullptr;

    for (TapWalker<L> taps(op.map, 0, 1, op.K); taps.k < op.K; taps.advance())
      w_off[taps.k] = taps.tap(op.map, op.xs, op.ws).w_offset;
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
        Acc acc[TM][TN];
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
        // Taps carried (TapWalker) and the first row divided out once: the work item's
        // own divisions, per tap, were a quarter of this loop's time (LeNet C1, EPYC).
        const std::int64_t Q = op.map.Q, row_first = j0 / Q;
        const std::int64_t rows = (j0 + count - 1) / Q - row_first + 1;
        const std::int64_t n_first = row_first / op.map.P;
        const std::int64_t p_first = row_first - n_first * op.map.P;
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
        for (TapWalker<L> taps(op.map, 0, 1, op.K); taps.k < op.K; taps.advance())
          unroll.template unroll_rows<false>(taps.k, taps.current(), row_first, row_first + rows,
                                             n_first, p_first);
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
                Acc (&acc)[TM][TN]) const {
    const T* w_rows[TM];
    for (int i = 0; i < TM; ++i)
      w_rows[i] = op.w + std::int64_t(std::min(m0 + i, op.M - 1)) * op.ws.n;
    for (int i = 0; i < TM; ++i)
      KCNN_HOST_SIMD
    for (int jj = 0; jj < TN; ++jj)
      acc[i][jj] = Acc(0);
    for (int k = 0; k < op.K; ++k, panel += bn) {
      const std::int64_t wk = w_off[k];
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__)
#pragma GCC unroll 8
#endif
      for (int i = 0; i < TM; ++i) {
        const Acc a = to_compute(w_rows[i][wk]);
        KCNN_HOST_SIMD
        for (int jj = 0; jj < TN; ++jj)
          acc[i][jj] += a * to_compute(panel[jj]);
      }
    }
  }

  void store(Acc (&acc)[TM][TN], int m0, const std::int64_t* y_off, int j_count) const {
    for (int i = 0; i < TM && m0 + i < op.M; ++i) {
      const int m = m0 + i;
      Acc out[TN];
      bias_activation_row<TN>(op.activation, acc[i], op.bias ? to_compute(op.bias[m]) : Acc(0),
                              out);
      Y* y_m = op.y + std::int64_t(m) * op.ys.c;
      for (int jj = 0; jj < j_count; ++jj)
        y_m[y_off[jj]] = from_compute<Y>(out[jj]);
    }
  }

  /// Fused pooling: bias + activation into the conv tile's rows m0 .. m0 + TM (pitch bn).
  void store_conv_tile(Acc (&acc)[TM][TN], int m0, Acc* tile_column) const {
    for (int i = 0; i < TM && m0 + i < op.M; ++i)
      bias_activation_row<TN>(op.activation, acc[i], op.bias ? to_compute(op.bias[m0 + i]) : Acc(0),
                              tile_column + std::int64_t(m0 + i) * bn);
  }
};

}  // namespace kcnn::Impl
