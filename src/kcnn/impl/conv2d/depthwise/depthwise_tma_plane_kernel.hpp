// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_tma_plane_kernel.hpp
/// \brief ConvAlgo::Depthwise on Hopper for NCHW layers whose rows a tensor map cannot
///        describe but whose planes it can (float, 3x3, stride 1, no dilation, multiplier
///        1; H W at most 256 floats, a multiple of 4, W not): whole channel planes staged
///        by the TMA unit (DepthwiseTmaPlaneKernel).
///
/// Why: DepthwiseTmaKernel's boxes are rows of x, and a tensor map's strides are multiples
/// of 16 bytes, so NCHW layers of 14x14 planes (rows of 56 bytes) stayed on the strip
/// kernel, at 39% of the copy bandwidth on an H200 (RESULTS.md, session 45). A plane of
/// 14x14 floats is 784 bytes, a multiple of 16: a map whose innermost extent is the whole
/// plane describes such a tensor, and one copy brings `planes` planes of an image.
///
/// Team: the stage's planes x Q columns (threads past planes x Q idle); thread (plane,
/// column q) walks down its column as DepthwiseTmaKernel's threads do (each input row
/// read once: 3 values, the 9 taps' sums of the three output rows it touches in
/// registers), reading zeros outside the plane (the padding is not in the box) and
/// storing each finished output with the bias and activation. A team takes `steps`
/// stages of one image, `stages` copies in flight.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/grid_constant_launch.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/tma.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "depthwise_args.hpp"
#include "depthwise_tma_kernel.hpp"

namespace kcnn::Impl {

/// The launch shape: Threads a team, at least MinTeams resident teams a multiprocessor,
/// Stages copies in the ring, Steps stages a team.
template <int Threads_, int MinTeams_, int Stages_, int Steps_>
struct DepthwiseTmaPlaneShape {
  static constexpr int threads = Threads_;
  static constexpr int min_teams = MinTeams_;
  static constexpr int stages = Stages_;
  static constexpr int steps = Steps_;
};

/// One team: image n, channels [c_first, c_first + Shape::steps planes) (the league
/// rank, channel tiles fastest). The fields are the launch's (launch_depthwise_tma_plane).
template <class Shape>
struct DepthwiseTmaPlaneKernel {
  static constexpr int Taps = 3;
  static constexpr int alignment = 128;
  /// Copies in the ring: no more than a team's stages.
  static constexpr int ring = Shape::stages < Shape::steps ? Shape::stages : Shape::steps;
  /// A stage's floats at most (12 KB: 4 stages leave room for several teams a
  /// multiprocessor; 15 planes of 14x14).
  static constexpr int kMaxStageFloats = 3072;

  const float* w;
  LogicalStrides ws;
  const float* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  float* y;
  LogicalStrides ys;
  int M, H, W, P, Q, pad_h, pad_w;
  int planes;         ///< planes a stage (Shape::threads / Q, kMaxStageFloats / (H W) at most)
  int channel_tiles;  ///< teams an image: M / (planes Shape::steps), rounded up
  Activation activation;

  KOKKOS_INLINE_FUNCTION std::uint32_t box_bytes() const {
    return static_cast<std::uint32_t>(planes * H * W * 4);
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t stage_bytes() const {
    return (box_bytes() + alignment - 1) / alignment * alignment;
  }
  std::size_t scratch_bytes() const { return std::size_t(ring) * (stage_bytes() + 8) + alignment; }

  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& team,
                                         const DepthwiseTmaMap& maps) const {
    const int ct = team.league_rank() % channel_tiles, n = team.league_rank() / channel_tiles;
    const int c_first = ct * planes * Shape::steps;
    const int left = (M - c_first + planes - 1) / planes;
    const int steps = left < Shape::steps ? left : Shape::steps;
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t base = scratch_address(scratch);
    const std::uint32_t stage_size = stage_bytes(), box_size = box_bytes();
    const std::uint32_t bars = base + ring * stage_size;
    const int t = team.team_rank();
    // The map: (H W, 1, C, N) innermost first; a box is `planes` whole planes.
    auto issue = [&](int step, int slot) {
      tma_barrier_arrive_expect(bars + 8 * slot, box_size);
      tma_load_tile_4d(base + slot * stage_size, &maps.x, bars + 8 * slot, 0, 0,
                       c_first + step * planes, n);
    };
    if (t == 0) {
      for (int s = 0; s < ring; ++s)
        tma_barrier_init(bars + 8 * s, 1);
      tma_fence_barrier_init();
    }
    team.team_barrier();
    if (t == 0)
      for (int s = 0; s < ring && s < steps; ++s)
        issue(s, s);

    const int plane = t / Q, q = t % Q;
    const bool reads = plane < planes;
    // The window's columns and whether each lies inside the plane.
    const int w0 = q - pad_w;
    bool inside[Taps];
    KCNN_DEVICE_UNROLL
    for (int s = 0; s < Taps; ++s)
      inside[s] = static_cast<unsigned>(w0 + s) < static_cast<unsigned>(W);
    const int rows = P + Taps - 1;  // input rows from -pad_h on, the padding's included
    for (int step = 0; step < steps; ++step) {
      const int slot = step % ring;
      const int m = c_first + step * planes + plane;
      const bool writes = reads && m < M;
      float wr[Taps][Taps], b = 0.f;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Taps; ++r)
        KCNN_DEVICE_UNROLL
      for (int s = 0; s < Taps; ++s)
        wr[r][s] = writes ? w[m * ws.n + r * ws.h + s * ws.w] : 0.f;
      if (writes && bias) b = bias[m * bias_stride];
      tma_barrier_wait(bars + 8 * slot, (step / ring) & 1);
      const float* const x =
          reinterpret_cast<const float*>(scratch + slot * stage_size) + plane * H * W;
      float* const yq = y + n * ys.n + std::int64_t(m) * ys.c + std::int64_t(q) * ys.w;
      if (writes) {
        // The activation known at compile time in the loop (with_activation), the row's
        // offset and the output's address stepped, not recomputed.
        with_activation(activation, [&](auto act) {
          constexpr Activation A = decltype(act)::value;
          float* yp = yq;
          int offset = w0 - pad_h * W;  // input row k - pad_h's window start in the plane
          // Sums of output rows k - 2 (completed by input row k) and k - 1.
          float older = 0.f, newer = 0.f;
          KCNN_DEVICE_UNROLL_2
          for (int k = 0; k < rows; ++k, offset += W) {
            const bool row_inside = static_cast<unsigned>(k - pad_h) < static_cast<unsigned>(H);
            float in[Taps];
            KCNN_DEVICE_UNROLL
            for (int s = 0; s < Taps; ++s)
              in[s] = row_inside && inside[s] ? x[offset + s] : 0.f;
            float started = 0.f;
            KCNN_DEVICE_UNROLL
            for (int s = 0; s < Taps; ++s) {
              started += wr[0][s] * in[s];
              newer += wr[1][s] * in[s];
              older += wr[2][s] * in[s];
            }
            if (k >= Taps - 1) {
              *yp = apply_activation(A, older + b);
              yp += ys.h;
            }
            older = newer, newer = started;
          }
        });
      }
      team.team_barrier();  // every thread is done with the slot before it is refilled
      if (t == 0 && step + ring < steps) issue(step + ring, slot);
    }
    if (t == 0)
      for (int s = 0; s < ring; ++s)
        tma_barrier_invalidate(bars + 8 * s);  // (the block may run another team next)
  }
};

/// The shape kcnn launches: 128 threads (9 planes of 14x14 a stage), 4 stages in the ring,
/// 2 stages a team. H200, session 46 (RESULTS.md; forward, N = 64 x 512 and 256
/// channels, N = 32 x 1024, 14x14): 0.0236 / 0.0158 / 0.0234 ms, 40-55% of the copy
/// bandwidth; 4 or 8 stages a team 3-10% slower, 64 threads within the noise, 256 threads
/// 15-25% slower. The strip kernel took 0.0331 / 0.0198 / 0.0329 ms.
using DepthwiseTmaPlaneShapeDefault = DepthwiseTmaPlaneShape<128, 1, 4, 2>;

/// Whether DepthwiseTmaPlaneKernel computes depthwise problem pb on operands `op` of T = Y
/// = float: a Hopper build whose driver encodes tensor maps, NCHW, 3x3 filters at stride
/// 1 without dilation, multiplier 1; x's planes contiguous (unit column stride, rows W
/// apart), H W a multiple of 4 of at most 256 floats (the box's innermost extent), Q at
/// most 128 (a thread a column); the plane and image strides multiples of 16 bytes and x
/// 16-byte aligned.
template <class T, class Y>
bool depthwise_tma_plane_fits(const Conv2dProblem& pb, const DepthwiseOperands<T, Y>& op) {
  if constexpr (!std::is_same_v<T, float> || !std::is_same_v<Y, float> || !kBuildHasTma) {
    (void)pb, (void)op;
    return false;
  } else {
    const LogicalStrides& xs = op.xs;
    const std::int64_t plane = pb.H * pb.W;
    const bool geometry = pb.layout == Layout::NCHW && pb.R == 3 && pb.S == 3 && pb.stride_h == 1 &&
                          pb.stride_w == 1 && pb.dilation_h == 1 && pb.dilation_w == 1 &&
                          pb.M == pb.C;
    const bool extents =
        pb.N > 0 && pb.C > 0 && pb.H > 0 && pb.W > 0 && pb.P > 0 && pb.Q > 0 && plane <= 256 &&
        plane % 4 == 0 && pb.Q <= 128 && pb.N <= std::numeric_limits<int>::max() &&
        pb.C <= std::numeric_limits<int>::max() && pb.pad_h < 256 && pb.pad_w < 256;
    const bool x_map = xs.w == 1 && xs.h == pb.W && xs.c > 0 && xs.c % 4 == 0 && xs.n > 0 &&
                       xs.n % 4 == 0 && xs.c < (std::int64_t(1) << 37) &&
                       xs.n < (std::int64_t(1) << 37) &&
                       reinterpret_cast<std::uintptr_t>(op.x) % 16 == 0;
    return geometry && extents && x_map && tma_available();
  }
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
/// Launches DepthwiseTmaPlaneKernel<Shape> on `space` for operands `op` of problem pb
/// (depthwise_tma_plane_fits holds) and returns true; false, launching nothing, where the
/// driver refuses the map or the teams exceed a CUDA grid.
template <class Shape>
bool launch_depthwise_tma_plane(const Kokkos::Cuda& space,
                                const DepthwiseOperands<float, float>& op,
                                const Conv2dProblem& pb) {
  using K = DepthwiseTmaPlaneKernel<Shape>;
  K k;
  k.w = op.w, k.ws = op.ws, k.bias = pb.has_bias ? op.bias : nullptr;
  k.bias_stride = pb.has_bias ? op.bias_stride : 0;
  k.y = op.y, k.ys = op.ys;
  k.M = static_cast<int>(pb.M), k.H = static_cast<int>(pb.H), k.W = static_cast<int>(pb.W);
  k.P = static_cast<int>(pb.P), k.Q = static_cast<int>(pb.Q);
  k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  k.planes = static_cast<int>(
      std::min<std::int64_t>({Shape::threads / pb.Q, pb.M, K::kMaxStageFloats / (pb.H * pb.W)}));
  k.channel_tiles = static_cast<int>((pb.M + std::int64_t(k.planes) * Shape::steps - 1) /
                                     (std::int64_t(k.planes) * Shape::steps));
  k.activation = pb.activation;
  DepthwiseTmaMap maps;
  const LogicalStrides& xs = op.xs;
  const std::uint64_t plane = std::uint64_t(pb.H * pb.W);
  const std::uint64_t extents[4] = {plane, 1, std::uint64_t(pb.C), std::uint64_t(pb.N)};
  // The unit extent's stride: the plane's bytes (a multiple of 16 that orders the strides).
  const std::uint64_t strides[3] = {plane * 4, std::uint64_t(xs.c) * 4, std::uint64_t(xs.n) * 4};
  const int box[4] = {static_cast<int>(plane), 1, k.planes, 1};
  if (!tma_encode_float_box_4d(maps.x, op.x, extents, strides, box)) return false;
  const std::int64_t teams = std::int64_t(k.channel_tiles) * pb.N;
  if (teams > std::numeric_limits<int>::max()) return false;
  constexpr std::size_t max_scratch =
      std::size_t(K::ring) * (std::size_t(K::kMaxStageFloats) * 4 + K::alignment + 8) +
      K::alignment;
  launch_grid_constant_teams<Shape::threads, Shape::min_teams, max_scratch>(
      space, "kcnn::conv2d::depthwise::tma_plane", static_cast<int>(teams), k.scratch_bytes(), k,
      maps);
  return true;
}
#endif

}  // namespace kcnn::Impl
