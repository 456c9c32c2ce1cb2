// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/host_blocks.hpp
/// \brief The host pipeline of ConvAlgo::Winograd: a thread takes a block of tiles,
///        transforms its input patches into its own slot of the workspace, runs the
///        alpha^2 GEMMs on a register-blocked micro-kernel, and transforms the products
///        into y. The block is sized so that its transform-domain values stay in the
///        thread's caches between the three steps. Where there are fewer such blocks
///        than threads and the transformed filters U outgrow the caches, the threads
///        share a block's filters instead (parts: each reads its part of U). The filter
///        transform (WinogradHostFilterTransform) runs before, vectorized too.
///
/// The transforms run on a host vector's worth of lanes at once (WinogradLanes: loops of
/// the host vector's width, which the compiler turns into vector instructions): in NHWC
/// the lanes are consecutive channels of one tile, read and written contiguously; in
/// NCHW they are consecutive tiles of one channel, gathered from their patches and
/// written contiguously to V (and, for the output, read contiguously from Z and
/// scattered to their tiles).
///
/// Transform-domain order: kernels.hpp's, with the vector dimension padded to whole
/// vectors (zeros), so that every GEMM row is whole vectors: NCHW V[xi](c, t) and
/// Z[xi](m, t) rows of round_up(nt, lanes) tiles; NHWC U[xi](c, m) and Z[xi](t, m) rows
/// of round_up(M, lanes) filters.
///
/// The GEMM (winograd_host_gemm): Out = A B with B's rows whole vectors, in register
/// blocks of RB rows x VB vectors (AVX2: 4 x 3, 12 accumulators, 3 B vectors and a
/// broadcast in 16 registers; AVX-512: 6 x 4 of 32, not measured yet; on AVX2 6 x 2
/// measured the same as 4 x 3 within the VM's spread: 64-channel layer, N = 8, F(4x4),
/// 9.3-10.1 against 9.4-10.8 ms over four rounds), B's column panel outermost so that
/// it stays in L1 while A's rows stream. A host BLAS was measured first: OpenBLAS spent
/// a third of its time packing and zeroing on these small GEMMs (64-channel layer,
/// N = 8, AVX2), which a micro-kernel reading the transforms' own order does not need.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/host_simd.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "kernels.hpp"
#include "transforms.hpp"

namespace kcnn::Impl {

/// N values with the element-wise arithmetic the transforms use.
template <class A, int N>
struct WinogradLanes {
  A e[N];
  WinogradLanes() = default;
  explicit WinogradLanes(A s) {
    for (int l = 0; l < N; ++l)
      e[l] = s;
  }
  friend WinogradLanes operator+(const WinogradLanes& a, const WinogradLanes& b) {
    WinogradLanes r;
    for (int l = 0; l < N; ++l)
      r.e[l] = a.e[l] + b.e[l];
    return r;
  }
  friend WinogradLanes operator-(const WinogradLanes& a, const WinogradLanes& b) {
    WinogradLanes r;
    for (int l = 0; l < N; ++l)
      r.e[l] = a.e[l] - b.e[l];
    return r;
  }
  friend WinogradLanes operator*(const WinogradLanes& a, const WinogradLanes& b) {
    WinogradLanes r;
    for (int l = 0; l < N; ++l)
      r.e[l] = a.e[l] * b.e[l];
    return r;
  }
  friend WinogradLanes operator/(const WinogradLanes& a, const WinogradLanes& b) {
    WinogradLanes r;
    for (int l = 0; l < N; ++l)
      r.e[l] = a.e[l] / b.e[l];
    return r;
  }
  friend WinogradLanes operator-(const WinogradLanes& a) {
    WinogradLanes r;
    for (int l = 0; l < N; ++l)
      r.e[l] = -a.e[l];
    return r;
  }
};

/// U = G g G^T on host backends, a host vector's worth of (filter, channel) pairs at a
/// time, into kernels.hpp's order: NHWC's lanes are consecutive filters of one channel
/// (U[xi](c, m), rows of m_pad, zeros past M), NCHW's consecutive channels of one filter
/// (U[xi](m, c), rows of C). An item is kRows rows (NHWC: channels, NCHW: filters) of one
/// vector of lanes: it gathers their taps into a local block (reading w along its
/// contiguous dimension: a filter tap's channels in NHWC, a filter's channels and taps in
/// NCHW), transforms each row's lanes at once and writes a whole vector to each of the
/// alpha^2 planes. The per-pair kernel (WinogradFilterTransform, scalar arithmetic) took
/// 6.7 ms of the 512-channel ResNet layer's 10.1 (NHWC, N = 8, 2-core AMD Zen 5 with
/// AVX-512, session 42): the transform's ~200 flops per pair ran one value at a time;
/// vectorized, 3.6 ms, and 1.7 with streaming stores (`streaming`: U is written once and
/// read after the whole transform; each line was first read for ownership).
template <Layout L, int Tile, class T, class Acc>
struct WinogradHostFilterTransform {
  using Transform = WinogradTransform2D<WinogradF3<Tile>>;
  static constexpr int alpha = Transform::alpha;
  static constexpr int lanes = HostVector<Acc>::lanes;
  static constexpr int kRows = 16;
  using Lanes = WinogradLanes<Acc, lanes>;

  using Vector = HostVector<Acc>;
  const T* w;
  LogicalStrides ws;
  Acc* u;
  std::int64_t M, C, m_pad;
  /// Write whole vectors with streaming stores (the caller sets it where u and its rows
  /// are aligned for them).
  bool streaming = false;

  /// U's rows (NHWC: channels, NCHW: filters) and their length (the vector dimension).
  std::int64_t rows() const { return L == Layout::NHWC ? C : M; }
  std::int64_t row_length() const { return L == Layout::NHWC ? m_pad : C; }
  std::int64_t vectors() const { return (row_length() + lanes - 1) / lanes; }
  std::int64_t items() const { return (rows() + kRows - 1) / kRows * vectors(); }

  void operator()(const std::int64_t i) const {
    // Consecutive items take neighbouring vectors of the same rows.
    const std::int64_t row0 = i / vectors() * kRows, v0 = i % vectors() * lanes;
    const int nrows = static_cast<int>(std::min<std::int64_t>(kRows, rows() - row0));
    const int cnt = static_cast<int>(std::min<std::int64_t>(lanes, row_length() - v0));
    // The rows' taps, lane by lane (zeros past M in NHWC's padded rows, past cnt).
    Acc g[kRows][9][lanes];
    if constexpr (L == Layout::NHWC) {  // lanes: filters m = v0 + l; rows: channels
      for (int l = 0; l < lanes; ++l) {
        const bool valid = l < cnt && v0 + l < M;
        for (int t = 0; t < 9; ++t) {
          const T* p = w + (v0 + l) * ws.n + (t / 3) * ws.h + (t % 3) * ws.w + row0 * ws.c;
          for (int k = 0; k < nrows; ++k)
            g[k][t][l] = valid ? to_compute(p[k * ws.c]) : Acc(0);
        }
      }
    } else {  // lanes: channels c = v0 + l; rows: filters
      for (int k = 0; k < nrows; ++k)
        for (int l = 0; l < lanes; ++l) {
          const T* p = w + (row0 + k) * ws.n + (v0 + l) * ws.c;
          for (int t = 0; t < 9; ++t)
            g[k][t][l] = l < cnt ? to_compute(p[(t / 3) * ws.h + (t % 3) * ws.w]) : Acc(0);
        }
    }
    const std::int64_t plane = winograd_plane(m_pad * C);
    for (int k = 0; k < nrows; ++k) {
      Lanes taps[3][3], v[alpha][alpha];
      for (int t = 0; t < 9; ++t)
        for (int l = 0; l < lanes; ++l)
          taps[t / 3][t % 3].e[l] = g[k][t][l];
      Transform::filter(taps, v);
      Acc* dst = u + (row0 + k) * row_length() + v0;
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) {
          Acc* d = dst + (a * alpha + b) * plane;
          if (cnt == lanes && streaming) {
            Vector::store_streaming(d, Vector::load_unaligned(v[a][b].e));
          } else if (cnt == lanes) {
            for (int l = 0; l < lanes; ++l)
              d[l] = v[a][b].e[l];
          } else {
            for (int l = 0; l < cnt; ++l)
              d[l] = v[a][b].e[l];
          }
        }
    }
    if (streaming) Vector::streaming_fence();
  }
};

/// The host GEMM's register block: RB rows x VB vectors of the host ISA.
template <class Acc>
struct WinogradHostGemmBlocking {
  static constexpr int VB = kHostVectorRegisters >= 32 ? 4 : 3;
  static constexpr int RB = kHostVectorRegisters >= 32 ? 6 : 4;
};

/// out(r, :) = sum_k a_rows[r][k] B(k, :) over VB vectors of columns, for the first
/// `rows` of the RB rows (the others repeat a valid row and are not stored).
template <class Acc, int RB, int VB>
KCNN_HOST_FORCEINLINE void winograd_host_gemm_block(const Acc* const (&a_rows)[RB], const Acc* b,
                                                    std::int64_t ldb, std::int64_t K, Acc* out,
                                                    std::int64_t ldo, int rows) {
  using Vector = HostVector<Acc>;
  using V = typename Vector::type;
  constexpr int lanes = Vector::lanes;
  V acc[RB][VB];
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < VB; ++v)
      acc[r][v] = Vector::zero();
  for (std::int64_t k = 0; k < K; ++k, b += ldb) {
    V bv[VB];
    for (int v = 0; v < VB; ++v) {
      bv[v] = Vector::load_unaligned(b + v * lanes);
      Vector::keep_in_register(bv[v]);
    }
    for (int r = 0; r < RB; ++r) {
      const V ar = Vector::broadcast(a_rows[r] + k);
      for (int v = 0; v < VB; ++v)
        acc[r][v] = Vector::fma(ar, bv[v], acc[r][v]);
    }
  }
  // Constant indices only (a loop to `rows` would index acc at run time and keep it in
  // memory: GCC 12 then stored every FMA's sum to the stack).
  for (int r = 0; r < RB; ++r)
    if (r < rows)
      for (int v = 0; v < VB; ++v)
        Vector::store_unaligned(out + r * ldo + v * lanes, acc[r][v]);
}

/// Out (R x N) = A (R x K) B (K x N), row-major with row strides lda, ldb, ldo; N a
/// multiple of the host vector's lanes.
template <class Acc>
void winograd_host_gemm(std::int64_t R, std::int64_t N, std::int64_t K, const Acc* A,
                        std::int64_t lda, const Acc* B, std::int64_t ldb, Acc* out,
                        std::int64_t ldo) {
  constexpr int lanes = HostVector<Acc>::lanes;
  constexpr int RB = WinogradHostGemmBlocking<Acc>::RB, VB = WinogradHostGemmBlocking<Acc>::VB;
  for (std::int64_t n0 = 0; n0 < N; n0 += VB * lanes) {
    const auto vectors = static_cast<int>(std::min<std::int64_t>(VB, (N - n0) / lanes));
    for (std::int64_t r0 = 0; r0 < R; r0 += RB) {
      const int rows = static_cast<int>(std::min<std::int64_t>(RB, R - r0));
      const Acc* a_rows[RB];
      for (int r = 0; r < RB; ++r)
        a_rows[r] = A + std::min<std::int64_t>(r0 + r, R - 1) * lda;
      Acc* o = out + r0 * ldo + n0;
      const Acc* b = B + n0;
      if (vectors == VB) {
        winograd_host_gemm_block<Acc, RB, VB>(a_rows, b, ldb, K, o, ldo, rows);
      } else if (vectors == 1) {
        winograd_host_gemm_block<Acc, RB, 1>(a_rows, b, ldb, K, o, ldo, rows);
      } else if (vectors == 2) {
        winograd_host_gemm_block<Acc, RB, 2>(a_rows, b, ldb, K, o, ldo, rows);
      } else {
        winograd_host_gemm_block<Acc, RB, 3>(a_rows, b, ldb, K, o, ldo, rows);
      }
    }
  }
}

/// A tile of the block: its image and first output row and column.
struct WinogradTilePosition {
  std::int64_t n, p0, q0;
};

template <Layout L, int Tile, class T, class Acc, class B, class Y, class ExecSpace>
struct WinogradHostBlocks {
  using Transform = WinogradTransform2D<WinogradF3<Tile>>;
  static constexpr int alpha = Transform::alpha;
  static constexpr int a2 = alpha * alpha;
  static constexpr int lanes = HostVector<Acc>::lanes;
  static constexpr int tile = Tile;
  static constexpr Layout layout = L;
  using compute_type = Acc;
  using Lanes = WinogradLanes<Acc, lanes>;

  const T* x;
  LogicalStrides xs;
  const Acc* u;  ///< NCHW: U[xi](m, c), rows of C; NHWC: U[xi](c, m), rows of m_pad
  Y* y;
  LogicalStrides ys;
  const B* bias;  ///< nullptr: no bias
  std::int64_t bias_stride;
  WinogradTileGrid grid;
  std::int64_t C, H, W, M, P, Q;
  std::int64_t m_pad;  ///< M rounded up to whole vectors (NHWC's U and Z rows)
  int pad_h, pad_w;
  Activation activation;
  Kokkos::Experimental::UniqueToken<ExecSpace> token;
  unsigned char* slots;
  std::size_t slot_bytes, v_bytes, z_bytes;
  std::int64_t chunk_tiles, tiles;
  /// Filters per part (whole vectors): work item = block x parts() + part.
  std::int64_t part_filters;

  std::int64_t parts() const { return (M + part_filters - 1) / part_filters; }

  /// The tiles' row length in NCHW's V and Z.
  static std::int64_t tiles_pad(std::int64_t nt) { return round_up(nt, lanes); }

  void operator()(const std::int64_t item) const {
    const std::int64_t block = item / parts(), m0 = item % parts() * part_filters;
    const std::int64_t m1 = std::min(M, m0 + part_filters);
    const int slot = token.acquire();
    unsigned char* base = slots + std::size_t(slot) * slot_bytes;
    Acc* v = reinterpret_cast<Acc*>(base);
    Acc* z = reinterpret_cast<Acc*>(base + v_bytes);
    auto* at = reinterpret_cast<WinogradTilePosition*>(base + v_bytes + z_bytes);
    const std::int64_t t0 = block * chunk_tiles, nt = std::min(chunk_tiles, tiles - t0);
    for (std::int64_t tl = 0; tl < nt; ++tl)
      grid.locate(t0 + tl, at[tl].n, at[tl].p0, at[tl].q0);
    input(v, at, nt, 0, L == Layout::NHWC ? nt : C);
    const std::int64_t u_plane = winograd_plane(m_pad * C);
    if constexpr (L == Layout::NCHW) {
      gemms(v, z, nt, m0, m1, u + m0 * C, u_plane, C);
    } else {
      gemms(v, z, nt, m0, m1, u + m0, u_plane, m_pad);
    }
    output(z, at, nt, m0, m1);
    token.release(slot);
  }

 private:
  /// cnt values from p (step `step`) into the first lanes, zero in the others.
  template <class S>
  static Lanes load(const S* p, std::int64_t step, int cnt) {
    Lanes r;
    if (cnt == lanes && step == 1) {
      for (int l = 0; l < lanes; ++l)
        r.e[l] = to_compute(p[l]);
    } else {
      for (int l = 0; l < lanes; ++l)
        r.e[l] = l < cnt ? to_compute(p[l * step]) : Acc(0);
    }
    return r;
  }
  template <class S>
  static void store(S* p, std::int64_t step, const Lanes& r, int cnt) {
    if (cnt == lanes && step == 1) {
      for (int l = 0; l < lanes; ++l)
        p[l] = from_compute<S>(r.e[l]);
    } else {
      for (int l = 0; l < cnt; ++l)
        p[l * step] = from_compute<S>(r.e[l]);
    }
  }

  bool interior(std::int64_t h0, std::int64_t w0) const {
    return h0 >= 0 && w0 >= 0 && h0 + alpha <= H && w0 + alpha <= W;
  }

 public:
  // The three steps, also for the shared-block pipeline's functors below.

  /// V of the block's nt tiles (positions at), for tiles [begin, end) in NHWC, channels
  /// [begin, end) in NCHW.
  void input(Acc* v, const WinogradTilePosition* at, std::int64_t nt, std::int64_t begin,
             std::int64_t end) const {
    Lanes d[alpha][alpha], out[alpha][alpha];
    if constexpr (L == Layout::NHWC) {  // V[xi](t, c): a tile's channels, vector by vector
      const std::int64_t plane = winograd_plane(nt * C);
      for (std::int64_t tl = begin; tl < end; ++tl) {
        const std::int64_t h0 = at[tl].p0 - pad_h, w0 = at[tl].q0 - pad_w;
        const T* px = x + at[tl].n * xs.n;
        const bool inside = interior(h0, w0);
        for (std::int64_t c0 = 0; c0 < C; c0 += lanes) {
          const int cnt = static_cast<int>(std::min<std::int64_t>(lanes, C - c0));
          for (int a = 0; a < alpha; ++a)
            for (int b = 0; b < alpha; ++b) {
              const std::int64_t h = h0 + a, w = w0 + b;
              d[a][b] = inside || (h >= 0 && h < H && w >= 0 && w < W)
                            ? load(px + h * xs.h + w * xs.w + c0 * xs.c, xs.c, cnt)
                            : Lanes(Acc(0));
            }
          Transform::input(d, out);
          Acc* dst = v + tl * C + c0;
          for (int a = 0; a < alpha; ++a)
            for (int b = 0; b < alpha; ++b)
              store(dst + (a * alpha + b) * plane, 1, out[a][b], cnt);
        }
      }
    } else {  // V[xi](c, t): a channel's tiles, a vector of tiles at a time
      const std::int64_t ntp = tiles_pad(nt), plane = winograd_plane(C * ntp);
      for (std::int64_t c = begin; c < end; ++c) {
        const T* pc = x + c * xs.c;
        for (std::int64_t tl0 = 0; tl0 < nt; tl0 += lanes) {
          const int cnt = static_cast<int>(std::min<std::int64_t>(lanes, nt - tl0));
          for (int l = 0; l < lanes; ++l) {
            if (l >= cnt) {  // the row's padding: zeros, so that Z's padding is too
              for (int a = 0; a < alpha; ++a)
                for (int b = 0; b < alpha; ++b)
                  d[a][b].e[l] = Acc(0);
              continue;
            }
            const WinogradTilePosition& t = at[tl0 + l];
            const std::int64_t h0 = t.p0 - pad_h, w0 = t.q0 - pad_w;
            const T* px = pc + t.n * xs.n;
            if (interior(h0, w0)) {
              const T* p = px + h0 * xs.h + w0 * xs.w;
              for (int a = 0; a < alpha; ++a)
                for (int b = 0; b < alpha; ++b)
                  d[a][b].e[l] = to_compute(p[a * xs.h + b * xs.w]);
            } else {
              for (int a = 0; a < alpha; ++a)
                for (int b = 0; b < alpha; ++b) {
                  const std::int64_t h = h0 + a, w = w0 + b;
                  d[a][b].e[l] = h >= 0 && h < H && w >= 0 && w < W
                                     ? to_compute(px[h * xs.h + w * xs.w])
                                     : Acc(0);
                }
            }
          }
          Transform::input(d, out);
          Acc* dst = v + c * ntp + tl0;
          for (int a = 0; a < alpha; ++a)
            for (int b = 0; b < alpha; ++b)
              store(dst + (a * alpha + b) * plane, 1, out[a][b], lanes);
        }
      }
    }
  }

  /// Z's filters [m0, m1) (NHWC: the columns to m1 rounded up to whole vectors) from U's
  /// part u_part (planes u_plane apart): NCHW its rows m0.., row length C; NHWC its
  /// columns m0.., rows of ldu.
  void gemms(const Acc* v, Acc* z, std::int64_t nt, std::int64_t m0, std::int64_t m1,
             const Acc* u_part, std::int64_t u_plane, std::int64_t ldu) const {
    if constexpr (L == Layout::NCHW) {  // Z (M x ntp) = U (M x C) V (C x ntp)
      const std::int64_t ntp = tiles_pad(nt);
      const std::int64_t v_plane = winograd_plane(C * ntp), z_plane = winograd_plane(M * ntp);
      for (int xi = 0; xi < a2; ++xi)
        winograd_host_gemm<Acc>(m1 - m0, ntp, C, u_part + xi * u_plane, ldu, v + xi * v_plane, ntp,
                                z + xi * z_plane + m0 * ntp, ntp);
    } else {  // Z (nt x m_pad) = V (nt x C) U (C x m_pad)
      const std::int64_t v_plane = winograd_plane(nt * C), z_plane = winograd_plane(nt * m_pad);
      const std::int64_t columns = round_up(m1, lanes) - m0;
      for (int xi = 0; xi < a2; ++xi)
        winograd_host_gemm<Acc>(nt, columns, C, v + xi * v_plane, C, u_part + xi * u_plane, ldu,
                                z + xi * z_plane + m0, m_pad);
    }
  }

  /// y's filters [m_begin, m_end) of the block's tiles from Z.
  void output(const Acc* z, const WinogradTilePosition* at, std::int64_t nt, std::int64_t m_begin,
              std::int64_t m_end) const {
    with_activation(activation, [&](auto act) {
      output_with<decltype(act)::value>(z, at, nt, m_begin, m_end);
    });
  }

 private:
  /// out = activation(out + bias), lane by lane.
  template <Activation Act>
  static void epilogue(Lanes (&out)[Tile][Tile], const Lanes& b) {
    for (int i = 0; i < Tile; ++i)
      for (int j = 0; j < Tile; ++j)
        for (int l = 0; l < lanes; ++l)
          out[i][j].e[l] = apply_activation(Act, out[i][j].e[l] + b.e[l]);
  }

  template <Activation Act>
  void output_with(const Acc* z, const WinogradTilePosition* at, std::int64_t nt,
                   std::int64_t m_begin, std::int64_t m_end) const {
    Lanes in[alpha][alpha], out[Tile][Tile];
    if constexpr (L == Layout::NHWC) {  // Z[xi](t, m), rows of m_pad
      const std::int64_t plane = winograd_plane(nt * m_pad);
      for (std::int64_t tl = 0; tl < nt; ++tl) {
        const WinogradTilePosition& t = at[tl];
        const int rows = static_cast<int>(std::min<std::int64_t>(Tile, P - t.p0));
        const int cols = static_cast<int>(std::min<std::int64_t>(Tile, Q - t.q0));
        Y* py = y + ys.offset(t.n, 0, t.p0, t.q0);
        for (std::int64_t m0 = m_begin; m0 < m_end; m0 += lanes) {
          const int cnt = static_cast<int>(std::min<std::int64_t>(lanes, m_end - m0));
          const Acc* src = z + tl * m_pad + m0;
          for (int a = 0; a < alpha; ++a)
            for (int b = 0; b < alpha; ++b)
              in[a][b] = load(src + (a * alpha + b) * plane, 1, lanes);
          Transform::output(in, out);
          epilogue<Act>(out,
                        bias ? load(bias + m0 * bias_stride, bias_stride, cnt) : Lanes(Acc(0)));
          for (int a = 0; a < rows; ++a)
            for (int b = 0; b < cols; ++b)
              store(py + a * ys.h + b * ys.w + m0 * ys.c, ys.c, out[a][b], cnt);
        }
      }
    } else {  // Z[xi](m, t), rows of tiles_pad(nt)
      const std::int64_t ntp = tiles_pad(nt), plane = winograd_plane(M * ntp);
      for (std::int64_t m = m_begin; m < m_end; ++m) {
        const Lanes bm(bias ? to_compute(bias[m * bias_stride]) : Acc(0));
        for (std::int64_t tl0 = 0; tl0 < nt; tl0 += lanes) {
          const int cnt = static_cast<int>(std::min<std::int64_t>(lanes, nt - tl0));
          const Acc* src = z + m * ntp + tl0;
          for (int a = 0; a < alpha; ++a)
            for (int b = 0; b < alpha; ++b)
              in[a][b] = load(src + (a * alpha + b) * plane, 1, lanes);
          Transform::output(in, out);
          epilogue<Act>(out, bm);
          for (int l = 0; l < cnt; ++l) {
            const WinogradTilePosition& t = at[tl0 + l];
            const int rows = static_cast<int>(std::min<std::int64_t>(Tile, P - t.p0));
            const int cols = static_cast<int>(std::min<std::int64_t>(Tile, Q - t.q0));
            Y* py = y + ys.offset(t.n, m, t.p0, t.q0);
            for (int a = 0; a < rows; ++a)
              for (int b = 0; b < cols; ++b)
                py[a * ys.h + b * ys.w] = from_compute<Y>(out[a][b].e[l]);
          }
        }
      }
    }
  }
};

/// The positions of a block's tiles t0, t0 + 1, ...: one work item per tile.
struct WinogradHostTilePositions {
  WinogradTilePosition* at;
  WinogradTileGrid grid;
  std::int64_t t0;
  void operator()(const std::int64_t tl) const {
    grid.locate(t0 + tl, at[tl].n, at[tl].p0, at[tl].q0);
  }
};

/// Pass 1 of the shared-block pipeline (WinogradPlan::host_fused_filters): the block's V,
/// once, shared by the threads; a work item per tile (NHWC) or channel (NCHW).
template <class Blocks>
struct WinogradHostSharedInput {
  Blocks blocks;
  typename Blocks::compute_type* v;
  const WinogradTilePosition* at;
  std::int64_t nt;
  void operator()(const std::int64_t i) const { blocks.input(v, at, nt, i, i + 1); }
};

/// Pass 2 of the shared-block pipeline: a work item per part of the filters transforms
/// them into its slot (U's part: U is never whole in memory), runs the alpha^2 GEMMs
/// against the shared V and transforms its products into y.
template <class Blocks, class W>
struct WinogradHostFilterParts {
  using Acc = typename Blocks::compute_type;
  static constexpr Layout L = Blocks::layout;
  Blocks blocks;
  const W* w;
  LogicalStrides ws;
  const Acc* v;
  const WinogradTilePosition* at;
  std::int64_t nt;
  unsigned char* slots;
  std::size_t slot_bytes, z_bytes;

  void operator()(const std::int64_t part) const {
    const int slot = blocks.token.acquire();
    unsigned char* base = slots + std::size_t(slot) * slot_bytes;
    Acc* z = reinterpret_cast<Acc*>(base);
    Acc* u_part = reinterpret_cast<Acc*>(base + z_bytes);
    const std::int64_t m0 = part * blocks.part_filters;
    const std::int64_t m1 = std::min(blocks.M, m0 + blocks.part_filters);
    // The part's U: NCHW rows of its m1 - m0 filters, NHWC columns of them in whole vectors.
    const std::int64_t width = L == Layout::NCHW ? m1 - m0 : round_up(m1 - m0, Blocks::lanes);
    const WinogradHostFilterTransform<L, Blocks::tile, W, Acc> filters{
        w + m0 * ws.n, ws, u_part, m1 - m0, blocks.C, width};
    for (std::int64_t i = 0; i < filters.items(); ++i)
      filters(i);
    blocks.gemms(v, z, nt, m0, m1, u_part, winograd_plane(width * blocks.C),
                 L == Layout::NCHW ? blocks.C : width);
    blocks.output(z, at, nt, m0, m1);
    blocks.token.release(slot);
  }
};

}  // namespace kcnn::Impl
