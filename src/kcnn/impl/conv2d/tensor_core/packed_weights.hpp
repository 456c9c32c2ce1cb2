// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/packed_weights.hpp
/// \brief TensorCoreGemm's float and 16-bit weights packed once per call in the order its
///        MMAs read them (the A operand's register quads), float's rounded to TF32 under
///        MathMode::TF32.
///
/// Why: gathered row by row into scratch, a lane's m16n8k8 A fragment {(g, k), (g + 8, k),
/// (g, k'), (g + 8, k')} lies in two scratch rows, so the compiler moved every element
/// into the MMA's register quad and rounded it there: per stage and warp 16 MMAs came
/// with about 60 moves and 64 rounding instructions (SASS, sm_90; cvt.rna.tf32 is two
/// instructions there). Packed, a quad is one 16-byte scratch load that feeds the MMA as
/// it is, and the rounding is done once per weight instead of once per team and warp.
///
/// Layout, for stage s (BK = 16 taps), block b of 16 filters, MMA k-step ks (of two),
/// lane (g = lane / 4, t = lane % 4) and quad element r:
///   index ((s * m_pad / 16 + b) * 2 + ks) * 128 + lane * 4 + r
///   holds w(16 b + g + 8 (r % 2), BK s + 4 t + 2 ks + r / 2).
/// The tap order inside a stage is the one the B operand's 16-byte chunks give (chunk t of
/// a pixel's row holds taps 4t..4t+3; element e serves k-step e / 2, fragment slot
/// t + 4 (e % 2): device_kernel.hpp). A team's A tile of stage s is one contiguous run of
/// BM * BK elements at (s * m_pad + m0) * BK. Filters past M and taps past K hold zeros:
/// the kernel's A copies need no bounds checks.
///
/// 16-bit weights (m16n8k16, BK = 32 taps, 16 bytes per lane and k-step): lane element e
/// (0..7) is half e % 2 of register r = e / 2,
///   index ((s * m_pad / 16 + b) * 2 + ks) * 256 + lane * 8 + e
///   holds w(16 b + g + 8 (r % 2), BK s + 16 ks + 2 t + e % 2 + 8 (r / 2)),
/// the taps in their natural order: B's fragments come from ldmatrix on pixel rows whose
/// taps run in order (device_kernel.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/mma.hpp"
#include "../../common/index_math.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"

namespace kcnn::Impl {

/// The packed A operand's extents for block tiles of BM filters and BK taps.
template <class Tile>
struct TensorCorePackedWeightsShape {
  using element = typename Tile::element;
  static constexpr int quad_rows = 16;  ///< filters per m16n8k8 / m16n8k16 A fragment
  static_assert(Tile::BK == 64 / int(sizeof(element)) && Tile::BM % quad_rows == 0,
                "two MMA k-steps per stage, whole fragments per block tile");
  std::int64_t m_pad = 0;  ///< M rounded up to BM: every team's tile lies inside
  std::int64_t steps = 0;  ///< pipeline stages: ceil(K / BK)

  static TensorCorePackedWeightsShape of(std::int64_t M, std::int64_t K) {
    return {round_up(M, Tile::BM), (K + Tile::BK - 1) / Tile::BK};
  }
  std::int64_t elements() const { return steps * m_pad * Tile::BK; }
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * sizeof(element); }
};

/// One packed element per index (see the file comment). T: float or a 16-bit type. Round
/// (float): TF32 (cvt.rna); else the value as it is (TF32x3 splits it in the MMA loop).
template <Layout L, class T, bool Round>
struct PackTensorCoreWeights {
  static constexpr int lane_elements = 16 / int(sizeof(T));  ///< one 16-byte load per lane
  static constexpr int fragment = 32 * lane_elements;        ///< one k-step of 16 filters
  static constexpr int BK = 4 * lane_elements;               ///< float 16, 16-bit 32
  static_assert(!Round || sizeof(T) == 4, "TF32 rounding applies to float");
  UnrollMap<L> map;
  const T* w;
  LogicalStrides ws;
  T* out;
  int M, K;
  std::int64_t blocks;  ///< m_pad / 16

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t p) const {
    const int e = static_cast<int>(p % lane_elements);
    const int lane = static_cast<int>((p / lane_elements) % 32);
    const int ks = static_cast<int>((p / fragment) % 2);
    const std::int64_t stage_block = p / (2 * fragment);
    const std::int64_t s = stage_block / blocks, b = stage_block - s * blocks;
    const int g = lane / 4, t = lane % 4;
    int row, tap;                        // within the block and the stage
    if constexpr (lane_elements == 4) {  // m16n8k8 TF32: the B chunks' tap order
      row = g + 8 * (e % 2);
      tap = 4 * t + 2 * ks + e / 2;
    } else {  // m16n8k16: natural tap order
      const int r = e / 2;
      row = g + 8 * (r % 2);
      tap = 16 * ks + 2 * t + e % 2 + 8 * (r / 2);
    }
    const std::int64_t m = 16 * b + row, k = BK * s + tap;
    if (m < M && k < K) {
      const Tap<std::int64_t> tp = map.decompose_k(k);
      const T v = w[ws.offset(m, tp.c, tp.r, tp.s)];
      if constexpr (Round) {
        out[p] = tf32_value(tf32_round(v));
      } else {
        out[p] = v;
      }
    } else {
      out[p] = T(0.0f);
    }
  }
};

}  // namespace kcnn::Impl
