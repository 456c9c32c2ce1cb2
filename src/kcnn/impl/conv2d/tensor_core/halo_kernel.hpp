// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/halo_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm for 16-bit NHWC tensors, stride-1 filters of up to 3x3
///        on Hopper (TensorCoreHaloKernel): a team computes BH x 8 output pixels of one
///        image x 64 filters; per block of 64 channels the input pixels they read (the
///        halo) arrive once by TMA and serve every filter tap from scratch.
///
/// Why: the im2col TMA kernel (tma_kernel.hpp) reads each input pixel once per tap, and
/// its loads, not its tensor cores, bound it: the stand-alone harness ran its 64 x 64
/// tile in 0.0518 ms without the multiplies and 0.0365 without the loads, 0.0567 with
/// both (ResNet 3x3, 64 channels, H200, session 29). Within the 40 KB of scratch a Kokkos
/// team may use, the halo of a 16 x 8 block (18 x 10 pixels, 23 KB) replaces nine im2col
/// stages of 128 pixels (144 KB of loads per 64 channels): the harness's 16 x 8 halo tile
/// took 0.040 ms on that layer (TensorCoreTiles::TmaHalo has the table).
///
/// The halo (halo_rows x halo_cols pixels, 128-byte rows = 64 channels, in the 128-byte
/// swizzle) arrives by a tiled TMA box of x's NHWC map whose corner is the block's first
/// window origin; the pixels past x's edges read zeros (the padding). Tap (r, s)'s A
/// operand of slab mi (output rows 8 mi.. of the block) starts at halo pixel
/// (8 mi + r) * halo_cols + s; its 8-row groups (output rows) lie halo_cols pixels apart
/// (wgmma_descriptor_sw128_groups), and each 8-pixel run may start at any row of the
/// swizzle pattern: the hardware swizzles by address. The filters stream through Stages
/// buffers as in the TMA kernel (w packed (M, R, S, C): the matrix M x K, a stage = one
/// tap's 64 channels of 64 filters). K runs channel block by channel block, the taps
/// within: a new block's halo replaces the old once every multiply reading it has
/// completed (one load latency per block: the harness measured the 512-channel layer,
/// eight blocks, 0.0428 ms on 8 x 8 tiles against 0.0380 for the im2col tile with K
/// split, where the 7 x 7 images waste 23% of the halo tile's pixels besides).
///
/// The epilogue is the TMA kernel's (tma_stage_output), the output tile leaves by a TMA
/// store through a 4-D map of y (NHWC packed: (M, Q, P, N)), which clips the block at the
/// image's edges. A team (a thread block, launched by launch_grid_constant_teams with the
/// tensor maps its grid-constant parameter) computes one tile. Compiled without wgmma (a plain
/// sm_90 pass), the warps multiply with mma.sync on the same scratch (halo_mma_sync_stage).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/async_copy.hpp"
#include "../../arch/grid_constant_launch.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../arch/tma.hpp"
#include "../../arch/wgmma.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "mma_sync_stage.hpp"
#include "tile_shapes.hpp"
#include "tma_kernel.hpp"

namespace kcnn::Impl {

/// The convolution's geometry as the halo kernel needs it (32-bit: the launch checks).
struct TensorCoreHaloGeometry {
  int M = 0, C = 0;                ///< filters, channels (a multiple of 64)
  int R = 0, S = 0;                ///< filter rows and columns (stride 1, dilation 1)
  int pad_h = 0, pad_w = 0;        ///< the block's halo starts at (p0 - pad_h, q0 - pad_w)
  int halo_cols = 0;               ///< 8 + S - 1 pixels a halo row
  int p_blocks = 0, q_blocks = 0;  ///< blocks of BH x 8 output pixels per image
  int f_blocks = 0;                ///< blocks of 64 filters
};

/// The warp's mma.sync products over one filter stage and tap: rows 16 w.. of each slab
/// read from the halo at `halo` (1,024-byte aligned, so a pixel's swizzle phase is its
/// index % 8) from pixel `tap_pixel` (the slab's first row's pixel for tap (r, s)) with
/// `halo_cols` pixels between output rows; B as mma_sync_stage's.
template <TensorCoreMath Math, class Rows, int MI, int NI, int KS>
KOKKOS_FORCEINLINE_FUNCTION void halo_mma_sync_stage(float (&acc)[MI][NI][4], std::uint32_t halo,
                                                     int tap_pixel, int halo_cols,
                                                     std::uint32_t w_stage, int warp, int lane,
                                                     const MmaSyncLaneRows<Rows, KS>& lanes) {
  // ldmatrix x4 for A: lane / 8 = (row half, k half); this lane's row of the m16 tile is
  // 16 warp + lane % 8 + 8 ((lane / 8) % 2): output row 2 warp + (lane / 8) % 2 of the
  // slab, column lane % 8.
  const int row_in_slab = 2 * warp + (lane / 8) % 2;
  KCNN_DEVICE_UNROLL
  for (int p = 0; p < KS / 2; ++p) {
    std::uint32_t bq[NI][4];
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      ldmatrix_x4_at(bq[ni], w_stage + lanes.b[p] + ni * 8 * Rows::row_bytes);
    KCNN_DEVICE_UNROLL
    for (int half = 0; half < 2; ++half) {
      const int ks = 2 * p + half;
      const int chunk = 2 * ks + lane / 16;
      std::uint32_t aq[MI][4];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi) {
        const int pixel = tap_pixel + (8 * mi + row_in_slab) * halo_cols + lane % 8;
        ldmatrix_x4_at(aq[mi], halo + pixel * 128 + ((chunk ^ (pixel & 7)) << 4));
      }
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        mma_m16n8k16<TensorCoreOp<Math>::format>(acc[mi][ni], aq[mi], bq[ni][2 * half],
                                                 bq[ni][2 * half + 1]);
    }
  }
}

template <class Tile, TensorCoreMath Math>
struct TensorCoreHaloKernel {
  using T = typename TensorCoreOp<Math>::element;
  using Rows = TensorCoreScratchRows<T, 128>;
  static_assert(is_16bit_math(Math), "the halo kernel multiplies 16-bit factors");
  static constexpr int BH = Tile::BH, BW = Tile::BW, BF = Tile::BF, S = Tile::Stages;
  static constexpr int MI = BH / 8;    ///< 64-row slabs (eight output rows each)
  static constexpr int NI = BF / 8;    ///< n8 column blocks of a slab
  static constexpr int BK = Rows::BK;  ///< channels a block (64)
  static constexpr int KS = BK / 16;   ///< k16 steps per stage
  static constexpr std::uint32_t row_bytes = 128;
  static constexpr std::uint32_t w_stage_bytes = BF * row_bytes;
  /// The halo's capacity (Tile::halo_pixels); a problem's halo may take less.
  static constexpr std::uint32_t halo_capacity = Tile::halo_pixels * row_bytes;
  /// Filter stages, then the halo (1,024-byte aligned, after whole stages).
  static constexpr std::uint32_t halo_offset = S * w_stage_bytes;
  static constexpr std::uint32_t out_box_bytes = BH * BW * 128;
  static constexpr std::uint32_t data_bytes = halo_offset + halo_capacity > BF / 64 * out_box_bytes
                                                  ? halo_offset + halo_capacity
                                                  : BF / 64 * out_box_bytes;
  /// S filter-stage barriers, then the halo's.
  static constexpr std::uint32_t control_bytes = 8 * S + 8;
  static constexpr std::size_t alignment = 1024;
  static_assert(w_stage_bytes % alignment == 0, "the halo on a swizzle repeat");
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return std::size_t(data_bytes) + control_bytes + alignment;  // + scratch_aligned's slack
  }

  const T* bias;  ///< nullptr: none
  Activation activation;
  TensorCoreHaloGeometry geo;

  /// Team `league_rank` computes tile league_rank (filter blocks fastest, then block
  /// columns, block rows, images).
  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& team, const TmaMaps& tma) const {
    const int t = team.team_rank();
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t tiles_at = scratch_address(scratch);
    const std::uint32_t full_at = tiles_at + data_bytes;  // stage b's barrier: + 8 b
    const std::uint32_t halo_bar = full_at + 8 * S;
    const std::uint32_t halo_at = tiles_at + halo_offset;

    int rest = team.league_rank();
    const int fb = rest % geo.f_blocks;
    rest /= geo.f_blocks;
    const int qb = rest % geo.q_blocks;
    rest /= geo.q_blocks;
    const int pb = rest % geo.p_blocks;
    const int n = rest / geo.p_blocks;
    const int f0 = fb * BF, p0 = pb * BH, q0 = qb * BW;
    const int taps = geo.R * geo.S, steps = taps * (geo.C / BK);
    const std::uint32_t halo_bytes = std::uint32_t((BH + geo.R - 1) * geo.halo_cols) * row_bytes;

    // Filter stage `step` (channel block step / taps, tap step % taps) into its buffer,
    // and channel block `block`'s halo.
    auto issue_w = [&](int step) {
      const int buffer = step % S;
      const int block = step / taps, tap = step - block * taps;
      const std::uint32_t bar = full_at + 8 * buffer;
      tma_barrier_arrive_expect(bar, w_stage_bytes);
      tma_load_tile_2d(tiles_at + buffer * w_stage_bytes, &tma.w, bar, tap * geo.C + block * BK,
                       f0);
    };
    auto issue_halo = [&](int block) {
      tma_barrier_arrive_expect(halo_bar, halo_bytes);
      tma_load_tile_4d(halo_at, &tma.x, halo_bar, block * BK, q0 - geo.pad_w, p0 - geo.pad_h, n);
    };

    // A team per tile (teams walking tiles ran 10-20% slower in the harness, session
    // 29). Thread 0 sets up the barriers and issues the first halo and filter stages;
    // thread 32 refills the filter stages, thread 64 stores the tile.
    if (t == 0) {
      for (int b = 0; b <= S; ++b)
        tma_barrier_init(full_at + 8 * b, 1);
      tma_fence_barrier_init();
      issue_halo(0);
      for (int step = 0; step < S && step < steps; ++step)
        issue_w(step);
    }
    team.team_barrier();  // the barriers are initialized

    // The sums start at zero and the epilogue adds the bias. Started at the bias (two
    // registers fewer, session 30), they made ptxas serialize the wgmma batches (C7515:
    // "non wgmma instructions defining accumulator registers ... between start and end of
    // the pipeline stage"; a wait after every wgmma) once the kernel was launched outside
    // Kokkos' TeamPolicy: 0.046-0.047 ms against 0.040 on the 64-, 128- and 256-channel
    // layers (H200, the same launch; session 31). 91 registers, no spills.
    const int warp = t / 32, lane = t % 32;
    float acc[MI][NI][4];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int e = 0; e < 4; ++e)
      acc[mi][ni][e] = 0.f;

#if !defined(KCNN_ARCH_WGMMA)
    const MmaSyncLaneRows<Rows, KS> lanes(0, 0, lane);
#endif
    for (int step = 0; step < steps; ++step) {
      const int block = step / taps, tap = step - block * taps;
      const int r = tap / geo.S, s = tap - r * geo.S;
      if (tap == 0) {
        if (block > 0) {  // every multiply reading the previous block's halo has completed
#if defined(KCNN_ARCH_WGMMA)
          wgmma_wait<0>();
#endif
          team.team_barrier();
          if (t == 0) issue_halo(block);
          reconverge_warp();
        }
        tma_barrier_wait(halo_bar, block & 1);
      }
      const int buffer = step % S;
      tma_barrier_wait(full_at + 8 * buffer, (step / S) & 1);
      const std::uint32_t w_stage = tiles_at + buffer * w_stage_bytes;
      const int tap_pixel = r * geo.halo_cols + s;
#if defined(KCNN_ARCH_WGMMA)
      wgmma_fence();
      KCNN_DEVICE_UNROLL
      for (int ks = 0; ks < KS; ++ks)
        KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        wgmma_m64nk16<TensorCoreOp<Math>::format, BF>(
            reinterpret_cast<float(&)[4 * NI]>(acc[mi]),
            wgmma_descriptor_sw128_groups(
                halo_at + (tap_pixel + 8 * mi * geo.halo_cols) * row_bytes + ks * 32,
                geo.halo_cols * row_bytes),
            wgmma_descriptor<128>(w_stage + ks * 32));
      wgmma_commit();
      wgmma_wait<1>();  // the previous stage's batch is done: its buffer is free
      const int done = step - 1;
#else
      halo_mma_sync_stage<Math, Rows, MI, NI, KS>(acc, halo_at, tap_pixel, geo.halo_cols, w_stage,
                                                  warp, lane, lanes);
      team.team_barrier();  // every warp is done with this stage's buffer
      const int done = step;
#endif
      // Refill the buffer read last: the previous stage's (wgmma) or this one's.
      if (t == 32 && done >= 0 && done + S < steps) issue_w(done + S);
      reconverge_warp();
    }
    wgmma_wait<0>();
    team.team_barrier();  // every warp is done with the halo and the filter buffers

    tma_stage_output(acc, scratch, bias, geo.M, f0, warp, lane, activation);
    tma_fence_scratch_writes();
    team.team_barrier();
    if (t == 64) {
      KCNN_DEVICE_UNROLL
      for (int box = 0; box < BF / 64; ++box)
        tma_store_tile_4d(&tma.y, tiles_at + box * out_box_bytes, f0 + 64 * box, q0, p0, n);
      tma_store_commit_and_wait_read();
    }
    team.team_barrier();  // the store has read the scratch; every warp is past its waits
    if (t == 0)
      for (int b = 0; b <= S; ++b)
        tma_barrier_invalidate(full_at + 8 * b);  // (a block may run another team next)
  }

  /// Reconverges the issuing lane with its warp before the next warp-wide instruction.
  KOKKOS_FORCEINLINE_FUNCTION static void reconverge_warp() {
#if defined(__CUDA_ARCH__)
    __syncwarp();
#endif
  }
};

}  // namespace kcnn::Impl
