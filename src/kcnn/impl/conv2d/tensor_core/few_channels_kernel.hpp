// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/few_channels_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm for 16-bit layers with at most 4 input channels and
///        16 filters, stride 1, dilation 1 (the first layers of small CNNs: LeNet's
///        1 -> 4 and 4 -> 16 channel 7x7 layers), with the fused pooling of 2x2 and 4x4
///        windows equal to their stride: TensorCoreFewChannelsKernel.
///
/// The implicit GEMM's tiles do not fit such layers: a 64-filter tile is 6-25% full, and
/// its k (taps) gathers 2 bytes at a time. Here a team computes a TH x TW block of output
/// pixels of one image for every filter, as m16n8k16 MMAs whose rows are 16 pixels (a 4x4
/// square of the block), whose columns are the filters (one or two n8 tiles) and whose k
/// runs over 16-byte *chunks* of the input window: a chunk is Ck = 8 / Cs neighbouring
/// taps (r, s0 .. s0 + Ck - 1) of Cs channels (C padded to 1, 2 or 4), i.e. 16 contiguous
/// bytes of a channels-last window row. So an A fragment is one ldmatrix.x4 (rows: the
/// 16 pixels; its two k halves: two chunks) and a filter row takes cpr = ceil(S / Ck)
/// chunks (LeNet: 7x7 with 4 channels 4 chunks of 2 taps, with 1 channel 1 chunk of 8).
///
/// ldmatrix needs each row 16-byte aligned, and pixel (wr, wc)'s chunk starts at window
/// column wc + s0, any column: the window sits in scratch Ck times, copy q shifted by q
/// columns (copy q's position p holds window column p + q), and the pixel reads copy
/// wc % Ck at position wc - wc % Ck, a multiple of Ck (16 bytes). Copies and rows are
/// placed so that the 8 rows of each 8x8 matrix (pixels of two rows of a 4x4 square) fall
/// in 8 different 16-byte bank groups: a row pitch of 64 mod 128 bytes, copies 16 or 32
/// bytes apart mod 128.
///
/// Taps past S in a row's last chunk (and the second chunk of the last k-step where R *
/// cpr is odd) multiply zero weights; their A elements are zeroed in registers (masks from
/// a per-k-step table in scratch) so that a non-finite input next to the window never
/// meets those zeros. The weights sit in scratch in fragment order (packed once per call
/// by FewChannelsWeights). The epilogue adds the bias and applies the activation in float
/// and pools inside the 4x4 square with warp shuffles; each value is rounded once at its
/// store.
///
/// Measured (H100, bfloat16, batch 10,000, fused max pooling; TUNING.md and
/// perf_tests/data/h100-2026-11-26-s19-few-channels.txt): LeNet C3 (4 -> 16 channels)
/// 0.70 ms against 2.56 for Tiled in bfloat16 and 1.74 in float; LeNet C1 (1 -> 4) 2.69 ms
/// against 1.82 (Tiled, bfloat16): with 196 multiply-adds per pixel the window copies and
/// the epilogue outweigh the MMAs. One-channel layers with filters at most 9 wide go to
/// the single-channel kernel instead (single_channel_kernel.hpp, C1 in 0.64 ms).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "../../arch/async_copy.hpp"
#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../epilogue/pool_window.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

/// The few-channel kernel's reach: input channels (padded to Cs = 1, 2, 4 in scratch),
/// filters (two n8 tiles), MMA k-steps (two chunks each).
inline constexpr int kFewChannelsMaxChannels = 4;
inline constexpr int kFewChannelsMaxFilters = 16;
inline constexpr int kFewChannelsMaxKSteps = 16;
/// Widest block of output columns (wider rows take several blocks).
inline constexpr int kFewChannelsMaxBlockWidth = 128;
/// Most positions of a window row (copy 0): five per lane of the warp that loads it.
inline constexpr int kFewChannelsMaxPositions = 160;

/// The geometry of one launch (few_channels_plan). Scratch: the Ck copies, then the
/// weights in fragment order (k_steps x 32 lanes x NI x 8 bytes), then the chunk table
/// (k_steps x 8 lane classes x 16 bytes, see TensorCoreFewChannelsKernel::fill_tables).
struct FewChannelsPlan {
  int Cs = 0, Ck = 0;  ///< channels per pixel in scratch, taps per 16-byte chunk
  int cpr = 0;         ///< chunks per filter row: ceil(S / Ck)
  int chunks = 0;      ///< R * cpr
  int k_steps = 0;     ///< ceil(chunks / 2)
  int NI = 0;          ///< n8 tiles of filters
  int TH = 0, TW = 0;  ///< block of output pixels (multiples of 4)
  int HT = 0;          ///< window rows per copy: TH + R - 1
  int WTP = 0;         ///< positions an MMA reads per copy row: TW + cpr * Ck - 1, rounded up to Ck
  int WTP0 = 0;        ///< positions of copy 0's rows (the other copies' sources): WTP + Ck
  int pitch = 0;       ///< bytes between window rows: 64 mod 128
  int copy_stride = 0;  ///< bytes between the shifted copies
  int blocks_h = 0, blocks_w = 0;
  int pool = 1;  ///< fused pooling window (= stride): 1 (none), 2 or 4
  KOKKOS_INLINE_FUNCTION int weights_offset() const { return Ck * copy_stride; }
  KOKKOS_INLINE_FUNCTION int table_offset() const {
    return weights_offset() + k_steps * NI * 32 * 8;
  }
  KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes() const {
    return std::size_t(table_offset()) + std::size_t(k_steps) * 8 * 16 + 128;
  }
};

/// Why the few-channel kernel cannot run `pb` with 16-bit tensors, or nullptr.
inline const char* few_channels_unfit(const Conv2dProblem& pb) {
  if (pb.C > kFewChannelsMaxChannels) return "more than 4 input channels";
  if (pb.M > kFewChannelsMaxFilters) return "more than 16 filters";
  if (pb.stride_h != 1 || pb.stride_w != 1 || pb.dilation_h != 1 || pb.dilation_w != 1)
    return "a stride or dilation other than 1";
  if (pb.has_pool) {
    const Pool2dParams& g = pb.pool;
    if (!(g.window_h == g.window_w && (g.window_h == 2 || g.window_h == 4) &&
          g.stride_h == g.window_h && g.stride_w == g.window_w && g.pad_h == 0 && g.pad_w == 0))
      return "a pooling other than 2x2 or 4x4 windows equal to their stride, unpadded";
  }
  const int Cs = pb.C == 1 ? 1 : pb.C == 2 ? 2 : 4;
  const std::int64_t cpr = (pb.S + 8 / Cs - 1) / (8 / Cs);
  if ((pb.R * cpr + 1) / 2 > kFewChannelsMaxKSteps) return "a filter too large";
  return nullptr;
}

/// Whether every offset inside one image of x (C x H x W, strides xs) and of y (strides
/// ys) fits int: the kernel's index arithmetic within an image is 32-bit.
inline bool few_channels_image_offsets_fit(const Conv2dProblem& pb, const LogicalStrides& xs,
                                           const LogicalStrides& ys) {
  auto span = [](std::int64_t c, std::int64_t h, std::int64_t w, const LogicalStrides& st) {
    auto mag = [](std::int64_t v) { return v < 0 ? -v : v; };
    return (c - 1) * mag(st.c) + (h - 1) * mag(st.h) + (w - 1) * mag(st.w);
  };
  constexpr std::int64_t limit = std::numeric_limits<int>::max();
  const std::int64_t y_h = pb.has_pool ? pb.P_pooled : pb.P, y_w = pb.has_pool ? pb.Q_pooled : pb.Q;
  return span(pb.C, pb.H, pb.W, xs) <= limit && span(pb.M, y_h, y_w, ys) <= limit;
}

/// The launch geometry for `pb` (few_channels_unfit(pb) == nullptr) within `scratch_max`
/// bytes of team scratch: blocks of the output columns the pooling uses, at most 128
/// wide (narrower where a window row would pass kFewChannelsMaxPositions), and as many
/// rows (multiples of 4) as fit `scratch_max`, up to `max_rows`. TH = 0 where not even a
/// 4 x 4 block fits.
inline FewChannelsPlan few_channels_plan(const Conv2dProblem& pb, std::size_t scratch_max,
                                         int max_rows) {
  auto round_up = [](std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; };
  FewChannelsPlan plan;
  plan.Cs = pb.C == 1 ? 1 : pb.C == 2 ? 2 : 4;
  plan.Ck = 8 / plan.Cs;
  plan.cpr = static_cast<int>((pb.S + plan.Ck - 1) / plan.Ck);
  plan.chunks = static_cast<int>(pb.R) * plan.cpr;
  plan.k_steps = (plan.chunks + 1) / 2;
  plan.NI = pb.M > 8 ? 2 : 1;
  plan.pool = pb.has_pool ? pb.pool.window_h : 1;
  const std::int64_t P_used = pb.has_pool ? pb.P_pooled * plan.pool : pb.P;
  const std::int64_t Q_used = pb.has_pool ? pb.Q_pooled * plan.pool : pb.Q;
  // Columns: the fewest blocks of at most 128, as even as multiples of 4 allow.
  const std::int64_t col_blocks =
      (Q_used + kFewChannelsMaxBlockWidth - 1) / kFewChannelsMaxBlockWidth;
  plan.TW = static_cast<int>(round_up((Q_used + col_blocks - 1) / col_blocks, 4));
  // Narrower where a long filter row would take copy 0 past its positions.
  auto positions = [&](int tw) {
    return static_cast<int>(round_up(tw + plan.cpr * plan.Ck - 1, plan.Ck)) + plan.Ck;
  };
  while (plan.TW > 4 && positions(plan.TW) > kFewChannelsMaxPositions)
    plan.TW -= 4;
  if (positions(plan.TW) > kFewChannelsMaxPositions) return plan;  // TH = 0
  plan.WTP0 = positions(plan.TW);
  plan.WTP = plan.WTP0 - plan.Ck;
  plan.pitch = static_cast<int>(round_up(std::int64_t(plan.WTP0) * plan.Cs * 2, 64));
  if ((plan.pitch / 64) % 2 == 0) plan.pitch += 64;
  const int copy_skew = plan.Ck >= 4 ? 16 : 32;
  const int rows_cap = static_cast<int>(std::min<std::int64_t>(round_up(P_used, 4), max_rows));
  plan.TH = 0;
  for (int rows = rows_cap / 4 * 4; rows >= 4; rows -= 4) {
    plan.HT = rows + static_cast<int>(pb.R) - 1;
    plan.copy_stride =
        static_cast<int>(round_up(std::int64_t(plan.HT) * plan.pitch, 128)) + copy_skew;
    if (plan.scratch_bytes() <= scratch_max) {
      plan.TH = rows;
      break;
    }
  }
  if (plan.TH == 0) return plan;
  plan.blocks_h = static_cast<int>((P_used + plan.TH - 1) / plan.TH);
  plan.blocks_w = static_cast<int>((Q_used + plan.TW - 1) / plan.TW);
  return plan;
}

/// The bits of a 16-bit value (the kernel moves them without converting). The builtin
/// keeps T's 2-byte alignment: nvcc turns std::memcpy here into two byte loads.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t few_channels_bits(const T& v) {
  static_assert(sizeof(T) == 2 && alignof(T) == 2, "16-bit elements");
  std::uint16_t bits;
  __builtin_memcpy(&bits, &v, sizeof(bits));
  return bits;
}

/// Packs w for TensorCoreFewChannelsKernel: entry (ks, lane, ni) = {b0, b1} of filter
/// 8 ni + lane / 4, i.e. its k pair 2 (lane % 4), + 1 of chunks 2 ks and 2 ks + 1
/// (w_fragments, plan.k_steps x 32 x plan.NI entries of 8 bytes: a lane's k-step is one
/// 8- or 16-byte load).
template <class T>
struct FewChannelsWeights {
  const T* w = nullptr;
  LogicalStrides ws;
  std::uint32_t* w_fragments = nullptr;
  int C = 0, M = 0, S = 0;
  FewChannelsPlan plan;

  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int ni = e % plan.NI, lane = (e / plan.NI) % 32, ks = e / (32 * plan.NI);
    w_fragments[2 * e] = weight_pair(8 * ni + lane / 4, 2 * ks, 2 * (lane % 4));
    w_fragments[2 * e + 1] = weight_pair(8 * ni + lane / 4, 2 * ks + 1, 2 * (lane % 4));
  }

  /// The weights of filter m, chunk j, k pair (k8, k8 + 1) of the chunk's 8: taps
  /// (r, s0 + k8 / Cs), channel k8 % Cs; zero past M, C, S and the chunks.
  KOKKOS_INLINE_FUNCTION std::uint32_t weight_pair(int m, int j, int k8) const {
    std::uint16_t half[2] = {0, 0};
    if (m < M && j < plan.chunks) {
      const int r = j / plan.cpr, s0 = (j - r * plan.cpr) * plan.Ck;
      for (int e = 0; e < 2; ++e) {
        const int s = s0 + (k8 + e) / plan.Cs, c = (k8 + e) % plan.Cs;
        if (s < S && c < C)
          half[e] = few_channels_bits(w[m * ws.n + c * ws.c + r * ws.h + s * ws.w]);
      }
    }
    return half[0] | (std::uint32_t(half[1]) << 16);
  }
};

/// Cs: channels per pixel in scratch (1, 2, 4); NI: n8 tiles of filters (1: M <= 8, 2).
/// Offsets inside one image of x and y are ints (few_channels_image_offsets_fit).
template <class T, int Cs, int NI, class ExecSpace>
struct TensorCoreFewChannelsKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int threads = 128, warps = threads / kWarpSize;
  static constexpr int Ck = 8 / Cs;
  static constexpr Mma16BitFormat format = TensorCoreOp<tensor_core_16bit_math_v<T>>::format;
  static_assert(sizeof(T) == 2 && (Cs == 1 || Cs == 2 || Cs == 4) && (NI == 1 || NI == 2),
                "16-bit elements, 1, 2 or 4 channels per pixel, one or two n8 tiles");

  const T* x = nullptr;
  std::int64_t x_image_stride = 0;  ///< xs.n
  LogicalStrides32 xs;              ///< within an image
  const T* bias = nullptr;          ///< nullptr: none
  T* y = nullptr;
  std::int64_t y_image_stride = 0;
  LogicalStrides32 ys;
  /// w in fragment order (FewChannelsWeights), 16-byte aligned
  const std::uint32_t* w_fragments = nullptr;
  int C = 0, H = 0, W = 0, M = 0, S = 0, P = 0, Q = 0, pad_h = 0, pad_w = 0;
  int P_pooled = 0, Q_pooled = 0;
  Activation activation = Activation::Identity;
  PoolMode pool_mode = PoolMode::Max;
  Activation pool_activation = Activation::Identity;
  FewChannelsPlan plan;

  /// A k-step's entry of the chunk table for one lane class (tig, lane / 16): the lane's
  /// ldmatrix row offset in a copy row (chunk 2 ks + lane / 16), and the masks of its A
  /// registers of chunk 2 ks (a0, a1) and 2 ks + 1 (a2, a3): taps past S in a row's last
  /// chunk (real window columns) and a missing last chunk (R * cpr odd) read as zero.
  struct alignas(16) ChunkEntry {
    std::uint32_t offset, mask_lo, mask_hi, unused;
  };
  struct alignas(8 * NI) Fragments {
    std::uint32_t b[NI][2];
  };

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank(), lane = t % kWarpSize, warp = t / kWarpSize;
    const int blocks = plan.blocks_h * plan.blocks_w;
    const std::int64_t n = team.league_rank() / blocks;
    const int block = team.league_rank() - static_cast<int>(n) * blocks;
    const int bh = block / plan.blocks_w, bw = block - bh * plan.blocks_w;
    const int p0 = bh * plan.TH, q0 = bw * plan.TW;

    unsigned char* const scratch = static_cast<unsigned char*>(
        team.team_scratch(0).get_shmem_aligned(plan.scratch_bytes() - 128, 128));
    load_window(scratch, x + n * x_image_stride, p0 - pad_h, q0 - pad_w, lane, warp);
    fill_tables(scratch, t);
    team.team_barrier();
    shift_copies(scratch, lane, warp);  // (Ck >= 2: Cs is at most 4)
    team.team_barrier();

    const int g = lane / 4, tig = lane % 4;
    float bias_of[NI][2];
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int m = 8 * ni + 2 * tig + e;
      bias_of[ni][e] = bias && m < M ? to_compute(bias[m]) : 0.f;
    }
    const ChunkEntry* const table =
        reinterpret_cast<const ChunkEntry*>(scratch + plan.table_offset()) + tig + 4 * (lane / 16);
    const Fragments* const weights =
        reinterpret_cast<const Fragments*>(scratch + plan.weights_offset()) + lane;
    const std::uint32_t scratch_at = scratch_address(scratch);

    const int squares_w = plan.TW / 4, squares = (plan.TH / 4) * squares_w;
    const int py = (lane % 16) / 4, px = lane % 4;
    KCNN_DEVICE_NO_UNROLL
    for (int sq0 = 2 * warp; sq0 < squares; sq0 += 2 * warps) {
      const bool both = sq0 + 1 < squares;
      // The pair's squares (sy, sx): the second is the next column, or the next row's first.
      int sy[2], sx[2];
      sy[0] = sq0 / squares_w, sx[0] = sq0 - sy[0] * squares_w;
      sy[1] = sx[0] + 1 < squares_w ? sy[0] : sy[0] + 1,
      sx[1] = sx[0] + 1 < squares_w ? sx[0] + 1 : 0;
      if (!both) sy[1] = sy[0], sx[1] = sx[0];
      std::uint32_t row_at[2];
      KCNN_DEVICE_UNROLL
      for (int u = 0; u < 2; ++u) {
        const int wr = 4 * sy[u] + py, wc = 4 * sx[u] + px;
        const int q = wc % Ck;
        row_at[u] = scratch_at + q * plan.copy_stride + wr * plan.pitch + (wc - q) * Cs * 2;
      }
      float acc[2][NI][4] = {};
      KCNN_DEVICE_UNROLL_2
      for (int ks = 0; ks < plan.k_steps; ++ks) {
        const ChunkEntry chunk = table[8 * ks];
        const Fragments b = weights[32 * ks];
        KCNN_DEVICE_UNROLL
        for (int u = 0; u < 2; ++u) {
          std::uint32_t a[4];
          ldmatrix_x4_at(a, row_at[u] + chunk.offset);
          a[0] &= chunk.mask_lo, a[1] &= chunk.mask_lo;
          a[2] &= chunk.mask_hi, a[3] &= chunk.mask_hi;
          KCNN_DEVICE_UNROLL
          for (int ni = 0; ni < NI; ++ni)
            mma_m16n8k16<format>(acc[u][ni], a, b.b[ni][0], b.b[ni][1]);
        }
      }
      KCNN_DEVICE_UNROLL
      for (int u = 0; u < 2; ++u)  // (every lane takes part in the pooling's shuffles)
        store_square(acc[u], bias_of, n, p0 + 4 * sy[u], q0 + 4 * sx[u], u == 0 || both, g, tig);
    }
  }

  /// Copy 0 of the window whose top-left input pixel is (h0, w0) of `image`: row `row`,
  /// position p, channel c = x(h0 + row, w0 + p, c), zero outside the image and for c >=
  /// C. Warp `warp` fills rows warp, + 4, ..., 4 / Cs rows at a time, its lanes the
  /// positions: every load of those rows in flight before the stores (the window is the
  /// team's one global read; row after row, its latency would add up).
  KOKKOS_INLINE_FUNCTION void load_window(unsigned char* scratch, const T* image, int h0, int w0,
                                          int lane, int warp) const {
    struct alignas(Cs * 2) Pixel {
      std::uint16_t c[Cs];
    };
    constexpr int rows_in_flight = Cs == 4 ? 1 : 4 / Cs;  // 20 values at most in registers
    constexpr int max_positions = kFewChannelsMaxPositions / kWarpSize;
    const int positions = (plan.WTP0 + kWarpSize - 1) / kWarpSize;
    for (int row0 = warp; row0 < plan.HT; row0 += warps * rows_in_flight) {
      Pixel px[rows_in_flight][max_positions];
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < rows_in_flight; ++i) {
        const int h = h0 + row0 + i * warps;
        const bool row_inside = static_cast<unsigned>(h) < static_cast<unsigned>(H);
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < max_positions; ++k) {
          if (k >= positions) break;
          const int col = w0 + lane + k * kWarpSize;
          const bool inside = row_inside && static_cast<unsigned>(col) < static_cast<unsigned>(W);
          const T* const src = image + (inside ? h * xs.h + col * xs.w : 0);
          KCNN_DEVICE_UNROLL
          for (int c = 0; c < Cs; ++c)
            px[i][k].c[c] = inside && c < C ? few_channels_bits(src[c * xs.c]) : std::uint16_t(0);
        }
      }
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < rows_in_flight; ++i) {
        const int row = row0 + i * warps;
        Pixel* const out = reinterpret_cast<Pixel*>(scratch + row * plan.pitch);
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < max_positions; ++k) {
          if (k >= positions) break;
          if (row < plan.HT && lane + k * kWarpSize < plan.WTP0)
            out[lane + k * kWarpSize] = px[i][k];
        }
      }
    }
  }

  /// The weights in fragment order (w_fragments, 16-byte copies) and the chunk table:
  /// entry (ks, tig + 4 * high) for the lanes whose chunk of k-step ks is 2 ks + high.
  KOKKOS_INLINE_FUNCTION void fill_tables(unsigned char* scratch, int t) const {
    struct alignas(16) Quad {
      std::uint32_t e[4];
    };
    Quad* const weights = reinterpret_cast<Quad*>(scratch + plan.weights_offset());
    const Quad* const packed = reinterpret_cast<const Quad*>(w_fragments);
    for (int e = t; e < plan.k_steps * NI * 16; e += threads)
      weights[e] = packed[e];
    ChunkEntry* const table = reinterpret_cast<ChunkEntry*>(scratch + plan.table_offset());
    for (int e = t; e < plan.k_steps * 8; e += threads) {
      const int ks = e / 8, tig = e % 4, high = (e / 4) % 2;
      // The lane's k pairs (2 tig, 2 tig + 1) of a chunk starting at tap s0 are taps s0 +
      // (2 tig + k) / Cs.
      auto mask = [&](int j) -> std::uint32_t {
        if (j >= plan.chunks) return 0u;
        const int s0 = (j % plan.cpr) * Ck;
        return (s0 + (2 * tig) / Cs < S ? 0x0000ffffu : 0u) |
               (s0 + (2 * tig + 1) / Cs < S ? 0xffff0000u : 0u);
      };
      const int j = 2 * ks + high, r = j / plan.cpr;
      ChunkEntry entry;
      entry.offset = j < plan.chunks
                         ? static_cast<std::uint32_t>(r * plan.pitch + (j - r * plan.cpr) * 16)
                         : 0u;
      entry.mask_lo = mask(2 * ks);
      entry.mask_hi = mask(2 * ks + 1);
      entry.unused = 0;
      table[e] = entry;
    }
  }

  /// Copies 1 .. Ck - 1 from copy 0: copy q's position p = copy 0's p + q, i.e. its
  /// 32-bit word wd = bytes 4 wd + 2 q Cs .. + 3 of copy 0's row (a word, or two words'
  /// halves where q Cs is odd).
  KOKKOS_INLINE_FUNCTION void shift_copies(unsigned char* scratch, int lane, int warp) const {
    constexpr int loads = ((Ck - 1) * Cs) / 2 + 2;
    const int words = plan.WTP * Cs / 2;
    for (int row = warp; row < plan.HT; row += warps) {
      const std::uint32_t* const src =
          reinterpret_cast<const std::uint32_t*>(scratch + row * plan.pitch);
      for (int wd = lane; wd < words; wd += kWarpSize) {
        std::uint32_t v[loads];
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < loads; ++i)
          v[i] = src[wd + i];
        KCNN_DEVICE_UNROLL
        for (int q = 1; q < Ck; ++q) {
          const int half_words = q * Cs;  // 16-bit elements of shift
          const std::uint32_t word =
              half_words % 2 == 0 ? v[half_words / 2]
                                  : (v[half_words / 2] >> 16) | (v[half_words / 2 + 1] << 16);
          reinterpret_cast<std::uint32_t*>(scratch + q * plan.copy_stride + row * plan.pitch)[wd] =
              word;
        }
      }
    }
  }

  /// One 4x4 square's sums (rows: pixel g = (g / 4, g % 4) and g + 8 = (2 + g / 4, g % 4);
  /// columns 8 ni + 2 tig, + 1) at output pixel (p0, q0): bias, activation, the fused
  /// pooling, one rounding per stored value. `store`: whether this square exists (the
  /// shuffles run either way).
  KOKKOS_INLINE_FUNCTION void store_square(const float (&acc)[NI][4], const float (&bias_of)[NI][2],
                                           std::int64_t n, int p0, int q0, bool store, int g,
                                           int tig) const {
    float v[NI][4];
    with_activation(activation, [&](auto act) {
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        KCNN_DEVICE_UNROLL
      for (int r = 0; r < 4; ++r)
        v[ni][r] = apply_activation(decltype(act)::value, acc[ni][r] + bias_of[ni][r % 2]);
    });
    T* const y_image = y + n * y_image_stride;
    if (plan.pool == 1) {
      if (!store) return;
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        KCNN_DEVICE_UNROLL
      for (int r = 0; r < 4; ++r) {
        const int m = 8 * ni + 2 * tig + r % 2;
        const int p = p0 + (r / 2) * 2 + g / 4, q = q0 + g % 4;
        if (m < M && p < P && q < Q)
          y_image[m * ys.c + p * ys.h + q * ys.w] = from_compute<T>(v[ni][r]);
      }
      return;
    }
    if (pool_mode == PoolMode::Max)
      pool_square<PoolMode::Max>(v, y_image, p0, q0, store, g, tig);
    else
      pool_square<PoolMode::Average>(v, y_image, p0, q0, store, g, tig);
  }

  /// store_square's pooling: windows of 2x2 or 4x4 pixels inside the square. 2x2: rows
  /// g ^ 1 (lane ^ 4) and g ^ 4 (lane ^ 16), then v[..][r] (r < 2: the square's rows 0-1,
  /// else 2-3) is window (r / 2, g / 2) at lanes g = 0, 2. 4x4: the two halves (r, r + 2)
  /// first, then lanes ^ 4, ^ 8, ^ 16; lane g = 0 holds the window.
  template <PoolMode Mode>
  KOKKOS_INLINE_FUNCTION void pool_square(float (&v)[NI][4], T* y_image, int p0, int q0, bool store,
                                          int g, int tig) const {
    using Reduce = PoolReduce<Mode, float>;
    // Max: PoolReduce's NaN-propagating maximum in one instruction.
    auto add = [](float a, float b) {
      return Mode == PoolMode::Max ? max_propagating_nan(a, b) : Reduce::add(a, b);
    };
    const int pool = plan.pool;
    const int pooled_p0 = p0 / pool, pooled_q0 = q0 / pool;
    if (pool == 4) {
      float s[NI][2];
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        KCNN_DEVICE_UNROLL
      for (int e = 0; e < 2; ++e) {
        float a = add(v[ni][e], v[ni][2 + e]);
        a = add(a, warp_shuffle_xor(a, 4));
        a = add(a, warp_shuffle_xor(a, 8));
        s[ni][e] = add(a, warp_shuffle_xor(a, 16));
      }
      if (!store || g != 0 || pooled_p0 >= P_pooled || pooled_q0 >= Q_pooled) return;
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        KCNN_DEVICE_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int m = 8 * ni + 2 * tig + e;
        if (m < M)
          y_image[m * ys.c + pooled_p0 * ys.h + pooled_q0 * ys.w] =
              from_compute<T>(pool_output(pool_activation, Reduce::finish(s[ni][e], 16)));
      }
      return;
    }
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int r = 0; r < 4; ++r) {
      const float a = add(v[ni][r], warp_shuffle_xor(v[ni][r], 4));
      v[ni][r] = add(a, warp_shuffle_xor(a, 16));
    }
    if (!store || (g & 5) != 0) return;  // g = 0, 2
    const int pq = pooled_q0 + g / 2;
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int r = 0; r < 4; ++r) {
      const int m = 8 * ni + 2 * tig + r % 2, pp = pooled_p0 + r / 2;
      if (m < M && pp < P_pooled && pq < Q_pooled)
        y_image[m * ys.c + pp * ys.h + pq * ys.w] =
            from_compute<T>(pool_output(pool_activation, Reduce::finish(v[ni][r], 4)));
    }
  }
};

}  // namespace kcnn::Impl
