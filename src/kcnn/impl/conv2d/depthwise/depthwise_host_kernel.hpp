// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_host_kernel.hpp
/// \brief ConvAlgo::Depthwise on CPUs: an output row per work item, its inner loops
///        running over contiguous memory for the compiler's vectorizer.
///
/// A depthwise layer moves x and y once and does R x S multiply-adds per output, so the
/// kernels' job is to keep the cores streaming: no division or bounds check inside a
/// loop over outputs. The launch computes once the output columns [q_lo, q_hi) whose S
/// taps all lie inside x's rows (every column but a pad's width at each end); there the
/// loops run unchecked, and only the few columns outside take the checked path. Rows are
/// checked once per output row. Filter extents 3, 5 and 7 are compile-time (Taps), 0
/// takes R and S at run time. The activation is a compile-time parameter of the store
/// loops (with_activation). Accumulation in float (double for double), one rounding at
/// the store.
///
/// - NCHW (DepthwiseHostRowKernel): an output row (n, m, p) in chunks of Chunk columns.
///   At unit stride each interior column sums its window's S taps of a row in one pass
///   (the loop over columns is the vector loop; the taps' weights stay in registers).
/// - NHWC (DepthwiseHostPixelKernel): Rows output rows of an image for a span of Span
///   channels (their tap weights gathered once per item: w's channels are R S apart).
///   Float and double layers with contiguous channels, 3x3, 5x5 or 7x7 filters and
///   stride 1 or 2 along the row (no dilation there) run windowed blocks: 2 output rows
///   x 8 columns (AVX-512; AVX2 4 columns) of one vector of channels in registers, each
///   input vector loaded once per block and multiplied into every output it reaches.
///   Others (16-bit, run-time taps, dilated or longer row strides) walk blocks of Pixels
///   columns x Lanes channels (64 bytes: one cache line of x and y per column), each
///   tap's input loaded apart.
///
/// Measured on 2 cores of an AMD EPYC (Zen 5, AVX-512), N=8, 3x3 pad 1, bias and ReLU,
/// oneDNN 2.6 in the same kcnn_perf run (RESULTS.md, session 44, run 2): NCHW 2.9-6.5x
/// faster than oneDNN's NCHW; NHWC 1.03-1.15x with the windowed blocks, 0.49-0.80x
/// before them (the 128-channel layer's x and y, 26 MB, now move at 1.15x the run's copy
/// rate, oneDNN's at 1.0x).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../../types.hpp"
#include "../../arch/host_simd.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "depthwise_args.hpp"

namespace kcnn::Impl {

/// What every CPU depthwise kernel reads (filled by depthwise.hpp's launch_host): the
/// shared fields and the interior columns.
template <class T, class Y>
struct DepthwiseHostArgs : DepthwiseArgs<T, Y> {
  /// Interior columns: for q in [q_lo, q_hi), every tap's column lies in [0, W).
  std::int64_t q_lo, q_hi;
};

/// [q_lo, q_hi): the output columns q < Q whose taps q stride_w - pad_w + s dilation_w,
/// s = 0 .. S - 1, all lie in [0, W) (empty, q_lo = q_hi, where none does).
inline void interior_columns(const Conv2dProblem& pb, std::int64_t& q_lo, std::int64_t& q_hi) {
  // In 64 bits: the padding and stride may each be INT_MAX.
  const std::int64_t pad = pb.pad_w, stride = pb.stride_w, dilation = pb.dilation_w;
  q_lo = std::min<std::int64_t>((pad + stride - 1) / stride, pb.Q);
  const std::int64_t last = pb.W - 1 + pad - (pb.S - 1) * dilation;
  q_hi = last < 0 ? 0 : std::min<std::int64_t>(last / stride + 1, pb.Q);
  q_hi = std::max(q_hi, q_lo);
}

/// NCHW: a work item is one output row (n, m, p), in chunks of Chunk columns.
template <int Taps, class T_, class Y_>
struct DepthwiseHostRowKernel : DepthwiseHostArgs<T_, Y_> {
  using Base = DepthwiseHostArgs<T_, Y_>;
  using typename Base::Acc;
  using typename Base::T;
  using typename Base::Y;
  static constexpr Layout layout = Layout::NCHW;
  static constexpr int Chunk = 64;

  std::int64_t items() const { return this->N * this->M * this->P; }

  void operator()(const std::int64_t i) const {
    const Base& a = *this;
    const std::int64_t plane = i / a.P, p = i - plane * a.P;
    const std::int64_t n = plane / a.M, m = plane - n * a.M;
    const std::int64_t c = a.multiplier == 1 ? m : m / a.multiplier;
    const T* const xc = a.x + n * a.xs.n + c * a.xs.c;
    const T* const wm = a.w + m * a.ws.n;
    const int RR = Taps ? Taps : a.R, SS = Taps ? Taps : a.S;
    Acc wl[Taps ? Taps * Taps : 1];
    if constexpr (Taps > 0) {
      for (int r = 0; r < Taps; ++r)
        for (int s = 0; s < Taps; ++s)
          wl[r * Taps + s] = Acc(wm[r * a.ws.h + s * a.ws.w]);
    }
    auto weight = [&](int r, int s) {
      if constexpr (Taps > 0) return wl[r * Taps + s];
      return Acc(wm[r * a.ws.h + s * a.ws.w]);
    };
    const bool unit = a.stride_w == 1 && a.xs.w == 1;
    const Acc b = a.bias_of(m);
    Y* const yr = a.y + n * a.ys.n + m * a.ys.c + p * a.ys.h;
    for (std::int64_t q0 = 0; q0 < a.Q; q0 += Chunk) {
      const std::int64_t q1 = std::min<std::int64_t>(q0 + Chunk, a.Q);
      const std::int64_t lo = std::clamp(a.q_lo, q0, q1), hi = std::clamp(a.q_hi, lo, q1);
      Acc acc[Chunk];
      for (int j = 0; j < Chunk; ++j)
        acc[j] = 0;
      for (int r = 0; r < RR; ++r) {
        const std::int64_t h = a.row(p, r);
        if (h < 0 || h >= a.H) continue;
        const T* const xr = xc + h * a.xs.h;
        if (Taps > 0 && unit) {  // one pass: the loop over columns vectorizes
          const std::int64_t shift = -a.pad_w;
          KCNN_HOST_SIMD
          for (std::int64_t q = lo; q < hi; ++q) {
            Acc sum = 0;
            for (int s = 0; s < Taps; ++s)
              sum += weight(r, s) * Acc(xr[q + shift + std::int64_t(s) * a.dilation_w]);
            acc[q - q0] += sum;
          }
        } else {
          for (int s = 0; s < SS; ++s) {
            const Acc wv = weight(r, s);
            for (std::int64_t q = lo; q < hi; ++q)
              acc[q - q0] += wv * Acc(xr[a.column(q, s) * a.xs.w]);
          }
        }
        // The columns whose window crosses x's left or right edge.
        auto border = [&](std::int64_t qa, std::int64_t qb) {
          for (std::int64_t q = qa; q < qb; ++q)
            for (int s = 0; s < SS; ++s) {
              const std::int64_t col = a.column(q, s);
              if (col >= 0 && col < a.W) acc[q - q0] += weight(r, s) * Acc(xr[col * a.xs.w]);
            }
        };
        border(q0, lo);
        border(hi, q1);
      }
      with_activation(a.activation, [&](auto act) {
        constexpr Activation Act = decltype(act)::value;
        if (a.ys.w == 1) {
          KCNN_HOST_SIMD
          for (std::int64_t q = q0; q < q1; ++q)
            yr[q] = from_compute<Y>(apply_activation(Act, acc[q - q0] + b));
        } else {
          for (std::int64_t q = q0; q < q1; ++q)
            yr[q * a.ys.w] = from_compute<Y>(apply_activation(Act, acc[q - q0] + b));
        }
      });
    }
  }
};

/// NHWC: a work item is Rows output rows of an image for a span of Span channels (their
/// tap weights gathered once per item: w's channels are R S apart). Each row is walked
/// in blocks of Pixels columns, each block over the span's Lanes-channel blocks (a
/// pixel's channels are contiguous: x and y stream through memory).
template <int Taps, class T_, class Y_>
struct DepthwiseHostPixelKernel : DepthwiseHostArgs<T_, Y_> {
  using Base = DepthwiseHostArgs<T_, Y_>;
  using typename Base::Acc;
  using typename Base::T;
  using typename Base::Y;
  static constexpr Layout layout = Layout::NHWC;
  static constexpr int Lanes = 64 / sizeof(Acc), Pixels = 4, Span = 8 * Lanes, Rows = 8;

  std::int64_t spans() const { return (this->M + Span - 1) / Span; }
  std::int64_t row_blocks() const { return (this->P + Rows - 1) / Rows; }
  std::int64_t items() const { return this->N * row_blocks() * spans(); }

  void operator()(const std::int64_t i) const {
    const Base& a = *this;
    const std::int64_t image_item = i / spans(), m0 = (i - image_item * spans()) * Span;
    const std::int64_t n = image_item / row_blocks();
    const std::int64_t p0 = (image_item - n * row_blocks()) * Rows;
    const std::int64_t p1 = std::min<std::int64_t>(p0 + Rows, a.P);
    const int span = static_cast<int>(std::min<std::int64_t>(Span, a.M - m0));
    // x's and y's channels contiguous, output channel m reading input channel m.
    const bool unit = a.multiplier == 1 && a.xs.c == 1 && a.ys.c == 1;
    Acc wl[Taps ? Taps * Taps : 1][Span];  // tap t's weight of channel m0 + j: wl[t][j]
    // Channel by channel: a channel's taps are adjacent in w.
    if constexpr (Taps > 0) {
      for (int j = 0; j < span; ++j) {
        const T* const wm = a.w + (m0 + j) * a.ws.n;
        KCNN_HOST_UNROLL
        for (int r = 0; r < Taps; ++r) {
          KCNN_HOST_UNROLL
          for (int s = 0; s < Taps; ++s)
            wl[r * Taps + s][j] = Acc(wm[r * a.ws.h + s * a.ws.w]);
        }
      }
    }
    Acc bl[Span];
    for (int j = 0; j < span; ++j)
      bl[j] = a.bias_of(m0 + j);
    if constexpr (kWindowTypes) {
      if (window_blocks_serve(unit)) {
        if (a.stride_h == 1 && a.dilation_h == 1) {
          for (std::int64_t p = p0; p < p1; p += WindowRows) {
            const int rows = static_cast<int>(std::min<std::int64_t>(WindowRows, p1 - p));
            window_rows<WindowRows>(n, p, rows, m0, span, wl, bl);
          }
        } else {
          for (std::int64_t p = p0; p < p1; ++p)
            window_rows<1>(n, p, 1, m0, span, wl, bl);
        }
        return;
      }
    }
    for (std::int64_t p = p0; p < p1; ++p) {
      // Whether all the window's rows lie inside x (the interior blocks then check none).
      const bool rows_inside = Taps > 0 && a.row(p, 0) >= 0 && a.row(p, Taps - 1) < a.H;
      // Blocks of Pixels columns from q_lo on unchecked; the edges' columns one by one.
      for (std::int64_t q0 = 0; q0 < a.Q;) {
        const bool interior = q0 >= a.q_lo && q0 + Pixels <= a.q_hi;
        const int step = interior ? Pixels : 1;
        for (int j = 0; j < span; j += Lanes) {
          const int lanes = std::min(Lanes, span - j);
          if (Taps > 0 && unit && interior && lanes == Lanes) {
            with_activation(a.activation, [&](auto act) {
              constexpr Activation Act = decltype(act)::value;
              if (rows_inside) {
                interior_pixels<true, Act>(n, p, q0, m0 + j, wl, j, bl + j);
              } else {
                interior_pixels<false, Act>(n, p, q0, m0 + j, wl, j, bl + j);
              }
            });
          } else if (unit && lanes == Lanes) {
            for (int o = 0; o < step; ++o)
              edge_pixel<true>(n, p, q0 + o, m0 + j, Lanes, wl, j, bl + j);
          } else {
            for (int o = 0; o < step; ++o)
              edge_pixel<false>(n, p, q0 + o, m0 + j, lanes, wl, j, bl + j);
          }
        }
        q0 += step;
      }
    }
  }

  using Vec = HostVector<Acc>;
  /// A windowed block: WindowRows output rows (at unit row stride and dilation; one
  /// otherwise) x WindowPixels output columns of one vector of channels, one accumulator
  /// each; a row's Taps weights and the input value in flight beside them (AVX-512,
  /// 7x7: 16 + 14 + 1 of the 32 registers). Measured (RESULTS.md, session 44: N = 8,
  /// 3x3, 5x5 and 7x7 filters on 128 ch 56x56, 256 ch 28x28 and 512 ch 14x14, 2 cores of
  /// an AMD EPYC Zen 5): on AVX-512 2 x 8 ran in 0.66-0.87x the time of 1 x 8 (3 x 6,
  /// 3 x 8, 4 x 4 and 2 x 12 within the machine's noise of it); on AVX2 (the same CPU,
  /// -march=x86-64-v3) 2 x 4 in 0.8-0.95x the time of 1 x 8 and of 1 x 6.
  static constexpr int WindowRows = 2;
  static constexpr int WindowPixels = kHostVectorRegisters >= 32 ? 8 : 4;

  /// Whether windowed blocks compute this launch: at compile time, float or double
  /// tensors stored as computed (HostVector's loads and stores) and compile-time taps; at
  /// run time, contiguous channels read one-to-one (`unit`), no dilation along the row
  /// and stride 1 or 2 there.
  static constexpr bool kStoredAsComputed = std::is_same_v<T, Acc> && std::is_same_v<Y, Acc>;
  static constexpr bool kWindowTypes =
      kHostVectorIntrinsics && kStoredAsComputed && (Taps > 0) && Lanes % Vec::lanes == 0;
  bool window_blocks_serve(bool unit) const {
    return unit && this->dilation_w == 1 && (this->stride_w == 1 || this->stride_w == 2);
  }

  /// Output rows p .. p + BlockRows - 1 (the first `rows` of them stored) of image n,
  /// channels [m0, m0 + span), in windowed blocks of WindowPixels columns (the last one
  /// possibly short); each block checks its window's columns against x's edges only where
  /// one crosses them. Channels past the span's last full Lanes take the per-pixel path.
  template <int BlockRows>
  void window_rows(std::int64_t n, std::int64_t p, int rows, std::int64_t m0, int span,
                   const Acc (*wl)[Span], const Acc* bl) const {
    const Base& a = *this;
    for (std::int64_t q0 = 0; q0 < a.Q; q0 += WindowPixels) {
      const int count = static_cast<int>(std::min<std::int64_t>(WindowPixels, a.Q - q0));
      const bool interior = q0 >= a.q_lo && q0 + WindowPixels <= a.q_hi;
      for (int j = 0; j < span; j += Lanes) {
        if (span - j < Lanes) {
          for (int k = 0; k < rows; ++k)
            for (int o = 0; o < count; ++o)
              edge_pixel<false>(n, p + k, q0 + o, m0 + j, span - j, wl, j, bl + j);
          continue;
        }
        for (int v = 0; v < Lanes; v += Vec::lanes) {
          auto block = [&](auto stride, auto inside) {
            window_block<BlockRows, decltype(stride)::value, decltype(inside)::value>(
                n, p, rows, q0, count, m0 + j + v, wl, j + v, bl + j + v);
          };
          using One = std::integral_constant<int, 1>;
          using Two = std::integral_constant<int, 2>;
          if (interior) {
            a.stride_w == 1 ? block(One{}, std::true_type{}) : block(Two{}, std::true_type{});
          } else {
            a.stride_w == 1 ? block(One{}, std::false_type{}) : block(Two{}, std::false_type{});
          }
        }
      }
    }
  }

  /// WindowPixels output columns q0 .. (the first `count` stored) of BlockRows output rows
  /// p .. (the first `rows` stored; more than one only at unit row stride and dilation)
  /// for the Vec::lanes channels m0 .. (j .. in the span's wl), at column stride Stride:
  /// each input column of the window is loaded once per input row and feeds every output
  /// it reaches (at stride 1 a 3x3 window's 10 columns feed 8 outputs with 24 FMAs a
  /// row), the accumulators one vector per output. The window's rows, columns and taps
  /// are compile-time (index sequences), so the accumulators stay in registers.
  /// Interior: every column of the window lies in [0, W) (no checks).
  template <int BlockRows, int Stride, bool Interior>
  void window_block(std::int64_t n, std::int64_t p, int rows, std::int64_t q0, int count,
                    std::int64_t m0, const Acc (*wl)[Span], int j, const Acc* bl) const {
    constexpr int Columns = (WindowPixels - 1) * Stride + Taps;
    using V = typename Vec::type;
    const Base& a = *this;
    V acc[BlockRows][WindowPixels];
    for_each_index<BlockRows>([&](auto k) KCNN_HOST_INLINE_LAMBDA {
      for_each_index<WindowPixels>([&](auto o)
                                       KCNN_HOST_INLINE_LAMBDA { acc[k][o] = Vec::zero(); });
    });
    // Offsets in 64 bits and pointers formed only for rows and columns inside x: the
    // window's first column c0 may lie a padding's width before it.
    const std::int64_t c0 = a.column(q0, 0);
    // Input row i of the block meets output row k through filter row i - k (BlockRows >
    // 1: unit row stride and dilation, so that row(p, i) is row(p + k, i - k)).
    for_each_index<Taps + BlockRows - 1>([&](auto i) KCNN_HOST_INLINE_LAMBDA {
      constexpr int I = decltype(i)::value;
      const std::int64_t h = a.row(p, I);
      if (h < 0 || h >= a.H) return;
      const T* const xr = a.x + (n * a.xs.n + h * a.xs.h + m0);
      V wr[BlockRows][Taps];
      for_each_index<BlockRows>([&](auto k) KCNN_HOST_INLINE_LAMBDA {
        constexpr int r = I - decltype(k)::value;
        if constexpr (r >= 0 && r < Taps) {
          for_each_index<Taps>([&](auto s) KCNN_HOST_INLINE_LAMBDA {
            wr[k][s] = Vec::load_unaligned(wl[r * Taps + s] + j);
          });
        }
      });
      for_each_index<Columns>([&](auto c) KCNN_HOST_INLINE_LAMBDA {
        constexpr int Col = decltype(c)::value;
        if (!Interior && (c0 + Col < 0 || c0 + Col >= a.W)) return;
        const V xv = Vec::load_unaligned(xr + (c0 + Col) * a.xs.w);
        for_each_index<BlockRows>([&](auto k) KCNN_HOST_INLINE_LAMBDA {
          constexpr int r = I - decltype(k)::value;
          if constexpr (r >= 0 && r < Taps) {
            for_each_index<Taps>([&](auto s) KCNN_HOST_INLINE_LAMBDA {
              constexpr int offset = Col - decltype(s)::value;
              constexpr int o = offset / Stride;
              if constexpr (offset >= 0 && offset % Stride == 0 && o < WindowPixels)
                acc[k][o] = Vec::fma(wr[k][s], xv, acc[k][o]);
            });
          }
        });
      });
    });
    alignas(64) Acc sums[BlockRows][WindowPixels][Vec::lanes];
    for_each_index<BlockRows>([&](auto k) KCNN_HOST_INLINE_LAMBDA {
      for_each_index<WindowPixels>(
          [&](auto o) KCNN_HOST_INLINE_LAMBDA { Vec::store(sums[k][o], acc[k][o]); });
    });
    Y* const yp = a.y + n * a.ys.n + p * a.ys.h + q0 * a.ys.w + m0;
    with_activation(a.activation, [&](auto act) {
      constexpr Activation Act = decltype(act)::value;
      for (int k = 0; k < rows; ++k)
        for (int o = 0; o < count; ++o) {
          KCNN_HOST_SIMD
          for (int l = 0; l < Vec::lanes; ++l)
            yp[k * a.ys.h + o * a.ys.w + l] =
                from_compute<Y>(apply_activation(Act, sums[k][o][l] + bl[l]));
        }
    });
  }

  /// Calls f(std::integral_constant<int, i>) for i = 0 .. Count - 1, each index a
  /// compile-time constant.
  template <int Count, class F>
  static KCNN_HOST_FORCEINLINE void for_each_index(F&& f) {
    for_each_index_of(f, std::make_integer_sequence<int, Count>{});
  }
  template <class F, int... I>
  static KCNN_HOST_FORCEINLINE void for_each_index_of(F& f, std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }

  /// Tap (r, s)'s weight of output channel m0 + l (j + l in the span's gathered wl).
  Acc weight(const Acc (*wl)[Span], int j, std::int64_t m0, int l, int r, int s) const {
    if constexpr (Taps > 0) return wl[r * Taps + s][j + l];
    return Acc(this->w[(m0 + l) * this->ws.n + r * this->ws.h + s * this->ws.w]);
  }

  /// Pixels interior columns q0 .. of row (n, p) for the Lanes contiguous channels
  /// m0 .., the window's rows all inside x where RowsInside. Every index a compile-time
  /// constant, the loops unrolled and (RowsInside) free of branches, so that the
  /// Pixels x Lanes accumulators stay in registers (GCC kept them on the stack, a load
  /// and a store around every FMA, with a run-time pixel count, the tap loops rolled or
  /// a row check between taps: perf, session 38). The next blocks' input columns are
  /// prefetched (the hardware prefetchers did not keep up: 13 -> 7 ms on Zen 3).
  template <bool RowsInside, Activation Act>
  void interior_pixels(std::int64_t n, std::int64_t p, std::int64_t q0, std::int64_t m0,
                       const Acc (*wl)[Span], int j, const Acc* bl) const {
    const Base& a = *this;
    Acc acc[Pixels][Lanes] = {};
    const T* const xq = a.x + n * a.xs.n + a.column(q0, 0) * a.xs.w + m0;
    const std::int64_t pixel_step = a.stride_w * a.xs.w, tap_step = a.dilation_w * a.xs.w;
    KCNN_HOST_UNROLL
    for (int r = 0; r < Taps; ++r) {
      const std::int64_t h = a.row(p, r);
      if (!RowsInside && (h < 0 || h >= a.H)) continue;
      const T* const xr = xq + h * a.xs.h;
      KCNN_HOST_UNROLL
      for (int o = 0; o < Pixels; ++o)
        KCNN_HOST_PREFETCH(xr + (o + 2 * Pixels + Taps - 1) * pixel_step);
      KCNN_HOST_UNROLL
      for (int s = 0; s < Taps; ++s) {
        const Acc* const wv = wl[r * Taps + s] + j;
        KCNN_HOST_UNROLL
        for (int o = 0; o < Pixels; ++o) {
          const T* const xp = xr + o * pixel_step + s * tap_step;
          KCNN_HOST_SIMD
          for (int l = 0; l < Lanes; ++l)
            acc[o][l] += wv[l] * Acc(xp[l]);
        }
      }
    }
    Y* const yp = a.y + n * a.ys.n + p * a.ys.h + q0 * a.ys.w + m0;
    KCNN_HOST_UNROLL
    for (int o = 0; o < Pixels; ++o) {
      KCNN_HOST_SIMD
      for (int l = 0; l < Lanes; ++l)
        yp[o * a.ys.w + l] = from_compute<Y>(apply_activation(Act, acc[o][l] + bl[l]));
    }
  }

  /// One column q of row (n, p) whose window may cross x's edges (or any column where
  /// the interior path does not apply), `lanes` channels. Contiguous: lanes = Lanes and
  /// `unit` (contiguous loads; through an index array the compiler gathers, 10x slower
  /// on Zen 3).
  template <bool Contiguous>
  void edge_pixel(std::int64_t n, std::int64_t p, std::int64_t q, std::int64_t m0, int lanes,
                  const Acc (*wl)[Span], int j, const Acc* bl) const {
    const Base& a = *this;
    const int RR = Taps ? Taps : a.R, SS = Taps ? Taps : a.S;
    std::int64_t x_channel[Lanes];  // offset of lane l's input channel in a pixel
    if constexpr (!Contiguous) {
      for (int l = 0; l < lanes; ++l)
        x_channel[l] = ((m0 + l) / a.multiplier) * a.xs.c;
    }
    Acc acc[Lanes] = {};
    KCNN_HOST_UNROLL
    for (int r = 0; r < RR; ++r) {
      const std::int64_t h = a.row(p, r);
      if (h < 0 || h >= a.H) continue;
      const T* const xr = a.x + n * a.xs.n + h * a.xs.h;
      KCNN_HOST_UNROLL
      for (int s = 0; s < SS; ++s) {
        const std::int64_t col = a.column(q, s);
        if (col < 0 || col >= a.W) continue;
        const T* const xp = xr + col * a.xs.w;
        if constexpr (Contiguous) {
          KCNN_HOST_SIMD
          for (int l = 0; l < Lanes; ++l)
            acc[l] += weight(wl, j, m0, l, r, s) * Acc(xp[m0 + l]);
        } else {
          for (int l = 0; l < lanes; ++l)
            acc[l] += weight(wl, j, m0, l, r, s) * Acc(xp[x_channel[l]]);
        }
      }
    }
    Y* const yp = a.y + n * a.ys.n + p * a.ys.h + q * a.ys.w + m0 * a.ys.c;
    with_activation(a.activation, [&](auto act) {
      constexpr Activation Act = decltype(act)::value;
      if constexpr (Contiguous) {
        KCNN_HOST_SIMD
        for (int l = 0; l < Lanes; ++l)
          yp[l] = from_compute<Y>(apply_activation(Act, acc[l] + bl[l]));
      } else {
        for (int l = 0; l < lanes; ++l)
          yp[l * a.ys.c] = from_compute<Y>(apply_activation(Act, acc[l] + bl[l]));
      }
    });
  }
};

}  // namespace kcnn::Impl
