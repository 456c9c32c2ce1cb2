// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/grouped/grouped_kernel.hpp
/// \brief ConvAlgo::Grouped's kernels: a direct convolution for groups with few channels
///        (ResNeXt's 32 groups of 4-32 channels), the whole grouped problem in one launch.
///
/// Why not a GEMM per group: a group of 8 channels and 8 filters is a GEMM with K = 72
/// and M = 8, far too small for a tensor-core or register-blocked GEMM tile, and 32
/// launches of them leave the GPU idle between groups (session 37: 0.505 ms for the
/// 256-channel 28x28 ResNeXt layer, 9% of the copy rate). The layer's arithmetic is
/// small (72 multiply-adds an output): what it needs is every input value loaded once
/// per thread and reused from registers.
///
/// The work is split in "slots": a group g and a block of `Outputs` of its filters (8;
/// 4 where a group has at most 4: grouped_slot_filters).
/// A first kernel packs each slot's filters into the workspace as [channel][r][s][output]
/// (GroupedPackFilters), a tap's outputs adjacent: 16-byte loads (two for 8 float
/// filters), the same address for the whole warp (one L1 transaction). Then a thread
/// computes an item: 4 output pixels (grouped_item_shape) for the slot's filters (8: 32
/// accumulators). Per
/// input channel (NHWC: per Vec channels and filter row) it loads the item's input
/// window once into registers; each loaded value then meets every tap and filter that
/// reads it. NHWC loads 16 bytes of the group's channels at once (Vec channels: 4 float,
/// 8 half) where the tensors allow.
///
/// Why not team scratch for the filters: Kokkos 3.4 launches every TeamPolicy kernel
/// preferring shared memory, which leaves an H200's SM 23 KB of L1 cache; the NHWC
/// kernel's L1 hit rate was 21% there (ncu, session 41). A RangePolicy launch prefers
/// L1, and the filters, read by every warp of a slot, stay in it. Measured (H200, N =
/// 64, 256 channels 28x28, 32 groups; session 41): team-scratch filters, NCHW items of 4
/// columns 0.142 / NHWC 0.209 ms; NCHW items of 4 rows 0.114; packed filters in global
/// memory 0.111 / 0.162 (NHWC L1 hit rate 57%). Both then issue from about a quarter of
/// the SM's warp slots (128 registers a thread); NHWC is bound by its L1 transactions
/// (a warp's 16-byte load touches 32 pixels).
///
/// Four consecutive warps (a 128-thread block) take the same slot and four consecutive
/// runs of 32 items; the next blocks the other slots of the same pixels, so that the
/// input lines one group reads are read by the next groups at about the same time (NHWC:
/// a 128-byte line holds four float groups of 8 channels).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"

namespace kcnn::Impl {

/// What ConvAlgo::Grouped's kernels read: the operands as pointers and logical element
/// strides (w's "n" is the output channel), the geometry, the work split.
template <class T_, class Y_>
struct GroupedArgs {
  using T = T_;
  using Y = Y_;
  using Acc = accumulator_t<T>;
  /// Filters a slot (and each thread) computes: grouped_slot_filters.
  int outputs;
  /// Output pixels an item computes: Rows x Cols of them (grouped_item_shape).
  static constexpr int Pixels = 4;
  /// Warps of consecutive items a slot's block holds (GPU blocks are 128 threads).
  static constexpr int Warps = 4;

  const T* x;
  const T* w;
  const T* bias;  ///< nullptr: none
  Y* y;
  Acc* packed;  ///< the slots' filters (GroupedPackFilters)
  LogicalStrides xs, ws, ys;
  std::int64_t bias_stride;
  std::int64_t H, W, P, Q;
  int group_c, group_m;  ///< channels and filters per group (C / groups, M / groups)
  int slot_blocks;       ///< slots per group: group_m / Outputs, rounded up
  std::int64_t slots;    ///< groups x slot_blocks
  int R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  Activation activation;
  std::int64_t col_blocks;   ///< Q / Cols, rounded up
  std::int64_t image_items;  ///< items of one image: P / Rows (rounded up) x col_blocks
  std::int64_t items;        ///< N x image_items: a slot's items
  std::int64_t runs;         ///< items / (Warps x 32), rounded up
  bool vector_y = false;     ///< NHWC: an item's Outputs channels are aligned vectors of y

  /// Packed values of a slot: channels x taps x outputs.
  KOKKOS_INLINE_FUNCTION std::int64_t slot_entries() const {
    return std::int64_t(group_c) * R * S * outputs;
  }
  /// Threads of the convolution kernel: slots x runs x Warps x 32.
  std::int64_t threads() const { return slots * runs * Warps * 32; }
  KOKKOS_INLINE_FUNCTION Acc bias_of(std::int64_t m) const {
    return bias ? Acc(bias[m * bias_stride]) : Acc(0);
  }
};

/// The filters a slot holds: 8, or 4 where a group has at most 4 (groups of 4 filters
/// would leave half of 8 unused). On an H200 (session 41, N = 64, 3x3, 32 groups of 4
/// channels and filters, 128 x 56^2, NCHW / NHWC), slots of 4 took it from 0.231 to
/// 0.143 ms / from 0.495 to 0.436 (kGroupedMinBlocks).
inline int grouped_slot_filters(std::int64_t group_filters) {
  return group_filters <= 4 ? 4 : 8;
}

/// packed[(slot (C/G) R S + (c R + r) S + s) outputs + o] = w(g M/G + b outputs + o, c,
/// r, s) for slot = g slot_blocks + b; 0 past the group's filters.
template <class T, class Y>
struct GroupedPackFilters {
  GroupedArgs<T, Y> a;
  std::int64_t items() const { return a.slots * a.slot_entries(); }
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t e) const {
    const int Outputs = a.outputs;
    const std::int64_t slot = e / a.slot_entries();
    const int rest = static_cast<int>(e % a.slot_entries());
    const int o = rest % Outputs, tap = rest / Outputs;
    const int s = tap % a.S, r = (tap / a.S) % a.R, c = tap / (a.R * a.S);
    const std::int64_t g = slot / a.slot_blocks;
    const int mg = static_cast<int>(slot % a.slot_blocks) * Outputs + o;  // within the group
    const std::int64_t m = g * a.group_m + mg;
    a.packed[e] = mg < a.group_m ? typename GroupedArgs<T, Y>::Acc(
                                       a.w[m * a.ws.n + c * a.ws.c + r * a.ws.h + s * a.ws.w])
                                 : typename GroupedArgs<T, Y>::Acc(0);
  }
};

/// An item's pixels: NCHW 4 rows of one column (neighbouring threads take neighbouring
/// columns, so that a warp's load of a window value is 32 adjacent floats: one or two
/// 128-byte lines), NHWC 4 columns of one row (a pixel's group channels are one 16-byte
/// load or two whatever the pixel; along a row the window's columns are shared).
struct GroupedItemShape {
  int rows, cols;
};
constexpr GroupedItemShape grouped_item_shape(Layout layout) {
  return layout == Layout::NCHW ? GroupedItemShape{4, 1} : GroupedItemShape{1, 4};
}

/// Taps: 3 (R = S = 3, no dilation, stride Stride in both directions: each input value of
/// the item's window loaded once) or 0 (any filter, stride and dilation at run time: each
/// tap's pixels loaded on their own). Vec: NHWC channels loaded at once (the group's
/// channels are Vec-aligned vectors: checked by the launch); 1 otherwise. Outputs: the
/// slot's filters (args.outputs).
template <Layout L, int Taps, int Stride, int Vec, int Outputs, class T_, class Y_>
struct GroupedKernel : GroupedArgs<T_, Y_> {
  using Base = GroupedArgs<T_, Y_>;
  using Base::dilation_h, Base::dilation_w, Base::slots, Base::col_blocks, Base::image_items;
  using Base::H, Base::W, Base::P, Base::Q, Base::group_c, Base::group_m, Base::slot_blocks;
  using Base::items, Base::vector_y;
  using Base::Pixels, Base::Warps;
  using Base::R, Base::S, Base::stride_h, Base::stride_w, Base::pad_h, Base::pad_w;
  using Base::x, Base::y, Base::xs, Base::ys, Base::bias, Base::activation, Base::packed;
  using typename Base::Acc;
  using typename Base::T;
  using typename Base::Y;
  static constexpr int Rows = grouped_item_shape(L).rows, Cols = grouped_item_shape(L).cols;
  static_assert(Rows * Cols == Pixels, "an item is Pixels outputs");
  static_assert(Vec == 1 || L == Layout::NHWC, "channel vectors are NHWC's");
  static_assert(Taps == 0 || Stride > 0, "a compile-time filter has a compile-time stride");
  /// Weights a 16-byte load holds.
  static constexpr int WVec = kVectorAccessBytes / sizeof(Acc);
  static_assert(Outputs % WVec == 0, "a tap's outputs are whole 16-byte vectors");
  /// The input window of an item with the compile-time filter.
  static constexpr int window_rows = (Rows - 1) * Stride + Taps;
  static constexpr int window_cols = (Cols - 1) * Stride + Taps;

  /// Thread i: lane i % 32 of warp k = (i / 32) % Warps of slot (i / (32 Warps)) % slots,
  /// run i / (32 Warps slots); its item: (run Warps + k) 32 + lane.
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    constexpr int block = Warps * 32;
    const std::int64_t b = i / block, slot = b % slots, run = b / slots;
    const std::int64_t item = run * block + i % block;
    if (item >= items) return;
    const std::int64_t g = slot / slot_blocks;
    const int m0 = static_cast<int>(slot % slot_blocks) * Outputs;  // within the group
    compute(item, g, m0, packed + slot * this->slot_entries());
  }

  /// Item i: image n, rows p0 .. p0 + Rows - 1, columns q0 .. q0 + Cols - 1, the slot's
  /// Outputs filters.
  KOKKOS_INLINE_FUNCTION void compute(std::int64_t i, std::int64_t g, int m0,
                                      const Acc* filters) const {
    const std::int64_t n = i / image_items, rest = i % image_items;
    const std::int64_t p0 = rest / col_blocks * Rows, q0 = rest % col_blocks * Cols;
    Acc acc[Pixels][Outputs];
    KCNN_DEVICE_UNROLL
    for (int t = 0; t < Pixels; ++t)
      KCNN_DEVICE_UNROLL
    for (int o = 0; o < Outputs; ++o)
      acc[t][o] = 0;
    const T* const xg = x + n * xs.n + g * group_c * xs.c;
    const std::int64_t h0 = p0 * stride_h - pad_h, w0 = q0 * stride_w - pad_w;
    if constexpr (Taps != 0) {
      accumulate_window(xg, h0, w0, filters, acc);
    } else {
      accumulate_taps(xg, h0, w0, filters, acc);
    }
    store(n, g, m0, p0, q0, acc);
  }

  /// Vec channels of the input at xp, or zeros where `inside` is false.
  KOKKOS_INLINE_FUNCTION static void load(bool inside, const T* xp, Acc (&v)[Vec]) {
    if (!inside) {
      KCNN_DEVICE_UNROLL
      for (int k = 0; k < Vec; ++k)
        v[k] = 0;
    } else if constexpr (Vec == 1) {
      v[0] = Acc(*xp);
    } else {
      const auto vec = *reinterpret_cast<const AlignedVec<T, Vec>*>(xp);
      KCNN_DEVICE_UNROLL
      for (int k = 0; k < Vec; ++k)
        v[k] = Acc(vec.v[k]);
    }
  }

  /// acc[t][o] += tap[o] * value[t] for the Outputs weights of one tap (16-byte loads,
  /// the same address for the whole warp).
  KOKKOS_INLINE_FUNCTION static void multiply_add(const Acc* tap, const Acc (&value)[Pixels],
                                                  Acc (&acc)[Pixels][Outputs]) {
    KCNN_DEVICE_UNROLL
    for (int b = 0; b < Outputs / WVec; ++b) {
      const auto wv = reinterpret_cast<const AlignedVec<Acc, WVec>*>(tap)[b];
      KCNN_DEVICE_UNROLL
      for (int t = 0; t < Pixels; ++t)
        KCNN_HOST_SIMD
      for (int k = 0; k < WVec; ++k)
        acc[t][b * WVec + k] += wv.v[k] * value[t];
    }
  }

  /// Taps x Taps filter, stride Stride, no dilation. The tests of a window row or column
  /// against x's extents make the loads conditional instead of skipping them, so that
  /// the compiler may issue the loads of the next window rows early.
  ///  - NCHW (one column, 4 rows): per channel the whole window (3 columns x 6 rows at
  ///    stride 1) is loaded, then each tap's weights meet the 4 pixels.
  ///  - NHWC (one row, 4 columns): per Vec channels and filter row, the row's window
  ///    (6 columns at stride 1, Vec channels each) is loaded.
  KOKKOS_INLINE_FUNCTION void accumulate_window(const T* xg, std::int64_t h0, std::int64_t w0,
                                                const Acc* filters,
                                                Acc (&acc)[Pixels][Outputs]) const {
    bool row_inside[window_rows], col_inside[window_cols];
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < window_rows; ++k)
      row_inside[k] = h0 + k >= 0 && h0 + k < H;
    KCNN_DEVICE_UNROLL
    for (int j = 0; j < window_cols; ++j)
      col_inside[j] = w0 + j >= 0 && w0 + j < W;
    // The window's origin may lie in the padding: only inside values are read.
    const T* const origin = xg + h0 * xs.h + w0 * xs.w;
    for (int c = 0; c < group_c; c += Vec) {
      const T* const xc = origin + c * xs.c;
      if constexpr (Cols == 1) {
        Acc v[window_rows][window_cols][Vec];
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < window_rows; ++k)
          KCNN_DEVICE_UNROLL
        for (int j = 0; j < window_cols; ++j)
          load(row_inside[k] && col_inside[j], xc + k * xs.h + j * xs.w, v[k][j]);
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < Vec; ++k)
          KCNN_DEVICE_UNROLL
        for (int r = 0; r < Taps; ++r)
          KCNN_DEVICE_UNROLL
        for (int s = 0; s < Taps; ++s) {
          Acc value[Pixels];
          KCNN_DEVICE_UNROLL
          for (int t = 0; t < Pixels; ++t)
            value[t] = v[t * Stride + r][s][k];
          multiply_add(filters + (((c + k) * Taps + r) * Taps + s) * Outputs, value, acc);
        }
      } else {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < Taps; ++r) {
          Acc v[window_cols][Vec];
          KCNN_DEVICE_UNROLL
          for (int j = 0; j < window_cols; ++j)
            load(row_inside[r] && col_inside[j], xc + r * xs.h + j * xs.w, v[j]);
          KCNN_DEVICE_UNROLL
          for (int k = 0; k < Vec; ++k)
            KCNN_DEVICE_UNROLL
          for (int s = 0; s < Taps; ++s) {
            Acc value[Pixels];
            KCNN_DEVICE_UNROLL
            for (int t = 0; t < Pixels; ++t)
              value[t] = v[t * Stride + s][k];
            multiply_add(filters + (((c + k) * Taps + r) * Taps + s) * Outputs, value, acc);
          }
        }
      }
    }
  }

  /// Any filter, stride and dilation: each tap's Pixels input values loaded on their own.
  KOKKOS_INLINE_FUNCTION void accumulate_taps(const T* xg, std::int64_t h0, std::int64_t w0,
                                              const Acc* filters,
                                              Acc (&acc)[Pixels][Outputs]) const {
    for (int c = 0; c < group_c; c += Vec)
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          Acc v[Pixels][Vec];
          KCNN_DEVICE_UNROLL
          for (int t = 0; t < Pixels; ++t) {
            const std::int64_t h =
                h0 + std::int64_t(t / Cols) * stride_h + std::int64_t(r) * dilation_h;
            const std::int64_t col =
                w0 + std::int64_t(t % Cols) * stride_w + std::int64_t(s) * dilation_w;
            load(h >= 0 && h < H && col >= 0 && col < W, xg + c * xs.c + h * xs.h + col * xs.w,
                 v[t]);
          }
          KCNN_DEVICE_UNROLL
          for (int k = 0; k < Vec; ++k) {
            Acc value[Pixels];
            KCNN_DEVICE_UNROLL
            for (int t = 0; t < Pixels; ++t)
              value[t] = v[t][k];
            multiply_add(filters + (((c + k) * R + r) * S + s) * Outputs, value, acc);
          }
        }
  }

  /// Bias, activation, one rounding to Y; the outputs inside y only.
  KOKKOS_INLINE_FUNCTION void store(std::int64_t n, std::int64_t g, int m0, std::int64_t p0,
                                    std::int64_t q0, Acc (&acc)[Pixels][Outputs]) const {
    const std::int64_t m_first = g * group_m + m0;
    KCNN_DEVICE_UNROLL
    for (int o = 0; o < Outputs; ++o) {
      const Acc b = m0 + o < group_m ? this->bias_of(m_first + o) : Acc(0);
      KCNN_DEVICE_UNROLL
      for (int t = 0; t < Pixels; ++t)
        acc[t][o] = apply_activation(activation, acc[t][o] + b);
    }
    Y* const yp = y + n * ys.n + m_first * ys.c + p0 * ys.h + q0 * ys.w;
    if constexpr (L == Layout::NHWC) {
      constexpr int YVec =
          Outputs * sizeof(Y) < kVectorAccessBytes ? Outputs : int(kVectorAccessBytes / sizeof(Y));
      if (vector_y && m0 + Outputs <= group_m && p0 + Rows <= P && q0 + Cols <= Q) {
        KCNN_DEVICE_UNROLL
        for (int t = 0; t < Pixels; ++t)
          KCNN_DEVICE_UNROLL
        for (int b = 0; b < Outputs / YVec; ++b) {
          AlignedVec<Y, YVec> vec;
          KCNN_DEVICE_UNROLL
          for (int k = 0; k < YVec; ++k)
            vec.v[k] = from_compute<Y>(acc[t][b * YVec + k]);
          reinterpret_cast<AlignedVec<Y, YVec>*>(yp + (t / Cols) * ys.h + (t % Cols) * ys.w)[b] =
              vec;
        }
        return;
      }
    }
    KCNN_DEVICE_UNROLL
    for (int t = 0; t < Pixels; ++t) {
      const int dp = t / Cols, dq = t % Cols;
      if (p0 + dp >= P || q0 + dq >= Q) continue;
      KCNN_DEVICE_UNROLL
      for (int o = 0; o < Outputs; ++o)
        if (m0 + o < group_m) yp[o * ys.c + dp * ys.h + dq * ys.w] = from_compute<Y>(acc[t][o]);
    }
  }
};

}  // namespace kcnn::Impl
