// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/mma_sync_stage.hpp
/// \brief One pipeline stage of a warpgroup tile multiplied with mma.sync m16n8k16 from
///        its swizzled scratch rows: the path of the 16-bit channel-run and TMA kernels
///        where the code is compiled without wgmma (a plain sm_90 pass, which the driver
///        may load instead of the sm_90a one), on the fragments wgmma's accumulators use.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

/// The ldmatrix rows of lane `lane` in a stage of Rows (TensorCoreScratchRows) whose
/// pixel rows start at row `p0` and filter rows at `f0`. A (x4 = the m16 x k16 fragment of
/// k-step ks): matrix lane / 8 is rows 0-7 / 8-15 (bit 0) of k 0-7 / 8-15 (bit 1). B (x4 =
/// k-steps 2p and 2p + 1 of an n8 tile): matrix lane / 8 is chunk 4p + lane / 8 of rows
/// 0-7. Rows 8 apart share the swizzle position, so the other tiles are these plus a
/// constant.
template <class Rows, int KS>
struct MmaSyncLaneRows {
  std::uint32_t a[KS], b[KS / 2];

  KOKKOS_INLINE_FUNCTION MmaSyncLaneRows(int p0, int f0, int lane) {
    using T = typename Rows::element;
    KCNN_DEVICE_UNROLL
    for (int ks = 0; ks < KS; ++ks)
      a[ks] =
          Rows::offset(p0 + lane % 8 + 8 * ((lane / 8) % 2), (2 * ks + lane / 16) * Rows::chunk) *
          sizeof(T);
    KCNN_DEVICE_UNROLL
    for (int p = 0; p < KS / 2; ++p)
      b[p] = Rows::offset(f0 + lane % 8, (4 * p + lane / 8) * Rows::chunk) * sizeof(T);
  }
};

/// The warp's MMAs over one stage at x_stage / w_stage (scratch addresses): MI m16 tiles
/// `slab_rows` rows apart, NI n8 tiles, KS k-steps; `lanes` from MmaSyncLaneRows.
template <TensorCoreMath Math, class Rows, int MI, int NI, int KS, int SlabRows>
KOKKOS_FORCEINLINE_FUNCTION void mma_sync_stage(float (&acc)[MI][NI][4], std::uint32_t x_stage,
                                                std::uint32_t w_stage,
                                                const MmaSyncLaneRows<Rows, KS>& lanes) {
  constexpr std::uint32_t row_bytes = Rows::row_bytes;
  KCNN_DEVICE_UNROLL
  for (int p = 0; p < KS / 2; ++p) {
    std::uint32_t bq[NI][4];
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      ldmatrix_x4_at(bq[ni], w_stage + lanes.b[p] + ni * 8 * row_bytes);
    KCNN_DEVICE_UNROLL
    for (int half = 0; half < 2; ++half) {
      std::uint32_t aq[MI][4];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        ldmatrix_x4_at(aq[mi], x_stage + lanes.a[2 * p + half] + mi * SlabRows * row_bytes);
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        mma_m16n8k16<TensorCoreOp<Math>::format>(acc[mi][ni], aq[mi], bq[ni][2 * half],
                                                 bq[ni][2 * half + 1]);
    }
  }
}

}  // namespace kcnn::Impl
