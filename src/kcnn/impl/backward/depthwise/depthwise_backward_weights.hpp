// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_backward_weights.hpp
/// \brief conv2d_backward_weights of a depthwise layer (groups = C > 1, M = k C) in one
///        pass over x and dy, not one backward convolution per channel.
///
///   dw(m, r, s) = sum over n, p, q of dy(n, m, p, q) x(n, m / k, p sh - ph + r dh,
///                                                         q sw - pw + s dw),
///   dbias(m)    = sum over n, p, q of dy(n, m, p, q).
///
/// Each filter has only R S (+ 1) sums, each over all N P Q output pixels: a reduction,
/// bound by reading x and dy once. The pixels (rows (n, p) of Q columns) are cut into
/// chunks of whole rows; a team owns one chunk for a block of `lanes` channels and keeps
/// the R S + 1 sums of each of its threads in registers (Taps = 3, 5, 7 at compile time;
/// other filters in passes of kGenericTaps taps), then sums its threads' values in team
/// scratch, in a fixed tree. The chunks' partial sums wait in the workspace and a second
/// kernel adds them in chunk order (with one chunk, the team writes dw itself).
///  - GPUs: NHWC teams of up to 32 channels (a warp reads 32 neighbouring channels of a
///    pixel) times pixel groups; NCHW teams of one channel, the threads on neighbouring
///    pixels of its planes.
///  - CPUs (DepthwiseWeightsHostKernel, 3x3, 5x5, 7x7 on contiguous rows): NHWC items of
///    8 float channels (one AVX2 vector) for chunks of about 128 KB of x and dy rows, so
///    that the chunk's channel blocks (a thread's consecutive items) find its rows in L2;
///    NCHW items of one channel, 8 output columns a vector, the fewest chunks (a
///    channel's planes are contiguous). Other filters and strided layouts: the team
///    kernel with one thread a team and one channel.
/// The chunks and team shapes are functions of the problem, the backend and the
/// workspace limit only: the summation order, hence the result, does not depend on the
/// thread count. Accumulation in float (double for double), one rounding at the store.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/workspace_cache.hpp"
#include "../../conv2d/depthwise/depthwise_host_kernel.hpp"  // interior_columns

namespace kcnn::Impl {

/// conv2d_backward_weights' tensors as pointers and logical strides (dbias nullptr: none).
template <class T>
struct DepthwiseBackwardWeightsOperands {
  const T* x;
  LogicalStrides xs;
  const T* dy;
  LogicalStrides dys;
  T* dw;
  LogicalStrides dws;
  T* dbias;
  std::int64_t dbias_stride;
};

/// Taps a pass of the generic kernel (filters other than 3x3, 5x5, 7x7) sums.
inline constexpr int kDepthwiseGenericTaps = 16;

/// The team shape and work split of one call (DepthwiseWeightsPlan::make).
struct DepthwiseWeightsPlan {
  /// A bound on the league (Kokkos' league size is an int).
  static constexpr std::int64_t kMaxTeams = std::int64_t(1) << 24;
  int taps = 0;       ///< R S
  int slots = 0;      ///< R S + 1: the sums of a filter, its bias's last
  int team_size = 1;  ///< power of two
  int lanes = 1;      ///< channels a team (power of two, divides team_size)
  std::int64_t lane_blocks = 0;
  std::int64_t chunks = 1, rows_per_chunk = 0;  ///< rows (n, p) of Q pixels
  std::size_t workspace_bytes = 0;              ///< chunks > 1: [chunk][m][slot] partial sums

  /// Whether the kernels take pb: a league of one chunk fits kMaxTeams, and R S + 1 sums
  /// fit int.
  static bool takes(const Conv2dProblem& pb) {
    return pb.M <= kMaxTeams && pb.R * pb.S < (std::int64_t(1) << 24);
  }

  /// Filter extent of the kernel that runs pb: 3, 5 or 7 (square), 0 (generic).
  static int compile_time_taps(const Conv2dProblem& pb) {
    return pb.R == pb.S && (pb.R == 3 || pb.R == 5 || pb.R == 7) ? static_cast<int>(pb.R) : 0;
  }

  /// gpu: the team kernel's shape; else an item of one thread for host_lanes channels
  /// (the NHWC host kernel; 1 for the others).
  template <class Acc>
  static DepthwiseWeightsPlan make(const Conv2dProblem& pb, bool gpu, int host_lanes = 1) {
    DepthwiseWeightsPlan plan;
    plan.taps = static_cast<int>(pb.R * pb.S);
    plan.slots = plan.taps + 1;
    const int fixed = compile_time_taps(pb);
    const int accumulators = fixed ? fixed * fixed + 1 : kDepthwiseGenericTaps + 1;
    const std::int64_t rows = pb.N * pb.P;
    std::int64_t target_teams = 1;
    if (gpu) {
      // The largest power-of-two team up to 256 whose reduction scratch (accumulators x
      // threads) stays within 32 KB: 256 threads for 3x3 and 5x5 float, 128 for 7x7.
      plan.team_size = 256;
      while (plan.team_size > 32 &&
             std::size_t(accumulators) * plan.team_size * sizeof(Acc) > (std::size_t(32) << 10))
        plan.team_size /= 2;
      if (pb.layout == Layout::NHWC) {
        while (plan.lanes < 32 && plan.lanes < pb.M)
          plan.lanes *= 2;
      }
      // About 2048 teams: 15 per SM of a 132-SM GPU, several waves of resident teams.
      target_teams = 2048;
    } else {
      // NHWC: chunks of about 128 KB of x and dy rows (they stay in L2 while the
      // thread's consecutive items, the chunk's channel blocks, pass over them). NCHW: an
      // item's channel planes are contiguous whatever its rows, so the fewest chunks.
      // At least 64 items either way.
      plan.lanes = host_lanes;
      const std::int64_t blocks = (pb.M + host_lanes - 1) / host_lanes;
      const std::int64_t row_bytes =
          std::max<std::int64_t>(1, 2 * pb.Q * pb.M * static_cast<std::int64_t>(sizeof(Acc)));
      const std::int64_t rows_fitting =
          std::max<std::int64_t>(1, (std::int64_t(128) << 10) / row_bytes);
      const std::int64_t for_cache =
          pb.layout == Layout::NHWC ? (rows + rows_fitting - 1) / rows_fitting : 1;
      const std::int64_t chunks = std::max(for_cache, (std::int64_t(64) + blocks - 1) / blocks);
      target_teams = chunks > kMaxTeams / blocks ? kMaxTeams : chunks * blocks;
    }
    target_teams = std::min(target_teams, kMaxTeams);
    plan.lane_blocks = (pb.M + plan.lanes - 1) / plan.lanes;
    std::int64_t chunks = std::clamp<std::int64_t>(target_teams / plan.lane_blocks, 1,
                                                   std::max<std::int64_t>(1, rows));
    // The partial sums must fit the workspace limit; one chunk needs none.
    const std::size_t chunk_bytes = std::size_t(pb.M) * plan.slots * sizeof(Acc);
    const std::int64_t fitting = static_cast<std::int64_t>(pb.workspace_limit_bytes / chunk_bytes);
    if (chunks > 1 && fitting < chunks) chunks = std::max<std::int64_t>(1, fitting);
    plan.rows_per_chunk = std::max<std::int64_t>(1, (rows + chunks - 1) / chunks);
    plan.chunks = std::max<std::int64_t>(1, (rows + plan.rows_per_chunk - 1) / plan.rows_per_chunk);
    plan.workspace_bytes = plan.chunks > 1 ? plan.chunks * chunk_bytes : 0;
    return plan;
  }
};

/// A team's pass over its chunk's pixels for its channels: Taps x Taps filters (Taps =
/// 0: taps [tap0, tap0 + pass_taps) of R x S, in row-major order), plus the bias sum
/// where with_bias.
template <Layout L, int Taps, class T, class Member>
struct DepthwiseWeightsTeamKernel {
  using Acc = accumulator_t<T>;
  static constexpr int Sums = (Taps ? Taps * Taps : kDepthwiseGenericTaps) + 1;

  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t N, H, W, M, P, Q, multiplier;
  int R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DepthwiseWeightsPlan plan;
  int tap0 = 0, pass_taps = 0;  ///< Taps = 0: this pass's taps
  bool with_bias = false;       ///< this pass sums dy for dbias (dbias requested)
  Acc* partial;                 ///< chunks > 1: [chunk][m][slot]

  /// The team's reduction scratch (not named team_shmem_size: Kokkos would add that to
  /// the policy's scratch request).
  KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes(int team_size) const {
    return std::size_t(Sums) * team_size * sizeof(Acc);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t league = team.league_rank();
    const std::int64_t chunk = league / plan.lane_blocks, mb = league - chunk * plan.lane_blocks;
    const int t = team.team_rank(), size = team.team_size();
    const int lanes = plan.lanes, lane = t % lanes, group = t / lanes, groups = size / lanes;
    const std::int64_t m = mb * lanes + lane;
    const bool valid = m < M;
    const int taps = Taps ? Taps * Taps : pass_taps;

    Acc acc[Sums];
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < Sums; ++k)
      acc[k] = 0;
    if (valid) accumulate(chunk, m, group, groups, acc);

    // The team's sums, thread by thread, in scratch; a fixed tree over the pixel groups.
    Acc* const scratch = static_cast<Acc*>(team.team_scratch(0).get_shmem(scratch_bytes(size)));
    for (int k = 0; k < Sums; ++k)
      scratch[k * size + t] = acc[k];
    team.team_barrier();
    for (int half = groups / 2; half >= 1; half /= 2) {
      if (group < half) {
        for (int k = 0; k < Sums; ++k)
          scratch[k * size + t] += scratch[k * size + t + half * lanes];
      }
      team.team_barrier();
    }
    if (group != 0 || !valid) return;
    const int bias_sum = Sums - 1;
    if (plan.chunks > 1) {
      Acc* const out = partial + (chunk * M + m) * plan.slots;
      for (int k = 0; k < taps; ++k)
        out[(Taps ? 0 : tap0) + k] = scratch[k * size + t];
      if (with_bias) out[plan.slots - 1] = scratch[bias_sum * size + t];
      return;
    }
    T* const dwm = op.dw + m * op.dws.n;
    for (int k = 0; k < taps; ++k) {
      const int tap = (Taps ? 0 : tap0) + k, r = tap / S, s = tap - r * S;
      dwm[r * op.dws.h + s * op.dws.w] = from_compute<T>(scratch[k * size + t]);
    }
    if (with_bias) op.dbias[m * op.dbias_stride] = from_compute<T>(scratch[bias_sum * size + t]);
  }

  /// The thread's sums over pixels group, group + groups, ... of the chunk, channel m.
  KOKKOS_INLINE_FUNCTION void accumulate(std::int64_t chunk, std::int64_t m, int group, int groups,
                                         Acc (&acc)[Sums]) const {
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

  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t N, H, W, M, P, Q, multiplier;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DepthwiseWeightsPlan plan;
  std::int64_t q_lo, q_hi;  ///< the output columns whose taps all lie inside x's rows
  bool with_bias;
  Acc* partial;

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
    for (int l = 0; l < lanes; ++l) {
      const std::int64_t m = m0 + l;
      if (plan.chunks > 1) {
        Acc* const out = partial + (chunk * M + m) * plan.slots;
        for (int k = 0; k < Sums; ++k)
          out[k] = sums[k][l];
        continue;
      }
      for (int k = 0; k + 1 < Sums; ++k)
        op.dw[m * op.dws.n + (k / Taps) * op.dws.h + (k % Taps) * op.dws.w] =
            from_compute<T>(sums[k][l]);
      if (with_bias) op.dbias[m * op.dbias_stride] = from_compute<T>(sums[Sums - 1][l]);
    }
  }
};

/// Adds the chunks' partial sums in chunk order and writes dw and dbias.
template <class T>
struct DepthwiseWeightsStore {
  using Acc = accumulator_t<T>;
  const Acc* partial;  ///< [chunk][m][slot]
  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t M, chunks;
  int S, slots;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const std::int64_t m = i / slots;
    const int slot = static_cast<int>(i - m * slots);
    if (slot == slots - 1 && !op.dbias) return;
    Acc sum = 0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
      sum += partial[(chunk * M + m) * slots + slot];
    if (slot == slots - 1) {
      op.dbias[m * op.dbias_stride] = from_compute<T>(sum);
    } else {
      const int r = slot / S, s = slot - r * S;
      op.dw[m * op.dws.n + r * op.dws.h + s * op.dws.w] = from_compute<T>(sum);
    }
  }
};

/// Runs DepthwiseWeightsHostKernel where it takes pb's operands (then returns true).
template <class ExecSpace, class T>
bool conv2d_backward_weights_depthwise_host(const ExecSpace& space,
                                            const DepthwiseBackwardWeightsOperands<T>& op,
                                            const Conv2dProblem& pb) {
  using Acc = accumulator_t<T>;
  auto run = [&](auto layout, auto taps) {
    constexpr Layout L = decltype(layout)::value;
    constexpr int Taps = decltype(taps)::value;
    using Kernel = DepthwiseWeightsHostKernel<L, Taps, T>;
    if (!Kernel::takes(pb, op)) return false;
    const DepthwiseWeightsPlan plan =
        DepthwiseWeightsPlan::make<Acc>(pb, false, L == Layout::NHWC ? Kernel::Lanes : 1);
    auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes);
    Acc* const partial = plan.chunks > 1 ? reinterpret_cast<Acc*>(lease.data()) : nullptr;
    Kernel k{op,
             pb.N,
             pb.H,
             pb.W,
             pb.M,
             pb.P,
             pb.Q,
             pb.M / pb.C,
             pb.stride_h,
             pb.stride_w,
             pb.pad_h,
             pb.pad_w,
             pb.dilation_h,
             pb.dilation_w,
             plan,
             0,
             0,
             op.dbias != nullptr,
             partial};
    interior_columns(pb, k.q_lo, k.q_hi);
    using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise", Range(space, 0, k.items()), k);
    if (plan.chunks > 1)
      Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise_store",
                           Range(space, 0, pb.M * plan.slots),
                           DepthwiseWeightsStore<T>{partial, op, pb.M, plan.chunks,
                                                    static_cast<int>(pb.S), plan.slots});
    return true;
  };
  auto with_taps = [&](auto layout) {
    switch (DepthwiseWeightsPlan::compile_time_taps(pb)) {
      case 3:
        return run(layout, std::integral_constant<int, 3>{});
      case 5:
        return run(layout, std::integral_constant<int, 5>{});
      case 7:
        return run(layout, std::integral_constant<int, 7>{});
      default:
        return false;
    }
  };
  if (pb.layout == Layout::NHWC) return with_taps(std::integral_constant<Layout, Layout::NHWC>{});
  return with_taps(std::integral_constant<Layout, Layout::NCHW>{});
}

/// Computes dw (and dbias where op.dbias) of depthwise problem pb (pb.depthwise(), N, P,
/// Q > 0, M > 0): see the file comment. A prebuilt instance
/// (conv2d/prebuilt_instances.hpp).
template <class ExecSpace, class T>
void conv2d_backward_weights_depthwise_run(const ExecSpace& space,
                                           const DepthwiseBackwardWeightsOperands<T>& op,
                                           const Conv2dProblem& pb) {
  using Acc = accumulator_t<T>;
  if constexpr (runs_on_host_v<ExecSpace>) {
    if (conv2d_backward_weights_depthwise_host(space, op, pb)) return;
  }
  const DepthwiseWeightsPlan plan = DepthwiseWeightsPlan::make<Acc>(pb, !runs_on_host_v<ExecSpace>);
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes);
  Acc* const partial = plan.chunks > 1 ? reinterpret_cast<Acc*>(lease.data()) : nullptr;
  auto run = [&](auto layout, auto taps) {
    constexpr Layout L = decltype(layout)::value;
    constexpr int Taps = decltype(taps)::value;
    using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    using Kernel = DepthwiseWeightsTeamKernel<L, Taps, T, typename Policy::member_type>;
    Kernel k{op,
             pb.N,
             pb.H,
             pb.W,
             pb.M,
             pb.P,
             pb.Q,
             pb.M / pb.C,
             static_cast<int>(pb.R),
             static_cast<int>(pb.S),
             pb.stride_h,
             pb.stride_w,
             pb.pad_h,
             pb.pad_w,
             pb.dilation_h,
             pb.dilation_w,
             plan,
             0,
             0,
             false,
             partial};
    const Policy policy(space, plan.chunks * plan.lane_blocks, plan.team_size);
    const auto scratch = Kokkos::PerTeam(k.scratch_bytes(plan.team_size));
    const int passes = Taps ? 1 : (plan.taps + kDepthwiseGenericTaps - 1) / kDepthwiseGenericTaps;
    for (int pass = 0; pass < std::max(passes, 1); ++pass) {
      k.tap0 = pass * kDepthwiseGenericTaps;
      k.pass_taps = std::min(kDepthwiseGenericTaps, plan.taps - k.tap0);
      k.with_bias = op.dbias != nullptr && pass == 0;
      Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise",
                           Policy(policy).set_scratch_size(0, scratch), k);
    }
  };
  auto with_taps = [&](auto layout) {
    switch (DepthwiseWeightsPlan::compile_time_taps(pb)) {
      case 3:
        return run(layout, std::integral_constant<int, 3>{});
      case 5:
        return run(layout, std::integral_constant<int, 5>{});
      case 7:
        return run(layout, std::integral_constant<int, 7>{});
      default:
        return run(layout, std::integral_constant<int, 0>{});
    }
  };
  if (pb.layout == Layout::NHWC) {
    with_taps(std::integral_constant<Layout, Layout::NHWC>{});
  } else {
    with_taps(std::integral_constant<Layout, Layout::NCHW>{});
  }
  if (plan.chunks > 1) {
    using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise_store",
                         Range(space, 0, pb.M * plan.slots),
                         DepthwiseWeightsStore<T>{partial, op, pb.M, plan.chunks,
                                                  static_cast<int>(pb.S), plan.slots});
  }
}

}  // namespace kcnn::Impl
