// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_kernel.hpp
/// \brief ConvAlgo::Depthwise on GPUs: a grouped convolution with one input channel per
///        group (groups = C, M = k C: output channel m reads input channel m / k) as the
///        memory-bound stencil it is. No reduction over channels: every output is R x S
///        multiply-adds of one input plane, so the kernel's cost is moving x and y. (The
///        CPU kernels: depthwise_host_kernel.hpp.)
///
/// A work item computes `Cols` outputs along a row (q0 .. q0 + Cols - 1) for `Lanes`
/// consecutive output channels, in float (the accumulator type), then adds the bias,
/// applies the activation and stores them. The items are ordered so that neighbouring
/// threads touch neighbouring addresses: NHWC items walk the channels fastest (Lanes
/// adjacent channels, one 16-byte access for float with Lanes = 4 and multiplier 1),
/// NCHW items the column blocks (Cols adjacent outputs, one 16-byte store). A tap's
/// input values are read by the neighbouring items too, from the L1 cache: DRAM sees x
/// and y about once.
///
/// Filter extents 3, 5 and 7 are unrolled at compile time (Taps); 0 takes R and S at
/// run time.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "depthwise_args.hpp"

namespace kcnn::Impl {

/// Taps: 3, 5, 7 (R = S = Taps at compile time) or 0 (R, S at run time). Cols, Lanes:
/// the work item. Vector: x's and y's Lanes channels (NHWC, multiplier 1) or y's Cols
/// columns (NCHW) are one aligned vector (checked by the launch).
template <Layout L, int Taps, int Cols, int Lanes, bool Vector, class T_, class Y_>
struct DepthwiseKernel : DepthwiseArgs<T_, Y_> {
  using Base = DepthwiseArgs<T_, Y_>;
  using Base::dilation_h, Base::dilation_w;
  using Base::N, Base::H, Base::W, Base::M, Base::P, Base::Q, Base::multiplier, Base::activation;
  using Base::R, Base::S, Base::stride_h, Base::stride_w, Base::pad_h, Base::pad_w;
  using Base::x, Base::w, Base::bias, Base::y, Base::xs, Base::ws, Base::ys, Base::bias_stride;
  using typename Base::Acc;
  using typename Base::T;
  using typename Base::Y;
  static constexpr bool VectorX = Vector && L == Layout::NHWC;
  static_assert(!Vector || (L == Layout::NHWC ? Lanes == 4 : Cols == 4),
                "vectors are four channels (NHWC, multiplier 1) or four columns (NCHW)");

  std::int64_t col_blocks, lane_blocks;

  std::int64_t items() const { return N * P * col_blocks * lane_blocks; }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    std::int64_t rest = i, n, p, qb, mb;
    if constexpr (L == Layout::NHWC) {  // channels fastest
      mb = rest % lane_blocks, rest /= lane_blocks;
      qb = rest % col_blocks, rest /= col_blocks;
      p = rest % P, n = rest / P;
    } else {  // column blocks fastest
      qb = rest % col_blocks, rest /= col_blocks;
      p = rest % P, rest /= P;
      mb = rest % lane_blocks, n = rest / lane_blocks;
    }
    const std::int64_t m0 = mb * Lanes, q0 = qb * Cols;
    const int RR = Taps ? Taps : R, SS = Taps ? Taps : S;

    Acc acc[Lanes][Cols];
    for (int l = 0; l < Lanes; ++l)
      for (int o = 0; o < Cols; ++o)
        acc[l][o] = 0;
    // x's channel of each lane (past M: the last one, whose weight there is 0).
    std::int64_t x_channel[Lanes];
    for (int l = 0; l < Lanes; ++l)
      x_channel[l] = ((m0 + l < M ? m0 + l : M - 1) / multiplier) * xs.c;
    const std::int64_t h0 = p * stride_h - pad_h;
    for (int r = 0; r < RR; ++r) {
      const std::int64_t h = h0 + std::int64_t(r) * dilation_h;
      if (h < 0 || h >= H) continue;
      for (int s = 0; s < SS; ++s) {
        Acc wv[Lanes];
        for (int l = 0; l < Lanes; ++l)
          wv[l] = m0 + l < M ? Acc(w[(m0 + l) * ws.n + r * ws.h + s * ws.w]) : Acc(0);
        for (int o = 0; o < Cols; ++o) {
          const std::int64_t col = (q0 + o) * stride_w - pad_w + std::int64_t(s) * dilation_w;
          if (col < 0 || col >= W || q0 + o >= Q) continue;
          const T* xp = x + n * xs.n + h * xs.h + col * xs.w;
          if constexpr (VectorX) {  // the Lanes channels m0 .. m0 + 3 (multiplier 1)
            const auto v = *reinterpret_cast<const AlignedVec<T, Lanes>*>(xp + m0);
            for (int l = 0; l < Lanes; ++l)
              acc[l][o] += wv[l] * Acc(v.v[l]);
          } else {
            for (int l = 0; l < Lanes; ++l)
              acc[l][o] += wv[l] * Acc(xp[x_channel[l]]);
          }
        }
      }
    }
    store(n, p, q0, m0, acc);
  }

  KOKKOS_INLINE_FUNCTION void store(std::int64_t n, std::int64_t p, std::int64_t q0,
                                    std::int64_t m0, Acc (&acc)[Lanes][Cols]) const {
    for (int l = 0; l < Lanes; ++l) {
      const Acc b = bias && m0 + l < M ? Acc(bias[(m0 + l) * bias_stride]) : Acc(0);
      for (int o = 0; o < Cols; ++o)
        acc[l][o] = apply_activation(activation, acc[l][o] + b);
    }
    Y* const yp = y + n * ys.n + p * ys.h + q0 * ys.w + m0 * ys.c;
    if constexpr (Vector && L == Layout::NHWC) {
      if (m0 + Lanes <= M) {
        for (int o = 0; o < Cols; ++o) {
          if (q0 + o >= Q) break;
          AlignedVec<Y, Lanes> v;
          for (int l = 0; l < Lanes; ++l)
            v.v[l] = from_compute<Y>(acc[l][o]);
          *reinterpret_cast<AlignedVec<Y, Lanes>*>(yp + o * ys.w) = v;
        }
        return;
      }
    }
    if constexpr (Vector && L == Layout::NCHW) {
      if (q0 + Cols <= Q) {
        for (int l = 0; l < Lanes; ++l) {
          if (m0 + l >= M) break;
          AlignedVec<Y, Cols> v;
          for (int o = 0; o < Cols; ++o)
            v.v[o] = from_compute<Y>(acc[l][o]);
          *reinterpret_cast<AlignedVec<Y, Cols>*>(yp + l * ys.c) = v;
        }
        return;
      }
    }
    for (int l = 0; l < Lanes; ++l)
      for (int o = 0; o < Cols; ++o)
        if (m0 + l < M && q0 + o < Q) yp[l * ys.c + o * ys.w] = from_compute<Y>(acc[l][o]);
  }
};

/// GPUs, the common layers (square 3x3, 5x5, 7x7 filters, stride 1 or 2, no dilation): a
/// work item computes Rows x Cols outputs (rows p0 .. p0 + Rows - 1, columns q0 .. q0 +
/// Cols - 1) for Lanes channels. It reads the ((Rows - 1) Stride + Taps) x ((Cols - 1)
/// Stride + Taps) input window once, each value feeding every output whose window holds
/// it (7 x 1 outputs of a 3x3 stride-1 layer: 27 loads instead of 63; 7 x 2: 36 instead
/// of 126), with its Taps^2 x Lanes weights in registers. Neighbouring threads take
/// neighbouring addresses: NHWC the next channels (Lanes = 4, multiplier 1: one 16-byte
/// load or store; Lanes = 1 otherwise), NCHW the next column block (Lanes = 1). The
/// kernel is bound by its instructions as much as by memory (ncu, session 37), so the
/// offsets within an image are 32-bit (strip_offsets_fit) and the bounds tests once a
/// row and once a column of the window.
template <Layout L, int Taps, int Stride, int Rows, int Cols, int Lanes, class T_, class Y_>
struct DepthwiseStripKernel : DepthwiseArgs<T_, Y_> {
  using Base = DepthwiseArgs<T_, Y_>;
  using Base::N, Base::H, Base::W, Base::M, Base::P, Base::Q, Base::multiplier, Base::activation;
  using Base::pad_h, Base::pad_w;
  using Base::x, Base::w, Base::bias, Base::y, Base::xs, Base::ws, Base::ys, Base::bias_stride;
  using typename Base::Acc;
  using typename Base::T;
  using typename Base::Y;
  static_assert(Lanes == 1 || (L == Layout::NHWC && Lanes == 4),
                "vectors are four NHWC channels (multiplier 1)");
  static constexpr int window_rows = (Rows - 1) * Stride + Taps;
  static constexpr int window_cols = (Cols - 1) * Stride + Taps;

  std::int64_t row_blocks, col_blocks, lane_blocks;
  bool index32 = false;  ///< items() < 2^31: the item's place in 32-bit divisions
  int xh = 0, xw = 0;    ///< x's row and column strides (fit int: strip_offsets_fit)
  int yh = 0, yw = 0;    ///< y's

  std::int64_t items() const { return N * row_blocks * col_blocks * lane_blocks; }

  /// The item's (n, row block, column block, lane block): NHWC channels fastest, then
  /// columns; NCHW columns fastest. In Index arithmetic (a 64-bit division costs several
  /// times a 32-bit one, and the kernel is bound by its instructions: ncu, session 37).
  template <class Index>
  KOKKOS_INLINE_FUNCTION void locate(Index rest, std::int64_t& n, std::int64_t& pb,
                                     std::int64_t& qb, std::int64_t& mb) const {
    const auto lanes = static_cast<Index>(lane_blocks), cols = static_cast<Index>(col_blocks),
               rows = static_cast<Index>(row_blocks);
    if constexpr (L == Layout::NHWC) {
      mb = rest % lanes, rest /= lanes;
      qb = rest % cols, rest /= cols;
      pb = rest % rows, n = rest / rows;
    } else {
      qb = rest % cols, rest /= cols;
      pb = rest % rows, rest /= rows;
      mb = rest % lanes, n = rest / lanes;
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    std::int64_t n, pb, qb, mb;
    if (index32) {
      locate(static_cast<unsigned>(i), n, pb, qb, mb);
    } else {
      locate(i, n, pb, qb, mb);
    }
    const std::int64_t m0 = mb * Lanes;
    const int p0 = static_cast<int>(pb) * Rows, q0 = static_cast<int>(qb) * Cols;
    Acc wr[Taps][Taps][Lanes];
    KCNN_DEVICE_UNROLL
    for (int r = 0; r < Taps; ++r)
      KCNN_DEVICE_UNROLL
    for (int s = 0; s < Taps; ++s)
      KCNN_DEVICE_UNROLL
    for (int l = 0; l < Lanes; ++l)
      wr[r][s][l] = m0 + l < M ? Acc(w[(m0 + l) * ws.n + r * ws.h + s * ws.w]) : Acc(0);
    // Lanes = 4: x's channels m0 .. m0 + 3 (multiplier 1); else channel m0 / multiplier
    // (no 64-bit division for the common multiplier 1).
    const std::int64_t c = Lanes == 4 || multiplier == 1 ? m0 : m0 / multiplier;
    const int h0 = p0 * Stride - pad_h, w0 = q0 * Stride - pad_w;
    // The window's origin (it may lie outside x; only the values inside are read).
    const T* const xo = x + n * xs.n + c * xs.c + std::int64_t(h0) * xh + std::int64_t(w0) * xw;
    bool col_inside[window_cols];
    KCNN_DEVICE_UNROLL
    for (int j = 0; j < window_cols; ++j)
      col_inside[j] = static_cast<unsigned>(w0 + j) < static_cast<unsigned>(W);
    Acc acc[Rows][Cols][Lanes];
    KCNN_DEVICE_UNROLL
    for (int o = 0; o < Rows; ++o)
      KCNN_DEVICE_UNROLL
    for (int cc = 0; cc < Cols; ++cc)
      KCNN_DEVICE_UNROLL
    for (int l = 0; l < Lanes; ++l)
      acc[o][cc][l] = 0;
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < window_rows; ++k) {
      const bool row_inside = static_cast<unsigned>(h0 + k) < static_cast<unsigned>(H);
      const T* const xrow = xo + k * xh;
      KCNN_DEVICE_UNROLL
      for (int j = 0; j < window_cols; ++j) {
        Acc v[Lanes];
        if (row_inside && col_inside[j]) {
          const T* const xp = xrow + j * xw;
          if constexpr (Lanes == 4) {
            const auto vec = *reinterpret_cast<const AlignedVec<T, 4>*>(xp);
            KCNN_DEVICE_UNROLL
            for (int l = 0; l < 4; ++l)
              v[l] = Acc(vec.v[l]);
          } else {
            v[0] = Acc(*xp);
          }
        } else {
          KCNN_DEVICE_UNROLL
          for (int l = 0; l < Lanes; ++l)
            v[l] = 0;
        }
        // Output (o, cc)'s tap (r, s) reads window row o Stride + r, column cc Stride + s.
        KCNN_DEVICE_UNROLL
        for (int o = 0; o < Rows; ++o) {
          const int r = k - o * Stride;
          if (r < 0 || r >= Taps) continue;
          KCNN_DEVICE_UNROLL
          for (int cc = 0; cc < Cols; ++cc) {
            const int s = j - cc * Stride;
            if (s < 0 || s >= Taps) continue;
            KCNN_DEVICE_UNROLL
            for (int l = 0; l < Lanes; ++l)
              acc[o][cc][l] += wr[r][s][l] * v[l];
          }
        }
      }
    }
    KCNN_DEVICE_UNROLL
    for (int l = 0; l < Lanes; ++l) {
      const Acc b = bias && m0 + l < M ? Acc(bias[(m0 + l) * bias_stride]) : Acc(0);
      KCNN_DEVICE_UNROLL
      for (int o = 0; o < Rows; ++o)
        KCNN_DEVICE_UNROLL
      for (int cc = 0; cc < Cols; ++cc)
        acc[o][cc][l] = apply_activation(activation, acc[o][cc][l] + b);
    }
    Y* const yo = y + n * ys.n + m0 * ys.c + std::int64_t(p0) * yh + std::int64_t(q0) * yw;
    KCNN_DEVICE_UNROLL
    for (int o = 0; o < Rows; ++o) {
      if (p0 + o >= P) break;
      KCNN_DEVICE_UNROLL
      for (int cc = 0; cc < Cols; ++cc) {
        if (q0 + cc >= Q) break;
        Y* const yp = yo + o * yh + cc * yw;
        if constexpr (Lanes == 4) {
          AlignedVec<Y, 4> vec;
          KCNN_DEVICE_UNROLL
          for (int l = 0; l < 4; ++l)
            vec.v[l] = from_compute<Y>(acc[o][cc][l]);
          *reinterpret_cast<AlignedVec<Y, 4>*>(yp) = vec;
        } else {
          if (m0 < M) *yp = from_compute<Y>(acc[o][cc][0]);
        }
      }
    }
  }
};

}  // namespace kcnn::Impl
