// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_weights_host_kernel.hpp
/// \brief The depthwise weight gradient on CPUs: 3x3, 5x5 and 7x7 filters on contiguous
///        rows, the sums in AVX2-wide vector accumulators.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../../arch/macros.hpp"
#include "../../common/problem.hpp"
#include "../../conv2d/depthwise/depthwise_host_kernel.hpp"  // interior_columns
#include "depthwise_weights_plan.hpp"

namespace kcnn::Impl {

/// CPUs, 3x3, 5x5 and 7x7 filters on contiguous rows: an item is a chunk of output rows
/// for one block of channels, the sums in vector accumulators.
///  - NHWC (multiplier 1, channels contiguous): Lanes channels an item, one vector
///    multiply-add per tap and pixel; the pixels whose taps all lie inside x unchecked.
///  - NCHW (unit column stride, columns contiguous): one channel an item, Lanes output
///    columns a vector; the interior columns (interior_columns) unchecked, the others one
///    by one; the lanes' sums added in lane order at the end.
/// Each item writes its slots of the chunk's partial sums (or, with one chunk, dw and
/// dbias).
template <Layout L, int Taps, class T>
struct DepthwiseWeightsHostKernel {
  using Acc = accumulator_t<T>;
  static constexpr int Lanes = 32 / sizeof(Acc);  ///< one AVX2 vector
  static constexpr int Sums = Taps * Taps + 1;

  DepthwiseWeightsSink<T> sink;
  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t N, H, W, M, P, Q, multiplier;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DepthwiseWeightsPlan plan;
  std::int64_t q_lo, q_hi;  ///< the output columns whose taps all lie inside x's rows

  /// Whether the host kernel computes pb's operands (else the team kernel, one thread a
  /// team).
  static bool takes(const Conv2dProblem& pb, const DepthwiseBackwardWeightsOperands<T>& op) {
    if (DepthwiseWeightsPlan::compile_time_taps(pb) != Taps) return false;
    if (L == Layout::NHWC) return pb.M == pb.C && op.xs.c == 1 && op.dys.c == 1;
    return pb.stride_w == 1 && op.xs.w == 1 && op.dys.w == 1;
  }

  std::int64_t items() const { return plan.chunks * plan.lane_blocks; }

  void operator()(const std::int64_t item) const {
    const std::int64_t chunk = item / plan.lane_blocks, mb = item - chunk * plan.lane_blocks;
    const std::int64_t row0 = chunk * plan.rows_per_chunk;
    const std::int64_t row1 = std::min(row0 + plan.rows_per_chunk, N * P);
    Acc acc[Sums][Lanes] = {};
    if constexpr (L == Layout::NHWC) {
      const std::int64_t m0 = mb * Lanes;
      const int lanes = static_cast<int>(std::min<std::int64_t>(Lanes, M - m0));
      for (std::int64_t row = row0; row < row1; ++row)
        nhwc_row(row / P, row % P, m0, lanes, acc);
      store(chunk, m0, lanes, acc);
    } else {
      const std::int64_t m = mb;
      for (std::int64_t row = row0; row < row1; ++row)
        nchw_row(row / P, row % P, m, acc);
      Acc sums[Sums][1];
      for (int k = 0; k < Sums; ++k) {
        Acc sum = 0;
        for (int l = 0; l < Lanes; ++l)  // lane order: the result does not depend on threads
          sum += acc[k][l];
        sums[k][0] = sum;
      }
      store(chunk, m, 1, sums);
    }
  }

  std::int64_t row_of(std::int64_t p, int r) const {
    return p * stride_h - pad_h + std::int64_t(r) * dilation_h;
  }
  std::int64_t column_of(std::int64_t q, int s) const {
    return q * stride_w - pad_w + std::int64_t(s) * dilation_w;
  }

  void nhwc_row(std::int64_t n, std::int64_t p, std::int64_t m0, int lanes,
                Acc (&acc)[Sums][Lanes]) const {
    const T* const dyr = op.dy + n * op.dys.n + p * op.dys.h + m0;
    const T* const xn = op.x + n * op.xs.n + m0;
    const bool rows_inside = row_of(p, 0) >= 0 && row_of(p, Taps - 1) < H;
    for (std::int64_t q = 0; q < Q; ++q) {
      const T* const dyp = dyr + q * op.dys.w;
      if (lanes == Lanes && rows_inside && q >= q_lo && q < q_hi) {
        Acc d[Lanes];
        KCNN_HOST_SIMD
        for (int l = 0; l < Lanes; ++l) {
          d[l] = Acc(dyp[l]);
          acc[Sums - 1][l] += d[l];
        }
        KCNN_HOST_UNROLL
        for (int r = 0; r < Taps; ++r) {
          const T* const xr = xn + row_of(p, r) * op.xs.h + column_of(q, 0) * op.xs.w;
          KCNN_HOST_UNROLL
          for (int s = 0; s < Taps; ++s) {
            const T* const xp = xr + std::int64_t(s) * dilation_w * op.xs.w;
            KCNN_HOST_SIMD
            for (int l = 0; l < Lanes; ++l)
              acc[r * Taps + s][l] += d[l] * Acc(xp[l]);
          }
        }
        continue;
      }
      for (int l = 0; l < lanes; ++l)  // an edge pixel, or a partial channel block
        acc[Sums - 1][l] += Acc(dyp[l]);
      for (int r = 0; r < Taps; ++r) {
        const std::int64_t h = row_of(p, r);
        if (h < 0 || h >= H) continue;
        for (int s = 0; s < Taps; ++s) {
          const std::int64_t col = column_of(q, s);
          if (col < 0 || col >= W) continue;
          const T* const xp = xn + h * op.xs.h + col * op.xs.w;
          for (int l = 0; l < lanes; ++l)
            acc[r * Taps + s][l] += Acc(dyp[l]) * Acc(xp[l]);
        }
      }
    }
  }

  void nchw_row(std::int64_t n, std::int64_t p, std::int64_t m, Acc (&acc)[Sums][Lanes]) const {
    const T* const dyr = op.dy + n * op.dys.n + m * op.dys.c + p * op.dys.h;
    const std::int64_t c = multiplier == 1 ? m : m / multiplier;
    const T* const xc = op.x + n * op.xs.n + c * op.xs.c;
    std::int64_t q = q_lo;
    for (; q + Lanes <= q_hi; q += Lanes) {  // interior columns, Lanes at a time
      Acc d[Lanes];
      KCNN_HOST_SIMD
      for (int l = 0; l < Lanes; ++l) {
        d[l] = Acc(dyr[q + l]);
        acc[Sums - 1][l] += d[l];
      }
      KCNN_HOST_UNROLL
      for (int r = 0; r < Taps; ++r) {
        const std::int64_t h = row_of(p, r);
        if (h < 0 || h >= H) continue;
        const T* const xr = xc + h * op.xs.h + column_of(q, 0);
        KCNN_HOST_UNROLL
        for (int s = 0; s < Taps; ++s) {
          const T* const xp = xr + std::int64_t(s) * dilation_w;
          KCNN_HOST_SIMD
          for (int l = 0; l < Lanes; ++l)
            acc[r * Taps + s][l] += d[l] * Acc(xp[l]);
        }
      }
    }
    auto column = [&](std::int64_t qc) {  // one column, checked, into lane 0
      const Acc d = Acc(dyr[qc]);
      acc[Sums - 1][0] += d;
      for (int r = 0; r < Taps; ++r) {
        const std::int64_t h = row_of(p, r);
        if (h < 0 || h >= H) continue;
        for (int s = 0; s < Taps; ++s) {
          const std::int64_t col = column_of(qc, s);
          if (col >= 0 && col < W) acc[r * Taps + s][0] += d * Acc(xc[h * op.xs.h + col]);
        }
      }
    };
    for (std::int64_t qc = 0; qc < std::min(q_lo, Q); ++qc)
      column(qc);
    for (std::int64_t qc = std::max(q, q_lo); qc < Q; ++qc)
      column(qc);
  }

  /// Channel m0 + l's sums: into the chunk's partial sums, or dw and dbias.
  template <int K>
  void store(std::int64_t chunk, std::int64_t m0, int lanes, const Acc (&sums)[Sums][K]) const {
    for (int l = 0; l < lanes; ++l)
      sink.write(chunk, m0 + l, &sums[0][l], K, 0, Taps * Taps, Sums - 1);
  }
};

}  // namespace kcnn::Impl
