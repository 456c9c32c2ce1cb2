// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_weights_plan.hpp
/// \brief What the depthwise weight-gradient kernels share (depthwise_backward_weights.hpp
///        runs them): the operands, the work split (DepthwiseWeightsPlan), where a
///        team's sums go (DepthwiseWeightsSink, depthwise_team_sum) and the kernel that
///        adds the chunks' partial sums (DepthwiseWeightsStoreKernel).
///
/// Every kernel cuts the output pixels of a block of `lanes` channels into chunks; a
/// chunk's sums go to the workspace as [chunk][m][slot] (slot R S: the bias sum) and the
/// store kernel adds them in a fixed order. With one chunk, the kernel writes dw and
/// dbias itself. The split is a function of the problem, the backend and the workspace
/// limit only, so the result does not depend on the thread count.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"

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

/// The team shape and work split of one call.
///  - make(): the team kernel and the host kernel; a chunk is rows_per_chunk rows (n, p)
///    of Q output pixels.
///  - make_walk(): the walk kernel; a lane block's work is `items` walks (image,
///    segment, block of cross positions) of `segment` outputs, a chunk items_per_chunk of them.
struct DepthwiseWeightsPlan {
  /// A bound on the league (Kokkos' league size is an int).
  static constexpr std::int64_t kMaxTeams = std::int64_t(1) << 24;
  int taps = 0;       ///< R S
  int slots = 0;      ///< R S + 1: the sums of a filter, its bias's last
  int team_size = 1;  ///< power of two
  int lanes = 1;      ///< threads a team along the channels (power of two, divides team_size)
  std::int64_t lane_blocks = 0;
  std::int64_t chunks = 1;
  std::int64_t rows_per_chunk = 0;              ///< make(): rows (n, p) of Q pixels
  std::int64_t segment = 0, segments = 1;       ///< make_walk(): outputs a walk, walks a line
  std::int64_t items = 0, items_per_chunk = 0;  ///< make_walk(): walks of a lane block
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

  /// The walk kernel's axis: output rows in NCHW (threads on neighbouring columns of a
  /// channel plane), output columns in NHWC (threads on neighbouring channels).
  static bool walks_rows(const Conv2dProblem& pb) { return pb.layout == Layout::NCHW; }

  /// Whether the walk kernel takes pb on tensors of strides xs (x) and dys (dy): a 3x3,
  /// 5x5 or 7x7 filter, the same stride of 1 or 2 along both axes and no dilation (the
  /// window of input lines then slides, and neighbouring outputs share its values); in
  /// NCHW contiguous rows (a line's values at consecutive addresses); offsets within an
  /// image that fit int.
  static bool walk_takes(const Conv2dProblem& pb, const LogicalStrides& xs,
                         const LogicalStrides& dys) {
    if (compile_time_taps(pb) == 0 || pb.stride_h != pb.stride_w ||
        (pb.stride_h != 1 && pb.stride_h != 2) || pb.dilation_h != 1 || pb.dilation_w != 1)
      return false;
    if (walks_rows(pb) && (xs.w != 1 || dys.w != 1)) return false;
    // Bounds on the line and cross indices the kernel forms (padding on both sides).
    const std::int64_t lines = pb.H + pb.P * pb.stride_h + pb.R + pb.pad_h;
    const std::int64_t columns = pb.W + pb.Q * pb.stride_w + pb.S + pb.pad_w;
    const std::int64_t limit = std::int64_t(1) << 30;
    return xs.h >= 0 && xs.w >= 0 && dys.h >= 0 && dys.w >= 0 && lines < limit && columns < limit &&
           xs.h < limit / lines && xs.w < limit / columns && dys.h < limit / lines &&
           dys.w < limit / columns;
  }

  /// GPUs: the largest power-of-two team up to 256 whose reduction scratch (accumulators
  /// x threads) stays within 32 KB (256 threads for 3x3 and 5x5 float, 128 for 7x7), and
  /// in NHWC up to 32 channels a team (a warp reads 32 neighbouring channels of a pixel).
  template <class Acc>
  static void gpu_team(const Conv2dProblem& pb, int accumulators, DepthwiseWeightsPlan& plan) {
    plan.team_size = 256;
    while (plan.team_size > 32 &&
           std::size_t(accumulators) * plan.team_size * sizeof(Acc) > (std::size_t(32) << 10))
      plan.team_size /= 2;
    plan.lanes = 1;
    if (pb.layout == Layout::NHWC) {
      while (plan.lanes < 32 && plan.lanes < pb.M)
        plan.lanes *= 2;
    }
  }

  /// The team kernel (gpu) or the host kernel (items of one thread for host_lanes
  /// channels; 1 for the team kernel on the host).
  template <class Acc>
  static DepthwiseWeightsPlan make(const Conv2dProblem& pb, bool gpu, int host_lanes = 1) {
    DepthwiseWeightsPlan plan;
    plan.taps = static_cast<int>(pb.R * pb.S);
    plan.slots = plan.taps + 1;
    const int fixed = compile_time_taps(pb);
    const std::int64_t rows = pb.N * pb.P;
    std::int64_t target_teams = 1;
    if (gpu) {
      gpu_team<Acc>(pb, fixed ? fixed * fixed + 1 : kDepthwiseGenericTaps + 1, plan);
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
    chunks = plan.fit_workspace<Acc>(pb, chunks);
    plan.rows_per_chunk = std::max<std::int64_t>(1, (rows + chunks - 1) / chunks);
    plan.chunks = std::max<std::int64_t>(1, (rows + plan.rows_per_chunk - 1) / plan.rows_per_chunk);
    plan.workspace_bytes = plan.partial_bytes<Acc>(pb);
    return plan;
  }

  /// The walk kernel (walk_takes(pb, ...)), `cross` cross positions a walk. Every walk has
  /// plan.segment outputs, a divisor of the walk axis' outputs. GPUs: whole output lines
  /// unless the layer has fewer than 2^18 of them (channels x images x cross positions;
  /// with one position a walk, two waves of a 132-SM GPU's resident threads at 50 to 64
  /// registers); then the largest divisor that brings the segments to 2^18, down to 8
  /// outputs. One walk a thread. CPUs (a team of one thread, one channel): whole lines,
  /// at least 64 teams.
  template <class Acc>
  static DepthwiseWeightsPlan make_walk(const Conv2dProblem& pb, bool gpu, int cross) {
    DepthwiseWeightsPlan plan;
    plan.taps = static_cast<int>(pb.R * pb.S);
    plan.slots = plan.taps + 1;
    const int fixed = compile_time_taps(pb);
    if (gpu) gpu_team<Acc>(pb, fixed * fixed + 1, plan);
    plan.lane_blocks = (pb.M + plan.lanes - 1) / plan.lanes;
    const std::int64_t walk_out = walks_rows(pb) ? pb.P : pb.Q;
    const std::int64_t cross_out = walks_rows(pb) ? pb.Q : pb.P;
    const std::int64_t cross_blocks = (cross_out + cross - 1) / cross;
    plan.segment = walk_out;
    const std::int64_t target = std::int64_t(1) << 18;
    const std::int64_t lines = plan.lane_blocks * plan.lanes * pb.N * cross_out;
    if (gpu && lines < target) {
      for (std::int64_t segments = 2; walk_out / segments >= 8; ++segments) {
        if (walk_out % segments != 0) continue;
        plan.segment = walk_out / segments;
        if (lines * segments >= target) break;
      }
    }
    plan.segments = walk_out / plan.segment;
    plan.items = pb.N * plan.segments * cross_blocks;
    const std::int64_t groups = plan.team_size / plan.lanes;
    std::int64_t chunks = gpu ? (plan.items + groups - 1) / groups
                              : (std::int64_t(64) + plan.lane_blocks - 1) / plan.lane_blocks;
    chunks = std::clamp<std::int64_t>(chunks, 1, std::max<std::int64_t>(1, plan.items));
    chunks = std::min(chunks, std::max<std::int64_t>(1, kMaxTeams / plan.lane_blocks));
    chunks = plan.fit_workspace<Acc>(pb, chunks);
    plan.items_per_chunk = std::max<std::int64_t>(1, (plan.items + chunks - 1) / chunks);
    plan.chunks =
        std::max<std::int64_t>(1, (plan.items + plan.items_per_chunk - 1) / plan.items_per_chunk);
    plan.workspace_bytes = plan.partial_bytes<Acc>(pb);
    return plan;
  }

 private:
  /// The most chunks up to `chunks` whose partial sums fit the workspace limit (one
  /// chunk needs none).
  template <class Acc>
  std::int64_t fit_workspace(const Conv2dProblem& pb, std::int64_t chunks) const {
    const std::size_t chunk_bytes = std::size_t(pb.M) * slots * sizeof(Acc);
    const std::int64_t fitting = static_cast<std::int64_t>(pb.workspace_limit_bytes / chunk_bytes);
    return chunks > 1 && fitting < chunks ? std::max<std::int64_t>(1, fitting) : chunks;
  }
  template <class Acc>
  std::size_t partial_bytes(const Conv2dProblem& pb) const {
    return chunks > 1 ? std::size_t(chunks) * std::size_t(pb.M) * slots * sizeof(Acc) : 0;
  }
};

/// The sum of entry values[chunk * total] over chunks group, group + groups, ... below
/// `chunks`: four loads in flight (each a latency away in L2 or memory), four partial
/// sums added in a fixed order.
template <class Acc>
KOKKOS_INLINE_FUNCTION Acc depthwise_chunk_sum(const Acc* values, std::int64_t total,
                                               std::int64_t chunks, int group, int groups) {
  Acc part[4] = {0, 0, 0, 0};
  const std::int64_t stride = groups * total;
  const Acc* p = values + group * total;
  std::int64_t chunk = group;
  for (; chunk + 3 * groups < chunks; chunk += 4 * groups, p += 4 * stride) {
    part[0] += p[0];
    part[1] += p[stride];
    part[2] += p[2 * stride];
    part[3] += p[3 * stride];
  }
  for (int k = 0; chunk < chunks; chunk += groups, p += stride, ++k)
    part[k] += p[0];
  return (part[0] + part[1]) + (part[2] + part[3]);
}

/// Channel m's value of `slot` (tap r S + s; slots - 1: the bias) to dw or dbias.
template <class T, class Acc>
KOKKOS_INLINE_FUNCTION void depthwise_weights_write(const DepthwiseBackwardWeightsOperands<T>& op,
                                                    int S, int slots, std::int64_t m, int slot,
                                                    Acc value) {
  if (slot == slots - 1) {
    op.dbias[m * op.dbias_stride] = from_compute<T>(value);
  } else {
    const int r = slot / S, s = slot - r * S;
    op.dw[m * op.dws.n + r * op.dws.h + s * op.dws.w] = from_compute<T>(value);
  }
}

/// Where a team's sums for one channel go: the chunk's slots of the partial sums, or (one
/// chunk) dw and dbias.
template <class T>
struct DepthwiseWeightsSink {
  using Acc = accumulator_t<T>;
  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t M = 0, chunks = 1;
  int S = 1, slots = 1;
  bool with_bias = false;  ///< this pass sums dy for dbias (dbias requested)
  Acc* partial = nullptr;  ///< chunks > 1: [chunk][m][slot]

  /// Channel m's filter taps tap0 .. tap0 + taps - 1 from sums[k * stride] and, where
  /// with_bias, its bias sum from sums[bias * stride].
  KOKKOS_INLINE_FUNCTION void write(std::int64_t chunk, std::int64_t m, const Acc* sums, int stride,
                                    int tap0, int taps, int bias) const {
    if (chunks > 1) {
      Acc* const out = partial + (chunk * M + m) * slots;
      for (int k = 0; k < taps; ++k)
        out[tap0 + k] = sums[k * stride];
      if (with_bias) out[slots - 1] = sums[bias * stride];
      return;
    }
    T* const dwm = op.dw + m * op.dws.n;
    for (int k = 0; k < taps; ++k) {
      const int tap = tap0 + k, r = tap / S, s = tap - r * S;
      dwm[r * op.dws.h + s * op.dws.w] = from_compute<T>(sums[k * stride]);
    }
    if (with_bias) op.dbias[m * op.dbias_stride] = from_compute<T>(sums[bias * stride]);
  }

  /// Channel m's sum in `slot` (tap r S + s, or slots - 1: the bias, skipped unless
  /// with_bias).
  KOKKOS_INLINE_FUNCTION void write_slot(std::int64_t chunk, std::int64_t m, int slot,
                                         Acc value) const {
    const bool bias = slot == slots - 1;
    if (bias && !with_bias) return;
    if (chunks > 1) {
      partial[(chunk * M + m) * slots + slot] = value;
    } else {
      depthwise_weights_write(op, S, slots, m, slot, value);
    }
  }
};

/// Adds the Sums values acc[0 .. Sums - 1] of the team's threads (thread t = group lanes
/// + lane) over the groups, in a fixed tree in team scratch (Sums x team size values); group 0's
/// thread `lane` then finds its lane's totals at result[k * team size + lane].
template <int Sums, class Acc, class Member>
KOKKOS_INLINE_FUNCTION const Acc* depthwise_team_sum(const Member& team, const Acc* acc,
                                                     int lanes) {
  const int t = team.team_rank(), size = team.team_size(), group = t / lanes;
  Acc* const scratch =
      static_cast<Acc*>(team.team_scratch(0).get_shmem(std::size_t(Sums) * size * sizeof(Acc)));
  for (int k = 0; k < Sums; ++k)
    scratch[k * size + t] = acc[k];
  team.team_barrier();
  for (int half = size / lanes / 2; half >= 1; half /= 2) {
    if (group < half) {
      for (int k = 0; k < Sums; ++k)
        scratch[k * size + t] += scratch[k * size + t + half * lanes];
    }
    team.team_barrier();
  }
  return scratch;
}

/// Adds the chunks' partial sums and writes dw and dbias: a team sums `entries`
/// consecutive (m, slot) entries (a power of two dividing the team size), its groups of
/// threads the chunks g, g + groups, ..., then the groups in a fixed tree.
template <class T, class Member>
struct DepthwiseWeightsStoreKernel {
  using Acc = accumulator_t<T>;
  const Acc* partial;  ///< [chunk][m][slot]
  DepthwiseBackwardWeightsOperands<T> op;
  std::int64_t M, chunks;
  int S, slots, entries;

  std::size_t scratch_bytes(int team_size) const { return std::size_t(team_size) * sizeof(Acc); }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int t = team.team_rank(), size = team.team_size();
    const int group = t / entries, groups = size / entries;
    const std::int64_t e = team.league_rank() * std::int64_t(entries) + t % entries;
    const std::int64_t total = M * slots;
    // The bias slot holds nothing where dbias was not requested.
    const bool wanted = e < total && (op.dbias || e % slots != slots - 1);
    Acc sum[1] = {0};
    if (wanted) sum[0] = depthwise_chunk_sum(partial + e, total, chunks, group, groups);
    const Acc* const result = depthwise_team_sum<1>(team, sum, entries);
    if (group != 0 || !wanted) return;
    const std::int64_t m = e / slots;
    depthwise_weights_write(op, S, slots, m, static_cast<int>(e - m * slots), result[t]);
  }
};

/// Launches DepthwiseWeightsStoreKernel on plan's partial sums (plan.chunks > 1): teams of
/// 512 threads for 32 entries on GPUs (16 threads an entry: a few hundred chunks cost
/// each thread a few round trips to memory), one thread for one entry on CPUs.
template <class ExecSpace, class T>
void depthwise_weights_store(const ExecSpace& space, const accumulator_t<T>* partial,
                             const DepthwiseBackwardWeightsOperands<T>& op, const Conv2dProblem& pb,
                             const DepthwiseWeightsPlan& plan, bool gpu) {
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  using Kernel = DepthwiseWeightsStoreKernel<T, typename Policy::member_type>;
  const int team_size = gpu ? 512 : 1, entries = gpu ? 32 : 1;
  const Kernel k{partial, op, pb.M, plan.chunks, static_cast<int>(pb.S), plan.slots, entries};
  const std::int64_t total = pb.M * plan.slots;
  Kokkos::parallel_for("kcnn::conv2d_backward_weights::depthwise_store",
                       Policy(space, (total + entries - 1) / entries, team_size)
                           .set_scratch_size(0, Kokkos::PerTeam(k.scratch_bytes(team_size))),
                       k);
}

}  // namespace kcnn::Impl
