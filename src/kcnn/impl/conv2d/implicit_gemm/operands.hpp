// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/operands.hpp
/// \brief ConvAlgo::ImplicitGemm: the GEMM view's operands (ImplicitGemmOperands,
///        filled from the Views by implicit_gemm_operands) and a fused pooling's
///        window-major columns (ImplicitGemmPoolColumns), shared by the GPU and host
///        kernels, the tile choice, the launch and ConvAlgo::TensorCoreGemm.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"
#include "../../common/view_checks.hpp"
#include "../../epilogue/pool_window.hpp"

namespace kcnn::Impl {

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

/// Raw operands of the GEMM view, shared by the GPU and host kernels: x, w and bias of
/// type T, y of type Y (T, or the accumulator type where a 16-bit convolution writes the
/// unpooled output of a pooling that runs as a second pass).
template <Layout L, class T, class Y = T>
struct ImplicitGemmOperands {
  UnrollMap<L> map;
  const T* x;
  LogicalStrides xs;
  const T* w;
  LogicalStrides ws;
  const T* bias;  ///< nullptr: no bias
  Y* y;
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
  /// (The tile holds accumulators: 16-bit results are rounded once, at the store.)
  template <class Acc>
  KOKKOS_INLINE_FUNCTION void pool_tile(const Acc* tile, int pitch, int rows, int m0,
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
      const Acc* cells = tile + std::int64_t(i) * pitch + std::int64_t(wl) * pooling.cells;
      const Acc v =
          pool_reduce_dynamic<Acc>(pooling.pool.mode, win, [&](std::int64_t h, std::int64_t w) {
            return cells[(h - h0) * pooling.pool.window_w + (w - w0)];
          });
      y[pp.n * ys.n + std::int64_t(m) * ys.c + pp.p * ys.h + pp.q * ys.w] =
          from_compute<Y>(pool_output(pooling.pool.activation, v));
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

/// The operands of a validated problem on kernel Views; throws kcnn::Error for
/// geometries the gathers' 32-bit window coordinates cannot express.
/// `algo`: the algorithm named in the messages (ImplicitGemm's operands also feed
/// TensorCoreGemm).
template <Layout L, class XView, class WView, class BView, class YView>
auto implicit_gemm_operands(const XView& x, const WView& w, const BView& bias, const YView& y,
                            const Conv2dProblem& pb, const char* algo = "ConvAlgo::ImplicitGemm") {
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::int64_t K = pb.C * pb.R * pb.S;
  throw_if(K > std::numeric_limits<int>::max(), op, algo, ": C*R*S = ", K, " exceeds 2^31 - 1");
  throw_if(pb.M > std::numeric_limits<int>::max(), op, algo, ": M = ", pb.M, " exceeds 2^31 - 1");
  const std::int64_t padded_h = padded_extent(pb.H, pb.pad_h);
  const std::int64_t padded_w = padded_extent(pb.W, pb.pad_w);
  throw_if(padded_h >= kGatherExtentLimit || padded_w >= kGatherExtentLimit, op, algo,
           ": padded input extents ", padded_h, "x", padded_w, " reach its limit of ",
           kGatherExtentLimit, "; use another algorithm");
  ImplicitGemmOperands<L, T, Y> o{};
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

}  // namespace kcnn::Impl
