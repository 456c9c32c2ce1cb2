// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_weights_tma_kernel.hpp
/// \brief The depthwise weight gradient of the common layer on Hopper (float, 3x3 filters,
///        stride 1, no dilation, one output channel per input channel): a team walks down
///        a band of rows of a few images, its input and output-gradient rows brought into
///        scratch by the TMA unit a few rows ahead (DepthwiseWeightsTmaKernel), both
///        layouts.
///
/// Why: the walk kernel (depthwise_weights_walk_kernel.hpp) loads x and dy through each
/// thread's registers; on an H200 it reached 45-67% of the copy bandwidth on the issue-22
/// layers in NHWC and 30-63% in NCHW (RESULTS.md, session 45; ncu, session 46: 128
/// registers, 25% occupancy, 44% of the scheduler cycles without an eligible warp). The
/// forward's TMA-fed band kernel (conv2d/depthwise/depthwise_tma_kernel.hpp) showed what
/// staging whole boxes by one thread gains; this kernel stages dy beside x in the same
/// ring.
///
/// The team and its threads are the forward kernel's (NHWC: 8 channel vectors x
/// tile_cols columns, a thread 4 channels of one column; NCHW: planes x groups of 4
/// columns). A stage holds rows_per_stage input rows of the team's columns plus the halo
/// (zeros in the padding) and the same rows of dy. Input row i of the band pairs with dy
/// rows i, i - 1 and i - 2 (filter rows 0, 1, 2): the thread keeps those three dy values
/// in registers, so each input row costs it 3 (NCHW 6) reads of x, one of dy and 36
/// multiply-adds into its 36 sums (and 4 adds into the bias sums). The team then adds its
/// threads' sums in scratch in a fixed order; with several teams a channel (image splits
/// x bands x column tiles: the chunks), the sums go to the workspace and
/// DepthwiseWeightsTmaStore adds them in a fixed order, so the result does not depend on
/// the timing (nor on the GPU: the team targets are constants).
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
#include "../../common/workspace_cache.hpp"
#include "../../conv2d/depthwise/depthwise_tma_kernel.hpp"
#include "depthwise_weights_plan.hpp"

namespace kcnn::Impl {

/// The kernel's tensor maps of x and dy: the grid-constant parameter of its launch.
struct DepthwiseWeightsTmaMaps {
  TmaDescriptor x, dy;
};

/// One team: channel tile, column tile, band of output rows, image split (the league
/// rank, channel tiles fastest); it handles images split, split + image_splits, ... The
/// fields are the launch's (launch_depthwise_weights_tma).
template <Layout L, class Shape>
struct DepthwiseWeightsTmaKernel {
  static constexpr Layout layout = L;
  static constexpr int Taps = 3;
  static constexpr int Sums = Taps * Taps + 1;             ///< the filter's taps, then the bias
  static constexpr int lanes = L == Layout::NHWC ? 4 : 1;  ///< channels a thread
  static constexpr int cols = L == Layout::NHWC ? 1 : 4;   ///< output columns a thread
  static constexpr int vectors = 8;  ///< NHWC: channel vectors a team (32 floats, 128 bytes)
  static constexpr int alignment = 128;
  using Vec = AlignedVec<float, lanes>;

  DepthwiseWeightsSink<float> sink;  ///< chunk (split, band, column tile) -> partial or dw
  int N, M, P, Q, pad_h, pad_w;
  int tile_cols;  ///< output columns a team
  int planes;     ///< channels a team: NHWC 32; NCHW Shape::threads / column groups
  int col_tiles, channel_tiles, row_chunks, chunk_rows, image_splits;

  /// Input columns a stage row holds (the forward kernel's box: NCHW boxes start on a
  /// multiple of 4 columns, up to 3 left of the window).
  KOKKOS_INLINE_FUNCTION int in_cols() const {
    const int covered = (tile_cols + cols - 1) / cols * cols;
    return L == Layout::NHWC ? tile_cols + Taps - 1 : (covered + Taps - 1 + 3 + 3) / 4 * 4;
  }
  /// Whether every NCHW dy box starts on a 16-byte column (tile_cols % 4 == 0): then a
  /// thread's 4 columns are one aligned vector in scratch.
  KOKKOS_INLINE_FUNCTION bool dy_aligned() const { return tile_cols % 4 == 0; }
  /// dy columns a stage row holds: NHWC the tile's; NCHW the column groups' span, from a
  /// multiple of 4 (4 more where a tile may start off one).
  KOKKOS_INLINE_FUNCTION int dy_cols() const {
    const int covered = (tile_cols + cols - 1) / cols * cols;
    return L == Layout::NHWC ? tile_cols : covered + (dy_aligned() ? 0 : 4);
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t x_box_bytes() const {
    return static_cast<std::uint32_t>(Shape::rows_per_stage * in_cols() * planes * 4);
  }
  KOKKOS_INLINE_FUNCTION std::uint32_t dy_box_bytes() const {
    return static_cast<std::uint32_t>(Shape::rows_per_stage * dy_cols() * planes * 4);
  }
  static KOKKOS_INLINE_FUNCTION std::uint32_t aligned(std::uint32_t bytes) {
    return (bytes + alignment - 1) / alignment * alignment;
  }
  /// A stage: the x box, then the dy box, each from a 128-byte boundary.
  KOKKOS_INLINE_FUNCTION std::uint32_t stage_bytes() const {
    return aligned(x_box_bytes()) + aligned(dy_box_bytes());
  }
  /// Threads along the columns (NHWC columns, NCHW column groups) and the sums of the
  /// team's channels: the reduction's scratch is [column thread][channel][Sums].
  KOKKOS_INLINE_FUNCTION int column_threads() const {
    return L == Layout::NHWC ? Shape::threads / vectors : (tile_cols + cols - 1) / cols;
  }
  KOKKOS_INLINE_FUNCTION std::size_t reduction_bytes() const {
    return std::size_t(column_threads()) * planes * Sums * sizeof(float);
  }
  /// The stages' bytes, which the reduction reuses (more where it needs more).
  KOKKOS_INLINE_FUNCTION std::size_t staging_bytes() const {
    const std::size_t stages = std::size_t(Shape::stages) * stage_bytes();
    return stages > reduction_bytes() ? stages : reduction_bytes();
  }
  /// The dynamic scratch a team takes: the staging bytes, one mbarrier a stage, the
  /// alignment slack.
  std::size_t scratch_bytes() const {
    return staging_bytes() + std::size_t(Shape::stages) * 8 + alignment;
  }
  std::int64_t teams() const {
    return std::int64_t(image_splits) * row_chunks * col_tiles * channel_tiles;
  }
  std::int64_t chunks() const { return std::int64_t(image_splits) * row_chunks * col_tiles; }

  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& team,
                                         const DepthwiseWeightsTmaMaps& maps) const {
    int rest = team.league_rank();
    const int ct = rest % channel_tiles;
    rest /= channel_tiles;
    const int qt = rest % col_tiles;
    rest /= col_tiles;
    const int band = rest % row_chunks;
    const int split = rest / row_chunks;
    const int p_begin = band * chunk_rows;
    const int band_rows = (p_begin + chunk_rows < P ? p_begin + chunk_rows : P) - p_begin;
    const int q0 = qt * tile_cols, c0 = ct * planes;
    const int in_rows = band_rows + Taps - 1;
    const int steps = (in_rows + Shape::rows_per_stage - 1) / Shape::rows_per_stage;
    const int images = (N - split + image_splits - 1) / image_splits;
    const int total = images * steps;  // stages over all the team's images
    const int k0 = p_begin - pad_h;    // the band's first input row (stride 1)
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t base = scratch_address(scratch);
    const std::uint32_t stage_size = stage_bytes(), x_size = aligned(x_box_bytes());
    const std::uint32_t bars = base + static_cast<std::uint32_t>(staging_bytes());
    const int t = team.team_rank();
    const int w0 = q0 - pad_w;  // the window's first column
    const int shift = L == Layout::NHWC ? 0 : ((w0 % 4) + 4) % 4;
    const int dy_shift = L == Layout::NHWC ? 0 : q0 % 4;
    // Stage g: image split + (g / steps) image_splits, rows (g % steps) rows_per_stage on.
    // The maps' coordinates, innermost first: NHWC (c, w, h, n), NCHW (w, h, c, n).
    auto issue = [&](int g, int slot) {
      const int n = split + g / steps * image_splits;
      const int row = (g % steps) * Shape::rows_per_stage;
      const std::uint32_t dst = base + slot * stage_size, bar = bars + 8 * slot;
      tma_barrier_arrive_expect(bar, x_box_bytes() + dy_box_bytes());
      if constexpr (L == Layout::NHWC) {
        tma_load_tile_4d(dst, &maps.x, bar, c0, w0, k0 + row, n);
        tma_load_tile_4d(dst + x_size, &maps.dy, bar, c0, q0, p_begin + row, n);
      } else {
        tma_load_tile_4d(dst, &maps.x, bar, w0 - shift, k0 + row, c0, n);
        tma_load_tile_4d(dst + x_size, &maps.dy, bar, q0 - dy_shift, p_begin + row, c0, n);
      }
    };
    if (t == 0) {
      for (int s = 0; s < Shape::stages; ++s)
        tma_barrier_init(bars + 8 * s, 1);
      tma_fence_barrier_init();
    }
    team.team_barrier();
    if (t == 0)
      for (int s = 0; s < Shape::stages && s < total; ++s)
        issue(s, s);

    // Thread (channel, column), as in the forward kernel.
    const int groups = (tile_cols + cols - 1) / cols;
    const int q = L == Layout::NHWC ? t / vectors : t % groups * cols;
    const int plane = L == Layout::NHWC ? t % vectors : t / groups;
    const bool reads = L == Layout::NHWC ? q < tile_cols : plane < planes;
    // NCHW: the thread's columns inside the tile (the last group's may pass its end; the
    // next tile's dy is not this team's).
    bool own[cols];
    KCNN_DEVICE_UNROLL
    for (int c = 0; c < cols; ++c)
      own[c] = q + c < tile_cols;
    const int x_row = L == Layout::NHWC ? in_cols() * vectors : in_cols();
    const int dy_row = L == Layout::NHWC ? tile_cols * vectors : dy_cols();
    const int x_first =
        L == Layout::NHWC ? q * vectors + plane : plane * Shape::rows_per_stage * x_row + shift + q;
    const int dy_first = L == Layout::NHWC ? q * vectors + plane
                                           : plane * Shape::rows_per_stage * dy_row + dy_shift + q;
    constexpr int tap_step = L == Layout::NHWC ? vectors : 1;
    constexpr int window = Taps + cols - 1;  // input columns a row step reads

    // sum[r][s][l]: filter tap (r, s) of lane l; bias[l]; d1, d2: dy of rows i - 1, i - 2.
    float sum[Taps][Taps][lanes], bias[lanes], d1[cols][lanes] = {}, d2[cols][lanes] = {};
    KCNN_DEVICE_UNROLL
    for (int l = 0; l < lanes; ++l) {
      bias[l] = 0.f;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < Taps; ++r)
        KCNN_DEVICE_UNROLL
      for (int s = 0; s < Taps; ++s)
        sum[r][s][l] = 0.f;
    }
    for (int g = 0, step = 0; g < total; ++g, step = step + 1 < steps ? step + 1 : 0) {
      const int slot = g % Shape::stages;
      tma_barrier_wait(bars + 8 * slot, (g / Shape::stages) & 1);
      const unsigned char* const stage = scratch + slot * stage_size;
      const float* const xs = reinterpret_cast<const float*>(stage) + x_first * lanes;
      const float* const dys = reinterpret_cast<const float*>(stage + x_size) + dy_first * lanes;
      if (step == 0) {  // a new image: no dy rows above the band's first
        KCNN_DEVICE_UNROLL
        for (int c = 0; c < cols; ++c)
          KCNN_DEVICE_UNROLL
        for (int l = 0; l < lanes; ++l)
          d1[c][l] = d2[c][l] = 0.f;
      }
      KCNN_DEVICE_UNROLL
      for (int rr = 0; rr < Shape::rows_per_stage; ++rr) {
        const int i = step * Shape::rows_per_stage + rr;  // the band's input row
        if (!reads || i >= in_rows) continue;
        float in[window][lanes], d0[cols][lanes];
        KCNN_DEVICE_UNROLL
        for (int j = 0; j < window; ++j) {
          const Vec v = reinterpret_cast<const Vec*>(xs + (rr * x_row + j * tap_step) * lanes)[0];
          KCNN_DEVICE_UNROLL
          for (int l = 0; l < lanes; ++l)
            in[j][l] = v.v[l];
        }
        // dy row i (rows past the band are the next band's: not this team's).
        const bool dy_inside = i < band_rows;
        const float* const dyr = dys + rr * dy_row * lanes;
        if constexpr (L == Layout::NHWC) {
          const Vec v = reinterpret_cast<const Vec*>(dyr)[0];
          KCNN_DEVICE_UNROLL
          for (int l = 0; l < lanes; ++l)
            d0[0][l] = dy_inside ? v.v[l] : 0.f;
        } else {
          float v[cols];
          if (dy_aligned()) {
            const AlignedVec<float, 4> a = reinterpret_cast<const AlignedVec<float, 4>*>(dyr)[0];
            KCNN_DEVICE_UNROLL
            for (int c = 0; c < cols; ++c)
              v[c] = a.v[c];
          } else {
            KCNN_DEVICE_UNROLL
            for (int c = 0; c < cols; ++c)
              v[c] = dyr[c];
          }
          KCNN_DEVICE_UNROLL
          for (int c = 0; c < cols; ++c)
            d0[c][0] = dy_inside && own[c] ? v[c] : 0.f;
        }
        KCNN_DEVICE_UNROLL
        for (int c = 0; c < cols; ++c)
          KCNN_DEVICE_UNROLL
        for (int l = 0; l < lanes; ++l) {
          bias[l] += d0[c][l];
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < Taps; ++s) {
            sum[0][s][l] += d0[c][l] * in[c + s][l];
            sum[1][s][l] += d1[c][l] * in[c + s][l];
            sum[2][s][l] += d2[c][l] * in[c + s][l];
          }
          d2[c][l] = d1[c][l], d1[c][l] = d0[c][l];
        }
      }
      team.team_barrier();  // every thread is done with the slot before it is refilled
      if (t == 0 && g + Shape::stages < total) issue(g + Shape::stages, slot);
    }
    if (t == 0)
      for (int s = 0; s < Shape::stages; ++s)
        tma_barrier_invalidate(bars + 8 * s);  // (the block may run another team next)

    // The team's sums: [column thread][channel][slot] in the stages' scratch (every copy
    // has landed and been read: the last barrier above), then each (channel, slot) added
    // over the column threads in order.
    float* const red = reinterpret_cast<float*>(scratch);
    const int entries = planes * Sums;
    const int column = L == Layout::NHWC ? q : q / cols;
    if (L == Layout::NHWC || reads) {
      float* const mine = red + column * entries + plane * lanes * Sums;
      KCNN_DEVICE_UNROLL
      for (int l = 0; l < lanes; ++l) {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < Taps; ++r)
          KCNN_DEVICE_UNROLL
        for (int s = 0; s < Taps; ++s)
          mine[l * Sums + r * Taps + s] = reads ? sum[r][s][l] : 0.f;
        mine[l * Sums + Sums - 1] = reads ? bias[l] : 0.f;
      }
    }
    team.team_barrier();
    const std::int64_t chunk = (std::int64_t(split) * row_chunks + band) * col_tiles + qt;
    const int columns = column_threads();
    for (int e = t; e < entries; e += Shape::threads) {
      const int m = c0 + e / Sums, slot = e % Sums;
      if (m >= M) continue;
      float total_sum = 0.f;
      for (int c = 0; c < columns; ++c)
        total_sum += red[c * entries + e];
      sink.write_slot(chunk, m, slot, total_sum);
    }
  }
};

/// The chunks' partial sums added and written to dw and dbias: DepthwiseWeightsStoreKernel's
/// arithmetic (16 groups of 32 entries, the same fixed order), as a grid-constant launch.
/// Why: launched by Kokkos as a team policy, that kernel took 10 us a call on an H200 in
/// a driver timing each call (session 46: 36 to 256 chunks alike, so the cost is the
/// launch's host work, which the GPU waits for), 15% of the 128-channel layer's gradient.
struct DepthwiseWeightsTmaStore {
  static constexpr int threads = 512, entries = 32, groups = threads / entries;
  struct Constants {};   ///< (the launch's parameter; this kernel needs none)
  const float* partial;  ///< [chunk][m][slot]
  DepthwiseBackwardWeightsOperands<float> op;
  std::int64_t M, chunks;
  int slots;

  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& team, const Constants&) const {
    const int t = team.team_rank(), group = t / entries;
    const std::int64_t total = M * slots;
    const std::int64_t e = std::int64_t(team.league_rank()) * entries + t % entries;
    const bool wanted = e < total && (op.dbias || e % slots != slots - 1);
    float* const sums = reinterpret_cast<float*>(team.scratch_aligned(16));
    sums[t] = wanted ? depthwise_chunk_sum(partial + e, total, chunks, group, groups) : 0.f;
    team.team_barrier();
    for (int half = groups / 2; half >= 1; half /= 2) {
      if (group < half) sums[t] += sums[t + half * entries];
      team.team_barrier();
    }
    if (group != 0 || !wanted) return;
    const std::int64_t m = e / slots;
    depthwise_weights_write(op, 3, slots, m, static_cast<int>(e - m * slots), sums[t]);
  }
};

/// The shapes kcnn launches, by layout, and the teams it aims at (the images split among
/// them). H200, session 46, the issue-22 layers and 64 channels at
/// 112x112 (RESULTS.md; times of one call with the store kernel, which swing by up to
/// 10% between neighbouring settings): NHWC 128 threads, 2 rows a stage, 4 stages, 3
/// teams a multiprocessor: 77 / 64 / 44 / 77% of the copy bandwidth (4 rows a stage, 6
/// stages, 64 threads, 2 to 8 teams a multiprocessor within the swing or below it);
/// NCHW 4 rows a stage (its stages are smaller) and 6 teams: 66 / 50 / - / 70%. Bands of
/// 14 rows (7: 10-30% slower, 28: within the swing).
template <Layout L>
using DepthwiseWeightsTmaShapeFor =
    std::conditional_t<L == Layout::NHWC, DepthwiseTmaShape<128, 1, 2, 4>,
                       DepthwiseTmaShape<128, 1, 4, 4>>;
/// (Constants, not a multiple of the device's multiprocessors: the image split orders the
/// sums, and a result should not depend on the GPU it ran on; 132 multiprocessors, an
/// H100 SXM's and an H200's.)
template <Layout L>
inline constexpr int kDepthwiseWeightsTmaTeams = L == Layout::NHWC ? 3 * 132 : 6 * 132;

/// Whether DepthwiseWeightsTmaKernel computes the weight gradient of depthwise problem pb
/// on operands `op` of T = float: a Hopper build whose driver encodes tensor maps, 3x3
/// filters at stride 1 without dilation, multiplier 1; x's and dy's rows (NCHW) or
/// channels (NHWC, C a multiple of 4) contiguous, their other strides multiples of 16
/// bytes and their addresses 16-byte aligned (the tensor maps' rules); extents non-zero
/// and within 32 bits.
template <class T>
bool depthwise_weights_tma_fits(const Conv2dProblem& pb,
                                const DepthwiseBackwardWeightsOperands<T>& op) {
  if constexpr (!std::is_same_v<T, float> || !kBuildHasTma) {
    (void)pb, (void)op;
    return false;
  } else {
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const bool nhwc = pb.layout == Layout::NHWC;
    const bool geometry = pb.R == 3 && pb.S == 3 && pb.stride_h == 1 && pb.stride_w == 1 &&
                          pb.dilation_h == 1 && pb.dilation_w == 1 && pb.M == pb.C &&
                          (!nhwc || pb.C % 4 == 0);
    auto mappable = [nhwc](const void* data, const LogicalStrides& s) {
      const std::int64_t inner = nhwc ? s.c : s.w;
      const std::int64_t outer[3] = {nhwc ? s.w : s.h, nhwc ? s.h : s.c, s.n};
      bool ok = inner == 1 && reinterpret_cast<std::uintptr_t>(data) % 16 == 0;
      for (std::int64_t stride : outer)
        ok = ok && stride > 0 && stride % 4 == 0 && stride < (std::int64_t(1) << 37);
      return ok;
    };
    const std::int64_t limit = int_max - 512;
    const bool ranges = pb.N > 0 && pb.C > 0 && pb.H > 0 && pb.W > 0 && pb.P > 0 && pb.Q > 0 &&
                        pb.N <= int_max && pb.C <= int_max && pb.H < limit && pb.W < limit &&
                        pb.P < limit && pb.Q < limit && pb.pad_h < 256 && pb.pad_w < 256;
    return geometry && ranges && mappable(op.x, op.xs) && mappable(op.dy, op.dys) &&
           tma_available();
  }
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
/// Launches DepthwiseWeightsTmaKernel<L, Shape> for operands `op` of problem pb
/// (depthwise_weights_tma_fits holds) in bands of at most `band_rows` output rows, about
/// `target_teams` teams (images split among them; 0: kDepthwiseWeightsTmaTeams<L>), then
/// the store kernel where there are several chunks; returns true. False, launching
/// nothing, where the driver refuses a tensor map, the teams or a team's stages exceed
/// int, or the chunks' sums exceed the workspace limit.
template <Layout L, class Shape>
bool launch_depthwise_weights_tma(const Kokkos::Cuda& space,
                                  const DepthwiseBackwardWeightsOperands<float>& op,
                                  const Conv2dProblem& pb, int band_rows = 14,
                                  std::int64_t target_teams = 0) {
  if (target_teams <= 0) target_teams = kDepthwiseWeightsTmaTeams<L>;
  using K = DepthwiseWeightsTmaKernel<L, Shape>;
  constexpr bool nhwc = L == Layout::NHWC;
  constexpr int max_cols = depthwise_tma_max_cols<Shape, K>();
  K k;
  k.N = static_cast<int>(pb.N), k.M = static_cast<int>(pb.M);
  k.P = static_cast<int>(pb.P), k.Q = static_cast<int>(pb.Q);
  k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  depthwise_tma_tile<Shape>(k, pb, band_rows);
  const std::int64_t per_image = std::int64_t(k.row_chunks) * k.col_tiles * k.channel_tiles;
  std::int64_t splits =
      std::clamp<std::int64_t>((target_teams + per_image - 1) / per_image, 1, pb.N);
  // The chunks' partial sums within the workspace limit (one chunk needs none).
  const std::size_t chunk_bytes = std::size_t(pb.M) * K::Sums * sizeof(float);
  const std::int64_t bands = std::int64_t(k.row_chunks) * k.col_tiles;
  while (splits > 1 && std::size_t(splits * bands) * chunk_bytes > pb.workspace_limit_bytes)
    splits = std::max<std::int64_t>(1, splits / 2);
  k.image_splits = static_cast<int>(splits);
  const std::int64_t chunks = k.chunks();
  const std::size_t partial_bytes = chunks > 1 ? std::size_t(chunks) * chunk_bytes : 0;
  if (partial_bytes > pb.workspace_limit_bytes) return false;
  if (k.teams() > std::numeric_limits<int>::max()) return false;
  // A team's stages (its images x the band's) count in int.
  const std::int64_t team_images = (pb.N + splits - 1) / splits;
  const std::int64_t band_steps =
      (std::int64_t(k.chunk_rows) + K::Taps - 1 + Shape::rows_per_stage - 1) /
      Shape::rows_per_stage;
  if (team_images * band_steps > std::numeric_limits<int>::max()) return false;

  DepthwiseWeightsTmaMaps maps;
  auto encode = [&](TmaDescriptor& map, const float* data, const LogicalStrides& s, int C, int H,
                    int W, int box_cols) {
    const std::uint64_t extents[4] = {std::uint64_t(nhwc ? C : W), std::uint64_t(nhwc ? W : H),
                                      std::uint64_t(nhwc ? H : C), std::uint64_t(pb.N)};
    const std::uint64_t strides[3] = {std::uint64_t(nhwc ? s.w : s.h) * 4,
                                      std::uint64_t(nhwc ? s.h : s.c) * 4, std::uint64_t(s.n) * 4};
    const int box[4] = {nhwc ? k.planes : box_cols, nhwc ? box_cols : Shape::rows_per_stage,
                        nhwc ? Shape::rows_per_stage : k.planes, 1};
    return tma_encode_float_box_4d(map, data, extents, strides, box);
  };
  if (!encode(maps.x, op.x, op.xs, static_cast<int>(pb.C), static_cast<int>(pb.H),
              static_cast<int>(pb.W), k.in_cols()) ||
      !encode(maps.dy, op.dy, op.dys, static_cast<int>(pb.M), static_cast<int>(pb.P),
              static_cast<int>(pb.Q), k.dy_cols()))
    return false;

  auto lease = WorkspaceCache<Kokkos::Cuda>::acquire(space, partial_bytes);
  float* const partial = chunks > 1 ? reinterpret_cast<float*>(lease.data()) : nullptr;
  k.sink = DepthwiseWeightsSink<float>{op, pb.M, chunks, 3, K::Sums, op.dbias != nullptr, partial};
  // The most scratch a team takes: NHWC max_cols columns; NCHW planes x in_cols() <= 12
  // Shape::threads floats a row of x and planes x dy_cols() <= 8 Shape::threads of dy; the
  // reduction's [column thread][channel][slot] fits within the stages.
  constexpr std::size_t x_row = nhwc ? std::size_t(max_cols + K::Taps - 1) * 4 * K::vectors
                                     : 12 * std::size_t(Shape::threads);
  constexpr std::size_t dy_row =
      nhwc ? std::size_t(max_cols) * 4 * K::vectors : 8 * std::size_t(Shape::threads);
  constexpr std::size_t max_stages =
      std::size_t(Shape::stages) *
      (Shape::rows_per_stage * (x_row + dy_row) * 4 + 2 * std::size_t(K::alignment));
  constexpr std::size_t max_reduction = std::size_t(Shape::threads) * 4 * K::Sums * 4;
  constexpr std::size_t max_scratch =
      std::max(max_stages, max_reduction) + std::size_t(Shape::stages) * 8 + K::alignment;
  launch_grid_constant_teams<Shape::threads, Shape::min_teams, max_scratch>(
      space, "kcnn::conv2d_backward_weights::depthwise_tma", static_cast<int>(k.teams()),
      k.scratch_bytes(), k, maps);
  if (chunks > 1) {
    using Store = DepthwiseWeightsTmaStore;
    const Store store{partial, op, pb.M, chunks, K::Sums};
    const std::int64_t entries = pb.M * K::Sums;
    constexpr std::size_t store_scratch = Store::threads * sizeof(float) + 16;
    launch_grid_constant_teams<Store::threads, 1, store_scratch>(
        space, "kcnn::conv2d_backward_weights::depthwise_tma_store",
        static_cast<int>((entries + Store::entries - 1) / Store::entries), store_scratch, store,
        Store::Constants{});
  }
  return true;
}
#endif

}  // namespace kcnn::Impl
