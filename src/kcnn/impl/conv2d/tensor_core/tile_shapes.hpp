// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/tile_shapes.hpp
/// \brief ConvAlgo::TensorCoreGemm: the arithmetic of each math mode on tensor cores
///        (TensorCoreMath) and the block tiles (TensorCoreTile).
#pragma once

#include "../../arch/mma.hpp"
#include "../../common/element_traits.hpp"

namespace kcnn::Impl {

/// The tensor-core arithmetic of a call: TF32 and TF32x3 (float tensors, MathMode::TF32
/// and ::TF32x3), F64 (double tensors, IEEE fp64 products on DMMA).
enum class TensorCoreMath { TF32, TF32x3, F64 };

/// Element type and MMA instruction shape of each arithmetic.
template <TensorCoreMath Math>
struct TensorCoreOp {
  using element = float;
  using shape = MmaShape<16, 8, 8>;  ///< mma.sync m16n8k8 TF32
  static constexpr int accumulators = 4;
};
template <>
struct TensorCoreOp<TensorCoreMath::F64> {
  using element = double;
  using shape = MmaShape<8, 8, 4>;  ///< mma.sync m8n8k4 f64
  static constexpr int accumulators = 2;
};

/// A block tile of the GEMM view: BM filters x BN output pixels per team, K consumed
/// BK taps per pipeline stage, WarpsM x WarpsN warps each computing a
/// (BM / WarpsM) x (BN / WarpsN) warp tile, Stages scratch buffers in flight.
/// Team scratch per stage: (BM + BN) rows of BK + 4 elements (with BK = 8 the 12-element
/// pitch puts the 8 rows a fragment load touches on distinct banks, for 4-byte and
/// 8-byte elements alike, and keeps rows 16-byte aligned for the 16-byte copies).
template <int BM_, int BN_, int BK_, int WarpsM_, int WarpsN_, int Stages_, int MinTeams_>
struct TensorCoreTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WarpsM = WarpsM_, WarpsN = WarpsN_;
  static constexpr int Stages = Stages_;
  static constexpr int threads = 32 * WarpsM * WarpsN;
  static constexpr int min_teams_per_sm = MinTeams_;
  static constexpr int pitch = BK + 4;  ///< scratch row pitch in elements
  static_assert(Stages >= 2, "a pipeline of at least two stages");
};

/// The tiles, chosen by element type and by the filter count M (tensor_core_launch).
/// Kokkos' level-0 team scratch on CUDA holds 40,960 bytes (its scratch_size_max(0) on
/// the H100), so BK is 8 taps (one TF32 MMA step, two fp64 ones) with 3 or 4 stages.
struct TensorCoreTiles {
  /// float, M <= 64: 64 x 128 x 8, 8 warps (32 x 32 each), 4 stages (36 KB).
  using FloatSmallM = TensorCoreTile<64, 128, 8, 2, 4, 4, 2>;
  /// float, M > 64: 128 x 128 x 8, 8 warps (64 x 32 each), 3 stages (36 KB).
  using FloatLargeM = TensorCoreTile<128, 128, 8, 2, 4, 3, 2>;
  /// double: 64 x 64 x 8, 4 warps (32 x 32 each), 3 stages (36 KB).
  using Double = TensorCoreTile<64, 64, 8, 2, 2, 3, 2>;
};

}  // namespace kcnn::Impl
