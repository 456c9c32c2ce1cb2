// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/channel_run_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm for 16-bit NHWC tensors whose channel count is a
///        multiple of 32 (TensorCoreChannelRunKernel): every pipeline stage is one
///        filter tap (r, s) and a run of 32 channels (64 with the tiles' 128-byte rows, C a
///        multiple of 64), so a stage's gathers are one bounds check and one 16-byte copy
///        per scratch row and chunk, the tap's offset shared by every row.
///
/// The GEMM view is transposed against TensorCoreDeviceKernel's: rows (MMA m) are the
/// output pixels, columns (MMA n) the filters, so that an accumulator pair (c0, c1)
/// holds two neighbouring filters of one pixel, one 4-byte store into NHWC y. Per stage
/// both operand tiles are rows of BK taps (TensorCoreScratchRows' swizzle: 64-byte rows of
/// 32, or 128-byte rows of 64), k contiguous: A = BP pixel rows of x, B = BF filter rows of
/// w (w packed (M, R, S, C), so a filter's taps of the stage are contiguous and no packing
/// kernel runs). Each thread copies chunk t % chunks (8 channels) of rows t / chunks,
/// t / chunks + threads / chunks, ...
/// with cp.async; fragments come from ldmatrix.x4 (A: one per m16 tile and MMA k-step,
/// B: one per n8 tile and stage, both k-steps).
///
/// Against TensorCoreDeviceKernel on these layers (generic taps: a TapWalker per thread,
/// a pixel table in scratch, 64-bit gather offsets per row and stage) a row's copy needs
/// two 32-bit bounds tests and a pointer add in the source; the SASS of the first version
/// still spent ~15 instructions per 16-byte copy (6 copies per thread and stage, ~95 of
/// the main loop's ~170 instructions per warp and stage, sm_90). x goes through L1
/// (cp.async.ca): the next filter column's taps gather the same rows shifted by one pixel
/// (H100, bfloat16, ResNet 3x3 layers of 64 / 128 channels: 0.1078 / 0.0876 ms through L2
/// only, 0.1025 / 0.0854 through L1; 256 / 512: even / 5% slower). The epilogue stages the
/// sums in scratch (store_staged).
///
/// Warpgroup tiles (TensorCoreRunTile::warpgroup, builds with the wgmma pass): the four warps
/// are one warpgroup, warp w owning rows 16w..16w+15 of each 64-pixel slab and all 64
/// filters. Compiled for sm_90a, a stage is four wgmma m64n64k16 (two slabs x two k-steps)
/// that the tensor cores read straight from the swizzled tiles (arch/wgmma.hpp): no
/// ldmatrix, no per-MMA issue (measurements: tile_shapes.hpp). Compiled for anything else
/// (a plain sm_90 pass, which the driver may load instead), the same warps issue mma.sync
/// m16n8k16 on the same fragments: wgmma's accumulator layout is, warp by warp, that of
/// N / 8 m16n8 MMAs, so the epilogue is shared and either pass computes the same sums.
///
/// Split K as in TensorCoreDeviceKernel: k_slices copies of the tile grid, raw sums to
/// `partial` (j-major: y's order), SplitKReduce adds them.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/async_copy.hpp"
#include "../../arch/convert.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../arch/wgmma.hpp"
#include "../../common/unroll_map.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../implicit_gemm/operands.hpp"
#include "../implicit_gemm/split_k.hpp"
#include "mma_sync_stage.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

/// The taps of a channel-run stage sequence: stage q covers channels [c0, c0 + BK) of
/// filter tap (r, s), with q = ((r * S + s) * C + c0) / BK (NHWC's tap order, C a
/// multiple of BK). Keeps the stage's window offsets (dh, dw) and x offset
/// (dh * xs.h + dw * xs.w + c0) by carries: no division per stage.
template <int BK>
struct ChannelRunWalker {
  int c0 = 0, s = 0;
  int dh = 0, dw = 0;        ///< row_offset(r), col_offset(s)
  std::int64_t x_delta = 0;  ///< dh * xs.h + dw * xs.w + c0
  int C = 0, S = 0, dil_h = 0, dil_w = 0, pad_w = 0;
  std::int64_t next_s = 0;  ///< x_delta's change from the last run of s to s + 1
  std::int64_t next_r = 0;  ///< and from the last run of (r, S - 1) to (r + 1, 0)

  KOKKOS_INLINE_FUNCTION ChannelRunWalker(const UnrollMap<Layout::NHWC>& map,
                                          const LogicalStrides& xs, int first_stage) {
    C = static_cast<int>(map.C), S = static_cast<int>(map.S);
    dil_h = static_cast<int>(map.dilation_h), dil_w = static_cast<int>(map.dilation_w);
    pad_w = static_cast<int>(map.pad_w);
    const int k = first_stage * BK;
    const int rs = k / C;
    c0 = k - rs * C;
    const int r = rs / S;
    s = rs - r * S;
    dh = static_cast<int>(map.row_offset(r));
    dw = static_cast<int>(map.col_offset(s));
    x_delta = std::int64_t(dh) * xs.h + std::int64_t(dw) * xs.w + c0;
    next_s = std::int64_t(dil_w) * xs.w - (C - BK);
    next_r = std::int64_t(dil_h) * xs.h - std::int64_t(S - 1) * dil_w * xs.w - (C - BK);
  }

  KOKKOS_INLINE_FUNCTION void advance() {
    c0 += BK;
    if (c0 < C) {
      x_delta += BK;
      return;
    }
    c0 = 0;
    if (++s < S) {
      dw += dil_w;
      x_delta += next_s;
      return;
    }
    s = 0;
    dw = -pad_w;
    dh += dil_h;
    x_delta += next_r;
  }
};

/// Y: y's element type (T, or float for a two-pass pooling's unpooled output).
template <class Tile, TensorCoreMath Math, class ExecSpace, class Y>
struct TensorCoreChannelRunKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using T = typename TensorCoreOp<Math>::element;
  using Acc = float;
  using Rows = TensorCoreScratchRows<T, Tile::row_bytes>;
  static_assert(is_16bit_math(Math), "the channel-run kernel multiplies 16-bit factors");
  static constexpr int BP = Tile::BP, BF = Tile::BF, S = Tile::Stages;
  static constexpr int BK = Rows::BK, chunk = Rows::chunk, threads = Tile::threads;
  static constexpr int KS = BK / 16;  ///< MMA k-steps per stage (2, or 4 with 128-byte rows)
  static constexpr int WP = BP / Tile::WarpsP, WF = BF / Tile::WarpsF;
  static constexpr int MI = WP / 16, NI = WF / 8;  ///< m16n8k16 MMAs per warp tile
  /// One warpgroup (see the file comment): acc[mi] is the warp's part of 64-pixel slab mi,
  /// whose m16 strips lie `slab_rows` rows apart (16 for warp tiles of consecutive rows).
  static constexpr bool warpgroup = Tile::warpgroup;
  static constexpr bool use_wgmma = Tile::wgmma;  ///< in the sm_90a pass
  static constexpr int slab_rows = warpgroup ? 64 : 16;
  static_assert(!warpgroup || (MI == BP / 64 && NI * 8 == 64),
                "a warpgroup's warp holds one m16 strip of each 64-pixel slab, 64 filters");
  /// Team scratch alignment: wgmma's swizzle repeats every 8 rows (512 or 1,024 bytes),
  /// and every tile must start on a repeat.
  static constexpr std::size_t tile_alignment = warpgroup ? 8 * Rows::row_bytes : 16;
  /// Copies: thread t takes chunk t % chunks of rows t / chunks + i * rows_step.
  static constexpr int chunks = Rows::chunks;
  static constexpr int rows_step = threads / chunks;
  static constexpr int x_copies = BP / rows_step;
  static constexpr int w_copies = (BF + rows_step - 1) / rows_step;
  static_assert(chunk == 8 && (BK == 32 || BK == 64), "stages of 32 or 64 taps in 16-byte chunks");
  static_assert(BP % rows_step == 0, "every thread copies the same number of pixel rows");
  static_assert(WP % 16 == 0 && WF % 8 == 0, "MMA tiling");
  /// Bytes between scratch rows 16 (A's m16 tiles) and 8 (B's n8 tiles) apart.
  static constexpr std::uint32_t row_bytes = Rows::row_bytes;

  /// The epilogue's 8- and 16-byte accesses of float scratch and partial sums (CUDA's
  /// float2 / float4 are not host types, and the kernel is parsed on every backend).
  struct alignas(8) FloatPair {
    float e[2];
  };
  struct alignas(16) FloatQuad {
    float e[4];
  };

  ImplicitGemmOperands<Layout::NHWC, T, Y> op;
  int f_blocks;  ///< ceil(M / BF): the league walks the filter blocks fastest (x reuse in L2)
  int k_slices = 1;
  int steps_per_slice = 0;
  Acc* partial = nullptr;  ///< split K: the slices' raw sums, j-major
  /// y's runs of 8 filters of a pixel in 16-byte stores: y's channels contiguous, y
  /// 16-byte aligned and every pixel stride a multiple of 16 bytes (the launch checks).
  bool y_vectors = false;
  static constexpr bool partial_j_major = true;
  using Partials = SplitKPartials<partial_j_major>;

  static constexpr std::size_t tile_bytes = sizeof(T) * std::size_t(S) * (BP + BF) * BK;
  /// The epilogue stages the accumulators as floats in the operand tiles' scratch, rows
  /// of BF + 4 (the pad spreads a fragment store's 8 rows over the banks), in `passes`
  /// passes of MI / passes m16 tiles of every warp, as few as fit.
  static constexpr int pitch = BF + 4;
  /// A pass's scratch: its accumulators, then y's offset of each row's pixel.
  static constexpr std::size_t pass_bytes(int p) {
    return std::size_t(Tile::WarpsP) * (WP / p) * (pitch * sizeof(float) + sizeof(std::int64_t));
  }
  static constexpr int fewest_passes() {
    int p = 1;
    while (p < MI && (MI % p != 0 || pass_bytes(p) > tile_bytes))
      ++p;
    return p;
  }
  static constexpr int passes = fewest_passes();
  static constexpr int pass_rows_per_warp = WP / passes;  ///< staged pixel rows per warp row
  static constexpr int pass_rows = Tile::WarpsP * pass_rows_per_warp;
  static_assert(MI % passes == 0 && pass_bytes(passes) <= tile_bytes,
                "a pass's staged accumulators and row offsets fit the operand tiles' scratch");
  static_assert(BF % 8 == 0, "the epilogue stores runs of 8 filters");
  static_assert(!warpgroup || passes == 1, "warpgroup tiles stage their sums in one pass");
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return tile_bytes + tile_alignment;  // + get_shmem_aligned's slack
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank();
    // League rank: ((block * k_slices) + slice) * f_blocks + fb.
    const int fb = team.league_rank() % f_blocks;
    const int tiles = team.league_rank() / f_blocks;
    const int slice = tiles % k_slices;
    const std::int64_t block = tiles / k_slices;
    const int f0 = fb * BF;
    const std::int64_t j0 = block * BP;

    T* const x_tiles = static_cast<T*>(
        team.team_scratch(0).get_shmem_aligned(std::size_t(tile_bytes), tile_alignment));
    T* const w_tiles = x_tiles + S * BP * BK;
    const std::uint32_t x_tiles_at = scratch_address(x_tiles);
    const std::uint32_t w_tiles_at = scratch_address(w_tiles);

    // This thread's copies: channels copy_k..copy_k + 7 of the stage's run, of pixel rows
    // and filter rows row0 + i * rows_step.
    const int copy_k = (t % chunks) * chunk, row0 = t / chunks;
    const T* x_row[x_copies];
    int h_row[x_copies], w_col[x_copies];
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < x_copies; ++i) {
      const GatherPixel px = op.template gather_pixel<false>(j0 + row0 + i * rows_step);
      x_row[i] = op.x + px.x_offset + copy_k;  // (outside pixels: h, w never inside)
      h_row[i] = px.h, w_col[i] = px.w;
    }
    const T* w_row[w_copies];
    bool w_inside[w_copies];
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < w_copies; ++i) {
      const int row = row0 + i * rows_step;
      w_inside[i] = row < BF && f0 + row < op.M;
      w_row[i] = op.w + (w_inside[i] ? std::int64_t(f0 + row) * op.K : 0) + copy_k;
    }
    std::uint32_t x_copy_at[x_copies], w_copy_at[w_copies];  // offsets in a stage's tile
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < x_copies; ++i)
      x_copy_at[i] = Rows::offset(row0 + i * rows_step, copy_k) * sizeof(T);
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < w_copies; ++i)
      w_copy_at[i] = Rows::offset(row0 + i * rows_step, copy_k) * sizeof(T);

    // This team's stages: [first_step, first_step + steps) of K / BK.
    const int first_step = slice * steps_per_slice;
    const int all_steps = op.K / BK;
    const int steps =
        all_steps - first_step < steps_per_slice ? all_steps - first_step : steps_per_slice;
    ChannelRunWalker<BK> taps(op.map, op.xs, first_step);
    const std::uint32_t H = static_cast<std::uint32_t>(op.map.H);
    const std::uint32_t W = static_cast<std::uint32_t>(op.map.W);
    int w_k = first_step * BK;  // the stage's first tap: w_row[i] + w_k

    int issue_buffer = 0;  // the buffer of the next stage issued: stage % S
    auto issue = [&](int step) {
      if (step < steps) {
        const std::uint32_t x_at = x_tiles_at + issue_buffer * (BP * row_bytes);
        const std::uint32_t w_at = w_tiles_at + issue_buffer * (BF * row_bytes);
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < x_copies; ++i) {
          const bool inside = static_cast<std::uint32_t>(h_row[i] + taps.dh) < H &&
                              static_cast<std::uint32_t>(w_col[i] + taps.dw) < W;
          scratch_copy_async_16_at<true>(x_at + x_copy_at[i],
                                         inside ? x_row[i] + taps.x_delta : op.x, inside);
        }
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < w_copies; ++i) {
          if (BF % rows_step != 0 && row0 + i * rows_step >= BF) break;
          scratch_copy_async_16_at(w_at + w_copy_at[i], w_row[i] + w_k, w_inside[i]);
        }
        taps.advance();
        w_k += BK;
      }
      scratch_copies_commit();  // also when empty: the group count stays one per stage
      issue_buffer = issue_buffer + 1 == S ? 0 : issue_buffer + 1;
    };

    Acc acc[MI][NI][4];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int r = 0; r < 4; ++r)
      acc[mi][ni][r] = Acc(0);

    const int warp = t / 32, lane = t % 32;
    const int wp0 = warpgroup ? 16 * warp : (warp / Tile::WarpsF) * WP;
    const int wf0 = (warp % Tile::WarpsF) * WF;
    const MmaSyncLaneRows<Rows, KS> lanes(wp0, wf0, lane);  // (the mma.sync path's)

    KCNN_DEVICE_UNROLL
    for (int s = 0; s < S - 1; ++s)
      issue(s);
    int read_buffer = 0;
    for (int step = 0; step < steps; ++step) {
      scratch_copies_wait_groups<S - 2>();  // this thread's copies of `step` have landed
      if constexpr (use_wgmma) fence_scratch_for_tensor_cores();  // wgmma reads them next
      team.team_barrier();  // everyone's have; everyone is done with step - 1's buffer
      issue(step + S - 1);  // into step - 1's buffer
      const std::uint32_t x_stage = x_tiles_at + read_buffer * (BP * row_bytes);
      const std::uint32_t w_stage = w_tiles_at + read_buffer * (BF * row_bytes);
#if defined(KCNN_ARCH_WGMMA)
      if constexpr (use_wgmma) {
        wgmma_stage(acc, x_stage, w_stage);
      } else
#endif
      {
        mma_sync_stage<Math, Rows, MI, NI, KS, slab_rows>(acc, x_stage, w_stage, lanes);
      }
      read_buffer = read_buffer + 1 == S ? 0 : read_buffer + 1;
    }
    // The epilogue: the accumulators through scratch, so that each thread then finishes
    // runs of 8 filters of a pixel (NHWC y: one 16-byte store) in a loop that is not
    // unrolled (the per-lane epilogue, 64 unrolled elements with the activation's switch
    // and a pixel division each, was 40% of the kernel's instructions and stalled on
    // instruction fetches: ncu, H100).
    team.team_barrier();  // every warp is done with the operand tiles
    float* const staged = reinterpret_cast<float*>(x_tiles);
    const int g = lane / 4, tig = lane % 4, warp_row = warp / Tile::WarpsF;
    KCNN_DEVICE_UNROLL  // (the accumulators a pass stages: compile-time indices)
        for (int pass = 0; pass < passes; ++pass) {
      KCNN_DEVICE_UNROLL
      for (int mp = 0; mp < MI / passes; ++mp)
        KCNN_DEVICE_UNROLL
      for (int h = 0; h < 2; ++h)
        KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni) {
        const int mi = pass * (MI / passes) + mp;
        const int row = warpgroup ? 64 * mi + 16 * warp + 8 * h + g
                                  : warp_row * pass_rows_per_warp + 16 * mp + 8 * h + g;
        *reinterpret_cast<FloatPair*>(staged + row * pitch + wf0 + 8 * ni + 2 * tig) =
            FloatPair{acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]};
      }
      // y's offset of each staged row's pixel (-1: past the output), one division each.
      std::int64_t* const y_rows = reinterpret_cast<std::int64_t*>(staged + pass_rows * pitch);
      for (int i = t; i < pass_rows; i += threads) {
        const std::int64_t j = j0 + staged_pixel(i, pass);
        y_rows[i] = j < op.J ? (k_slices > 1 ? j : op.y_offset(op.pixel(j))) : -1;
      }
      team.team_barrier();
      store_staged(staged, y_rows, f0, slice, t);
      if (pass + 1 < passes) team.team_barrier();
    }
  }

  /// The warpgroup's wgmma over one stage (sm_90a): for each k-step, each 64-pixel slab of
  /// the x tile at x_stage times the w tile at w_stage; waits for them, so that the next
  /// barrier frees this stage's buffer.
  KOKKOS_FORCEINLINE_FUNCTION static void wgmma_stage(Acc (&acc)[MI][NI][4], std::uint32_t x_stage,
                                                      std::uint32_t w_stage) {
    wgmma_fence();
    KCNN_DEVICE_UNROLL
    for (int ks = 0; ks < KS; ++ks)
      KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      wgmma_m64n64k16<TensorCoreOp<Math>::format>(
          reinterpret_cast<float(&)[4 * NI]>(acc[mi]),
          wgmma_descriptor<row_bytes>(x_stage + mi * 64 * row_bytes + ks * 32),
          wgmma_descriptor<row_bytes>(w_stage + ks * 32));
    wgmma_commit();
    wgmma_wait<0>();
  }

  /// The tile pixel (0 <= p < BP) of staged row i of pass `pass`: warp row i / rows
  /// per warp, its m16 tiles pass * MI / passes on.
  KOKKOS_FORCEINLINE_FUNCTION static int staged_pixel(int i, int pass) {
    if constexpr (warpgroup) return i;  // one pass, rows in tile order
    const int warp_row = i / pass_rows_per_warp;
    return warp_row * WP + pass * pass_rows_per_warp + (i - warp_row * pass_rows_per_warp);
  }

  /// One pass's staged sums to y (bias, activation, one rounding) or, under split K, to
  /// this slice's partial sums (y_rows: y's offset of each row's pixel, or under split K
  /// the pixel; -1 past the output): thread t takes runs of 8 filters of one pixel, t,
  /// t + threads, ... (consecutive threads: consecutive runs of a pixel, then the next
  /// pixel: y's order in NHWC). y without contiguous channels (NCHW calls staged
  /// channels-last) takes two pixels of a filter per item, pixels fastest (y's order
  /// there: store_pixel_pairs).
  KOKKOS_INLINE_FUNCTION void store_staged(const float* staged, const std::int64_t* y_rows, int f0,
                                           int slice, int t) const {
    if (k_slices > 1) {
      store_partial_runs(staged, y_rows, f0, slice, t);
    } else if (y_vectors) {
      // The activation's switch once, outside the loop (with_activation).
      with_activation(op.activation,
                      [&](auto act) { store_runs<decltype(act)::value>(staged, y_rows, f0, t); });
    } else {
      with_activation(op.activation, [&](auto act) {
        store_pixel_pairs<decltype(act)::value>(staged, y_rows, f0, t);
      });
    }
  }

  /// The elements of store_staged where y's channels are not contiguous (NCHW calls
  /// staged channels-last), activation `Act`: pairs of neighbouring staged pixels of one
  /// filter, pixels fastest, which NCHW keeps side by side: one 4-byte store of both
  /// (packed rounding, arch/convert.hpp) where they are neighbours in y and aligned. It
  /// replaced a loop of one element per item with the activation's switch and Kokkos
  /// 3.4's software bfloat16 rounding per element (not profiled on its own; the run
  /// epilogue's profile is in store_runs).
  template <Activation Act>
  KOKKOS_INLINE_FUNCTION void store_pixel_pairs(const float* staged, const std::int64_t* y_rows,
                                                int f0, int t) const {
    static_assert(pass_rows % 2 == 0, "pairs of staged rows");
    constexpr int pairs = pass_rows / 2;
    KCNN_DEVICE_NO_UNROLL
    for (int item = t; item < pairs * BF; item += threads) {
      const int c = item / pairs, i = 2 * (item - c * pairs);
      const int m = f0 + c;
      if (m >= op.M) continue;
      const float bias = op.bias ? to_compute(op.bias[m]) : 0.f;
      const float v0 = apply_activation(Act, staged[i * pitch + c] + bias);
      const float v1 = apply_activation(Act, staged[(i + 1) * pitch + c] + bias);
      const std::int64_t at0 = y_rows[i], at1 = y_rows[i + 1];
      const std::int64_t channel = std::int64_t(m) * op.ys.c;
      if constexpr (sizeof(Y) == 2) {
        if (at0 >= 0 && at1 == at0 + 1) {
          Y* const first = op.y + at0 + channel;
          if (reinterpret_cast<std::uintptr_t>(first) % 4 == 0) {
            *reinterpret_cast<std::uint32_t*>(first) = round_and_pack_16bit<Y>(v0, v1);
            continue;
          }
        }
      }
      if (at0 >= 0) op.y[at0 + channel] = from_compute<Y>(v0);
      if (at1 >= 0) op.y[at1 + channel] = from_compute<Y>(v1);
    }
  }

  static constexpr int runs_per_row = BF / 8;
  /// Whether each thread's items are runs of the same 8 filters (t % runs_per_row), so
  /// that it loads their bias once.
  static constexpr bool fixed_runs = threads % runs_per_row == 0;

  /// The runs of store_staged (y_vectors, no split K), activation `Act`. What a run costs
  /// matters: with the bias loaded per run and the software bfloat16 rounding of Kokkos
  /// 3.4 (bfloat16.hpp) a run took 163 instructions, 27% of the kernel's on the
  /// 64-channel ResNet layer (ncu, H200, session 25); hence the bias in registers and the
  /// packed hardware rounding of arch/convert.hpp (store_run).
  template <Activation Act>
  KOKKOS_INLINE_FUNCTION void store_runs(const float* staged, const std::int64_t* y_rows, int f0,
                                         int t) const {
    float bias[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if constexpr (fixed_runs) load_bias(bias, f0 + (t % runs_per_row) * 8);
    KCNN_DEVICE_NO_UNROLL
    for (int item = t; item < pass_rows * runs_per_row; item += threads) {
      const int i = item / runs_per_row, c = (item - i * runs_per_row) * 8;
      const std::int64_t row = y_rows[i];
      const int m = f0 + c;
      if (row < 0 || m >= op.M) continue;
      if constexpr (!fixed_runs) load_bias(bias, m);
      const FloatQuad* const src = reinterpret_cast<const FloatQuad*>(staged + i * pitch + c);
      const FloatQuad lo = src[0], hi = src[1];
      float v[8] = {lo.e[0], lo.e[1], lo.e[2], lo.e[3], hi.e[0], hi.e[1], hi.e[2], hi.e[3]};
      KCNN_DEVICE_UNROLL
      for (int e = 0; e < 8; ++e)
        v[e] = apply_activation(Act, v[e] + bias[e]);
      Y* const out = op.y + row + m;
      if (op.M - m >= 8) {
        store_run(out, v);
      } else {
        // Unrolled: v's indices stay compile-time, so v needs no local-memory copy.
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 8; ++e) {
          if (e < op.M - m) out[e] = from_compute<Y>(v[e]);
        }
      }
    }
  }

  /// bias[e] = the bias of filter m + e (0 past M or without a bias).
  KOKKOS_INLINE_FUNCTION void load_bias(float (&bias)[8], int m) const {
    if (!op.bias) return;
    KCNN_DEVICE_UNROLL
    for (int e = 0; e < 8; ++e)
      bias[e] = m + e < op.M ? to_compute(op.bias[m + e]) : 0.f;
  }

  /// The runs of store_staged under split K: raw sums to this slice's partials.
  KOKKOS_INLINE_FUNCTION void store_partial_runs(const float* staged, const std::int64_t* y_rows,
                                                 int f0, int slice, int t) const {
    const Partials split{op.M, op.J};
    KCNN_DEVICE_NO_UNROLL
    for (int item = t; item < pass_rows * runs_per_row; item += threads) {
      const int i = item / runs_per_row, c = (item - i * runs_per_row) * 8;
      const std::int64_t j = y_rows[i];
      const int m = f0 + c;
      if (j < 0 || m >= op.M) continue;
      const FloatQuad* const src = reinterpret_cast<const FloatQuad*>(staged + i * pitch + c);
      Acc* const out = partial + split.offset(slice, m, j);
      if (op.M - m >= 8 && op.M % 4 == 0) {
        reinterpret_cast<FloatQuad*>(out)[0] = src[0];
        reinterpret_cast<FloatQuad*>(out)[1] = src[1];
      } else {
        const int count = op.M - m < 8 ? op.M - m : 8;
        for (int e = 0; e < count; ++e)
          out[e] = staged[i * pitch + c + e];
      }
    }
  }

  /// y[0..7] = v rounded, in 16-byte stores (y_vectors: y 16-byte aligned there); 16-bit
  /// types through the packed conversion (arch/convert.hpp).
  KOKKOS_FORCEINLINE_FUNCTION static void store_run(Y* y, const float (&v)[8]) {
    if constexpr (sizeof(Y) == 2) {
      struct alignas(16) Packed {
        std::uint32_t e[4];
      };
      Packed out;
      KCNN_DEVICE_UNROLL
      for (int p = 0; p < 4; ++p)
        out.e[p] = round_and_pack_16bit<Y>(v[2 * p], v[2 * p + 1]);
      *reinterpret_cast<Packed*>(y) = out;
    } else {
      constexpr int per_store = 16 / static_cast<int>(sizeof(Y));
      struct alignas(16) Vector {
        Y e[per_store];
      };
      KCNN_DEVICE_UNROLL
      for (int s0 = 0; s0 < 8; s0 += per_store) {
        Vector out;
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < per_store; ++e)
          out.e[e] = from_compute<Y>(v[s0 + e]);
        *reinterpret_cast<Vector*>(y + s0) = out;
      }
    }
  }
};

}  // namespace kcnn::Impl
