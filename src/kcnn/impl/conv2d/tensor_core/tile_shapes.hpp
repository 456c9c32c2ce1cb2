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
///
/// Scratch rows (BM of A, BN of B per stage) hold BK taps in 64 bytes: four 16-byte
/// chunks, so one 16-byte load gives a lane its fragment elements of two MMA k-steps
/// (TF32: BK = 16, fp64: BK = 8). Chunk c of row r sits at chunk c ^ ((r / 2) % 4): the
/// 8 lanes of a 16-byte load phase (rows g, g + 1 of chunks 0..3) read 128 distinct
/// bytes, and so do the 4-byte copies of 8 pixels x 4 taps that NCHW's gathers write
/// (no padding, so more stages fit the scratch).
template <class T, int BM_, int BN_, int WarpsM_, int WarpsN_, int Stages_, int MinTeams_>
struct TensorCoreTile {
  static constexpr int BM = BM_, BN = BN_, WarpsM = WarpsM_, WarpsN = WarpsN_;
  static constexpr int row_bytes = 64;
  static constexpr int BK = row_bytes / static_cast<int>(sizeof(T));
  static constexpr int chunk = vector_elements_v<T>;  ///< elements per 16-byte chunk
  static constexpr int Stages = Stages_;
  static constexpr int threads = 32 * WarpsM * WarpsN;
  static constexpr int min_teams_per_sm = MinTeams_;
  static_assert(Stages >= 2, "a pipeline of at least two stages");
  static_assert(BK == 4 * chunk, "four 16-byte chunks per row");

  /// Element offset of tap position k (0 <= k < BK) of scratch row `row`.
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int offset(int row, int k) {
    return row * BK + (((k / chunk) ^ ((row >> 1) & 3)) * chunk) + k % chunk;
  }
};

/// The tiles, chosen by element type and by the filter count M (tensor_core_launch).
/// Kokkos' level-0 team scratch on CUDA holds 40,960 bytes (its scratch_size_max(0) on
/// the H100): 192 rows of 64 bytes take 12 KB a stage, so three stages fit (36 KB);
/// fp64's 128 rows take 8 KB, four stages.
struct TensorCoreTiles {
  /// float, M <= 64: 64 x 128, 8 warps (32 x 32 each), 3 stages.
  using FloatSmallM = TensorCoreTile<float, 64, 128, 2, 4, 3, 2>;
  /// float, M > 64: 128 x 64, 8 warps (32 x 32 each), 3 stages.
  using FloatLargeM = TensorCoreTile<float, 128, 64, 4, 2, 3, 2>;
  /// double: 64 x 64, 4 warps (32 x 32 each), 4 stages.
  using Double = TensorCoreTile<double, 64, 64, 2, 2, 4, 2>;
};

}  // namespace kcnn::Impl
