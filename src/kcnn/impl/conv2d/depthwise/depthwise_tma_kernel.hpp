// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_tma_kernel.hpp
/// \brief ConvAlgo::Depthwise on Hopper for the common layer (float, 3x3 filters, stride 1,
///        no dilation, one output channel per input channel): a team walks down a band of
///        output rows of one image, its input rows brought into scratch by the TMA unit a
///        few rows ahead (DepthwiseTmaKernel), both layouts.
///
/// Why: the strip kernel (depthwise_kernel.hpp) loads its window through each thread's
/// registers, and on an H200 it ran these layers at 35-58% of the copy bandwidth (ncu,
/// session 45, NHWC: 25% occupancy at 106 registers, 58% of the cycles without an
/// eligible warp, most of them waiting on L1 loads); staging a tile per team with
/// cp.async (one copy per 16 bytes, addressed and bounds-checked by every thread)
/// reached 46-58%. Here one thread issues a whole stage (rows_per_stage input rows of the
/// team's columns plus the halo, of all its channels) as one TMA copy, which reads zeros
/// in the padding, and stages - 1 copies stay in flight while the team computes: 60-84%
/// of the copy bandwidth in NHWC, 61-75% in NCHW (the rows a tensor map can describe) on
/// the same layers, forward (RESULTS.md, session 45).
///
/// NHWC team: 8 channel vectors (32 channels, 128 bytes a pixel) x tile_cols output
/// columns; thread (v, q) computes 4 channels of column q, reading 3 vectors of each
/// input row (a warp's 8-thread phases each read one pixel's 128 contiguous bytes: no
/// bank conflicts) and storing each output as one 16-byte vector. NCHW team: `planes`
/// channel planes x tile_cols columns; thread (plane, q) computes columns q .. q + 3 of
/// its plane from 6 floats a row (the box starts on a 16-byte column, up to 3 left of
/// the window) and stores them as one vector where y allows. Each thread keeps the sums
/// of the two output rows still open in registers: input row k completes output row
/// k - 2, continues k - 1 and starts k; completed outputs get the bias and activation.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
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
#include "../../epilogue/bias_activation.hpp"
#include "depthwise_args.hpp"

namespace kcnn::Impl {

/// The kernel's tensor map of x: the grid-constant parameter of its launch.
struct DepthwiseTmaMap {
  TmaDescriptor x;
};

/// The launch shape: Threads a team (NHWC 8 channel vectors x Threads / 8 columns; NCHW
/// groups of 4 columns x planes), at least MinTeams resident teams a multiprocessor (the
/// register cap), RowsPerStage input rows a TMA copy, Stages copies in the ring.
template <int Threads_, int MinTeams_, int RowsPerStage_, int Stages_>
struct DepthwiseTmaShape {
  static constexpr int threads = Threads_;
  static constexpr int min_teams = MinTeams_;
  static constexpr int rows_per_stage = RowsPerStage_;
  static constexpr int stages = Stages_;
};

/// One team: image n, a band of output rows [p_begin, p_end), a column tile, a channel
/// tile (the league rank, channel tiles fastest: neighbouring teams read the same
/// pixels' other channels). The fields are the launch's (launch_depthwise_tma).
template <Layout L, class Shape>
struct DepthwiseTmaKernel {
  static constexpr Layout layout = L;
  static constexpr int Taps = 3;
  static constexpr int lanes = L == Layout::NHWC ? 4 : 1;  ///< channels a thread
  static constexpr int cols = L == Layout::NHWC ? 1 : 4;   ///< output columns a thread
  static constexpr int vectors = 8;  ///< NHWC: channel vectors a team (32 floats, 128 bytes)
  static constexpr int alignment = 128;
  using Vec = AlignedVec<float, lanes>;

  const float* w;
  LogicalStrides ws;
  const float* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  float* y;
  LogicalStrides ys;  ///< NHWC: ys.c == 1; ys.n, ys.h, ys.w multiples of 4 (16-byte stores)
  int M, P, Q, pad_h, pad_w;
  int tile_cols;                  ///< output columns a team
  int planes;                     ///< channels a team: NHWC 32; NCHW Shape::threads / column groups
  bool y_column_vectors = false;  ///< NCHW: 4 columns from q0 + q (q % 4 == 0) one vector
  int col_tiles, channel_tiles, row_chunks, chunk_rows;
  Activation activation;

  /// Input columns a stage row holds: the box's width. NCHW boxes start at a column
  /// multiple of 4 (a TMA copy's rows start on 16 bytes), up to 3 columns left of the
  /// window, and span a multiple of 4 covering the last column group's window.
  KOKKOS_INLINE_FUNCTION int in_cols() const {
    const int covered = (tile_cols + cols - 1) / cols * cols;  // the column groups' span
    return L == Layout::NHWC ? tile_cols + Taps - 1 : (covered + Taps - 1 + 3 + 3) / 4 * 4;
  }
  /// The bytes a stage's copy brings (the whole box: the padding's zeros too).
  KOKKOS_INLINE_FUNCTION std::uint32_t box_bytes() const {
    return static_cast<std::uint32_t>(Shape::rows_per_stage * in_cols() * planes * 4);
  }
  /// A stage's scratch: box_bytes rounded up to the 128 bytes a copy's destination is
  /// aligned to.
  KOKKOS_INLINE_FUNCTION std::uint32_t stage_bytes() const {
    return (box_bytes() + alignment - 1) / alignment * alignment;
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
    const int q0 = qt * tile_cols, c0 = ct * planes;
    const int in_rows = p_end - p_begin + Taps - 1;
    const int steps = (in_rows + Shape::rows_per_stage - 1) / Shape::rows_per_stage;
    const int k0 = p_begin - pad_h;  // the band's first input row (stride 1)
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t base = scratch_address(scratch);
    const std::uint32_t stage_size = stage_bytes(), box_size = box_bytes();
    const std::uint32_t bars = base + Shape::stages * stage_size;
    const int t = team.team_rank();
    // The window's first column, and (NCHW) the box's: the multiple of 4 at or left of it.
    const int w0 = q0 - pad_w;
    const int shift = L == Layout::NHWC ? 0 : ((w0 % 4) + 4) % 4;
    // The tensor map's coordinates, innermost first: NHWC (c, w, h, n), NCHW (w, h, c, n).
    auto issue = [&](int step, int slot) {
      const int k = k0 + step * Shape::rows_per_stage;
      tma_barrier_arrive_expect(bars + 8 * slot, box_size);
      if constexpr (L == Layout::NHWC) {
        tma_load_tile_4d(base + slot * stage_size, &maps.x, bars + 8 * slot, c0, w0, k, n);
      } else {
        tma_load_tile_4d(base + slot * stage_size, &maps.x, bars + 8 * slot, w0 - shift, k, c0, n);
      }
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

    // Thread (channel, column): NHWC vector `plane` of the 8, column q; NCHW plane `plane`,
    // columns q .. q + 3 (the column groups fastest: a warp reads and stores neighbouring
    // floats).
    const int groups = (tile_cols + cols - 1) / cols;  // NCHW column groups a plane
    const int q = L == Layout::NHWC ? t / vectors : t % groups * cols;
    const int plane = L == Layout::NHWC ? t % vectors : t / groups;
    const int m0 = c0 + lanes * plane;
    const bool reads = L == Layout::NHWC ? q < tile_cols : plane < planes;
    const bool writes = reads && q0 + q < Q && m0 < M;
    float wr[Taps][Taps][lanes], b[lanes];
    KCNN_DEVICE_UNROLL
    for (int l = 0; l < lanes; ++l) {
      b[l] = writes && bias ? bias[(m0 + l) * bias_stride] : 0.f;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Taps; ++r)
        KCNN_DEVICE_UNROLL
      for (int s = 0; s < Taps; ++s)
        wr[r][s][l] = writes ? w[(m0 + l) * ws.n + r * ws.h + s * ws.w] : 0.f;
    }
    // Sums of output rows k - 2 (completed by input row k) and k - 1, per column and lane.
    float older[cols][lanes], newer[cols][lanes];
    KCNN_DEVICE_UNROLL
    for (int c = 0; c < cols; ++c)
      KCNN_DEVICE_UNROLL
    for (int l = 0; l < lanes; ++l)
      older[c][l] = newer[c][l] = 0.f;
    // NCHW: which of the thread's columns it stores, and whether as one 16-byte vector.
    int stored = 1;
    if constexpr (L == Layout::NCHW) {
      const int left = (tile_cols - q < Q - q0 - q ? tile_cols - q : Q - q0 - q);
      stored = left < cols ? left : cols;
    }
    const bool vector_store = L == Layout::NHWC || (y_column_vectors && stored == cols);
    float* const yq = y + n * ys.n + std::int64_t(m0) * ys.c + std::int64_t(q0 + q) * ys.w;
    const int row_elems = L == Layout::NHWC ? in_cols() * vectors : in_cols();
    // This thread's first window column in a stage (in Vec), and a tap's step along a row.
    const int first = L == Layout::NHWC ? q * vectors + plane
                                        : plane * Shape::rows_per_stage * row_elems + shift + q;
    constexpr int tap_step = L == Layout::NHWC ? vectors : 1;
    constexpr int window = Taps + cols - 1;  // input columns a row step reads
    int k = 0;                               // input rows consumed
    for (int step = 0; step < steps; ++step) {
      const int slot = step % Shape::stages;
      tma_barrier_wait(bars + 8 * slot, (step / Shape::stages) & 1);
      const Vec* const stage = reinterpret_cast<const Vec*>(scratch + slot * stage_size) + first;
      KCNN_DEVICE_UNROLL
      for (int rr = 0; rr < Shape::rows_per_stage; ++rr, ++k) {
        if (!reads || k >= in_rows) continue;
        Vec in[window];
        KCNN_DEVICE_UNROLL
        for (int j = 0; j < window; ++j)
          in[j] = stage[rr * row_elems + j * tap_step];
        float started[cols][lanes];
        KCNN_DEVICE_UNROLL
        for (int c = 0; c < cols; ++c)
          KCNN_DEVICE_UNROLL
        for (int l = 0; l < lanes; ++l) {
          float o = older[c][l], n1 = newer[c][l], n0 = 0.f;
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < Taps; ++s) {
            n0 += wr[0][s][l] * in[c + s].v[l];
            n1 += wr[1][s][l] * in[c + s].v[l];
            o += wr[2][s][l] * in[c + s].v[l];
          }
          older[c][l] = o, newer[c][l] = n1, started[c][l] = n0;
        }
        if (k >= Taps - 1 && writes) {
          float* const yp = yq + std::int64_t(p_begin + k - (Taps - 1)) * ys.h;
          if (vector_store) {
            AlignedVec<float, 4> out;  // NHWC 4 channels, NCHW 4 columns
            KCNN_DEVICE_UNROLL
            for (int i = 0; i < 4; ++i)
              out.v[i] = apply_activation(activation, older[i % cols][i % lanes] + b[i % lanes]);
            *reinterpret_cast<AlignedVec<float, 4>*>(yp) = out;
          } else {
            KCNN_DEVICE_UNROLL
            for (int c = 0; c < cols; ++c)
              if (c < stored) yp[c * ys.w] = apply_activation(activation, older[c][0] + b[0]);
          }
        }
        KCNN_DEVICE_UNROLL
        for (int c = 0; c < cols; ++c)
          KCNN_DEVICE_UNROLL
        for (int l = 0; l < lanes; ++l)
          older[c][l] = newer[c][l], newer[c][l] = started[c][l];
      }
      team.team_barrier();  // every thread is done with the slot before it is refilled
      if (t == 0 && step + Shape::stages < steps) issue(step + Shape::stages, slot);
    }
    if (t == 0)
      for (int s = 0; s < Shape::stages; ++s)
        tma_barrier_invalidate(bars + 8 * s);  // (the block may run another team next)
  }
};

/// The shapes kcnn launches, by layout (H200, session 45, the issue-22 layers; RESULTS.md):
/// 128 threads and 4 stages; NHWC 2 rows a stage (4 rows: within 1%), NCHW 4 (its stages
/// are smaller: 2 rows took the 128-channel layer to 73% of the copy rate, 4 rows 81%).
template <Layout L>
using DepthwiseTmaShapeFor = std::conditional_t<L == Layout::NHWC, DepthwiseTmaShape<128, 1, 2, 4>,
                                                DepthwiseTmaShape<128, 1, 4, 4>>;

/// Whether DepthwiseTmaKernel computes depthwise problem pb on operands `op` of T = Y =
/// float: a Hopper build (kBuildHasTma) whose driver encodes tensor maps, 3x3 filters at
/// stride 1 without dilation, multiplier 1; x's rows (NCHW) or channels (NHWC, C a multiple
/// of 4) contiguous, its other strides multiples of 16 bytes and its address 16-byte
/// aligned (the tensor map's rules); NHWC y's 16-byte vectors likewise; extents non-zero
/// and within 32 bits.
template <class T, class Y>
bool depthwise_tma_fits(const Conv2dProblem& pb, const DepthwiseOperands<T, Y>& op) {
  if constexpr (!std::is_same_v<T, float> || !std::is_same_v<Y, float> || !kBuildHasTma) {
    (void)pb, (void)op;
    return false;
  } else {
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const LogicalStrides &xs = op.xs, &ys = op.ys;
    const bool nhwc = pb.layout == Layout::NHWC;
    const bool geometry = pb.R == 3 && pb.S == 3 && pb.stride_h == 1 && pb.stride_w == 1 &&
                          pb.dilation_h == 1 && pb.dilation_w == 1 && pb.M == pb.C &&
                          (!nhwc || pb.C % 4 == 0);
    // The map's three outer strides (in elements): NHWC w, h, n; NCHW h, c, n.
    const std::int64_t inner = nhwc ? xs.c : xs.w;
    const std::int64_t outer[3] = {nhwc ? xs.w : xs.h, nhwc ? xs.h : xs.c, xs.n};
    bool x_map = inner == 1 && reinterpret_cast<std::uintptr_t>(op.x) % 16 == 0;
    for (std::int64_t stride : outer)
      x_map = x_map && stride > 0 && stride % 4 == 0 && stride < (std::int64_t(1) << 37);
    const bool y_vectors = !nhwc || (channel_vectors_aligned(ys, 4) &&
                                     reinterpret_cast<std::uintptr_t>(op.y) % 16 == 0);
    // Extents non-zero (a tensor map has no empty one; empty problems never reach a
    // kernel anyway) and H, W, P, Q with a tile's rows and columns to spare below INT_MAX
    // (the kernel forms q0 + q and row indices in int).
    const std::int64_t limit = int_max - 512;
    const bool ranges = pb.N > 0 && pb.C > 0 && pb.H > 0 && pb.W > 0 && pb.P > 0 && pb.Q > 0 &&
                        pb.N <= int_max && pb.C <= int_max && pb.H < limit && pb.W < limit &&
                        pb.P < limit && pb.Q < limit && pb.pad_h < 256 && pb.pad_w < 256;
    return geometry && x_map && y_vectors && ranges && tma_available();
  }
}

/// Output columns a team of kernel K (DepthwiseTmaKernel's team) takes at most: NHWC one
/// a thread group of 8 channel vectors; NCHW 4 a thread, up to 248 (a box's extents are at
/// most 256: the halo and the shift to a 16-byte column).
template <class Shape, class K>
constexpr int depthwise_tma_max_cols() {
  return K::layout == Layout::NHWC
             ? Shape::threads / K::vectors
             : (Shape::threads * K::cols < 248 ? Shape::threads * K::cols : 248);
}

/// The teams' tiling of problem pb for a kernel K with DepthwiseTmaKernel's team (the
/// weight gradient's, DepthwiseWeightsTmaKernel, shares it): column tiles of at most
/// max_cols split Q evenly (NHWC 56 columns: 4 of 14, not 3 of 16 and one of 8); NHWC 32
/// channels a team, NCHW Shape::threads / column groups planes (at most 256 and no more
/// than the channels: a box of empty planes is the TMA unit's work); bands of at most
/// band_rows output rows, split evenly. Sets K's tile_cols, col_tiles, planes,
/// channel_tiles, row_chunks and chunk_rows.
template <class Shape, class K>
void depthwise_tma_tile(K& k, const Conv2dProblem& pb, int band_rows) {
  constexpr bool nhwc = K::layout == Layout::NHWC;
  constexpr int max_cols = depthwise_tma_max_cols<Shape, K>();
  k.col_tiles = static_cast<int>((pb.Q + max_cols - 1) / max_cols);
  k.tile_cols = static_cast<int>((pb.Q + k.col_tiles - 1) / k.col_tiles);
  k.planes = nhwc ? 4 * K::vectors
                  : static_cast<int>(std::min<std::int64_t>(
                        {Shape::threads / ((k.tile_cols + K::cols - 1) / K::cols), 256, pb.M}));
  k.channel_tiles = static_cast<int>((pb.M + k.planes - 1) / k.planes);
  k.row_chunks = static_cast<int>((pb.P + band_rows - 1) / band_rows);
  k.chunk_rows = static_cast<int>((pb.P + k.row_chunks - 1) / k.row_chunks);
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
/// Launches DepthwiseTmaKernel<L, Shape> on `space` for operands `op` of problem pb
/// (depthwise_tma_fits holds) in bands of at most `band_rows` output rows and returns
/// true; false, launching nothing, where the driver refuses the tensor map or the teams
/// exceed a CUDA grid. Bands of 14: on the issue-22 layers in NHWC (H200, session 45) the
/// fastest of 3, 4, 5, 7, 10, 14 and 28 or within 2% of it. Tiling: depthwise_tma_tile.
template <Layout L, class Shape>
bool launch_depthwise_tma(const Kokkos::Cuda& space, const DepthwiseOperands<float, float>& op,
                          const Conv2dProblem& pb, int band_rows = 14) {
  using K = DepthwiseTmaKernel<L, Shape>;
  constexpr bool nhwc = L == Layout::NHWC;
  constexpr int max_cols = depthwise_tma_max_cols<Shape, K>();
  K k;
  k.w = op.w, k.ws = op.ws, k.bias = pb.has_bias ? op.bias : nullptr;
  k.bias_stride = pb.has_bias ? op.bias_stride : 0;
  k.y = op.y, k.ys = op.ys;
  k.M = static_cast<int>(pb.M), k.P = static_cast<int>(pb.P), k.Q = static_cast<int>(pb.Q);
  k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  depthwise_tma_tile<Shape>(k, pb, band_rows);
  // NCHW 16-byte stores of y: columns contiguous, whole vectors from every tile's first.
  k.y_column_vectors = !nhwc && k.tile_cols % 4 == 0 && column_vectors_aligned(op.ys, 4) &&
                       reinterpret_cast<std::uintptr_t>(op.y) % 16 == 0;
  k.activation = pb.activation;
  DepthwiseTmaMap maps;
  const LogicalStrides& xs = op.xs;
  const std::uint64_t extents[4] = {std::uint64_t(nhwc ? pb.C : pb.W),
                                    std::uint64_t(nhwc ? pb.W : pb.H),
                                    std::uint64_t(nhwc ? pb.H : pb.C), std::uint64_t(pb.N)};
  const std::uint64_t strides[3] = {std::uint64_t(nhwc ? xs.w : xs.h) * 4,
                                    std::uint64_t(nhwc ? xs.h : xs.c) * 4, std::uint64_t(xs.n) * 4};
  const int box[4] = {nhwc ? k.planes : k.in_cols(), nhwc ? k.in_cols() : Shape::rows_per_stage,
                      nhwc ? Shape::rows_per_stage : k.planes, 1};
  // A map the driver refuses (strides it does not take) or a grid beyond CUDA's: the
  // caller runs the other kernels.
  if (!tma_encode_float_box_4d(maps.x, op.x, extents, strides, box)) return false;
  const std::int64_t teams = k.teams(pb.N);
  if (teams > std::numeric_limits<int>::max()) return false;
  // The most scratch a team takes: NHWC max_cols columns; NCHW planes x in_cols() <=
  // 12 Shape::threads floats a row (planes <= threads / groups, in_cols <= 4 groups + 8).
  constexpr std::size_t row_floats = nhwc ? std::size_t(max_cols + K::Taps - 1) * 4 * K::vectors
                                          : 12 * std::size_t(Shape::threads);
  constexpr std::size_t max_scratch =
      std::size_t(Shape::stages) * (Shape::rows_per_stage * row_floats * 4 + K::alignment + 8) +
      K::alignment;
  launch_grid_constant_teams<Shape::threads, Shape::min_teams, max_scratch>(
      space, "kcnn::conv2d::depthwise::tma", static_cast<int>(teams), k.scratch_bytes(), k, maps);
  return true;
}
#endif

}  // namespace kcnn::Impl
