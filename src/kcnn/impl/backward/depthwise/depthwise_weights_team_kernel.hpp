// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_weights_team_kernel.hpp
/// \brief The depthwise weight gradient's general kernel: any filter, stride and
///        dilation, both backends (the walk and host kernels serve the common cases).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../arch/macros.hpp"
#include "depthwise_weights_plan.hpp"

namespace kcnn::Impl {

/// A team's pass over its chunk's pixels (DepthwiseWeightsPlan::make) for its `lanes`
/// channels: a thread sums pixels group, group + groups, ... of the chunk's rows (the
/// pixel index carried along without divisions), for Taps x Taps filters (Taps = 0:
/// taps [tap0, tap0 + pass_taps) of R x S, in row-major order) plus the bias sum where
/// the sink's with_bias; then the team adds its threads' sums (depthwise_team_sum).
template <Layout L, int Taps, class T, class Member>
struct DepthwiseWeightsTeamKernel {
  using Acc = accumulator_t<T>;
  static constexpr int Sums = (Taps ? Taps * Taps : kDepthwiseGenericTaps) + 1;

  DepthwiseWeightsSink<T> sink;
  std::int64_t N, H, W, M, P, Q, multiplier;
  int R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DepthwiseWeightsPlan plan;
  int tap0 = 0, pass_taps = 0;  ///< Taps = 0: this pass's taps

  /// The team's reduction scratch (not named team_shmem_size: Kokkos would add that to
  /// the policy's scratch request).
  KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes(int team_size) const {
    return std::size_t(Sums) * team_size * sizeof(Acc);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t league = team.league_rank();
    const std::int64_t chunk = league / plan.lane_blocks, mb = league - chunk * plan.lane_blocks;
    const int t = team.team_rank();
    const int lanes = plan.lanes, lane = t % lanes, group = t / lanes;
    const std::int64_t m = mb * lanes + lane;
    const bool valid = m < M;

    Acc acc[Sums];
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < Sums; ++k)
      acc[k] = 0;
    if (valid) accumulate(chunk, m, group, team.team_size() / lanes, acc);
    const Acc* const sums = depthwise_team_sum<Sums>(team, acc, lanes);
    if (group == 0 && valid)
      sink.write(chunk, m, sums + t, team.team_size(), Taps ? 0 : tap0,
                 Taps ? Taps * Taps : pass_taps, Sums - 1);
  }

  /// The thread's sums over pixels group, group + groups, ... of the chunk, channel m.
  KOKKOS_INLINE_FUNCTION void accumulate(std::int64_t chunk, std::int64_t m, int group, int groups,
                                         Acc (&acc)[Sums]) const {
    const DepthwiseBackwardWeightsOperands<T>& op = sink.op;
    const std::int64_t row0 = chunk * plan.rows_per_chunk;
    const std::int64_t row1 =
        row0 + plan.rows_per_chunk < N * P ? row0 + plan.rows_per_chunk : N * P;
    // The pixel index i = (n P + p) Q + q walks in steps of `groups`, (n, p, q) carried
    // along without divisions.
    std::int64_t i = row0 * Q + group;
    const std::int64_t end = row1 * Q;
    if (i >= end) return;
    std::int64_t q = i % Q, row = i / Q;
    std::int64_t p = row % P, n = row / P;
    const std::int64_t step_q = groups % Q, step_rows = groups / Q;
    const std::int64_t step_p = step_rows % P, step_n = step_rows / P;
    const std::int64_t c = multiplier == 1 ? m : m / multiplier;
    const T* const xc = op.x + c * op.xs.c;
    const T* const dym = op.dy + m * op.dys.c;
    for (; i < end; i += groups) {
      const Acc d = Acc(dym[n * op.dys.n + p * op.dys.h + q * op.dys.w]);
      acc[Sums - 1] += d;
      const T* const xn = xc + n * op.xs.n;
      if constexpr (Taps > 0) {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < Taps; ++r) {
          const std::int64_t h = p * stride_h - pad_h + std::int64_t(r) * dilation_h;
          if (h < 0 || h >= H) continue;
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < Taps; ++s) {
            const std::int64_t col = q * stride_w - pad_w + std::int64_t(s) * dilation_w;
            if (col >= 0 && col < W) acc[r * Taps + s] += d * Acc(xn[h * op.xs.h + col * op.xs.w]);
          }
        }
      } else {
        for (int k = 0; k < pass_taps; ++k) {
          const int tap = tap0 + k, r = tap / S, s = tap - r * S;
          const std::int64_t h = p * stride_h - pad_h + std::int64_t(r) * dilation_h;
          const std::int64_t col = q * stride_w - pad_w + std::int64_t(s) * dilation_w;
          if (h >= 0 && h < H && col >= 0 && col < W)
            acc[k] += d * Acc(xn[h * op.xs.h + col * op.xs.w]);
        }
      }
      q += step_q;
      if (q >= Q) q -= Q, ++p;
      p += step_p;
      if (p >= P) p -= P, ++n;
      n += step_n;
    }
  }
};

}  // namespace kcnn::Impl
