// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/transforms.hpp
/// \brief The three transforms of Winograd's minimal filtering F(m x m, 3 x 3)
///        (Lavin & Gray 2016): an m x m output tile is
///            Y = A^T [ (G g G^T) .* (B^T d B) ] A
///        for the 3 x 3 filter g and the (m + 2) x (m + 2) input patch d starting at the
///        tile's first output row and column (cross-correlation, as CNNs convolve).
///
/// Each 2-D transform is the 1-D one applied to every row, then to every column. The 1-D
/// transforms are written out as sums (no matrix products), which is what the compiler
/// needs to schedule them with the fewest operations.
///
/// Interpolation points: F(2x2) 0, 1, -1, infinity; F(4x4) 0, 1, -1, 2, -2, infinity,
/// Lavin & Gray's choice. Their constants (1/4, 1/6, 1/24 in G, up to 8 in A^T) enlarge
/// the rounding error with the tile: measured bounds in winograd.hpp.
#pragma once

#include <Kokkos_Core.hpp>

namespace kcnn::Impl {

/// F(Tile x Tile, 3 x 3); Tile is 2 or 4.
template <int Tile>
struct WinogradF3;

template <>
struct WinogradF3<2> {
  static constexpr int tile = 2;
  static constexpr int alpha = 4;  ///< the transform domain's extent, tile + 2

  /// B^T d for one line of the input patch.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void input(const A (&d)[4], A (&v)[4]) {
    v[0] = d[0] - d[2];
    v[1] = d[1] + d[2];
    v[2] = d[2] - d[1];
    v[3] = d[1] - d[3];
  }
  /// G g for one line of the filter.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void filter(const A (&g)[3], A (&u)[4]) {
    const A half = A(0.5);
    u[0] = g[0];
    u[1] = half * (g[0] + g[1] + g[2]);
    u[2] = half * (g[0] - g[1] + g[2]);
    u[3] = g[2];
  }
  /// A^T z for one line of the transform-domain product.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void output(const A (&z)[4], A (&y)[2]) {
    y[0] = z[0] + z[1] + z[2];
    y[1] = z[1] - z[2] - z[3];
  }
};

template <>
struct WinogradF3<4> {
  static constexpr int tile = 4;
  static constexpr int alpha = 6;

  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void input(const A (&d)[6], A (&v)[6]) {
    const A four = A(4), five = A(5), two = A(2);
    // Shared partial sums: rows 1-2 and 3-4 of B^T differ only in sign.
    const A a = d[4] - four * d[2];  // rows 1, 2
    const A b = d[3] - four * d[1];
    const A c = d[4] - d[2];  // rows 3, 4
    const A e = two * (d[3] - d[1]);
    v[0] = four * d[0] - five * d[2] + d[4];
    v[1] = a + b;
    v[2] = a - b;
    v[3] = c + e;
    v[4] = c - e;
    v[5] = four * d[1] - five * d[3] + d[5];
  }
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void filter(const A (&g)[3], A (&u)[6]) {
    const A sixth = A(1) / A(6);
    const A even = g[0] + g[2], even_q = A(0.25) * g[0] + g[2];
    u[0] = A(0.25) * g[0];
    u[1] = -sixth * (even + g[1]);
    u[2] = -sixth * (even - g[1]);
    // (g0/24 +- g1/12 + g2/6) = (g0/4 +- g1/2 + g2) / 6
    u[3] = sixth * (even_q + A(0.5) * g[1]);
    u[4] = sixth * (even_q - A(0.5) * g[1]);
    u[5] = g[2];
  }
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void output(const A (&z)[6], A (&y)[4]) {
    const A s12 = z[1] + z[2], d12 = z[1] - z[2];
    const A s34 = z[3] + z[4], d34 = z[3] - z[4];
    y[0] = z[0] + s12 + s34;
    y[1] = d12 + A(2) * d34;
    y[2] = s12 + A(4) * s34;
    y[3] = d12 + A(8) * d34 + z[5];
  }
};

/// The 2-D transforms on row-major alpha x alpha (or 3 x 3, tile x tile) arrays, built
/// from F's 1-D ones: rows first, then columns.
template <class F>
struct WinogradTransform2D {
  static constexpr int tile = F::tile;
  static constexpr int alpha = F::alpha;

  /// v = B^T d B.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void input(const A (&d)[alpha][alpha], A (&v)[alpha][alpha]) {
    A rows[alpha][alpha];
    for (int i = 0; i < alpha; ++i)
      F::input(d[i], rows[i]);
    for (int j = 0; j < alpha; ++j) {
      A col[alpha], out[alpha];
      for (int i = 0; i < alpha; ++i)
        col[i] = rows[i][j];
      F::input(col, out);
      for (int i = 0; i < alpha; ++i)
        v[i][j] = out[i];
    }
  }
  /// u = G g G^T.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void filter(const A (&g)[3][3], A (&u)[alpha][alpha]) {
    A rows[3][alpha];
    for (int i = 0; i < 3; ++i)
      F::filter(g[i], rows[i]);
    for (int j = 0; j < alpha; ++j) {
      A col[3] = {rows[0][j], rows[1][j], rows[2][j]}, out[alpha];
      F::filter(col, out);
      for (int i = 0; i < alpha; ++i)
        u[i][j] = out[i];
    }
  }
  /// y = A^T z A.
  template <class A>
  KOKKOS_FORCEINLINE_FUNCTION static void output(const A (&z)[alpha][alpha], A (&y)[tile][tile]) {
    A rows[alpha][tile];
    for (int i = 0; i < alpha; ++i)
      F::output(z[i], rows[i]);
    for (int j = 0; j < tile; ++j) {
      A col[alpha], out[tile];
      for (int i = 0; i < alpha; ++i)
        col[i] = rows[i][j];
      F::output(col, out);
      for (int i = 0; i < tile; ++i)
        y[i][j] = out[i];
    }
  }
};

}  // namespace kcnn::Impl
