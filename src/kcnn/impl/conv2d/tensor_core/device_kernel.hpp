// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/device_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm on CUDA: TensorCoreDeviceKernel, the implicit GEMM
///        of the convolution on warp-level mma.sync, fed by a cp.async pipeline.
///
/// The GEMM view is ImplicitGemm's (operands.hpp): rows m are the filters (A = w, M x K,
/// k contiguous), columns j the output pixels (B = the gathered x, K x J), K = C*R*S.
/// Each team computes a BM x BN block of y; each warp a (BM / WarpsM) x (BN / WarpsN)
/// warp tile of mma.sync instructions. Per stage of BK taps the team gathers both
/// operand tiles into team scratch, k contiguous in every row (A: BM rows, B: BN rows,
/// TensorCoreTile::offset), with cp.async copies that do not wait for their loads;
/// Stages buffers are in flight, so the gathers of the next stages overlap this one's
/// MMAs.
///
/// Fragments: a lane (g = lane / 4, t = lane % 4) loads chunk t (16 bytes) of each of
/// its rows, which holds taps 4t..4t+3 (TF32) or 2t, 2t+1 (fp64) of the stage. The MMA
/// sums over k in any order, as long as A and B agree, so chunk element e serves MMA
/// k-step e / 2, fragment slot t + 4 (e % 2) (TF32: two k-steps of m16n8k8), or k-step
/// e, slot t (fp64: two of m8n8k4). One 16-byte load per row and stage replaces eight
/// 4-byte ones (the first version's per-element loads; SASS, H100). 16-bit (m16n8k16,
/// BK = 32): the taps in their natural order; B's fragments of both k-steps of eight
/// pixels come from one ldmatrix.x4 (its four 8 x 8 matrices are the row's four chunks),
/// A's from the packed weights, one 16-byte load per k-step and m16 tile.
///
/// Gathers:
///  - A (w), float: the weights packed per call in the MMA's fragment order and rounded
///    (packed_weights.hpp): a stage's tile is one contiguous run, 16-byte copies without
///    bounds checks, and each lane's fragment of an MMA one 16-byte load.
///  - A (w), double: 16-byte copies along k when w is packed in the GEMM's k order
///    (AVec), else one element per copy through the thread's tap.
///  - B (x), NHWC: 16-byte copies of a run of channels of one tap when C is a multiple
///    of 16 bytes' worth (BVec), else one element per copy; taps along k.
///  - B (x), NCHW: one element per copy, a warp copying 8 consecutive pixels x 4 taps:
///    32-byte runs of x, and 32 distinct banks of scratch (TensorCoreTile's swizzle).
/// Each thread walks its taps with carries (TapWalker): no division per stage.
///
/// Split K (k_slices > 1, for grids too small to fill the GPU: tensor_core_split_plan): the
/// league holds k_slices copies of the tile grid, each summing its own run of stages;
/// the teams store their raw sums to partial (SplitKPartials, j-major in NHWC: y's
/// order) and SplitKReduce adds the slices in order (deterministic), the bias and the
/// activation.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/async_copy.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../common/unroll_map.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../implicit_gemm/operands.hpp"
#include "../implicit_gemm/split_k.hpp"
#include "packed_weights.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

/// Y: y's element type (the element type, or float where a 16-bit convolution writes the
/// unpooled output of a two-pass pooling: ImplicitGemmOperands).
template <Layout L, class Tile, TensorCoreMath Math, bool AVec, bool BVec, class ExecSpace,
          class Y = typename TensorCoreOp<Math>::element>
struct TensorCoreDeviceKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using T = typename TensorCoreOp<Math>::element;
  using Shape = typename TensorCoreOp<Math>::shape;
  using Acc = accumulator_t<T>;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, S = Tile::Stages;
  static constexpr int chunk = Tile::chunk, threads = Tile::threads, warps = threads / 32;
  static constexpr int WM = BM / Tile::WarpsM, WN = BN / Tile::WarpsN;
  static constexpr int MI = WM / Shape::M, NI = WN / Shape::N;  ///< MMAs per warp tile
  static constexpr int kAcc = TensorCoreOp<Math>::accumulators;
  /// TF32 / TF32x3 / 16-bit: A comes packed (PackTensorCoreWeights); fp64 gathers w
  /// itself (its m8n8k4 fragment is one element per lane and k-step: nothing to reorder
  /// or round).
  static constexpr bool a_packed = Math != TensorCoreMath::F64;
  static constexpr bool bit16 = is_16bit_math(Math);
  /// Packed A: elements of one MMA k-step's fragments of 16 filters (32 lanes x 16 bytes).
  static constexpr int quad_block = 32 * chunk;
  static_assert(!a_packed || (Shape::M == 16 && Shape::K == 4 * chunk / 2),
                "packed A holds m16n8k8 (4-byte) or m16n8k16 (2-byte) fragments of 16 bytes");
  /// k-major copies (A; B in NHWC): `width` elements per copy, each thread at one k
  /// position of rows row0, row0 + rows_step, ...
  template <bool V>
  struct KMajor {
    static constexpr int width = V ? chunk : 1;
    static constexpr int per_row = BK / width;
    static constexpr int rows_step = threads / per_row;
    static_assert(threads % per_row == 0, "every thread copies at one k position");
  };
  using ACopy = KMajor<AVec>;
  using BCopy = KMajor<BVec>;
  static constexpr int a_copies = (BM + ACopy::rows_step - 1) / ACopy::rows_step;
  /// Packed A: 16-byte copies per stage (BM * BK elements), and per thread.
  static constexpr int a_packed_chunks = BM * BK / chunk;
  static constexpr int a_packed_copies = (a_packed_chunks + threads - 1) / threads;
  /// NCHW x: warp w copies taps 4 (w % (BK / 4)) + lane / 8 of pixels lane % 8 + 8 i'...
  static constexpr bool b_pixel_major = L == Layout::NCHW;
  static constexpr int tap_groups = BK / 4;  ///< warps sharing a pixel group
  /// Between a thread's pixels (pixel-major only; 8 elsewhere, so that the checks below
  /// never divide by zero for tiles with fewer warps than tap groups).
  static constexpr int pixel_step = b_pixel_major ? 8 * (warps / tap_groups) : 8;
  static constexpr int b_copies =
      b_pixel_major ? BN / pixel_step : (BN + BCopy::rows_step - 1) / BCopy::rows_step;
  static_assert(WM % Shape::M == 0 && WN % Shape::N == 0, "MMA tiling");
  static_assert(BK == 2 * Shape::K, "a stage is two MMA k-steps");
  static_assert(!b_pixel_major ||
                    (warps >= tap_groups && warps % tap_groups == 0 && BN % pixel_step == 0),
                "pixel-major gathers: whole pixel groups per warp");
  static_assert(!BVec || L == Layout::NHWC, "16-byte gathers of x need channels contiguous");
  static_assert(!(a_packed && AVec), "packed A has its own copies");
  /// A thread gathering many pixels reads their gather data from a table in scratch (one
  /// entry per column of the tile) instead of keeping them in registers: eight pixels
  /// held in registers spilled (ptxas, sm_90: 128 registers and 120-200 bytes of spills
  /// for NCHW and the one-element NHWC gathers).
  static constexpr bool pixels_in_scratch = b_copies > 2;
  static_assert(!pixels_in_scratch || BN <= threads, "one table entry per thread");

  ImplicitGemmOperands<L, T, Y> op;
  int m_blocks;  ///< ceil(M / BM): the league walks the M blocks fastest (x reuse in L2)
  /// Packed A (a_packed): PackTensorCoreWeights' output, m_blocks * BM filters per stage.
  const T* a_pack = nullptr;
  /// K in slices of steps_per_slice stages (k_slices = 1: all stages, y written here).
  int k_slices = 1;
  int steps_per_slice = 0;
  Acc* partial = nullptr;  ///< split K: the slices' raw sums (Partials)
  /// Split K's partial sums in y's order: j-major in NHWC.
  static constexpr bool partial_j_major = L == Layout::NHWC;
  using Partials = SplitKPartials<partial_j_major>;

  static constexpr std::size_t tile_bytes = sizeof(T) * std::size_t(S) * (BM + BN) * BK;
  static constexpr std::size_t table_bytes = pixels_in_scratch ? BN * sizeof(GatherPixel) : 0;
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return tile_bytes + table_bytes + 16;  // + get_shmem_aligned's slack
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank();
    // League rank: ((block * k_slices) + slice) * m_blocks + mb.
    const int mb = team.league_rank() % m_blocks;
    const int tiles = team.league_rank() / m_blocks;
    const int slice = tiles % k_slices;
    const std::int64_t block = tiles / k_slices;
    const int m0 = mb * BM;
    const std::int64_t j0 = block * BN;

    T* const a_tiles =
        static_cast<T*>(team.team_scratch(0).get_shmem_aligned(tile_bytes + table_bytes, 16));
    T* const b_tiles = a_tiles + S * BM * BK;
    GatherPixel* const pixel_table = reinterpret_cast<GatherPixel*>(a_tiles + S * (BM + BN) * BK);

    // This thread's copies. k-major: k position a_k of rows a_row0 + i * rows_step (A),
    // b_k of b_row0 + i * rows_step (B). Pixel-major B: tap b_k of pixels
    // b_row0 + i * pixel_step.
    const int warp = t / 32, lane = t % 32;
    const int a_k = (t % ACopy::per_row) * ACopy::width, a_row0 = t / ACopy::per_row;
    const int b_k =
        b_pixel_major ? 4 * (warp % tap_groups) + lane / 8 : (t % BCopy::per_row) * BCopy::width;
    const int b_row0 = b_pixel_major ? 8 * (warp / tap_groups) + lane % 8 : t / BCopy::per_row;
    constexpr int b_row_step = b_pixel_major ? pixel_step : BCopy::rows_step;

    GatherPixel pix[pixels_in_scratch ? 1 : b_copies];
    if constexpr (pixels_in_scratch) {
      if (t < BN) pixel_table[t] = op.template gather_pixel<false>(j0 + t);
      team.team_barrier();
    } else {
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < b_copies; ++i)
        pix[i] = op.template gather_pixel<false>(j0 + b_row0 + i * b_row_step);
    }

    // AVec reads w as the row-major M x K matrix it is; otherwise A's copies (unpacked)
    // go through the thread's tap, which is B's as well when both copy one element at
    // one k.
    constexpr bool a_walks = !a_packed && !AVec;
    constexpr bool b_shares_a_tap = a_walks && !BVec && !b_pixel_major;
    const std::int64_t a_pack_stage = std::int64_t(m_blocks) * BM * BK;
    // This team's stages: [first_step, first_step + steps) of all of K's.
    const int first_step = slice * steps_per_slice;
    const int all_steps = (op.K + BK - 1) / BK;
    const int steps =
        all_steps - first_step < steps_per_slice ? all_steps - first_step : steps_per_slice;
    TapWalker<L> a_walk(op.map, first_step * BK + a_k, BK, op.K);
    TapWalker<L> b_walk(op.map, first_step * BK + b_k, BK, op.K);
    const T* const w_rows = op.w + std::int64_t(m0) * op.K;

    int issue_buffer = 0;  // the buffer of the next stage issued: stage % S, kept by counting
    auto issue = [&](int step) {  // the copies of stage `step` into buffer step % S
      if (step < steps) {
        T* const a = a_tiles + issue_buffer * BM * BK;
        T* const b = b_tiles + issue_buffer * BN * BK;
        const GatherTap a_tap = a_walks ? a_walk.tap(op.map, op.xs, op.ws) : GatherTap{};
        if constexpr (a_packed) {
          const T* const src = a_pack + (first_step + step) * a_pack_stage + std::int64_t(m0) * BK;
          KCNN_DEVICE_UNROLL
          for (int i = 0; i < a_packed_copies; ++i) {
            const int c = (t + i * threads) * chunk;
            if (a_packed_chunks % threads != 0 && c >= BM * BK) break;
            scratch_copy_async_16(a + c, src + c, true);
          }
        }
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < (a_packed ? 0 : a_copies); ++i) {
          const int row = a_row0 + i * ACopy::rows_step;
          if (BM % ACopy::rows_step != 0 && row >= BM) break;
          const int m = m0 + row;
          if constexpr (AVec) {
            const int k = (first_step + step) * BK + a_k;
            const bool valid = m < op.M && k < op.K;
            const T* src = valid ? w_rows + std::int64_t(row) * op.K + k : op.w;
            scratch_copy_async_16(a + Tile::offset(row, a_k), src, valid);
          } else {
            const bool valid = a_tap.dh != kGatherOutside && m < op.M;
            const T* src = valid ? op.w + std::int64_t(m) * op.ws.n + a_tap.w_offset : op.w;
            scratch_copy_async(a + Tile::offset(row, a_k), src, valid);
          }
        }
        const GatherTap b_tap = b_shares_a_tap ? a_tap : b_walk.tap(op.map, op.xs, op.ws);
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < b_copies; ++i) {
          const int row = b_row0 + i * b_row_step;
          if (!b_pixel_major && BN % BCopy::rows_step != 0 && row >= BN) break;
          const GatherPixel px = pixels_in_scratch ? pixel_table[row] : pix[i];
          const bool valid = op.map.gathers_inside(px, b_tap);
          const T* src = valid ? op.x + px.x_offset + b_tap.x_offset : op.x;
          if constexpr (BVec) {
            scratch_copy_async_16(b + Tile::offset(row, b_k), src, valid);
          } else {
            scratch_copy_async(b + Tile::offset(row, b_k), src, valid);
          }
        }
        if constexpr (a_walks) a_walk.advance();
        if constexpr (!b_shares_a_tap) b_walk.advance();
      }
      scratch_copies_commit();  // also when empty: the group count stays one per stage
      issue_buffer = issue_buffer + 1 == S ? 0 : issue_buffer + 1;
    };

    Acc acc[MI][NI][kAcc];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int r = 0; r < kAcc; ++r)
      acc[mi][ni][r] = Acc(0);

    const int g = lane / 4, tig = lane % 4;
    const int wm0 = (warp / Tile::WarpsN) * WM, wn0 = (warp % Tile::WarpsN) * WN;
    // This lane's chunk of its first A and B rows; its other rows lie 8, 16, ... rows
    // further, whose chunks sit at the same swizzled position (row / 2 % 4 is the same
    // for rows 8 apart), so every fragment load is this offset plus a constant.
    // Packed A: the lane's quad of the warp tile's first 16 filters, first k-step.
    // 16-bit B: the row of ldmatrix matrix lane / 8 (chunk lane / 8 of row lane % 8).
    const int a_lane = a_packed ? wm0 * BK + lane * chunk : Tile::offset(wm0 + g, tig * chunk);
    const int b_lane = bit16 ? Tile::offset(wn0 + lane % 8, (lane / 8) * chunk)
                             : Tile::offset(wn0 + g, tig * chunk);

    KCNN_DEVICE_UNROLL
    for (int s = 0; s < S - 1; ++s)
      issue(s);
    int read_buffer = 0;
    for (int step = 0; step < steps; ++step) {
      scratch_copies_wait_groups<S - 2>();  // this thread's copies of `step` have landed
      team.team_barrier();  // everyone's have; everyone is done with step - 1's buffer
      issue(step + S - 1);  // into step - 1's buffer
      mma_stage(acc, a_tiles + read_buffer * BM * BK + a_lane,
                b_tiles + read_buffer * BN * BK + b_lane);
      read_buffer = read_buffer + 1 == S ? 0 : read_buffer + 1;
    }
    if (k_slices > 1) {
      store_partial(acc, slice, m0 + wm0 + g, j0 + wn0 + 2 * tig);
    } else {
      epilogue(acc, m0 + wm0 + g, j0 + wn0 + 2 * tig);
    }
  }

  /// The 16-byte chunk of one scratch row a lane loads.
  struct alignas(16) Chunk {
    T e[chunk];
  };
  /// The chunk `rows` rows after the one at `lane_chunk` (rows: a multiple of 8).
  KOKKOS_FORCEINLINE_FUNCTION static Chunk load_chunk(const T* lane_chunk, int rows) {
    return *reinterpret_cast<const Chunk*>(lane_chunk + rows * BK);
  }

  /// The warp tile's MMAs over one stage (BK taps, two MMA k-steps): a, b point at this
  /// lane's data of the stage's A and B tiles: B at its chunk of its first row (warp
  /// tile origin + g); A likewise (fp64) or at its packed quad of the warp tile's first
  /// filters (TF32, TF32x3).
  KOKKOS_FORCEINLINE_FUNCTION static void mma_stage(Acc (&acc)[MI][NI][kAcc], const T* a,
                                                    const T* b) {
    static_assert(Shape::M % 8 == 0 && Shape::N % 8 == 0 && WM % 8 == 0 && WN % 8 == 0,
                  "a lane's rows lie a multiple of 8 rows apart (one swizzle position)");
    if constexpr (bit16) {
      mma_stage_16bit(acc, a, b);
    } else {
      mma_stage_32_64(acc, a, b);
    }
  }

  /// mma_stage for float (TF32, TF32x3) and double factors.
  KOKKOS_FORCEINLINE_FUNCTION static void mma_stage_32_64(Acc (&acc)[MI][NI][kAcc], const T* a,
                                                          const T* b) {
    Chunk bc[NI];
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      bc[ni] = load_chunk(b, ni * Shape::N);

    if constexpr (Math == TensorCoreMath::F64) {
      Chunk ac[MI];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        ac[mi] = load_chunk(a, mi * Shape::M);
      if constexpr (L == Layout::NHWC) {
        // The stage's two m8n8k4 k-steps of m8 tiles mi and mi + 1 as one m16n8k8: k-step
        // ks's tap t is element ks of lane t's chunk, so tap t of the k8 step is element 0
        // and tap t + 4 element 1, in A and B alike (mma_m16n8k8_f64). H100, ResNet 3x3
        // NHWC (two calls): 0.606 / 0.581 / 0.588 / 0.332 ms -> 0.500 / 0.454 / 0.431 /
        // 0.248.
        static_assert(MI % 2 == 0, "m8 tiles in pairs");
        KCNN_DEVICE_UNROLL
        for (int mi = 0; mi < MI; mi += 2)
          KCNN_DEVICE_UNROLL
        for (int ni = 0; ni < NI; ++ni) {
          const double a_pair[4] = {ac[mi].e[0], ac[mi + 1].e[0], ac[mi].e[1], ac[mi + 1].e[1]};
          const double b_pair[2] = {bc[ni].e[0], bc[ni].e[1]};
          mma_m16n8k8_f64(acc[mi][ni], acc[mi + 1][ni], a_pair, b_pair);
        }
      } else {
        // NCHW stays on m8n8k4: with m16n8k8 its kernel took 209 instead of 185 registers
        // (ptxas, sm_90) and ran slower (64 channels 0.718 -> 0.780 ms, 128: 0.690 ->
        // 0.719, two calls): its pixel-major gathers, not the MMAs, limit it.
        KCNN_DEVICE_UNROLL
        for (int ks = 0; ks < 2; ++ks)
          KCNN_DEVICE_UNROLL
        for (int mi = 0; mi < MI; ++mi)
          KCNN_DEVICE_UNROLL
        for (int ni = 0; ni < NI; ++ni)
          mma_m8n8k4_f64(acc[mi][ni], ac[mi].e[ks], bc[ni].e[ks]);
      }
    } else {
      constexpr bool three = Math == TensorCoreMath::TF32x3;
      // Packed A: quad (mi, ks) is the fragment {a0, a1, a2, a3} itself, already rounded
      // under TF32.
      Chunk aq[MI][2];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int ks = 0; ks < 2; ++ks)
        aq[mi][ks] = *reinterpret_cast<const Chunk*>(a + (mi * 2 + ks) * quad_block);
      KCNN_DEVICE_UNROLL
      for (int ks = 0; ks < 2; ++ks) {
        // k-step ks: B chunk elements 2 ks (slot t) and 2 ks + 1 (slot t + 4).
        std::uint32_t a_big[MI][4], b_big[NI][2];
        [[maybe_unused]] std::uint32_t a_small[three ? MI : 1][4], b_small[three ? NI : 1][2];
        KCNN_DEVICE_UNROLL
        for (int mi = 0; mi < MI; ++mi)
          KCNN_DEVICE_UNROLL
        for (int r = 0; r < 4; ++r) {
          if constexpr (three) {
            tf32_split(aq[mi][ks].e[r], a_big[mi][r], a_small[mi][r]);
          } else {
            a_big[mi][r] = tf32_bits(aq[mi][ks].e[r]);
          }
        }
        KCNN_DEVICE_UNROLL
        for (int ni = 0; ni < NI; ++ni) {
          const float v[2] = {bc[ni].e[2 * ks], bc[ni].e[2 * ks + 1]};  // b0 (t, g), b1 (t + 4, g)
          KCNN_DEVICE_UNROLL
          for (int r = 0; r < 2; ++r) {
            if constexpr (three) {
              tf32_split(v[r], b_big[ni][r], b_small[ni][r]);
            } else {
              b_big[ni][r] = tf32_round(v[r]);
            }
          }
        }
        KCNN_DEVICE_UNROLL
        for (int mi = 0; mi < MI; ++mi)
          KCNN_DEVICE_UNROLL
        for (int ni = 0; ni < NI; ++ni) {
          if constexpr (three) {  // the small terms first: they are the smaller sums
            mma_m16n8k8_tf32(acc[mi][ni], a_small[mi], b_big[ni]);
            mma_m16n8k8_tf32(acc[mi][ni], a_big[mi], b_small[ni]);
          }
          mma_m16n8k8_tf32(acc[mi][ni], a_big[mi], b_big[ni]);
        }
      }
    }
  }

  /// mma_stage for 16-bit factors: per n8 tile one ldmatrix.x4 gives the B fragments of
  /// both k-steps (matrix q: taps 8q..8q+7 of 8 pixel rows; b points at this lane's row
  /// address, chunk lane / 8 of row lane % 8), per m16 tile and k-step one 16-byte load
  /// the packed A fragment {a0, a1, a2, a3}.
  KOKKOS_FORCEINLINE_FUNCTION static void mma_stage_16bit(Acc (&acc)[MI][NI][kAcc], const T* a,
                                                          const T* b) {
    struct alignas(16) Fragment {  // four registers of two 16-bit elements
      std::uint32_t r[4];
    };
    Fragment bq[NI];
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      ldmatrix_x4(bq[ni].r, b + ni * Shape::N * BK);
    KCNN_DEVICE_UNROLL
    for (int ks = 0; ks < 2; ++ks)
      KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi) {
      const Fragment aq = *reinterpret_cast<const Fragment*>(a + (mi * 2 + ks) * quad_block);
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        mma_m16n8k16<TensorCoreOp<Math>::format>(acc[mi][ni], aq.r, bq[ni].r[2 * ks],
                                                 bq[ni].r[2 * ks + 1]);
    }
  }

  /// For each of this lane's accumulators inside the output: at(col, mi, ni, h, c, m)
  /// with col = column(j). Element 2 h + c of MMA (mi, ni) is filter m = m_lane +
  /// mi * Shape::M + 8 h, column j = j_lane + ni * Shape::N + c; column(j) runs once per
  /// column, so its pixel address work stays out of the filter loop.
  template <class Column, class At>
  KOKKOS_FORCEINLINE_FUNCTION void for_each_lane_output(int m_lane, std::int64_t j_lane,
                                                        const Column& column, const At& at) const {
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int c = 0; c < 2; ++c) {
      const std::int64_t j = j_lane + ni * Shape::N + c;
      if (j >= op.J) continue;
      const auto col = column(j);
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int h = 0; h < kAcc / 2; ++h) {
        const int m = m_lane + mi * Shape::M + h * 8;
        if (m < op.M) at(col, mi, ni, h, c, m);
      }
    }
  }

  /// Split K: this lane's raw sums to slice `slice` of partial.
  KOKKOS_INLINE_FUNCTION void store_partial(Acc (&acc)[MI][NI][kAcc], int slice, int m_lane,
                                            std::int64_t j_lane) const {
    const Partials split{op.M, op.J};
    for_each_lane_output(
        m_lane, j_lane, [](std::int64_t j) { return j; },
        [&](std::int64_t j, int mi, int ni, int h, int c, int m) {
          partial[split.offset(slice, m, j)] = acc[mi][ni][2 * h + c];
        });
  }

  /// bias + activation and the stores of this lane's accumulators.
  KOKKOS_INLINE_FUNCTION void epilogue(Acc (&acc)[MI][NI][kAcc], int m_lane,
                                       std::int64_t j_lane) const {
    Acc bias[MI][kAcc / 2];  // in the accumulator type: 16-bit results round once, at the store
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < kAcc / 2; ++h) {
      const int m = m_lane + mi * Shape::M + h * 8;
      bias[mi][h] = op.bias && m < op.M ? to_compute(op.bias[m]) : Acc(0);
    }
    for_each_lane_output(
        m_lane, j_lane, [&](std::int64_t j) { return op.y + op.y_offset(op.pixel(j)); },
        [&](Y* y_pixel, int mi, int ni, int h, int c, int m) {
          y_pixel[std::int64_t(m) * op.ys.c] = from_compute<Y>(
              apply_activation(op.activation, acc[mi][ni][2 * h + c] + bias[mi][h]));
        });
  }
};

}  // namespace kcnn::Impl
