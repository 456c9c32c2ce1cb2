// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/single_channel_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm for 16-bit layers with one input channel, filters at
///        most 9 wide, stride 1, dilation 1 (the first layer of a CNN on grey images:
///        LeNet's 1 -> 4 channel 7x7 C1), with the few-channel family's fused 2x2 and 4x4
///        pooling: TensorCoreSingleChannelKernel.
///
/// With one channel a filter tap is one 2-byte column of the input, and an implicit GEMM
/// over taps (the few-channel kernel) has to gather every pixel's window shifted by a
/// column: 8 shifted copies of the window in scratch for 4 MMAs per 16 pixels. Here a
/// filter row becomes a banded (Toeplitz) 16 x 8 matrix B_r (B_r[i][j] = w[r][i - j] for
/// 0 <= i - j < S): 16 input columns times B_r are the row's contribution to 8
/// neighbouring output columns. An m16n8k16 MMA takes as A 16 output rows' input rows
/// (shifted down by r) at 16 columns starting on a multiple of 8 (one ldmatrix.x4 of an
/// unshifted window: every row 16-byte aligned) and adds filter row r of one filter to
/// a 16 x 8 block of outputs; R MMAs per filter finish it. 7-wide filters use 7 of B's 16
/// diagonals (44% of the MMA, as the few-channel kernel's 49 of 128 taps for 4 filters
/// with one channel), but A comes unshifted, each A fragment feeds 4 filters, and the
/// B_r stay in scratch in fragment order (packed once per call by SingleChannelWeights).
///
/// Every output's sum also multiplies the zeros of B_r with the input columns outside
/// its window: an infinite or NaN input there would turn them into NaN. So the team
/// checks its window while loading it, and where one value is not finite it computes
/// its block with float multiply-adds over each output's own window instead (exactly
/// the IEEE result, slower: such inputs are rare).
///
/// The epilogue adds the bias and applies the activation in float, pools 2x2 or 4x4
/// windows with in-register pairs and warp shuffles, and rounds each value once at its
/// store.
///
/// Measured (H100, bfloat16, batch 10,000, bias + ReLU + fused 2x2 max;
/// perf_tests/data/h100-2026-11-26-s20-single-channel.txt): LeNet C1 (1 -> 4 channels,
/// 86x86, 7x7) 0.64 ms against 1.19-1.25 for Tiled in bfloat16, 1.09 in float, and 2.69
/// for the few-channel kernel.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../arch/async_copy.hpp"
#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../epilogue/pool_window.hpp"
#include "few_channels_kernel.hpp"

namespace kcnn::Impl {

/// Widest filter: 8 output columns and S - 1 more input columns within an MMA's 16.
inline constexpr int kSingleChannelMaxFilterWidth = 9;
/// Filters per pass over a block (4 x 2 x 4 accumulators per lane).
inline constexpr int kSingleChannelFilterGroup = 4;
/// Widest block of output columns (wider rows take several blocks).
inline constexpr int kSingleChannelMaxBlockWidth = 128;

/// The geometry of one launch (single_channel_plan). Scratch: the window (HT rows of
/// WTP positions, `pitch` bytes apart), the weights in fragment order (filter groups x R
/// x 32 lanes x 4 filters x 8 bytes), a non-finite flag per warp.
struct SingleChannelPlan {
  int TH = 0, TW = 0;  ///< block of output pixels (multiples of 16)
  int HT = 0;          ///< window rows: TH + R - 1
  int WTP = 0;         ///< window positions per row: TW + 8 (the last block's MMA reads 16)
  int pitch = 0;       ///< bytes between window rows: an odd multiple of 16
  int R = 0;
  int filter_groups = 0;  ///< ceil(M / 4)
  int blocks_h = 0, blocks_w = 0;
  int pool = 1;  ///< fused pooling window (= stride): 1 (none), 2 or 4
  KOKKOS_INLINE_FUNCTION int weights_offset() const { return HT * pitch; }
  KOKKOS_INLINE_FUNCTION int weights_bytes() const {
    return filter_groups * R * kWarpSize * kSingleChannelFilterGroup * 8;
  }
  KOKKOS_INLINE_FUNCTION int flags_offset() const { return weights_offset() + weights_bytes(); }
  KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes() const {
    return std::size_t(flags_offset()) + 16 + 128;
  }
};

/// The launch geometry for `pb` (one input channel; few_channels_unfit(pb) == nullptr)
/// within `scratch_max` bytes of team scratch: blocks of the output columns the pooling
/// uses, at most 128 wide, and of as many rows (multiples of 16) as fit, up to
/// `max_rows`, split evenly. TH = 0 where the kernel does not apply or no block of 16
/// rows fits.
inline SingleChannelPlan single_channel_plan(const Conv2dProblem& pb, std::size_t scratch_max,
                                             int max_rows) {
  auto round_up = [](std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; };
  SingleChannelPlan plan;
  if (pb.C != 1 || pb.S > kSingleChannelMaxFilterWidth || pb.stride_h != 1 || pb.stride_w != 1 ||
      pb.dilation_h != 1 || pb.dilation_w != 1 || pb.P <= 0 || pb.Q <= 0)
    return plan;
  plan.pool = pb.has_pool ? pb.pool.window_h : 1;
  plan.R = static_cast<int>(pb.R);
  plan.filter_groups =
      static_cast<int>((pb.M + kSingleChannelFilterGroup - 1) / kSingleChannelFilterGroup);
  const std::int64_t P_used = pb.has_pool ? pb.P_pooled * plan.pool : pb.P;
  const std::int64_t Q_used = pb.has_pool ? pb.Q_pooled * plan.pool : pb.Q;
  if (P_used <= 0 || Q_used <= 0) return plan;
  const std::int64_t col_blocks =
      (Q_used + kSingleChannelMaxBlockWidth - 1) / kSingleChannelMaxBlockWidth;
  plan.TW = static_cast<int>(round_up((Q_used + col_blocks - 1) / col_blocks, 16));
  plan.WTP = plan.TW + 8;
  plan.pitch = static_cast<int>(round_up(std::int64_t(plan.WTP) * 2, 16));
  if ((plan.pitch / 16) % 2 == 0) plan.pitch += 16;  // 8 rows in 8 bank groups
  const int rows_cap =
      static_cast<int>(std::min<std::int64_t>(round_up(P_used, 16), max_rows / 16 * 16));
  for (int rows = rows_cap; rows >= 16; rows -= 16) {
    plan.HT = rows + plan.R - 1;
    if (plan.scratch_bytes() <= scratch_max) {
      plan.TH = rows;
      break;
    }
  }
  if (plan.TH == 0) return plan;
  // As many blocks as the largest fitting one needs, as even as multiples of 16 allow.
  plan.blocks_h = static_cast<int>((P_used + plan.TH - 1) / plan.TH);
  plan.TH = static_cast<int>(round_up((P_used + plan.blocks_h - 1) / plan.blocks_h, 16));
  plan.HT = plan.TH + plan.R - 1;
  plan.blocks_w = static_cast<int>((Q_used + plan.TW - 1) / plan.TW);
  return plan;
}

/// Packs w (one channel) for TensorCoreSingleChannelKernel: entry ((group * R + r) * 32 +
/// lane) * 4 + f holds the lane's B fragment {b0 | b1 << 16, b2 | b3 << 16} of filter 4
/// group + f's banded matrix B_r: b_q = B_r[k_q][g] = w[r][k_q - g] (g = lane / 4, k = 2
/// (lane % 4) + {0, 1, 8, 9}), zero off the band and past M.
template <class T>
struct SingleChannelWeights {
  const T* w = nullptr;
  LogicalStrides ws;
  std::uint32_t* w_fragments = nullptr;
  int M = 0, R = 0, S = 0;

  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    constexpr int G = kSingleChannelFilterGroup;
    const int f = e % G, lane = (e / G) % kWarpSize, r = (e / (G * kWarpSize)) % R;
    const int m = (e / (G * kWarpSize * R)) * G + f, g = lane / 4, k0 = 2 * (lane % 4);
    auto tap = [&](int k) -> std::uint32_t {
      const int s = k - g;
      return m < M && s >= 0 && s < S ? few_channels_bits(w[m * ws.n + r * ws.h + s * ws.w]) : 0u;
    };
    w_fragments[2 * e] = tap(k0) | (tap(k0 + 1) << 16);
    w_fragments[2 * e + 1] = tap(k0 + 8) | (tap(k0 + 9) << 16);
  }
};

/// Offsets inside one image of x and y are ints (few_channels_image_offsets_fit).
template <class T, class ExecSpace>
struct TensorCoreSingleChannelKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int threads = 128, warps = threads / kWarpSize;
  static constexpr int G = kSingleChannelFilterGroup;
  /// 8-column blocks of a warp's unit of work (16 rows x 16 columns): A fragments per
  /// filter row, each reused for the G filters.
  static constexpr int NB = 2;
  static constexpr Mma16BitFormat format = TensorCoreOp<tensor_core_16bit_math_v<T>>::format;
  /// Exponent bits of T: all set, the value is infinite or NaN.
  static constexpr std::uint16_t exponent_bits = ElementTraits<T>::is_half ? 0x7c00 : 0x7f80;
  static_assert(sizeof(T) == 2, "16-bit elements");

  const T* x = nullptr;
  std::int64_t x_image_stride = 0;  ///< xs.n
  LogicalStrides32 xs;              ///< within an image
  const T* bias = nullptr;          ///< nullptr: none
  T* y = nullptr;
  std::int64_t y_image_stride = 0;
  LogicalStrides32 ys;
  /// w in fragment order (SingleChannelWeights), 16-byte aligned
  const std::uint32_t* w_fragments = nullptr;
  int H = 0, W = 0, M = 0, S = 0, P = 0, Q = 0, pad_h = 0, pad_w = 0;
  int P_pooled = 0, Q_pooled = 0;
  Activation activation = Activation::Identity;
  PoolMode pool_mode = PoolMode::Max;
  Activation pool_activation = Activation::Identity;
  SingleChannelPlan plan;

  /// A lane's B fragments of one filter row for the G filters of a group.
  struct alignas(16) GroupFragments {
    std::uint32_t b[G][2];
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
    const bool finite =
        load_window(scratch, x + n * x_image_stride, p0 - pad_h, q0 - pad_w, lane, warp);
    load_weights(scratch, t);
    int* const flags = reinterpret_cast<int*>(scratch + plan.flags_offset());
    const bool warp_not_finite = warp_any(!finite);
    if (lane == 0) flags[warp] = warp_not_finite;
    team.team_barrier();
    const bool exact = (flags[0] | flags[1] | flags[2] | flags[3]) != 0;

    const int g = lane / 4, tig = lane % 4;
    const int pairs = plan.TW / 16, units = (plan.TH / 16) * pairs;
    KCNN_DEVICE_NO_UNROLL
    for (int unit = warp; unit < units; unit += warps) {
      const int strip = unit / pairs, pair = unit - strip * pairs;
      KCNN_DEVICE_NO_UNROLL
      for (int group = 0; group < plan.filter_groups; ++group) {
        float acc[NB][G][4] = {};
        if (!exact)
          mma_sums(acc, scratch, group, strip, pair, lane);
        else
          exact_sums(acc, scratch, group, strip, pair, g, tig);
        store_unit(acc, group, n, p0 + 16 * strip, q0 + 16 * pair, g, tig);
      }
    }
  }

  /// The window whose top-left input pixel is (h0, w0) of `image`: row `row`, position
  /// p = x(h0 + row, w0 + p), zero outside the image. Warp `warp` fills rows warp, + 4,
  /// ..., four rows at a time, its lanes 32-bit words (position pairs): every load of
  /// those rows in flight before the stores. A pair inside the image at a 4-byte aligned
  /// address (the usual case: an even W, no padding) is one load. Returns whether every
  /// value this thread loaded is finite.
  KOKKOS_INLINE_FUNCTION bool load_window(unsigned char* scratch, const T* image, int h0, int w0,
                                          int lane, int warp) const {
    constexpr int rows_in_flight = 4;
    constexpr int max_words = ((kSingleChannelMaxBlockWidth + 8) / 2 + kWarpSize - 1) / kWarpSize;
    const int words = plan.WTP / 2, words_per_lane = (words + kWarpSize - 1) / kWarpSize;
    const std::uint16_t* const bits = reinterpret_cast<const std::uint16_t*>(image);
    bool finite = true;
    for (int row0 = warp; row0 < plan.HT; row0 += warps * rows_in_flight) {
      std::uint32_t v[rows_in_flight][max_words];
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < rows_in_flight; ++i) {
        const int h = h0 + row0 + i * warps;
        const bool row_inside =
            row0 + i * warps < plan.HT && static_cast<unsigned>(h) < static_cast<unsigned>(H);
        const std::uint16_t* const row_bits = bits + (row_inside ? h * xs.h : 0);
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < max_words; ++k) {
          if (k >= words_per_lane) break;
          const int col = w0 + 2 * (lane + k * kWarpSize);
          const std::uint16_t* const at = row_bits + col * xs.w;
          if (row_inside && col >= 0 && col + 1 < W && xs.w == 1 &&
              reinterpret_cast<std::uintptr_t>(at) % 4 == 0) {
            v[i][k] = *reinterpret_cast<const std::uint32_t*>(at);
          } else {
            const bool first = row_inside && static_cast<unsigned>(col) < static_cast<unsigned>(W);
            const bool second =
                row_inside && static_cast<unsigned>(col + 1) < static_cast<unsigned>(W);
            v[i][k] =
                (first ? std::uint32_t(at[0]) : 0u) | (second ? std::uint32_t(at[xs.w]) << 16 : 0u);
          }
          const std::uint32_t exponents = v[i][k] & (exponent_bits * 0x10001u);
          finite &= (exponents & 0xffffu) != exponent_bits && (exponents >> 16) != exponent_bits;
        }
      }
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < rows_in_flight; ++i) {
        const int row = row0 + i * warps;
        std::uint32_t* const out = reinterpret_cast<std::uint32_t*>(scratch + row * plan.pitch);
        KCNN_DEVICE_UNROLL
        for (int k = 0; k < max_words; ++k) {
          if (k >= words_per_lane) break;
          if (row < plan.HT && lane + k * kWarpSize < words) out[lane + k * kWarpSize] = v[i][k];
        }
      }
    }
    return finite;
  }

  /// The weights in fragment order, 16-byte copies.
  KOKKOS_INLINE_FUNCTION void load_weights(unsigned char* scratch, int t) const {
    struct alignas(16) Quad {
      std::uint32_t e[4];
    };
    Quad* const out = reinterpret_cast<Quad*>(scratch + plan.weights_offset());
    const Quad* const in = reinterpret_cast<const Quad*>(w_fragments);
    for (int e = t; e < plan.weights_bytes() / 16; e += threads)
      out[e] = in[e];
  }

  /// The unit's sums by MMAs: rows 16 strip + (g, g + 8), columns 16 pair + 8 b + 2 tig,
  /// + 1 of the block, filters 4 group + f.
  KOKKOS_INLINE_FUNCTION void mma_sums(float (&acc)[NB][G][4], const unsigned char* scratch,
                                       int group, int strip, int pair, int lane) const {
    // ldmatrix.x4 rows: lanes 0-15 rows 0-15 of input columns 0-7, lanes 16-31 of 8-15.
    const std::uint32_t a_row = scratch_address(scratch) + (16 * strip + lane % 16) * plan.pitch +
                                (16 * pair + 8 * (lane / 16)) * 2;
    const GroupFragments* const b_of =
        reinterpret_cast<const GroupFragments*>(scratch + plan.weights_offset()) +
        group * plan.R * kWarpSize + lane;
    // Filter row r + 1's fragments load while row r's MMAs run.
    GroupFragments b = b_of[0];
    std::uint32_t a[NB][4];
    KCNN_DEVICE_UNROLL
    for (int blk = 0; blk < NB; ++blk)
      ldmatrix_x4_at(a[blk], a_row + 16 * blk);
    KCNN_DEVICE_UNROLL_2  // (the copies below become renamed registers)
        for (int r = 0; r < plan.R; ++r) {
      GroupFragments b_next = b;
      std::uint32_t a_next[NB][4];
      const bool more = r + 1 < plan.R;
      if (more) b_next = b_of[(r + 1) * kWarpSize];
      KCNN_DEVICE_UNROLL
      for (int blk = 0; blk < NB; ++blk)
        ldmatrix_x4_at(a_next[blk], a_row + (more ? r + 1 : r) * plan.pitch + 16 * blk);
      KCNN_DEVICE_UNROLL
      for (int blk = 0; blk < NB; ++blk)
        KCNN_DEVICE_UNROLL
      for (int f = 0; f < G; ++f)
        mma_m16n8k16<format>(acc[blk][f], a[blk], b.b[f][0], b.b[f][1]);
      b = b_next;
      KCNN_DEVICE_UNROLL
      for (int blk = 0; blk < NB; ++blk)
        KCNN_DEVICE_UNROLL
      for (int i = 0; i < 4; ++i)
        a[blk][i] = a_next[blk][i];
    }
  }

  /// mma_sums' values by float multiply-adds over each output's own window (the team's
  /// window holds a value that is not finite). Tap (r, s) of filter 4 group + f is in the
  /// fragments of lane s % 8 / 2 (g = 0): register s / 8, half s % 2.
  KOKKOS_INLINE_FUNCTION void exact_sums(float (&acc)[NB][G][4], const unsigned char* scratch,
                                         int group, int strip, int pair, int g, int tig) const {
    const GroupFragments* const b_of =
        reinterpret_cast<const GroupFragments*>(scratch + plan.weights_offset()) +
        group * plan.R * kWarpSize;
    KCNN_DEVICE_UNROLL  // (acc stays in registers)
        for (int blk = 0; blk < NB; ++blk) KCNN_DEVICE_UNROLL for (int e = 0; e < 4; ++e) {
      const int row = 16 * strip + g + 8 * (e / 2), col = 16 * pair + 8 * blk + 2 * tig + e % 2;
      for (int r = 0; r < plan.R; ++r) {
        const T* const in = reinterpret_cast<const T*>(scratch + (row + r) * plan.pitch) + col;
        for (int s = 0; s < S; ++s) {
          const float v = to_compute(in[s]);
          const GroupFragments& b = b_of[r * kWarpSize + (s % 8) / 2];
          KCNN_DEVICE_UNROLL
          for (int f = 0; f < G; ++f) {
            const std::uint16_t bits = static_cast<std::uint16_t>(b.b[f][s / 8] >> (16 * (s % 2)));
            T wv;
            __builtin_memcpy(&wv, &bits, sizeof(bits));
            acc[blk][f][e] += v * to_compute(wv);
          }
        }
      }
    }
  }

  /// The unit's outputs (fragment rows from output row p0, columns from q0): bias,
  /// activation, the fused pooling, one rounding per stored value. Every lane takes part
  /// in the pooling's shuffles.
  KOKKOS_INLINE_FUNCTION void store_unit(float (&acc)[NB][G][4], int group, std::int64_t n, int p0,
                                         int q0, int g, int tig) const {
    float bias_of[G];
    KCNN_DEVICE_UNROLL
    for (int f = 0; f < G; ++f) {
      const int m = G * group + f;
      bias_of[f] = bias && m < M ? to_compute(bias[m]) : 0.f;
    }
    with_activation(activation, [&](auto act) {
      KCNN_DEVICE_UNROLL
      for (int blk = 0; blk < NB; ++blk)
        KCNN_DEVICE_UNROLL
      for (int f = 0; f < G; ++f)
        KCNN_DEVICE_UNROLL
      for (int e = 0; e < 4; ++e)
        acc[blk][f][e] = apply_activation(decltype(act)::value, acc[blk][f][e] + bias_of[f]);
    });
    T* const y_image = y + n * y_image_stride;
    if (plan.pool == 1) return store_unpooled(acc, group, y_image, p0, q0, g, tig);
    auto with_window = [&](auto mode) {
      if (plan.pool == 2)
        pool_unit<decltype(mode)::value, 2>(acc, group, y_image, p0, q0, g, tig);
      else
        pool_unit<decltype(mode)::value, 4>(acc, group, y_image, p0, q0, g, tig);
    };
    if (pool_mode == PoolMode::Max)
      with_window(std::integral_constant<PoolMode, PoolMode::Max>{});
    else
      with_window(std::integral_constant<PoolMode, PoolMode::Average>{});
  }

  /// store_unit without pooling: a lane holds rows (g, g + 8) x columns (2 tig, + 1) x
  /// the group's G filters. Where those are contiguous and aligned, wider stores: NHWC
  /// (ys.c = 1) a pixel's G filters in 8 bytes, NCHW (ys.w = 1) a column pair in 4.
  KOKKOS_INLINE_FUNCTION void store_unpooled(const float (&acc)[NB][G][4], int group, T* y_image,
                                             int p0, int q0, int g, int tig) const {
    auto bits_of = [](float v) -> std::uint32_t { return few_channels_bits(from_compute<T>(v)); };
    auto aligned = [](const T* at, std::uintptr_t bytes) {
      return reinterpret_cast<std::uintptr_t>(at) % bytes == 0;
    };
    const int m0 = G * group, p_lane = p0 + g, q_lane = q0 + 2 * tig;
    T* const y_lane = y_image + (m0 * ys.c + p_lane * ys.h + q_lane * ys.w);
    const bool whole_group = m0 + G <= M;
    KCNN_DEVICE_UNROLL
    for (int blk = 0; blk < NB; ++blk)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int q = q_lane + 8 * blk;
      if (p_lane + 8 * h >= P || q >= Q) continue;
      T* const at = y_lane + (8 * h * ys.h + 8 * blk * ys.w);
      bool stored[2];
      KCNN_DEVICE_UNROLL
      for (int c = 0; c < 2; ++c) {  // NHWC: the pixel's filters in one store
        stored[c] = ys.c == 1 && whole_group && q + c < Q && aligned(at + c * ys.w, 8);
        if (!stored[c]) continue;
        struct alignas(8) Quad {
          std::uint32_t lo, hi;
        };
        const int e = 2 * h + c;
        *reinterpret_cast<Quad*>(at + c * ys.w) = {
            bits_of(acc[blk][0][e]) | bits_of(acc[blk][1][e]) << 16,
            bits_of(acc[blk][2][e]) | bits_of(acc[blk][3][e]) << 16};
      }
      if (stored[0] && (stored[1] || q + 1 >= Q)) continue;
      KCNN_DEVICE_UNROLL
      for (int f = 0; f < G; ++f) {
        if (m0 + f >= M) continue;
        T* const out = at + f * ys.c;
        if (!stored[0] && !stored[1] && ys.w == 1 && q + 1 < Q && aligned(out, 4)) {
          *reinterpret_cast<std::uint32_t*>(out) =  // NCHW: the column pair
              bits_of(acc[blk][f][2 * h]) | bits_of(acc[blk][f][2 * h + 1]) << 16;
          continue;
        }
        if (!stored[0]) out[0] = from_compute<T>(acc[blk][f][2 * h]);
        if (!stored[1] && q + 1 < Q) out[ys.w] = from_compute<T>(acc[blk][f][2 * h + 1]);
      }
    }
  }

  /// store_unit's pooling of Pool x Pool windows. A lane holds columns (2 tig, + 1) of
  /// rows g and g + 8: the pair first, then 2x2: rows g ^ 1 (lane ^ 4), held at even g;
  /// 4x4: columns of lane ^ 1, rows of lanes ^ 4 and ^ 8, held at g % 4 = 0 and even tig.
  template <PoolMode Mode, int Pool>
  KOKKOS_INLINE_FUNCTION void pool_unit(const float (&acc)[NB][G][4], int group, T* y_image, int p0,
                                        int q0, int g, int tig) const {
    using Reduce = PoolReduce<Mode, float>;
    auto add = [](float a, float b) {
      return Mode == PoolMode::Max ? max_propagating_nan(a, b) : Reduce::add(a, b);
    };
    float pooled[NB][G][2];
    KCNN_DEVICE_UNROLL
    for (int blk = 0; blk < NB; ++blk)
      KCNN_DEVICE_UNROLL
    for (int f = 0; f < G; ++f)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < 2; ++h) {
      float a = add(acc[blk][f][2 * h], acc[blk][f][2 * h + 1]);
      if (Pool == 4) a = add(a, warp_shuffle_xor(a, 1));
      a = add(a, warp_shuffle_xor(a, 4));
      if (Pool == 4) a = add(a, warp_shuffle_xor(a, 8));
      pooled[blk][f][h] = Reduce::finish(a, Pool * Pool);
    }
    const bool holder = Pool == 2 ? g % 2 == 0 : g % 4 == 0 && tig % 2 == 0;
    if (!holder) return;
    with_activation(pool_activation, [&](auto act) {
      KCNN_DEVICE_UNROLL
      for (int blk = 0; blk < NB; ++blk)
        KCNN_DEVICE_UNROLL
      for (int f = 0; f < G; ++f)
        KCNN_DEVICE_UNROLL
      for (int h = 0; h < 2; ++h)
        pooled[blk][f][h] = apply_activation(decltype(act)::value, pooled[blk][f][h]);
    });
    // (p0, q0: multiples of 16; unsigned, so that / Pool is a shift)
    const int pp0 = static_cast<int>(unsigned(p0 + g) / Pool);
    const int pq0 = static_cast<int>(unsigned(q0 + 2 * tig) / Pool);
    T* const y_lane = y_image + (G * group * ys.c + pp0 * ys.h + pq0 * ys.w);
    KCNN_DEVICE_UNROLL
    for (int blk = 0; blk < NB; ++blk)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < 2; ++h) {
      constexpr int step = 8 / Pool;  // pooled rows / columns between fragment halves
      if (pp0 + step * h >= P_pooled || pq0 + step * blk >= Q_pooled) continue;
      KCNN_DEVICE_UNROLL
      for (int f = 0; f < G; ++f)
        if (G * group + f < M)
          y_lane[f * ys.c + step * h * ys.h + step * blk * ys.w] =
              from_compute<T>(pooled[blk][f][h]);
    }
  }
};

}  // namespace kcnn::Impl
