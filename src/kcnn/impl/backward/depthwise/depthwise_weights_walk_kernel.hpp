// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_weights_walk_kernel.hpp
/// \brief The depthwise weight gradient of 3x3, 5x5 and 7x7 filters: each thread walks a
///        line of outputs with a sliding window of input lines in registers.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../arch/macros.hpp"
#include "depthwise_weights_plan.hpp"

namespace kcnn::Impl {

/// A team's walks (DepthwiseWeightsPlan::make_walk) for its `lanes` channels. A walk is
/// plan.segment consecutive outputs along the walk axis (NCHW: down the output columns,
/// the warp's threads on neighbouring columns; NHWC: along the output rows, the warp's
/// threads on neighbouring channels) for Cross consecutive positions of the cross axis.
/// The thread keeps the Taps input lines the current outputs read, each over the Span
/// cross positions those outputs' taps cover (zero outside x), in registers; moving on by
/// one output shifts the window by Stride lines and loads only the new ones. So Cross
/// outputs cost Cross dy loads, Stride x Span x loads and Cross x Taps^2 multiply-adds.
/// The kernel is bound by its instructions as much as by memory (an H200 issues about 66
/// warp instructions per output and warp in the time the bytes take), hence the Cross
/// outputs sharing each x value, 32-bit offsets within an image (walk_takes checks they
/// fit) and, in NCHW, a line's values at consecutive addresses (unit column stride:
/// immediate offsets from one address).
template <Layout L, int Taps, int Stride, int Cross, class T, class Member>
struct DepthwiseWeightsWalkKernel {
  using Acc = accumulator_t<T>;
  static constexpr int Sums = Taps * Taps + 1;
  /// Lines a step loads; the others come from the previous step's window.
  static constexpr int Fresh = Stride < Taps ? Stride : Taps;
  /// Cross positions the Cross outputs' taps cover.
  static constexpr int Span = (Cross - 1) * Stride + Taps;
  static constexpr bool kWalksRows = L == Layout::NCHW;

  DepthwiseWeightsSink<T> sink;
  DepthwiseWeightsPlan plan;
  std::int64_t multiplier = 1;
  int walk_in = 0, cross_in = 0, cross_out = 0;  ///< x along the walk axis, x and outputs across
  int walk_pad = 0, cross_pad = 0;
  int x_walk = 0, x_cross = 0, dy_walk = 0, dy_cross = 0;  ///< strides; NCHW: x_cross = 1

  /// pb's walk kernel (walk_takes(pb, ...), plan = DepthwiseWeightsPlan::make_walk(pb, ...)).
  static DepthwiseWeightsWalkKernel make(const DepthwiseWeightsSink<T>& sink,
                                         const DepthwiseWeightsPlan& plan,
                                         const Conv2dProblem& pb) {
    const DepthwiseBackwardWeightsOperands<T>& op = sink.op;
    DepthwiseWeightsWalkKernel k{sink, plan, pb.M / pb.C};
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    if constexpr (kWalksRows) {
      k.walk_in = i32(pb.H), k.cross_in = i32(pb.W), k.cross_out = i32(pb.Q);
      k.walk_pad = pb.pad_h, k.cross_pad = pb.pad_w;
      k.x_walk = i32(op.xs.h), k.x_cross = i32(op.xs.w);
      k.dy_walk = i32(op.dys.h), k.dy_cross = i32(op.dys.w);
    } else {
      k.walk_in = i32(pb.W), k.cross_in = i32(pb.H), k.cross_out = i32(pb.P);
      k.walk_pad = pb.pad_w, k.cross_pad = pb.pad_h;
      k.x_walk = i32(op.xs.w), k.x_cross = i32(op.xs.h);
      k.dy_walk = i32(op.dys.w), k.dy_cross = i32(op.dys.h);
    }
    return k;
  }

  KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes(int team_size) const {
    return std::size_t(Sums) * team_size * sizeof(Acc);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t league = team.league_rank();
    const std::int64_t chunk = league / plan.lane_blocks, mb = league - chunk * plan.lane_blocks;
    const int t = team.team_rank(), size = team.team_size();
    const int lanes = plan.lanes, lane = t % lanes, group = t / lanes;
    const std::int64_t m = mb * lanes + lane;
    const bool valid = m < sink.M;

    Acc acc[Sums];
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < Sums; ++k)
      acc[k] = 0;
    if (valid) {
      const std::int64_t first = chunk * plan.items_per_chunk;
      const std::int64_t end =
          first + plan.items_per_chunk < plan.items ? first + plan.items_per_chunk : plan.items;
      for (std::int64_t item = first + group; item < end; item += size / lanes)
        walk(item, m, acc);
    }
    const Acc* const sums = depthwise_team_sum<Sums>(team, acc, lanes);
    if (group == 0 && valid) sink.write(chunk, m, sums + t, size, 0, Taps * Taps, Sums - 1);
  }

  /// Loads input line `line` (along the walk axis), whose element at the first cross
  /// position is xl, at the Span cross positions into v, zeros outside x.
  KOKKOS_INLINE_FUNCTION void load_line(const T* xl, int line, const bool (&inside)[Span],
                                        Acc (&v)[Span]) const {
    const bool line_inside = static_cast<unsigned>(line) < static_cast<unsigned>(walk_in);
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < Span; ++i)
      v[i] = line_inside && inside[i] ? Acc(xl[kWalksRows ? i : i * x_cross]) : Acc(0);
  }

  /// Adds walk `item` of channel m to acc.
  KOKKOS_INLINE_FUNCTION void walk(std::int64_t item, std::int64_t m, Acc (&acc)[Sums]) const {
    const DepthwiseBackwardWeightsOperands<T>& op = sink.op;
    const int blocks = (cross_out + Cross - 1) / Cross;
    const int cross0 = static_cast<int>(item % blocks) * Cross;
    const std::int64_t rest = item / blocks;
    const std::int64_t n = rest / plan.segments;
    const int w0 = static_cast<int>((rest - n * plan.segments) * plan.segment);
    const std::int64_t c = multiplier == 1 ? m : m / multiplier;
    // The cross positions the outputs cross0 .. cross0 + Cross - 1 read, from `first`;
    // outputs past the last add zeros.
    const int first = cross0 * Stride - cross_pad;
    bool inside[Span];
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < Span; ++i)
      inside[i] = static_cast<unsigned>(first + i) < static_cast<unsigned>(cross_in);
    bool output[Cross];
    KCNN_DEVICE_UNROLL
    for (int o = 0; o < Cross; ++o)
      output[o] = cross0 + o < cross_out;
    // window[k]: input line line0 + k, the lines output w reads (line0 = w Stride - pad).
    // The pointers (x: a line's element at `first`; dy: output cross0) move on by
    // constant steps; x's may point outside x where the line is padding, and is not read
    // there.
    int line0 = w0 * Stride - walk_pad;
    const T* xl = op.x + n * op.xs.n + c * op.xs.c + std::int64_t(first) * x_cross +
                  std::int64_t(line0) * x_walk;
    const T* dyw = op.dy + n * op.dys.n + m * op.dys.c + std::int64_t(cross0) * dy_cross +
                   std::int64_t(w0) * dy_walk;
    const std::int64_t step = std::int64_t(Stride) * x_walk;
    Acc window[Taps][Span];
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < Taps - Fresh; ++k)
      load_line(xl + k * x_walk, line0 + k, inside, window[k]);
    const int steps = static_cast<int>(plan.segment);
    KCNN_DEVICE_UNROLL_2
    for (int w = 0; w < steps; ++w) {
      KCNN_DEVICE_UNROLL
      for (int k = Taps - Fresh; k < Taps; ++k)
        load_line(xl + k * x_walk, line0 + k, inside, window[k]);
      KCNN_DEVICE_UNROLL
      for (int o = 0; o < Cross; ++o) {
        const Acc d = output[o] ? Acc(dyw[kWalksRows ? o : o * dy_cross]) : Acc(0);
        acc[Sums - 1] += d;
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < Taps; ++k) {
          KCNN_DEVICE_UNROLL
          for (int j = 0; j < Taps; ++j)
            acc[kWalksRows ? k * Taps + j : j * Taps + k] += d * window[k][o * Stride + j];
        }
      }
      KCNN_DEVICE_UNROLL
      for (int k = 0; k < Taps - Fresh; ++k) {
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < Span; ++i)
          window[k][i] = window[k + Stride][i];
      }
      line0 += Stride;
      xl += step;
      dyw += dy_walk;
    }
  }
};

}  // namespace kcnn::Impl
