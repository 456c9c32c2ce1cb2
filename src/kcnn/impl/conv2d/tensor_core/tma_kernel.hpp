// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/tma_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm for 16-bit NHWC tensors on Hopper (TensorCoreTmaKernel):
///        the channel-run GEMM view (rows = output pixels, columns = filters, a stage =
///        one filter tap and a run of 32 or 64 channels), with the operand tiles loaded by
///        the TMA unit instead of per-thread copies, and the output tile stored by it.
///
/// Why: in the channel-run kernel the copies' addressing and bounds checks were 35-40% of
/// the main loop's instructions (ncu, session 25), and the stand-alone harness of the
/// same pipeline reached 0.85x cuDNN's speed within the 48 KB of shared memory a Kokkos
/// team may use. With TMA (perf_tests/data/s26-tma-im2col-harness.cu) one thread issues
/// a stage's two loads, the other threads only wait on the stage's barrier and multiply,
/// and the same scratch reaches cuDNN's speed (tile_shapes.hpp, TensorCoreTiles::Tma*).
///
/// The loads (arch/tma.hpp): x through an im2col tensor map, BP consecutive output pixels
/// of the stage's tap (r, s) and channel run (the hardware walks the pixels through rows
/// and images and reads zeros in the padding); w, packed (M, R, S, C), as an M x K matrix,
/// BF filter rows of the stage's BK taps. Both land in Hopper's swizzle of their row width,
/// which wgmma reads as such. Each stage buffer has an mbarrier that counts the bytes in;
/// thread 0 refills a buffer once the wgmma batch that read it has completed (the
/// warpgroup waits for all but the newest batch), so stages - 1 loads stay in flight.
///
/// The epilogue adds the bias, applies the activation, rounds once to T into the freed
/// operand scratch in the 128-byte swizzle, and thread 0 stores the tile with TMA through a
/// matrix map of y (J x M, NHWC packed), which clips rows past J and filters past M.
///
/// Split K: k_slices teams per tile, league-neighbours; each writes its raw sums to
/// `partial` (float4 per accumulator quad, thread-interleaved: coalesced, no scratch), and
/// the last team of a tile to finish (a counter per tile, zero between calls) adds the
/// slices in slice order, so the result does not depend on which team is last, and runs
/// the epilogue. The partial sums stay in L2.
///
/// The tensor maps (TmaMaps: x, w, y) are the grid-constant parameter of the kernel's
/// launch (launch_grid_constant_teams; arch/grid_constant_launch.hpp says why). The split counters
/// are the instance's TmaSplitCounters (split_counters.hpp), which the last team of each tile sets
/// back to zero.
///
/// Compiled without wgmma (a plain sm_90 pass), the warpgroup's warps issue mma.sync on
/// the same fragments (mma_sync_stage.hpp) and the team synchronizes before a refill.
/// TMA needs sm_90: the kernel is only launched on builds with the sm_90a pass.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/async_copy.hpp"
#include "../../arch/convert.hpp"
#include "../../arch/grid_constant_launch.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/tma.hpp"
#include "../../arch/wgmma.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "mma_sync_stage.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

/// The convolution's geometry as the TMA kernel needs it (32-bit: the launch checks).
struct TensorCoreTmaGeometry {
  int M = 0, C = 0, S = 0;         ///< filters, channels, filter width
  int Q = 0, PQ = 0;               ///< output width, pixels per image
  int stride_h = 1, stride_w = 1;  ///< window origin of pixel (p, q): p * stride_h - pad_h
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int steps = 0;  ///< K / BK stages in all
};

/// A warpgroup tile's epilogue (the TMA and halo kernels): the accumulators of MI 64-row
/// slabs x NI n8 filter blocks + bias, the activation, rounded once to T, into scratch at
/// `out` as NI / 8 boxes of 64 MI rows of 64 filters in the 128-byte swizzle (the output
/// map's box): lane (g, tig) of warp w holds rows 64 mi + 16 w + g (+ 8) and filters
/// f0 + 8 ni + 2 tig (+ 1), one 4-byte write each; chunk ni % 8 of a row sits at chunk
/// (ni % 8) ^ (row % 8), so a warp's 32 writes hit 32 banks. `bias`: nullptr for none;
/// filters from M on take none.
///
/// Tiles of up to 64 accumulators write through 32-bit shared-window addresses
/// (scratch_store_32): the compiler forms the writes' addresses ahead, and as generic
/// pointers they took two registers each (ptxas, sm_90a: the halo tile 128 -> 93
/// registers, the TMA kernel's 128 x 64 tile 128 -> 102, 64 x 128 86 -> 69; session 30).
/// The 128 x 128 tile keeps the generic pointers: its spills grew 76 -> 160 bytes with
/// the 32-bit addresses.
template <class T, int MI, int NI, class Act>
KOKKOS_INLINE_FUNCTION void tma_stage_output_as(const float (&acc)[MI][NI][4], unsigned char* out,
                                                const T* bias, int M, int f0, int warp, int lane,
                                                const Act& act) {
  constexpr std::uint32_t box_bytes = MI * 64 * 128;
  const int g = lane / 4, tig = lane % 4;
  const std::uint32_t out_at = scratch_address(out);
  KCNN_DEVICE_UNROLL
  for (int ni = 0; ni < NI; ++ni) {
    const int m = f0 + 8 * ni + 2 * tig;
    const float b0 = bias && m < M ? to_compute(bias[m]) : 0.f;
    const float b1 = bias && m + 1 < M ? to_compute(bias[m + 1]) : 0.f;
    unsigned char* const box = out + (ni / 8) * box_bytes;
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int row = 64 * mi + 16 * warp + g + 8 * h;
      const std::uint32_t packed =
          round_and_pack_16bit<T>(act(acc[mi][ni][2 * h] + b0), act(acc[mi][ni][2 * h + 1] + b1));
      if constexpr (MI * NI <= 16) {
        // row % 8 == g, and the box is 1,024-byte aligned: the swizzle is an XOR of the
        // row's address (chunk g) with ni % 8.
        scratch_store_32(
            (out_at + (ni / 8) * box_bytes + row * 128 + (g << 4) + 4 * tig) ^ ((ni % 8) << 4),
            packed);
      } else {
        *reinterpret_cast<std::uint32_t*>(box + row * 128 + (((ni % 8) ^ (row % 8)) << 4) +
                                          4 * tig) = packed;
      }
    }
  }
}

/// tma_stage_output_as with `activation`.
template <class T, int MI, int NI>
KOKKOS_INLINE_FUNCTION void tma_stage_output(const float (&acc)[MI][NI][4], unsigned char* out,
                                             const T* bias, int M, int f0, int warp, int lane,
                                             Activation activation) {
  if constexpr (MI * NI >= 16) {
    // 64 or more accumulators leave no registers for Sigmoid's and Tanh's expansions
    // (128 x 128: ptxas spilled 412 bytes with every activation compiled, 68 with ReLU
    // alone; the halo tile at 96 registers 156 with every activation, session 29): those
    // take the activation's switch per element (tensor_core_tma_tile gives them the 128 x
    // 64 tile rather than the 128 x 128 one).
    if (activation == Activation::ReLU) {
      tma_stage_output_as(acc, out, bias, M, f0, warp, lane,
                          [](float v) { return apply_activation(Activation::ReLU, v); });
    } else if (activation == Activation::Identity) {
      tma_stage_output_as(acc, out, bias, M, f0, warp, lane, [](float v) { return v; });
    } else {
      tma_stage_output_as(acc, out, bias, M, f0, warp, lane,
                          [activation](float v) { return apply_activation(activation, v); });
    }
  } else {
    with_activation(activation, [&](auto act) {
      tma_stage_output_as(acc, out, bias, M, f0, warp, lane,
                          [](float v) { return apply_activation(decltype(act)::value, v); });
    });
  }
}

/// SplitK: whether the kernel adds K slices (k_slices > 1; compiled apart so that the
/// fix-up's registers do not weigh on the unsplit kernel's).
template <class Tile, TensorCoreMath Math, bool SplitK>
struct TensorCoreTmaKernel {
  using member_type = GridConstantTeam;
  using T = typename TensorCoreOp<Math>::element;
  using Rows = TensorCoreScratchRows<T, Tile::row_bytes>;
  static_assert(is_16bit_math(Math), "the TMA kernel multiplies 16-bit factors");
  static constexpr int BP = Tile::BP, BF = Tile::BF, S = Tile::Stages;
  static constexpr int BK = Rows::BK, threads = Tile::threads;
  static constexpr int KS = BK / 16;  ///< k16 steps per stage
  static constexpr int MI = BP / 64;  ///< 64-pixel slabs (one m64 wgmma each)
  static constexpr int NI = BF / 8;   ///< n8 column blocks of a slab
  static constexpr std::uint32_t row_bytes = Rows::row_bytes;
  static constexpr std::uint32_t x_tile_bytes = BP * row_bytes;
  static constexpr std::uint32_t stage_bytes = (BP + BF) * row_bytes;
  /// The output tile, staged as T in boxes of 64 filters (128-byte rows, 128-byte swizzle).
  static constexpr std::uint32_t out_box_bytes = BP * 128;
  static constexpr std::uint32_t data_bytes =
      S * stage_bytes > BF / 64 * out_box_bytes ? S* stage_bytes : BF / 64 * out_box_bytes;
  /// S barriers, then the split-K arrival count.
  static constexpr std::uint32_t control_bytes = 8 * S + 8;
  /// The swizzle repeats every 8 rows of 128 bytes: every tile starts on 1,024 bytes.
  static constexpr std::size_t alignment = 1024;
  static_assert(stage_bytes % alignment == 0 && x_tile_bytes % alignment == 0,
                "every operand tile on a swizzle repeat");
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return std::size_t(data_bytes) + control_bytes + alignment;  // + scratch_aligned's slack
  }

  const T* bias;  ///< nullptr: none
  Activation activation;
  TensorCoreTmaGeometry geo;
  int f_blocks;  ///< ceil(M / BF): the league walks the filter blocks fastest (x reuse in L2)
  int k_slices = 1, steps_per_slice = 0;
  int tiles = 0;             ///< output tiles; the league strides over tiles * k_slices work items
  float* partial = nullptr;  ///< split K: (tile, slice)'s raw sums
  int* counters = nullptr;   ///< split K: slices of each tile done

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team, const TmaMaps& tma) const {
    const int t = team.team_rank();
    unsigned char* const scratch = team.scratch_aligned(alignment);
    const std::uint32_t tiles_at = scratch_address(scratch);
    const std::uint32_t full_at = tiles_at + data_bytes;  // barrier of buffer b: + 8 * b

    // Once per team: the barriers.
    if (t == 0) {
      for (int b = 0; b < S; ++b)
        tma_barrier_init(full_at + 8 * b, 1);
      tma_fence_barrier_init();
    }
    team.team_barrier();

    // Work items: (tile * k_slices + slice), tile = pixel block * f_blocks + filter
    // block; the league strides over them. The stages count on across items, so that
    // each buffer's barrier phases alternate as they did in the item before.
    const int items = tiles * k_slices;
    int stages_before = 0;
    for (int item = team.league_rank(); item < items; item += team.league_size()) {
      const int slice = item % k_slices;
      const int tile = item / k_slices;
      const int first_step = slice * steps_per_slice;
      const int steps =
          geo.steps - first_step < steps_per_slice ? geo.steps - first_step : steps_per_slice;
      run_item(team, tma, tile, slice, first_step, steps, stages_before, scratch, tiles_at,
               full_at);
      stages_before += steps;
    }

    team.team_barrier();  // every warp is past its last barrier wait
    if (t == 0)
      for (int b = 0; b < S; ++b)
        tma_barrier_invalidate(full_at + 8 * b);  // (a block may run another team next)
  }

  /// One tile (its K slice `slice`, stages first_step.. of K, `steps` of them): the
  /// pipeline, the split's fix-up and the epilogue. `stages_before`: the stages this
  /// team's earlier items ran through the buffers.
  KOKKOS_INLINE_FUNCTION void run_item(const member_type& team, const TmaMaps& tma, int tile,
                                       int slice, int first_step, int steps, int stages_before,
                                       unsigned char* scratch, std::uint32_t tiles_at,
                                       std::uint32_t full_at) const {
    const int t = team.team_rank();
    const int f0 = (tile % f_blocks) * BF;
    const int j0 = (tile / f_blocks) * BP;
    const int n0 = j0 / geo.PQ, pq0 = j0 - n0 * geo.PQ;
    const int p0 = pq0 / geo.Q, q0 = pq0 - p0 * geo.Q;
    const int w_origin = q0 * geo.stride_w - geo.pad_w, h_origin = p0 * geo.stride_h - geo.pad_h;

    // Stage `step` of this item into its buffer (thread 0).
    auto issue = [&](int step) {
      const int buffer = (stages_before + step) % S;
      const std::uint32_t at = tiles_at + buffer * stage_bytes;
      const std::uint32_t bar = full_at + 8 * buffer;
      const int k0 = (first_step + step) * BK;
      const int tap = k0 / geo.C, c0 = k0 - tap * geo.C;
      const int r = tap / geo.S, s = tap - r * geo.S;
      tma_barrier_arrive_expect(bar, stage_bytes);
      tma_load_im2col_4d(at, &tma.x, bar, c0, w_origin, h_origin, n0,
                         static_cast<std::uint16_t>(s * geo.dilation_w),
                         static_cast<std::uint16_t>(r * geo.dilation_h));
      tma_load_tile_2d(at + x_tile_bytes, &tma.w, bar, k0, f0);
    };
    // (The previous item's output tile, staged in these buffers, has been read by its
    // TMA store: thread 0 waited for that before returning.)
    if (t == 0)
      for (int step = 0; step < S && step < steps; ++step)
        issue(step);

    float acc[MI][NI][4];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int e = 0; e < 4; ++e)
      acc[mi][ni][e] = 0.f;

    const int warp = t / 32, lane = t % 32;
#if !defined(KCNN_ARCH_WGMMA)
    const MmaSyncLaneRows<Rows, KS> lanes(16 * warp, 0, lane);
#endif
    for (int step = 0; step < steps; ++step) {
      const int stage = stages_before + step;
      const int buffer = stage % S;
      tma_barrier_wait(full_at + 8 * buffer, (stage / S) & 1);
      const std::uint32_t x_stage = tiles_at + buffer * stage_bytes;
      const std::uint32_t w_stage = x_stage + x_tile_bytes;
#if defined(KCNN_ARCH_WGMMA)
      wgmma_fence();
      KCNN_DEVICE_UNROLL
      for (int ks = 0; ks < KS; ++ks)
        KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        wgmma_m64nk16<TensorCoreOp<Math>::format, BF>(
            reinterpret_cast<float(&)[4 * NI]>(acc[mi]),
            wgmma_descriptor<row_bytes>(x_stage + mi * 64 * row_bytes + ks * 32),
            wgmma_descriptor<row_bytes>(w_stage + ks * 32));
      wgmma_commit();
      wgmma_wait<1>();  // the previous stage's batch is done: its buffer is free
#else
      mma_sync_stage<Math, Rows, MI, NI, KS, 64>(acc, x_stage, w_stage, lanes);
      team.team_barrier();  // every warp is done with this stage's buffer
#endif
      // Refill the buffer read last: the previous stage's (wgmma) or this one's.
#if defined(KCNN_ARCH_WGMMA)
      const int done = step - 1;
#else
      const int done = step;
#endif
      if (t == 0 && done >= 0 && done + S < steps) issue(done + S);
      reconverge_warp();
    }
    wgmma_wait<0>();
    team.team_barrier();  // every warp is done with the operand tiles

    if constexpr (SplitK) {
      int* const arrived = reinterpret_cast<int*>(scratch + data_bytes + 8 * S);
      if (!fix_up_split(acc, slice, tile, t, arrived, team)) return;
    } else {
      (void)slice;
    }
    tma_stage_output(acc, scratch, bias, geo.M, f0, warp, lane, activation);
    tma_fence_scratch_writes();
    team.team_barrier();
    if (t == 0) {
      KCNN_DEVICE_UNROLL
      for (int box = 0; box < BF / 64; ++box)
        tma_store_tile_2d(&tma.y, tiles_at + box * out_box_bytes, f0 + 64 * box, j0);
      tma_store_commit_and_wait_read();
    }
  }

  /// Reconverges the issuing lane with its warp before the next warp-wide instruction.
  KOKKOS_FORCEINLINE_FUNCTION static void reconverge_warp() {
#if defined(__CUDA_ARCH__)
    __syncwarp();
#endif
  }

  /// Split K: writes this slice's sums, and in the tile's last team adds every slice's
  /// into acc (slice order). Returns whether this team finishes the tile.
  KOKKOS_INLINE_FUNCTION bool fix_up_split(float (&acc)[MI][NI][4], int slice, int tile, int t,
                                           int* arrived, const member_type& team) const {
    struct alignas(16) Quad {
      float e[4];
    };
    constexpr int quads = MI * NI;  // per thread
    Quad* const mine = reinterpret_cast<Quad*>(partial) +
                       (std::int64_t(tile) * k_slices + slice) * quads * threads + t;
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      mine[(mi * NI + ni) * threads] =
          Quad{{acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3]}};
    // Publish the sums before the count; the last team reads them after it.
    Kokkos::memory_fence();
    team.team_barrier();
    if (t == 0) {
      *arrived = Kokkos::atomic_fetch_add(counters + tile, 1);
      Kokkos::memory_fence();
    }
    team.team_barrier();
    if (*arrived != k_slices - 1) return false;
    if (t == 0) counters[tile] = 0;  // every slice has counted: ready for the next call
    const Quad* const slices = reinterpret_cast<const Quad*>(partial) +
                               std::int64_t(tile) * k_slices * quads * threads + t;
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni) {
      float sum[4] = {0.f, 0.f, 0.f, 0.f};
      KCNN_DEVICE_NO_UNROLL
      for (int s = 0; s < k_slices; ++s) {
        const Quad q = s == slice
                           ? Quad{{acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3]}}
                           : load_uncached(slices + (s * quads + mi * NI + ni) * threads);
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 4; ++e)
          sum[e] += q.e[e];
      }
      KCNN_DEVICE_UNROLL
      for (int e = 0; e < 4; ++e)
        acc[mi][ni][e] = sum[e];
    }
    return true;
  }

  /// A 16-byte load that bypasses L1 (another team's writes, published by a fence and a
  /// counter, are not in this multiprocessor's L1 coherently).
  template <class Quad>
  KOKKOS_FORCEINLINE_FUNCTION static Quad load_uncached(const Quad* p) {
#if defined(__CUDA_ARCH__)
    const float4 v = __ldcg(reinterpret_cast<const float4*>(p));
    return Quad{{v.x, v.y, v.z, v.w}};
#else
    return *p;
#endif
  }
};

}  // namespace kcnn::Impl
