// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/tile_choice.hpp
/// \brief ConvAlgo::ImplicitGemm's tiles (GPU block tiles, the host register block),
///        the split-K heuristic and the device plan (tile and K slices) that the launch
///        and the workspace size share.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../common/element_traits.hpp"
#include "operands.hpp"

namespace kcnn::Impl {

/// A GPU block tile: BM output channels x BN output pixels per team, K in steps of BK;
/// each thread accumulates TM channels x TN pixels in registers.
template <int BM_, int BN_, int BK_, int TM_, int TN_, int MinTeamsPerSM_>
struct ImplicitGemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int threads = (BM / TM) * (BN / TN);
  /// Launch bound: the compiler keeps registers low enough for this many teams per
  /// multiprocessor (65536 / (threads * MinTeamsPerSM) registers per thread).
  static constexpr int min_teams_per_sm = MinTeamsPerSM_;
  static_assert(BM % TM == 0 && BN % TN == 0, "the micro-tile must divide the block tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "micro-tile operands are read as 4-vectors");

  // The X tile's gather: threads_j threads along the pixels (consecutive threads take
  // consecutive pixels: coalesced NCHW reads, conflict-free scratch stores), the rest
  // along k. Each thread keeps its cols_per_thread pixels' offsets in registers.
  static constexpr int threads_j = threads < BN ? threads : BN;
  static constexpr int threads_k = threads / threads_j;
  static constexpr int cols_per_thread = BN / threads_j;
  static constexpr int rows_per_thread = BK / threads_k;
  static_assert(BN % threads_j == 0 && BK % threads_k == 0, "X tile split");
  // The W tile: k fastest, so that consecutive threads read consecutive weights.
  static constexpr int w_per_thread = BM * BK / threads;
  static_assert(BM * BK % threads == 0, "W tile split");
  static_assert(threads >= BK, "BK threads fill the tap table");

  // Scratch row pitches: multiples of 4 keep every row 16-byte aligned for the vector
  // loads; the extra 4 spreads the W tile's k-fastest stores over distinct banks.
  static constexpr int x_pitch = BN + 4;
  static constexpr int w_pitch = BM + 4;
};

/// GPU tiles by problem class, float. 128 threads (256 for HugeM) so that several
/// teams share an SM. Output channels are the scarce dimension of the layers we target:
///  - SmallM (M <= 16: LeNet's C1 and C3): BM = 16 and a wide BN of 256 pixels; TM = 8,
///    TN = 4, so a warp's 32 threads share one W vector (broadcast) and read 32
///    distinct X vectors: 3 scratch vector loads per 32 FMAs.
///  - MidM (M <= 32): BM = 32, BN = 128, the same micro-tile.
///  - LargeM (M <= 64): BM = 64, BN = 128, TM = TN = 8: 64 accumulators per thread,
///    4 vector loads per 64 FMAs, each gathered X element reused 64 times.
///  - HugeM (M > 64): BM = 128 with 256 threads, the classic SGEMM block: each gathered
///    X element feeds 128 FMAs, halving the gathers per FMA of LargeM.
///  - Narrow: BM = BN = 64 with 64 threads, for problems with few output tiles (late
///    ResNet layers: 512 channels of 7x7 pixels) where the wider tiles leave SMs idle.
/// BK = 8 keeps the two-buffer scratch at 8-17 KiB per team.
///
/// Registers: without a bound nvcc gave SmallM 102, LargeM 166 and HugeM 141 registers
/// per thread (H100, 2026-11-22), i.e. 16, 12 and 8 resident warps per SM, and the
/// kernels stalled with no eligible warp a third of the time. The bounds below ask for
/// 128 registers or fewer (LargeM, HugeM, Narrow) and 102 (SmallM, MidM).
struct ImplicitGemmDeviceTiles {
  using SmallM = ImplicitGemmTile<16, 256, 8, 8, 4, 5>;
  using MidM = ImplicitGemmTile<32, 128, 8, 8, 4, 5>;
  using LargeM = ImplicitGemmTile<64, 128, 8, 8, 8, 4>;
  using HugeM = ImplicitGemmTile<128, 128, 8, 8, 8, 2>;
  using Narrow = ImplicitGemmTile<64, 64, 8, 8, 8, 8>;
  /// double: supported, not tuned; a 4 x 4 micro-tile keeps 32 registers of accumulators.
  using Double = ImplicitGemmTile<32, 64, 8, 4, 4, 1>;
};

/// The number of teams (block tiles) tile `Tile` cuts an M x J output into.
template <class Tile>
std::int64_t implicit_gemm_teams(std::int64_t M, std::int64_t J) {
  return ((M + Tile::BM - 1) / Tile::BM) * ((J + Tile::BN - 1) / Tile::BN);
}

/// Host register block: TM channels x TN pixels. TN = 32 floats is two AVX-512 vectors
/// (four AVX2 ones); 8 x 32 accumulators fill 16 of the 32 AVX-512 registers and leave
/// room for the two panel vectors and the weight broadcast. Each panel vector loaded
/// feeds TM FMAs, each weight broadcast TN / 16.
struct ImplicitGemmHostTile {
  static constexpr int TM = 8, TN = 32;
  /// The K x BN panel a team unrolls stays within this many bytes (L2-resident: it is
  /// read once per TM channels). 2 cores, N=8, 3x3 NCHW layers, ms for 64/128/256/512
  /// channels: 192 KiB 18.5/-/-/-, 384 KiB 14.7/13.0/13.1/14.5, 512 KiB
  /// 14.5/13.7/14.2/14.0, 640 KiB 15.3/13.0/13.1/14.5 (each +-5% run to run): 512 KiB
  /// keeps BN >= 96 up to 128 channels without leaving the 1 MiB L2.
  static constexpr std::size_t panel_bytes = 512 * 1024;
  static constexpr int max_bn = 256;
};

/// A split K's slices are at least this many BK steps (256 taps for BK = 8): each slice
/// then spends far more time in its multiply loop than in its pipeline start and its
/// partial-sum stores.
inline constexpr int kImplicitGemmMinStepsPerSlice = 32;

/// How many slices of K tile `Tile` should split into: the count whose copies of the
/// tile grid fill the GPU's team slots (`sms` multiprocessors x the tile's teams per
/// multiprocessor) best, wave by wave, if it fills them at least a tenth better than
/// no split (ties: fewer slices). Slices keep at least kImplicitGemmMinStepsPerSlice
/// steps, and their partial sums (slices x M x J) fit the workspace limit. H100 (264
/// slots of 128 x 128 tiles): ResNet's 512-channel 7x7 layer, 52 tiles, 5 slices;
/// 256 channels at 14x14, 196 tiles (three quarters of one wave), 4 slices; 128 at
/// 28x28, 392 tiles (one and a half waves), 2. 1: no split.
template <class Tile, Layout L, class T, class Y>
int implicit_gemm_k_slices(const ImplicitGemmOperands<L, T, Y>& o, std::int64_t sms,
                           std::size_t workspace_limit) {
  if (o.pooling.enabled) return 1;
  const std::int64_t teams = implicit_gemm_teams<Tile>(o.M, o.J);
  const std::int64_t slots = sms * Tile::min_teams_per_sm;
  const std::int64_t steps = (std::int64_t(o.K) + Tile::BK - 1) / Tile::BK;
  const std::int64_t most = std::min<std::int64_t>(steps / kImplicitGemmMinStepsPerSlice, 16);
  auto fill = [&](std::int64_t slices) {  // busy fraction of the slots over all waves
    const std::int64_t n = teams * slices, waves = (n + slots - 1) / slots;
    return double(n) / double(waves * slots);
  };
  std::int64_t best = 1;
  for (std::int64_t slices = 2; slices <= most; ++slices) {
    const bool fits = static_cast<std::size_t>(slices) * sizeof(accumulator_t<T>) *
                          std::size_t(o.M) * std::size_t(o.J) <=
                      workspace_limit;
    if (fits && fill(slices) > 1.1 * fill(best)) best = slices;
  }
  return static_cast<int>(best);
}

/// BK steps per slice when K is split into about `k_slices` slices.
template <class Tile>
int implicit_gemm_steps_per_slice(int K, int k_slices) {
  const int steps = (K + Tile::BK - 1) / Tile::BK;
  return (steps + k_slices - 1) / k_slices;
}
/// The slices that split actually has (none empty): at most `k_slices`.
template <class Tile>
int implicit_gemm_nonempty_slices(int K, int k_slices) {
  const int steps = (K + Tile::BK - 1) / Tile::BK;
  const int per_slice = implicit_gemm_steps_per_slice<Tile>(K, k_slices);
  return (steps + per_slice - 1) / per_slice;
}

/// Element types with tuned device tiles (fp32); the others run the Double tile
/// (supported, not tuned).
template <class T>
inline constexpr bool implicit_gemm_has_tuned_tiles_v =
    ElementTraits<T>::kind == ElementKind::Float32;

/// The device tile ImplicitGemm runs a problem with, and its split of K.
enum class ImplicitGemmDeviceTile { SmallM, MidM, LargeM, HugeM, Narrow, Double };
struct ImplicitGemmDevicePlan {
  ImplicitGemmDeviceTile tile = ImplicitGemmDeviceTile::LargeM;
  int k_slices = 1;  ///< > 1: HugeM with K split, partial sums in the workspace
};

/// The device tile choice: by element type, then by the filters M; above 64 filters the
/// widest tile that still gives every multiprocessor two teams, with K split where
/// 128 x 128 tiles fill the GPU's waves poorly (implicit_gemm_k_slices).
template <Layout L, class T, class Y>
ImplicitGemmDevicePlan implicit_gemm_device_plan(const ImplicitGemmOperands<L, T, Y>& o,
                                                 std::int64_t multiprocessors,
                                                 std::size_t workspace_limit) {
  using Tiles = ImplicitGemmDeviceTiles;
  using Id = ImplicitGemmDeviceTile;
  if constexpr (!implicit_gemm_has_tuned_tiles_v<T>) {
    return {Id::Double, 1};
  } else {
    if (o.M <= Tiles::SmallM::BM) return {Id::SmallM, 1};
    if (o.M <= Tiles::MidM::BM) return {Id::MidM, 1};
    const std::int64_t enough = 2 * multiprocessors;
    if (o.M > Tiles::LargeM::BM) {
      const int slices = implicit_gemm_k_slices<Tiles::HugeM>(o, multiprocessors, workspace_limit);
      if (slices > 1) return {Id::HugeM, slices};
    }
    // A fused pooling's 128 x 128 conv tile would not fit the scratch limit: LargeM.
    if (o.M > Tiles::LargeM::BM && !o.pooling.enabled &&
        implicit_gemm_teams<Tiles::HugeM>(o.M, o.J) >= enough)
      return {Id::HugeM, 1};
    if (implicit_gemm_teams<Tiles::LargeM>(o.M, o.J) >= enough) return {Id::LargeM, 1};
    return {Id::Narrow, 1};
  }
}

/// Workspace bytes of a device plan: the split K's partial sums (slices x M x J).
template <Layout L, class T, class Y>
std::size_t implicit_gemm_workspace_bytes(const ImplicitGemmOperands<L, T, Y>& o,
                                          const ImplicitGemmDevicePlan& plan) {
  if (plan.k_slices <= 1) return 0;
  const int slices =
      implicit_gemm_nonempty_slices<ImplicitGemmDeviceTiles::HugeM>(o.K, plan.k_slices);
  return static_cast<std::size_t>(slices) * sizeof(accumulator_t<T>) * std::size_t(o.M) *
         std::size_t(o.J);
}

}  // namespace kcnn::Impl
