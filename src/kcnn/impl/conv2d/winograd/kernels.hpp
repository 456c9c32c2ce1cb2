// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/kernels.hpp
/// \brief The transform-domain operands' memory order and the three transforms as
///        per-item kernels (one item = one channel of one tile), for device backends and
///        the staged host pipeline; host_blocks.hpp has the vectorized host versions.
///
/// Memory order, chosen per layout so that the contiguous tensor dimension stays
/// contiguous through the pipeline (xi: transform-domain position, t: tile of the chunk):
///  - NCHW: U[xi](m, c), V[xi](c, t), Z[xi](m, t);  Z[xi] = U[xi] V[xi]  (tiles fastest)
///  - NHWC: U[xi](c, m), V[xi](t, c), Z[xi](t, m);  Z[xi] = V[xi] U[xi]  (channels fastest)
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "transforms.hpp"

namespace kcnn::Impl {

/// Elements from one transform-domain plane (one xi) of U, V or Z to the next, for planes
/// of n values: n rounded up to 16, plus 16. Planes a power of two apart (U of 64 x 64 or
/// 512 x 512 floats: 16 KB, 1 MB) put the alpha^2 values an item writes into one cache
/// set, which holds 8 or 16 of them: the filter transform of the 512-channel layer took 29
/// of its 51 ms on 2 EPYC cores so.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t winograd_plane(std::int64_t n) {
  return (n + 15) / 16 * 16 + 16;
}

/// Offsets of the transform-domain operands (see the file comment).
template <Layout L>
struct WinogradOrder {
  /// V's (channel, tile) or Z's (filter, tile) element within one xi plane of K x nt,
  /// K the channel count.
  KOKKOS_FORCEINLINE_FUNCTION static std::int64_t vz(std::int64_t k, std::int64_t t, std::int64_t K,
                                                     std::int64_t nt) {
    if constexpr (L == Layout::NCHW) {
      (void)K;
      return k * nt + t;
    } else {
      (void)nt;
      return t * K + k;
    }
  }
};

/// U[xi] = (G w(m, c) G^T)[xi] for m < m_pad and c < c_pad on device backends (NHWC's rows
/// hold m_pad >= M filters, the fused GPU kernel's whole blocks, zeros past M; its
/// c_pad >= C rows are zeros past C; NCHW: m_pad = M, c_pad = C). One item per (m, c),
/// walked in U's order (NCHW: c fastest, NHWC: m fastest), so that a warp's writes to
/// each of the alpha^2 planes are one run. Host backends take WinogradHostFilterTransform
/// (host_blocks.hpp: a vector of pairs at a time).
template <Layout L, int Tile, class T, class Acc>
struct WinogradFilterTransform {
  using Transform = WinogradTransform2D<WinogradF3<Tile>>;
  static constexpr int alpha = Transform::alpha;
  const T* w;
  LogicalStrides ws;
  Acc* u;
  std::int64_t M, C, m_pad;
  std::int64_t c_pad;

  /// Items for the whole of U.
  std::int64_t items() const { return m_pad * c_pad; }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    if constexpr (L == Layout::NCHW) {
      transform(i / c_pad, i % c_pad);
    } else {
      transform(i % m_pad, i / m_pad);
    }
  }

  KOKKOS_INLINE_FUNCTION void transform(const std::int64_t m, const std::int64_t c) const {
    const std::int64_t plane = winograd_plane(m_pad * c_pad);
    const std::int64_t at = L == Layout::NCHW ? m * c_pad + c : c * m_pad + m;
    Acc g[3][3], v[alpha][alpha];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s)
        g[r][s] = m < M && c < C ? to_compute(w[ws.offset(m, c, r, s)]) : Acc(0);
    Transform::filter(g, v);
    for (int a = 0; a < alpha; ++a)
      for (int b = 0; b < alpha; ++b)
        u[(a * alpha + b) * plane + at] = v[a][b];
  }
};

/// Where a tile lies: its image and first output row and column.
struct WinogradTileGrid {
  std::int64_t tiles_h = 0, tiles_w = 0;
  int tile = 4;
  KOKKOS_INLINE_FUNCTION void locate(std::int64_t t, std::int64_t& n, std::int64_t& p0,
                                     std::int64_t& q0) const {
    const std::int64_t per_image = tiles_h * tiles_w;
    n = t / per_image;
    const std::int64_t rest = t - n * per_image;
    const std::int64_t row = rest / tiles_w;
    p0 = row * tile;
    q0 = (rest - row * tiles_w) * tile;
  }
};

/// V[xi](c, tl) = (B^T d B)[xi] for channel c of chunk tile tl (tile t0 + tl): one item
/// per (c, tl), in V's order (NCHW: tiles fastest, neighbouring items read neighbouring
/// patches of one plane; NHWC: channels fastest).
template <Layout L, int Tile, class T, class Acc>
struct WinogradInputTransform {
  using Transform = WinogradTransform2D<WinogradF3<Tile>>;
  static constexpr int alpha = Transform::alpha;
  const T* x;
  LogicalStrides xs;
  Acc* v;
  WinogradTileGrid grid;
  std::int64_t C, H, W, t0, nt;
  int pad_h, pad_w;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    std::int64_t c, tl;
    if constexpr (L == Layout::NCHW) {
      c = i / nt, tl = i - c * nt;
    } else {
      tl = i / C, c = i - tl * C;
    }
    std::int64_t n, p0, q0;
    grid.locate(t0 + tl, n, p0, q0);
    const std::int64_t h0 = p0 - pad_h, w0 = q0 - pad_w;
    const T* base = x + xs.offset(n, c, 0, 0);
    Acc d[alpha][alpha], out[alpha][alpha];
    if (h0 >= 0 && w0 >= 0 && h0 + alpha <= H && w0 + alpha <= W) {
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b)
          d[a][b] = to_compute(base[(h0 + a) * xs.h + (w0 + b) * xs.w]);
    } else {
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) {
          const std::int64_t h = h0 + a, w = w0 + b;
          d[a][b] =
              h >= 0 && h < H && w >= 0 && w < W ? to_compute(base[h * xs.h + w * xs.w]) : Acc(0);
        }
    }
    Transform::input(d, out);
    const std::int64_t plane = winograd_plane(C * nt), at = WinogradOrder<L>::vz(c, tl, C, nt);
    for (int a = 0; a < alpha; ++a)
      for (int b = 0; b < alpha; ++b)
        v[(a * alpha + b) * plane + at] = out[a][b];
  }
};

/// The output tile of filter m and chunk tile tl = activation(A^T Z A + bias[m]), cut at
/// the output's edges: one item per (m, tl), in Z's order.
template <Layout L, int Tile, class Acc, class B, class Y>
struct WinogradOutputTransform {
  using Transform = WinogradTransform2D<WinogradF3<Tile>>;
  static constexpr int alpha = Transform::alpha;
  const Acc* z;
  Y* y;
  LogicalStrides ys;
  const B* bias;  ///< nullptr: no bias
  std::int64_t bias_stride;
  WinogradTileGrid grid;
  std::int64_t M, P, Q, t0, nt;
  Activation activation;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    std::int64_t m, tl;
    if constexpr (L == Layout::NCHW) {
      m = i / nt, tl = i - m * nt;
    } else {
      tl = i / M, m = i - tl * M;
    }
    Acc in[alpha][alpha], out[Tile][Tile];
    const std::int64_t plane = winograd_plane(M * nt), at = WinogradOrder<L>::vz(m, tl, M, nt);
    for (int a = 0; a < alpha; ++a)
      for (int b = 0; b < alpha; ++b)
        in[a][b] = z[(a * alpha + b) * plane + at];
    Transform::output(in, out);
    std::int64_t n, p0, q0;
    grid.locate(t0 + tl, n, p0, q0);
    const Acc b = bias ? to_compute(bias[m * bias_stride]) : Acc(0);
    Y* base = y + ys.offset(n, m, p0, q0);
    const int rows = static_cast<int>(P - p0 < Tile ? P - p0 : Tile);
    const int cols = static_cast<int>(Q - q0 < Tile ? Q - q0 : Tile);
    for (int a = 0; a < rows; ++a)
      for (int c = 0; c < cols; ++c)
        base[a * ys.h + c * ys.w] = from_compute<Y>(apply_activation(activation, out[a][c] + b));
  }
};

}  // namespace kcnn::Impl
