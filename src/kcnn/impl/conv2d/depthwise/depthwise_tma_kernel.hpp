// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_tma_kernel.hpp
/// \brief ConvAlgo::Depthwise on Hopper for the common layer (float NHWC, 3x3 filters,
///        stride 1, no dilation, one output channel per input channel): a team walks down
///        a band of output rows of one image, its input rows brought into scratch by the
///        TMA unit a few rows ahead (DepthwiseTmaKernel).
///
/// Why: the strip kernel (depthwise_kernel.hpp) loads its window through each thread's
/// registers, and on an H200 it ran these layers at 35-47% of the copy bandwidth (ncu,
/// session 45: 25% occupancy at 106 registers, 58% of the cycles without an eligible warp,
/// most of them waiting on L1 loads); staging a tile per team with cp.async (one copy per
/// 16 bytes, addressed and bounds-checked by every thread) reached 46-58%. Here one thread
/// issues a whole stage (RowsPerStage input rows x the tile's columns plus the halo x 32
/// channels) as one TMA copy, which reads zeros in the padding, and Stages - 1 stages stay
/// in flight while the team computes: 60-85% of the copy bandwidth on the same layers
/// (RESULTS.md, session 45).
///
/// Team: 8 channel vectors (32 channels, 128 bytes a pixel) x tile_cols output columns
/// (at most Threads / 8), rows [p_begin, p_end). Thread (v, q) holds its 4 channels' 9
/// weights, reads 3 vectors of each input row from scratch (a warp's 8-thread phases each
/// read one pixel's 128 contiguous bytes: no bank conflicts) and keeps the sums of the two
/// output rows still open in registers: input row k completes output row k - 2, continues
/// k - 1 and starts k. Each completed output gets the bias and activation and is stored as
/// one 16-byte vector (a warp: 4 pixels x 128 bytes).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/async_copy.hpp"
#include "../../arch/grid_constant_launch.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/tma.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "depthwise_args.hpp"

namespace kcnn::Impl {

/// The kernel's tensor map of x: the grid-constant parameter of its launch.
struct DepthwiseTmaMap {
  TmaDescriptor x;
};

/// The launch shape: Threads a team (8 channel vectors x Threads / 8 columns), at least
/// MinTeams resident teams a multiprocessor (the register cap), RowsPerStage input rows a
/// TMA copy, Stages copies in the ring.
template <int Threads_, int MinTeams_, int RowsPerStage_, int Stages_>
struct DepthwiseTmaShape {
  static constexpr int threads = Threads_;
  static constexpr int min_teams = MinTeams_;
  static constexpr int rows_per_stage = RowsPerStage_;
  static constexpr int stages = Stages_;
};

template <class Shape>
struct DepthwiseTmaKernel {
  static constexpr int Taps = 3;
  static constexpr int vectors = 8;  ///< channel vectors a team: 32 floats, 128 bytes
  static constexpr int alignment = 128;
  using Vec = AlignedVec<float, 4>;

  const float* w;
  LogicalStrides ws;
  const float* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  float* y;
  LogicalStrides ys;  ///< ys.c == 1; ys.n, ys.h, ys.w multiples of 4 (16-byte stores)
  int M, P, Q, pad_h, pad_w;
  int tile_cols;  ///< output columns a team, at most Shape::threads / vectors
  int col_tiles, channel_tiles, row_chunks, chunk_rows;
  Activation activation;

  /// Input columns a stage holds (the box's width).
  KOKKOS_INLINE_FUNCTION int in_cols() const { return tile_cols + Taps - 1; }
  KOKKOS_INLINE_FUNCTION std::uint32_t stage_bytes() const {
    return static_cast<std::uint32_t>(Shape::rows_per_stage * in_cols() * vectors * 16);
  }
  /// The dynamic scratch a team takes: the stages, one mbarrier each, the alignment slack.
  std::size_t scratch_bytes() const {
    return std::size_t(Shape::stages) * (stage_bytes() + 8) + alignment;
  }
  std::int64_t teams(std::int64_t N) const { return N * row_chunks * col_tiles * channel_tiles; }

  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& team,
                                         const DepthwiseTmaMap& maps) const {
    int rest = team.league_rank();
    const int ct = rest % channel_tiles;
    rest /= channel_tiles;
    const int qt = rest % col_tiles;
    rest /= col_tiles;
    const int chunk = rest % row_chunks;
    const int n = rest / row_chunks;
    const int p_begin = chunk * chunk_rows;
    const int p_end = p_begin + chunk_rows < P ? p_begin + chunk_rows : P;
    const int q0 = qt * tile_cols, c0 = ct * vectors * 4;
    const int in_rows = p_end - p_begin + Taps - 1;
    const int steps = (in_rows + Shape::rows_per_stage - 1) / Shape::rows_per_stage;
    const int k0 = p_begin - pad_h;  // the band's first input row (stride 1)
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t base = scratch_address(scratch);
    const std::uint32_t stage_size = stage_bytes();
    const std::uint32_t bars = base + Shape::stages * stage_size;
    const int t = team.team_rank();
    auto issue = [&](int step, int slot) {
      tma_barrier_arrive_expect(bars + 8 * slot, stage_size);
      tma_load_tile_4d(base + slot * stage_size, &maps.x, bars + 8 * slot, c0, q0 - pad_w,
                       k0 + step * Shape::rows_per_stage, n);
    };
    if (t == 0) {
      for (int s = 0; s < Shape::stages; ++s)
        tma_barrier_init(bars + 8 * s, 1);
      tma_fence_barrier_init();
    }
    team.team_barrier();
    if (t == 0)
      for (int s = 0; s < Shape::stages && s < steps; ++s)
        issue(s, s);

    const int v = t % vectors, q = t / vectors;
    const int m0 = c0 + 4 * v;
    const bool reads = q < tile_cols;  // threads past the tile only keep the barriers
    const bool writes = reads && q0 + q < Q && m0 < M;
    float wr[Taps][Taps][4], b[4];
    KCNN_DEVICE_UNROLL
    for (int l = 0; l < 4; ++l) {
      b[l] = writes && bias ? bias[(m0 + l) * bias_stride] : 0.f;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Taps; ++r)
        KCNN_DEVICE_UNROLL
      for (int s = 0; s < Taps; ++s)
        wr[r][s][l] = writes ? w[(m0 + l) * ws.n + r * ws.h + s * ws.w] : 0.f;
    }
    // Sums of output rows k - 2 (completed by input row k) and k - 1.
    float older[4] = {0.f, 0.f, 0.f, 0.f}, newer[4] = {0.f, 0.f, 0.f, 0.f};
    float* const yq = y + n * ys.n + std::int64_t(q0 + q) * ys.w + m0;
    const int in_cols_ = in_cols();
    const Vec* const column = reinterpret_cast<const Vec*>(scratch) + q * vectors + v;
    int k = 0;  // input rows consumed
    for (int step = 0; step < steps; ++step) {
      const int slot = step % Shape::stages;
      tma_barrier_wait(bars + 8 * slot, (step / Shape::stages) & 1);
      const Vec* const stage = column + slot * (stage_size / sizeof(Vec));
      KCNN_DEVICE_UNROLL
      for (int rr = 0; rr < Shape::rows_per_stage; ++rr, ++k) {
        if (!reads || k >= in_rows) continue;
        Vec in[Taps];
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < Taps; ++s)
          in[s] = stage[(rr * in_cols_ + s) * vectors];
        float started[4];
        KCNN_DEVICE_UNROLL
        for (int l = 0; l < 4; ++l) {
          float o = older[l], n1 = newer[l], n0 = 0.f;
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < Taps; ++s) {
            n0 += wr[0][s][l] * in[s].v[l];
            n1 += wr[1][s][l] * in[s].v[l];
            o += wr[2][s][l] * in[s].v[l];
          }
          older[l] = o, newer[l] = n1, started[l] = n0;
        }
        if (k >= Taps - 1 && writes) {
          Vec out;
          KCNN_DEVICE_UNROLL
          for (int l = 0; l < 4; ++l)
            out.v[l] = apply_activation(activation, older[l] + b[l]);
          *reinterpret_cast<Vec*>(yq + std::int64_t(p_begin + k - (Taps - 1)) * ys.h) = out;
        }
        KCNN_DEVICE_UNROLL
        for (int l = 0; l < 4; ++l)
          older[l] = newer[l], newer[l] = started[l];
      }
      team.team_barrier();  // every thread is done with the slot before it is refilled
      if (t == 0 && step + Shape::stages < steps) issue(step + Shape::stages, slot);
    }
    if (t == 0)
      for (int s = 0; s < Shape::stages; ++s)
        tma_barrier_invalidate(bars + 8 * s);  // (the block may run another team next)
  }
};

/// The shape kcnn launches (RESULTS.md, session 45, H200: 128 threads, 2 rows a stage, 4
/// stages).
using DepthwiseTmaDefaultShape = DepthwiseTmaShape<128, 1, 2, 4>;

/// Whether DepthwiseTmaKernel computes depthwise problem pb on operands `op` of T = Y =
/// float: a Hopper build (kBuildHasTma) whose driver encodes tensor maps, NHWC, 3x3
/// filters at stride 1 without dilation, multiplier 1, C a multiple of 4; x's channels
/// contiguous with 16-byte multiples for its other strides and a 16-byte aligned address
/// (the tensor map's rules), y's 16-byte vectors likewise; extents and offsets within
/// 32 bits.
template <class T, class Y>
bool depthwise_tma_fits(const Conv2dProblem& pb, const DepthwiseOperands<T, Y>& op) {
  if constexpr (!std::is_same_v<T, float> || !std::is_same_v<Y, float> || !kBuildHasTma) {
    (void)pb, (void)op;
    return false;
  } else {
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const LogicalStrides &xs = op.xs, &ys = op.ys;
    const bool geometry = pb.layout == Layout::NHWC && pb.R == 3 && pb.S == 3 && pb.stride_h == 1 &&
                          pb.stride_w == 1 && pb.dilation_h == 1 && pb.dilation_w == 1 &&
                          pb.M == pb.C && pb.C % 4 == 0;
    const bool x_map = xs.c == 1 && xs.w % 4 == 0 && xs.h % 4 == 0 && xs.n % 4 == 0 && xs.w > 0 &&
                       xs.h > 0 && xs.n > 0 && xs.n < (std::int64_t(1) << 37) &&
                       reinterpret_cast<std::uintptr_t>(op.x) % 16 == 0;
    const bool y_vectors =
        channel_vectors_aligned(ys, 4) && reinterpret_cast<std::uintptr_t>(op.y) % 16 == 0;
    const bool ranges = pb.N <= int_max && pb.C <= int_max && pb.H <= int_max && pb.W <= int_max &&
                        pb.pad_h < 256 && pb.pad_w < 256;
    return geometry && x_map && y_vectors && ranges && tma_available();
  }
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
/// Launches DepthwiseTmaKernel<Shape> on `space` for operands `op` of problem pb
/// (depthwise_tma_fits holds). Column tiles split Q evenly (56 columns: 4 of 14, not 3 of
/// 16 and one of 8); bands of 14 output rows, the fastest of 7, 14, 28 and 56 on the
/// issue-22 layers (H200, session 45).
template <class Shape = DepthwiseTmaDefaultShape>
void launch_depthwise_tma(const Kokkos::Cuda& space, const DepthwiseOperands<float, float>& op,
                          const Conv2dProblem& pb) {
  using K = DepthwiseTmaKernel<Shape>;
  constexpr int max_cols = Shape::threads / K::vectors;
  constexpr int band_rows = 14;
  K k;
  k.w = op.w, k.ws = op.ws, k.bias = pb.has_bias ? op.bias : nullptr;
  k.bias_stride = pb.has_bias ? op.bias_stride : 0;
  k.y = op.y, k.ys = op.ys;
  k.M = static_cast<int>(pb.M), k.P = static_cast<int>(pb.P), k.Q = static_cast<int>(pb.Q);
  k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  k.col_tiles = static_cast<int>((pb.Q + max_cols - 1) / max_cols);
  k.tile_cols = static_cast<int>((pb.Q + k.col_tiles - 1) / k.col_tiles);
  k.channel_tiles = static_cast<int>((pb.M + 4 * K::vectors - 1) / (4 * K::vectors));
  k.row_chunks = static_cast<int>((pb.P + band_rows - 1) / band_rows);
  k.chunk_rows = static_cast<int>((pb.P + k.row_chunks - 1) / k.row_chunks);
  k.activation = pb.activation;
  DepthwiseTmaMap maps;
  const std::uint64_t extents[4] = {std::uint64_t(pb.C), std::uint64_t(pb.W), std::uint64_t(pb.H),
                                    std::uint64_t(pb.N)};
  const std::uint64_t strides[3] = {std::uint64_t(op.xs.w) * 4, std::uint64_t(op.xs.h) * 4,
                                    std::uint64_t(op.xs.n) * 4};
  const int box[4] = {4 * K::vectors, k.in_cols(), Shape::rows_per_stage, 1};
  throw_if(!tma_encode_float_box_4d(maps.x, op.x, extents, strides, box), "kcnn::conv2d_forward",
           "the CUDA driver refused the depthwise kernel's tensor map of x");
  const std::int64_t teams = k.teams(pb.N);
  throw_if(teams > std::numeric_limits<int>::max(), "kcnn::conv2d_forward",
           msg("the depthwise kernel's ", teams, " teams exceed a CUDA grid"));
  // The most scratch a team takes: max_cols columns.
  constexpr std::size_t max_scratch =
      std::size_t(Shape::stages) *
          (Shape::rows_per_stage * (max_cols + K::Taps - 1) * K::vectors * 16 + 8) +
      K::alignment;
  launch_grid_constant_teams<Shape::threads, Shape::min_teams, max_scratch>(
      space, "kcnn::conv2d::depthwise::tma", static_cast<int>(teams), k.scratch_bytes(), k, maps);
}
#endif

}  // namespace kcnn::Impl
