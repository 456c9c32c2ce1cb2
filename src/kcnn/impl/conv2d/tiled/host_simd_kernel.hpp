// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/host_simd_kernel.hpp
/// \brief ConvAlgo::Tiled on CPUs for float and double tensors in both layouts (without a
///        fused pooling): a direct convolution around a register-blocked micro-kernel
///        (TiledHostSimdKernel), the weights packed once per call into blocks of
///        output-channel vectors (TiledHostSimdPackWeights).
///
/// The micro-kernel keeps NV vectors of output channels (MB = NV x lanes filters) of UR
/// output pixels of one output row in UR x NV vector registers. Per input channel of a
/// filter tap it broadcasts the UR pixels' input values (one 4-byte load each: NHWC
/// walks a pixel's contiguous channels, NCHW steps from plane to plane), loads NV weight
/// vectors and issues UR x NV FMAs: the block of oneDNN's direct convolutions, in the
/// layouts users keep. UR = (registers - 1) /
/// (NV + 1): every accumulator, the UR broadcasts and one weight vector live at once
/// (AVX2: 4 x 3, 2 x 5, 1 x 7; AVX-512: 4 x 6, 2 x 10, 1 x 15 -> 14).
///
/// A work item is up to QT consecutive output pixels of the batch (rows and images are
/// joined, so that 7x7 layers fill their register blocks and their items pass over the
/// weights fewer times; in the plan's order, which groups the pixels whose windows
/// leave the input on the same sides: TiledHostSimdPlan; whole rows where the register
/// blocks stay within rows) for one block of MB filters.
/// The reduction runs in blocks of CB input channels so that the block's packed weights
/// (R x S x CB x MB values, at most 72 KB on AVX2, 160 KB on AVX-512: whole 64-channel
/// 3x3 filters) stay in L2 while the item's pixels stream past; partial sums wait in the
/// item's buffer (team scratch, QT x MB values), and bias and activation are applied on
/// the way from it to y. Register blocks whose windows cross the border skip the taps
/// in the padding for all their pixels and read a row of zeros for the others.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/host_simd.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../../epilogue/bias_activation.hpp"

namespace kcnn::Impl {

/// The micro-kernel's blocking for element type T on this build's host ISA.
template <class T>
struct TiledHostSimdBlocking {
  using Vector = HostVector<T>;
  static constexpr int lanes = Vector::lanes;
  /// Output pixels of a register block of `nv` filter vectors: every accumulator, the
  /// pixels' broadcasts and one weight vector in registers, at most 14 pixels. (Row
  /// blocks of 17, 20 and 24 pixels, whose broadcasts could come from memory, ran LeNet
  /// C3 at 2.2x the time of 14: GCC keeps a block's broadcasts in registers and spilled.)
  static constexpr int pixels(int nv) {
    const int ur = (kHostVectorRegisters - 1) / (nv + 1);
    return ur < 14 ? ur : 14;
  }
  /// Whether register blocks of `nv` filter vectors stay within an output row
  /// (TiledHostSimdKernel::kRowBlocks): one vector where more than 10 pixels' broadcasts
  /// fit beside their sums (AVX-512).
  static constexpr bool row_blocks(int nv) {
    return nv == 1 && (kHostVectorRegisters - 1) / 2 > 10;
  }
  /// Output pixels per work item (QT; QT_wide where one filter block's packed weights,
  /// R x S x C x MB values, take more than wide_weights_bytes: more pixels per pass over
  /// them), consecutive in the batch (its buffer holds QT x MB partial sums), and the
  /// bytes of packed weights one channel block may take (R x S x CB x MB values).
  ///
  /// AVX2: chosen on a 2-core AMD EPYC (2026-11-26, ResNet 3x3 NHWC layers of 64 / 128 /
  /// 256 / 512 channels at N = 8, ms, two interleaved rounds of `kcnn_perf
  /// --benchmark_filter='conv2d/resnet3x3/.*/NHWC/Tiled/'` with both constants read from
  /// temporary environment overrides, since removed; runs on this VM vary by +-10%;
  /// items were pixels of one image then):
  ///
  ///   weight block, QT        round 1                  round 2
  ///   12 KB, 64           17.9 18.1 17.7 21.6     17.2 16.0 17.6 22.4
  ///   12 KB, 128          21.3 15.7 17.8 21.5     16.9 16.0 18.0 22.6
  ///   18 KB, 64           18.4 17.3 18.9 23.4     16.9 15.9 16.6 22.0
  ///   18 KB, 32           19.4 16.2 16.8 27.9     16.2 15.4 15.4 20.6
  ///   24 KB, 128          17.3 15.1 16.9 22.4     15.5 14.5 15.3 20.9
  ///
  /// AVX-512: chosen on a 2-core AMD EPYC (Zen 5, AVX-512 with two 512-bit FMA pipes,
  /// 2026-11-28, session 25), the same four layers, NHWC float with bias + ReLU, ms,
  /// the median over 5-6 rounds (in random order) of each build's median of 20 calls
  /// (a driver program with the constants as compiler macros, since removed; rounds
  /// vary by 5-10%, whole runs by up to 20%: compare within a block only). 6 x 4 blocks
  /// of 16-float vectors (pixels x filter vectors, 24 accumulators) throughout: 64
  /// filters per block, the widest that 64-channel layers fill.
  ///
  ///   weight block, QT (items within one image)   64 ch   128 ch  256 ch  512 ch
  ///   24 KB, 128 (the AVX2 constants)              5.31    5.22    5.28    7.77
  ///   48 KB, 128                                   6.47    5.18    5.34    7.80
  ///   72 KB, 128                                   5.09    5.13    5.26    7.17
  ///   72 KB, 64                                    5.13    5.24    5.44    7.34
  ///   160 KB, 128 (all 64 channels in one block)   4.81    4.86    5.09    7.05
  ///
  ///   weight block, QT (items across images)      64 ch   128 ch  256 ch  512 ch
  ///   24 KB, 128                                   6.43    6.38    6.94    9.91
  ///   24 KB, 392                                   6.75    6.44    6.76    8.23
  ///   72 KB, 128                                   5.51    5.58    6.12    8.83
  ///   72 KB, 392                                   5.66    5.74    6.16    8.12
  ///   96 KB, 256                                   5.61    5.70    6.05    8.23
  ///   160 KB, 128                                  5.09    5.29    5.90    8.52
  ///   160 KB, 392                                  5.16    5.33    5.81    7.29
  ///   256 KB, 128                                  5.29    5.32    5.96    8.57
  ///   160 KB within one image, 128 (as above)      5.18    5.33    5.76    8.62
  ///
  ///   this code (160 KB; 128, 384 past 512 KB)     5.16    5.33    5.40    7.32
  ///   before (24 KB, 128, within one image)        6.39    6.19    6.25    7.68
  ///   (the AVX2 build of both, -mno-avx512f: 13.4 / 10.8 / 10.7 / 12.4 and 13.0 /
  ///   10.7 / 10.6 / 12.4: unchanged)
  ///
  /// The 512-channel layer stays slower: its 9.4 MB of weights are packed per call (a
  /// quarter of its time in `perf`).
  ///
  /// AVX2 again on a 2-core AMD EPYC (Zen 3, 2026-11-29, session 32), after the pixel
  /// classes and the items across images: the same four layers, NHWC float with bias +
  /// ReLU, a driver calling this kernel and, in the same process, oneDNN on its blocked
  /// layout; median over interleaved rounds (random order) of each build's median of 7
  /// calls, ms, and the median over rounds of oneDNN's time / kcnn's
  /// (perf_tests/data/s32-tiled-blocking-driver.cpp). Two runs of 5 rounds (this VM's
  /// rounds vary by 10-30%: compare within a run):
  ///
  ///   weight block, QT        64 ch  128 ch  256 ch  512 ch   oneDNN / kcnn
  ///   run 1: 24 KB, 128       18.52   14.43   14.82   16.89   0.75 1.02 1.01 1.04
  ///          48 KB, 128       14.99   13.28   12.53   15.82   0.92 0.97 1.08 1.07
  ///          72 KB, 128       14.30   13.45   13.68   15.13   1.04 1.13 1.12 1.20
  ///          144 KB, 128      13.09   13.18   13.39   13.30   0.98 1.07 1.10 1.24
  ///          72 KB, 64        14.24   13.67   11.88   14.73   1.10 1.06 1.15 1.23
  ///          72 KB, 192       14.01   13.74   13.90   14.76   1.03 1.10 1.14 1.22
  ///   run 2: 72 KB, 128       14.59   13.44   15.09   15.17   0.94 1.09 1.06 1.26
  ///          72 KB, 64        12.94   11.63   13.08   16.08   1.06 1.18 1.16 1.20
  ///          36 KB, 32        15.24   13.89   14.40   16.39   0.94 0.99 1.08 1.12
  ///          96 KB, 64        13.13   12.37   13.56   15.77   1.00 1.08 1.10 1.20
  ///          72 KB, 96        12.87   12.27   13.37   14.80   1.02 1.14 1.17 1.15
  ///   (2 filter vectors x 5 pixels instead of 4 x 3, 72 KB, 128, run 3: 0.89 1.01 1.11
  ///   1.17 against 4 x 3's 0.99 1.17 1.13 1.19.)
  ///
  /// 72 KB holds all 64 channels of a 32-filter block: the 64-channel layer's sums stay in
  /// registers for its whole reduction instead of passing through the item's buffer four
  /// times, and its weights stream from L2 (24 KB blocks, in L1, lost the L1 to the
  /// buffer and the input rows). The 24 KB of session 23 were chosen when items were rows
  /// of one image in row-major order.
  static constexpr int QT = 128;
  static constexpr int QT_wide = 384;
  static constexpr std::size_t wide_weights_bytes = 512 * 1024;
  static constexpr std::size_t weight_block_bytes =
      kHostVectorRegisters == 32 ? 160 * 1024 : 72 * 1024;
};

/// The element types the register-blocked kernel has (16-bit tensors keep the staged
/// kernel, which converts while staging).
template <class T>
inline constexpr bool tiled_host_simd_types_v =
    std::is_same_v<T, float> || std::is_same_v<T, double>;

/// The product of `factors`, saturated at the largest std::size_t instead of wrapping:
/// valid problems may have filters of 2^31 - 1 taps (with padding of 2^31 - 1), whose
/// packed size must compare as too large with the workspace limit, not as a small one.
inline std::size_t tiled_host_simd_saturating_product(std::initializer_list<std::size_t> factors) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  std::size_t product = 1;
  for (std::size_t f : factors)
    if (f == 0) return 0;
  for (std::size_t f : factors)
    product = product > max / f ? max : product * f;
  return product;
}

/// An output pixel of the batch and the class of pixel windows it belongs to
/// (TiledHostSimdPlan::pixel_at, next).
struct TiledHostSimdPixel {
  std::int64_t n = 0;
  int oh = 0, ow = 0;
  int cls = 0;  ///< 3 x row segment + column segment
};

/// The segments of one output extent: [0, lo) windows starting in the leading padding,
/// [lo, hi) windows wholly inside the input, [hi, P) the rest (reaching the trailing
/// padding, or both paddings where no window fits inside); 0 <= lo <= hi <= P.
struct TiledHostSimdSegments {
  std::int64_t bound[4] = {0, 0, 0, 0};

  static TiledHostSimdSegments make(std::int64_t in, std::int64_t out, std::int64_t filter,
                                    int stride, int pad, int dilation) {
    // In 64 bits: a valid problem's pad and (filter - 1) x dilation may each reach 2^31 - 1.
    const std::int64_t reach = (filter - 1) * dilation;
    const std::int64_t lo = std::min<std::int64_t>(out, (std::int64_t(pad) + stride - 1) / stride);
    // Windows o with o x stride - pad + reach <= in - 1.
    const std::int64_t last = in - 1 - reach + pad;
    const std::int64_t hi = last < 0 ? lo : std::clamp<std::int64_t>(last / stride + 1, lo, out);
    TiledHostSimdSegments seg;
    seg.bound[1] = lo, seg.bound[2] = hi, seg.bound[3] = out;
    return seg;
  }
  std::int64_t begin(int k) const { return bound[k]; }
  std::int64_t size(int k) const { return bound[k + 1] - bound[k]; }
};

/// The plan of one call: register block, item and channel blocks, packed weight size,
/// the order of the batch's output pixels.
///
/// Pixels are ordered by class, then image, row, column: a class is a row segment times
/// a column segment (TiledHostSimdSegments), so that a register block, which never
/// spans two classes, has pixels whose windows leave the input on the same side: the
/// interior class (most pixels) takes the kernel's path without bounds, and a border
/// block skips a tap that lies in the padding for all its pixels (for 3x3 filters
/// with padding 1, every tap in the padding) instead of multiplying zeros. In
/// row-major order a 6-pixel block of a 14- or 7-wide image nearly always touched a
/// border column and multiplied zeros for 9% (14x14) and 18% (7x7) of its taps.
struct TiledHostSimdPlan {
  int nv = 1, mb = 0;        ///< filter vectors per block, filters per block (nv x lanes)
  int m_blocks = 0;          ///< ceil(M / mb)
  int cb = 0, c_blocks = 0;  ///< channels per reduction block, their count
  int tile_pixels = 0;       ///< output pixels per item (the longest item's)
  std::int64_t tiles = 0;    ///< pixel tiles (items per filter block)
  std::int64_t items = 0;    ///< tiles x m_blocks
  /// m_blocks x c_blocks x R x S x cb x mb x sizeof(T) (saturated)
  std::size_t packed_bytes = 0;
  std::int64_t N = 0;
  TiledHostSimdSegments rows, cols;
  /// The first pixel (in the plan's order) of each class, and N x P x Q.
  std::int64_t class_begin[10] = {};
  /// Row-aligned tiles (with row blocks, TiledHostSimdBlocking::row_blocks): a tile holds
  /// whole rows of one class (tile_rows[k] of them) or, where a row is longer than a
  /// tile, one of row_parts[k] even parts of a row, so that the kernel's blocks split each
  /// row evenly. Consecutive tiles of tile_pixels pixels began anywhere in a row: LeNet
  /// C3's 34-pixel rows then had blocks of 12, 11, 11 only where a tile began a row, and
  /// shorter ones (down to one pixel) at each tile's two ends.
  bool row_tiles = false;
  std::int64_t tile_rows[9] = {}, row_parts[9] = {};
  /// The first tile of each class, and `tiles` (row_tiles only).
  std::int64_t tile_begin[10] = {};

  /// The pixels [j0, j1) of the plan's order that tile `t` holds.
  void tile_range(std::int64_t t, std::int64_t& j0, std::int64_t& j1) const {
    if (!row_tiles) {
      j0 = t * tile_pixels;
      j1 = std::min(class_begin[9], j0 + tile_pixels);
      return;
    }
    int k = 0;
    while (k < 8 && tile_begin[k + 1] <= t)
      ++k;
    const std::int64_t local = t - tile_begin[k], width = cols.size(k % 3);
    if (row_parts[k] > 1) {
      const std::int64_t part_pixels = (width + row_parts[k] - 1) / row_parts[k];
      const std::int64_t row_begin = class_begin[k] + local / row_parts[k] * width;
      j0 = row_begin + local % row_parts[k] * part_pixels;
      j1 = std::min(row_begin + width, j0 + part_pixels);
    } else {
      j0 = class_begin[k] + local * tile_rows[k] * width;
      j1 = std::min(class_begin[k + 1], j0 + tile_rows[k] * width);
    }
  }

  /// The pixel at position j (0 <= j < N x P x Q) of the plan's order.
  TiledHostSimdPixel pixel_at(std::int64_t j) const {
    TiledHostSimdPixel px;
    while (px.cls < 8 && class_begin[px.cls + 1] <= j)
      ++px.cls;
    const std::int64_t h = rows.size(px.cls / 3), w = cols.size(px.cls % 3);
    const std::int64_t off = j - class_begin[px.cls];
    px.n = off / (h * w);
    px.oh = static_cast<int>(rows.begin(px.cls / 3) + off % (h * w) / w);
    px.ow = static_cast<int>(cols.begin(px.cls % 3) + off % w);
    return px;
  }
  /// Moves px to the next pixel of the plan's order (the last one stays put).
  KCNN_HOST_FORCEINLINE void next(TiledHostSimdPixel& px) const {
    const int a = px.cls / 3, b = px.cls % 3;
    if (++px.ow < cols.bound[b + 1]) return;
    px.ow = static_cast<int>(cols.bound[b]);
    if (++px.oh < rows.bound[a + 1]) return;
    px.oh = static_cast<int>(rows.bound[a]);
    if (++px.n < N) return;
    const std::int64_t j = class_begin[px.cls + 1];
    if (j < class_begin[9]) px = pixel_at(j);
  }
  /// The position one past the last pixel of px's class.
  std::int64_t class_end(const TiledHostSimdPixel& px) const { return class_begin[px.cls + 1]; }

  template <class T>
  static TiledHostSimdPlan make(const Conv2dProblem& pb) {
    using B = TiledHostSimdBlocking<T>;
    TiledHostSimdPlan p;
    // The widest block that M fills at least half of: 64 filters (M = 64, AVX2) take
    // two blocks of 4 vectors, 16 take one of 2, LeNet's 4 one of 1.
    const std::int64_t M = pb.M;
    p.nv = M > 2 * B::lanes ? 4 : (M > B::lanes ? 2 : 1);
    p.mb = p.nv * B::lanes;
    p.m_blocks = static_cast<int>((M + p.mb - 1) / p.mb);
    const auto size = [](std::int64_t e) { return static_cast<std::size_t>(e); };
    const std::size_t per_channel =
        tiled_host_simd_saturating_product({size(pb.R), size(pb.S), size(p.mb), sizeof(T)});
    const auto cb_max = static_cast<std::int64_t>(
        std::max<std::size_t>(1, B::weight_block_bytes / std::max<std::size_t>(1, per_channel)));
    p.c_blocks = static_cast<int>((pb.C + cb_max - 1) / cb_max);
    p.cb = static_cast<int>((pb.C + p.c_blocks - 1) / p.c_blocks);
    const std::int64_t NPQ = pb.N * pb.P * pb.Q;
    const std::size_t filter_block_bytes =
        tiled_host_simd_saturating_product({size(pb.C), per_channel});
    const std::int64_t qt = filter_block_bytes > B::wide_weights_bytes ? B::QT_wide : B::QT;
    p.packed_bytes =
        tiled_host_simd_saturating_product({size(p.m_blocks), size(p.c_blocks), size(pb.R),
                                            size(pb.S), size(p.cb), size(p.mb), sizeof(T)});
    p.N = pb.N;
    p.rows = TiledHostSimdSegments::make(pb.H, pb.P, pb.R, pb.stride_h, pb.pad_h, pb.dilation_h);
    p.cols = TiledHostSimdSegments::make(pb.W, pb.Q, pb.S, pb.stride_w, pb.pad_w, pb.dilation_w);
    for (int k = 0; k < 9; ++k)
      p.class_begin[k + 1] = p.class_begin[k] + pb.N * p.rows.size(k / 3) * p.cols.size(k % 3);
    p.row_tiles = B::row_blocks(p.nv);
    if (p.row_tiles) {
      // Per class: as many whole rows as fit in qt pixels (at least one), or rows in
      // even parts of at most qt pixels.
      std::int64_t longest = 1;
      for (int k = 0; k < 9; ++k) {
        const std::int64_t width = p.cols.size(k % 3), rows = pb.N * p.rows.size(k / 3);
        std::int64_t tiles = 0;
        p.tile_rows[k] = 1, p.row_parts[k] = 1;
        if (width > qt) {
          p.row_parts[k] = (width + qt - 1) / qt;
          tiles = rows * p.row_parts[k];
          if (rows > 0) longest = std::max(longest, (width + p.row_parts[k] - 1) / p.row_parts[k]);
        } else if (width > 0) {
          p.tile_rows[k] = std::max<std::int64_t>(1, qt / width);
          tiles = (rows + p.tile_rows[k] - 1) / p.tile_rows[k];
          if (rows > 0) longest = std::max(longest, std::min(rows, p.tile_rows[k]) * width);
        }
        p.tile_begin[k + 1] = p.tile_begin[k] + tiles;
      }
      p.tiles = p.tile_begin[9];
      p.tile_pixels = static_cast<int>(longest);
    } else {
      const std::int64_t tiles = (NPQ + qt - 1) / qt;
      p.tiles = tiles;
      p.tile_pixels = tiles > 0 ? static_cast<int>((NPQ + tiles - 1) / tiles) : 1;
    }
    p.items = p.tiles * p.m_blocks;
    return p;
  }
  /// The packed weights and the slack that aligns them (saturated).
  template <class T>
  std::size_t workspace_bytes() const {
    constexpr std::size_t align = HostVector<T>::alignment;
    return packed_bytes > std::numeric_limits<std::size_t>::max() - align ? packed_bytes
                                                                          : packed_bytes + align;
  }
  template <class T>
  std::size_t row_buffer_bytes() const {
    return std::size_t(tile_pixels) * mb * sizeof(T) + HostVector<T>::alignment;
  }
};

/// Whether the register-blocked kernel serves `pb` with element type T: NHWC without a
/// fused pooling, x's channels contiguous (x_channel_stride 1), extents, work items and
/// the channel and filter counts rounded up to whole blocks (the packing's indices)
/// within int (the staged kernel takes the rest).
template <class T>
bool tiled_host_simd_applies(const Conv2dProblem& pb, std::int64_t x_channel_stride) {
  if (pb.has_pool || (pb.layout == Layout::NHWC && x_channel_stride != 1)) return false;
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  for (std::int64_t e : {pb.N, pb.C, pb.H, pb.W, pb.M, pb.R, pb.S, pb.P * pb.Q})
    if (e > int_max) return false;
  const TiledHostSimdPlan plan = TiledHostSimdPlan::make<T>(pb);
  return plan.items <= int_max && std::int64_t(plan.c_blocks) * plan.cb <= int_max &&
         std::int64_t(plan.m_blocks) * plan.mb <= int_max;
}

/// Packs w (M, R, S, C logically) as [m block][channel block][r][s][c][m]: per channel
/// of a tap, the block's mb filters contiguous (one aligned vector load per nv). Filters
/// past M and channels past C are zero. One work item per (m block, channel block, r) and
/// tap or filter row (taps_per_item).
///
/// The packing is a transposition (channels contiguous in w, filters in the packed
/// block), and it runs on every call: weights may change between calls (training
/// updates them in place), so no packed copy is kept. Tiles of kTile x kTile values go
/// through a local array (contiguous reads of a filter's channels, contiguous writes of
/// a channel's filters, both vectorized); the generic loop, with strides and bounds per
/// value, packed the 512-channel ResNet layer's 9.4 MB in 1.29-1.43 ms a call (a fifth
/// of the layer's time), the tiles in 0.40 ms (AMD Zen 5, 2 threads, session 26; a
/// standalone loop with no strides and bounds: 0.47 ms, the tiles 0.29 ms). Packing into
/// a per-thread block inside each work item instead (L2, no round trip through memory)
/// saved nothing in that standalone test: the packed copy stays in the L3 cache.
template <class T, class W>
struct TiledHostSimdPackWeights {
  static constexpr int kTile = 16;
  const W* w;
  LogicalStrides ws;  ///< n: filter, c: channel, h: r, w: s
  T* packed;
  int M, C, R, S, mb, cb, c_blocks;

  /// Taps per work item: one where a filter's channels are contiguous (NHWC); a filter
  /// row's S where they are R x S values apart (NCHW), so that the cache lines a tile of
  /// channels spans, read for its first tap, serve the row's other taps too (packing the
  /// 512-channel ResNet layer's NCHW filters one tap per item read each line from L2
  /// once per tap: 11% of the call on a 2-core AMD Zen 3).
  int taps_per_item() const { return ws.c == 1 ? 1 : S; }
  std::int64_t items() const {
    return (std::int64_t(M) + mb - 1) / mb * c_blocks * R * (S / taps_per_item());
  }

  void operator()(std::int64_t item) const {
    const int taps = taps_per_item();
    const int s_items = S / taps;
    const int s_first = static_cast<int>(item % s_items) * taps;
    const int r = static_cast<int>(item / s_items % R);
    const int cblk = static_cast<int>(item / (std::int64_t(s_items) * R) % c_blocks);
    const int mblk = static_cast<int>(item / (std::int64_t(s_items) * R * c_blocks));
    const std::int64_t tap_elems = std::int64_t(cb) * mb;
    // The packed order: [m block][channel block][r][s][c][m].
    T* const out_row = packed + ((std::int64_t(mblk) * c_blocks + cblk) * R + r) * S * tap_elems;
    const int m0 = mblk * mb, c0 = cblk * cb;
    for (int mm0 = 0; mm0 < mb; mm0 += kTile)
      for (int ci0 = 0; ci0 < cb; ci0 += kTile)
        for (int s = s_first; s < s_first + taps; ++s) {
          T* const out = out_row + s * tap_elems;
          const W* const tap = w + std::int64_t(r) * ws.h + std::int64_t(s) * ws.w;
          const bool full = mm0 + kTile <= mb && ci0 + kTile <= cb && m0 + mm0 + kTile <= M &&
                            c0 + ci0 + kTile <= C;
          if (full) {
            T t[kTile][kTile];
            if (ws.c == 1) {
              for (int i = 0; i < kTile; ++i) {
                const W* const src = tap + std::int64_t(m0 + mm0 + i) * ws.n + (c0 + ci0);
                for (int j = 0; j < kTile; ++j)
                  t[j][i] = static_cast<T>(to_compute(src[j]));
              }
            } else {
              for (int i = 0; i < kTile; ++i) {
                const W* const src =
                    tap + std::int64_t(m0 + mm0 + i) * ws.n + std::int64_t(c0 + ci0) * ws.c;
                for (int j = 0; j < kTile; ++j)
                  t[j][i] = static_cast<T>(to_compute(src[std::int64_t(j) * ws.c]));
              }
            }
            for (int j = 0; j < kTile; ++j) {
              T* const dst = out + std::int64_t(ci0 + j) * mb + mm0;
              for (int i = 0; i < kTile; ++i)
                dst[i] = t[j][i];
            }
          } else {
            // Partial tiles (the blocks' edges, M or C not a multiple of kTile, narrow
            // blocks).
            const int mt = std::min(kTile, mb - mm0), ct = std::min(kTile, cb - ci0);
            for (int i = 0; i < mt; ++i) {
              const int m = m0 + mm0 + i;
              const W* const src = tap + std::int64_t(m) * ws.n;
              for (int j = 0; j < ct; ++j) {
                const int c = c0 + ci0 + j;
                out[std::int64_t(ci0 + j) * mb + mm0 + i] =
                    m < M && c < C ? static_cast<T>(to_compute(src[std::int64_t(c) * ws.c])) : T(0);
              }
            }
          }
        }
  }
};

/// The convolution (see the file comment). NV: filter vectors per register block.
template <class T, class Y, class Bias, int NV, Layout L, class ExecSpace>
struct TiledHostSimdKernel {
  /// Items handed out one at a time: items of border pixels skip taps and cost less than
  /// interior ones (the 7x7 layer's second half of the batch's pixels, 8 of its 16 items,
  /// is mostly border classes), so a static split left one thread waiting.
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  using member_type = typename Policy::member_type;
  using Vector = HostVector<T>;
  using V = typename Vector::type;
  static constexpr int lanes = Vector::lanes;
  static constexpr int MB = NV * lanes;
  static constexpr int UR = TiledHostSimdBlocking<T>::pixels(NV);
  /// Blocks of one filter vector and more than 10 pixels (AVX-512: 14) stay within an
  /// output row and address their pixels from one pointer (multiply_row): one pointer
  /// per pixel is more than the general registers hold beside the loop's own, and GCC
  /// reloaded them from the stack, two loads per FMA. LeNet C3 NHWC (batch 1,000, 2-core
  /// Zen 5, a driver, medians of 7 calls in 3 interleaved rounds): 29.1 -> 27.0 ms, C1
  /// 62.6 -> 58.5. Blocks of more filter vectors (at most 10 pixels) kept their speed with
  /// one pointer per pixel (ResNet 3x3 64 channels 4.92 against 4.99 ms).
  static constexpr bool kRowBlocks = TiledHostSimdBlocking<T>::row_blocks(NV);
  /// The channels of a border pixel's tap that lies in the padding: zeros, as long as
  /// the longest channel block (TiledHostSimdPlan: cb <= weight_block_bytes / MB / size).
  static constexpr int max_cb =
      static_cast<int>(TiledHostSimdBlocking<T>::weight_block_bytes / (MB * sizeof(T)));

  const T* x;
  LogicalStrides xs;
  const T* packed;
  const Bias* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  Y* y;
  LogicalStrides ys;
  int N, H, W, C, M, R, S, P, Q;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  Activation activation;
  TiledHostSimdPlan plan;
  const T* zeros;  ///< max_cb zeros
  /// NHWC with one channel block, unit dilation_w and pixels C values apart in x (xs.w
  /// == C): a filter row's taps are one run of S x C values in x and in the packed
  /// weights.
  bool row_runs;

  /// The distance in x between a pixel's consecutive channels: 1 in NHWC (the register
  /// kernel's precondition, tiled_host_simd_applies), the plane size in NCHW.
  KCNN_HOST_FORCEINLINE std::int64_t channel_step() const {
    if constexpr (L == Layout::NHWC) {
      return 1;
    } else {
      return xs.c;
    }
  }

  void operator()(const member_type& team) const {
    // Item order: filter blocks fastest (they share the input rows, in L2), then the
    // pixel tiles of the plan's order.
    const std::int64_t item = team.league_rank();
    const int mblk = static_cast<int>(item % plan.m_blocks);
    const std::int64_t tile = item / plan.m_blocks;
    // Positions in the plan's order of the batch's pixels, in 64 bits.
    std::int64_t j0 = 0, j1 = 0;
    plan.tile_range(tile, j0, j1);

    T* const rows = static_cast<T*>(team.team_scratch(0).get_shmem_aligned(
        std::size_t(plan.tile_pixels) * MB * sizeof(T), Vector::alignment));
    const std::int64_t block_elems = std::int64_t(R) * S * plan.cb * MB;
    const TiledHostSimdPixel first_pixel = plan.pixel_at(j0);
    for (int cblk = 0; cblk < plan.c_blocks; ++cblk) {
      const int c0 = cblk * plan.cb;
      const int cc = std::min(plan.cb, C - c0);
      const T* const w_block = packed + (std::int64_t(mblk) * plan.c_blocks + cblk) * block_elems;
      const bool first = cblk == 0;
      TiledHostSimdPixel px = first_pixel;
      for (std::int64_t j = j0; j < j1;) {
        // A register block stays within its pixel class; with kRowBlocks also within a
        // row (or the tile's part of one: the plan's row tiles), split evenly (LeNet C3's
        // 34: 12, 11, 11), so that multiply_row serves it.
        int count =
            static_cast<int>(std::min<std::int64_t>(UR, std::min(j1, plan.class_end(px)) - j));
        if constexpr (kRowBlocks) {
          const int row_left = static_cast<int>(
              std::min<std::int64_t>(plan.cols.bound[px.cls % 3 + 1] - px.ow, j1 - j));
          const int blocks = (row_left + UR - 1) / UR;
          count = std::min(count, (row_left + blocks - 1) / blocks);
        }
        pixels_of_count<UR>(count, px, c0, cc, w_block, rows + (j - j0) * MB, first);
        j += count;
      }
    }
    store(rows, j0, j1, first_pixel, mblk * MB);
  }

  /// pixels<count>(...) for the chunk's `count` pixels, 1 <= count <= U: full chunks take
  /// pixels<UR>, a tile's or class's last one its own block size.
  template <int U>
  KCNN_HOST_FORCEINLINE void pixels_of_count(int count, TiledHostSimdPixel& px, int c0, int cc,
                                             const T* w_block, T* out, bool first) const {
    if constexpr (U > 1) {
      if (count < U) return pixels_of_count<U - 1>(count, px, c0, cc, w_block, out, first);
    }
    pixels<U>(px, c0, cc, w_block, out, first);
  }

  /// U consecutive output pixels of the plan's order (one class), the first px, which
  /// moves past them; channels c0 .. c0 + cc - 1: sums into `out` (U x MB; added to it
  /// unless `first`).
  template <int U>
  KCNN_HOST_FORCEINLINE void pixels(TiledHostSimdPixel& px, int c0, int cc, const T* w_block,
                                    T* out, bool first) const {
    V acc[U][NV];
    for (int p = 0; p < U; ++p)
      for (int v = 0; v < NV; ++v)
        acc[p][v] = first ? Vector::zero() : Vector::load(out + p * MB + v * lanes);
    // The pixels' window origins; interior: every tap of every pixel inside x. In 64
    // bits: a valid problem's oh * stride_h, (R - 1) * dilation_h and pad_h may each
    // pass 2^31 - 1 (stride 2^29 with padding 2^31 - 1: the fuzzer's find) though the
    // coordinates of the taps that read x fit int.
    std::int64_t ih0[U], iw0[U];
    const T* x_image[U];
    bool interior = true;
    const std::int64_t reach_h = std::int64_t(R - 1) * dilation_h;
    const std::int64_t reach_w = std::int64_t(S - 1) * dilation_w;
    if constexpr (kRowBlocks) {
      // The block lies in one row (operator() splits rows): its origins step by
      // stride_w, and the first and last windows bound them all. Walking the pixels
      // with plan.next, as below, took a tenth of LeNet C3's time.
      const T* const image = x + px.n * xs.n;
      const std::int64_t ih = std::int64_t(px.oh) * stride_h - pad_h;
      const std::int64_t iw = std::int64_t(px.ow) * stride_w - pad_w;
      for (int p = 0; p < U; ++p) {
        x_image[p] = image;
        ih0[p] = ih;
        iw0[p] = iw + std::int64_t(p) * stride_w;
      }
      interior = ih >= 0 && ih + reach_h < H && iw >= 0 && iw0[U - 1] + reach_w < W;
      px.ow += U - 1;
      plan.next(px);
    } else {
      for (int p = 0; p < U; ++p) {
        x_image[p] = x + px.n * xs.n;
        ih0[p] = std::int64_t(px.oh) * stride_h - pad_h;
        iw0[p] = std::int64_t(px.ow) * stride_w - pad_w;
        interior =
            interior && ih0[p] >= 0 && ih0[p] + reach_h < H && iw0[p] >= 0 && iw0[p] + reach_w < W;
        plan.next(px);
      }
    }
    const std::int64_t pixel_step = std::int64_t(stride_w) * xs.w;
    const std::int64_t step_s = std::int64_t(dilation_w) * xs.w;
    const std::int64_t step_r = std::int64_t(dilation_h) * xs.h - S * step_s;
    const std::int64_t tap_elems = std::int64_t(plan.cb) * MB;
    const T* w_tap = w_block;
    const T* xp[U];
    // NCHW: per pixel, the step to its next channel (0 for a tap in the padding, which
    // reads the same zero).
    std::int64_t c_step[U];
    for (int p = 0; p < U; ++p)
      c_step[p] = channel_step();
    const std::int64_t c_offset = std::int64_t(c0) * channel_step();
    if (interior) {
      for (int p = 0; p < U; ++p)
        xp[p] = x_image[p] + ih0[p] * xs.h + iw0[p] * xs.w + c_offset;
      if (kRowBlocks && row_runs) {
        // The block's pixels in one row, `pixel_step` values apart in x: one pointer
        // walks them (see kRowBlocks).
        const T* x0 = xp[0];
        for (int r = 0; r < R; ++r, w_tap += S * tap_elems) {
          multiply_row<U>(acc, x0, pixel_step, w_tap, S * cc);
          x0 += std::int64_t(dilation_h) * xs.h;
        }
      } else if (row_runs) {
        // A filter row's S taps of all C channels: one run of S x C values in x and in
        // the packed weights, one multiply loop (LeNet's C = 1 and 4 had loops of 1 and
        // 4 channels per tap).
        for (int r = 0; r < R; ++r, w_tap += S * tap_elems) {
          multiply<U>(acc, xp, c_step, w_tap, S * cc);
          for (int p = 0; p < U; ++p)
            xp[p] += std::int64_t(dilation_h) * xs.h;
        }
      } else {
        for (int r = 0; r < R; ++r) {
          for (int s = 0; s < S; ++s, w_tap += tap_elems) {
            multiply<U>(acc, xp, c_step, w_tap, cc);
            for (int p = 0; p < U; ++p)
              xp[p] += step_s;
          }
          for (int p = 0; p < U; ++p)
            xp[p] += step_r;
        }
      }
    } else {
      // Border chunks: taps in the padding read zeros; taps outside for every pixel
      // (with the plan's pixel classes, all taps in the padding of 3x3 filters with
      // padding 1) are skipped.
      for (int r = 0; r < R; ++r, w_tap += S * tap_elems) {
        bool any_row = false;
        const T* x_rows[U];
        for (int p = 0; p < U; ++p) {
          const std::int64_t ih = ih0[p] + std::int64_t(r) * dilation_h;
          const bool inside = ih >= 0 && ih < H;
          any_row = any_row || inside;
          x_rows[p] = inside ? x_image[p] + ih * xs.h + c_offset : nullptr;
        }
        if (!any_row) continue;
        const T* w_s = w_tap;
        for (int s = 0; s < S; ++s, w_s += tap_elems) {
          bool any_tap = false;
          for (int p = 0; p < U; ++p) {
            const std::int64_t iw = iw0[p] + std::int64_t(s) * dilation_w;
            const bool inside = x_rows[p] && iw >= 0 && iw < W;
            any_tap = any_tap || inside;
            xp[p] = inside ? x_rows[p] + iw * xs.w : zeros;
            c_step[p] = inside ? channel_step() : 0;
          }
          if (any_tap) multiply<U>(acc, xp, c_step, w_s, cc);
        }
      }
    }
    for (int p = 0; p < U; ++p)
      for (int v = 0; v < NV; ++v)
        Vector::store(out + p * MB + v * lanes, acc[p][v]);
  }

  /// The register block's FMAs over cc channels of one tap: per channel, U broadcasts,
  /// then per filter vector one load and U FMAs. Pixel p's channels are c_step[p] values
  /// apart in x (NCHW; NHWC: 1).
  template <int U>
  static KCNN_HOST_FORCEINLINE void multiply(V (&acc)[U][NV], const T* const (&xp)[U],
                                             const std::int64_t (&c_step)[U], const T* w_tap,
                                             int cc) {
    if constexpr (L == Layout::NCHW) {
      const T* xc[U];
      for (int p = 0; p < U; ++p)
        xc[p] = xp[p];
      for (int c = 0; c < cc; ++c, w_tap += MB) {
        V in[U];
        for (int p = 0; p < U; ++p) {
          in[p] = Vector::broadcast(xc[p]);
          xc[p] += c_step[p];
        }
        fma_block<U>(acc, in, w_tap);
      }
      return;
    }
    for (int c = 0; c < cc; ++c, w_tap += MB) {
      V in[U];
      for (int p = 0; p < U; ++p)
        in[p] = Vector::broadcast(xp[p] + c);
      for (int v = 0; v < NV; ++v) {
        V wv = Vector::load(w_tap + v * lanes);
        Vector::keep_in_register(wv);
        for (int p = 0; p < U; ++p)
          acc[p][v] = Vector::fma(in[p], wv, acc[p][v]);
      }
    }
  }

  /// The FMAs of one channel: per filter vector one load and U FMAs.
  template <int U>
  static KCNN_HOST_FORCEINLINE void fma_block(V (&acc)[U][NV], const V (&in)[U], const T* w_c) {
    for (int v = 0; v < NV; ++v) {
      V wv = Vector::load(w_c + v * lanes);
      Vector::keep_in_register(wv);
      for (int p = 0; p < U; ++p)
        acc[p][v] = Vector::fma(in[p], wv, acc[p][v]);
    }
  }

  /// multiply for U pixels `step` values apart from x0 (NHWC).
  template <int U>
  static KCNN_HOST_FORCEINLINE void multiply_row(V (&acc)[U][NV], const T* x0, std::int64_t step,
                                                 const T* w_tap, int cc) {
    for (int c = 0; c < cc; ++c, w_tap += MB) {
      V in[U];
      const T* xc = x0 + c;
      for (int p = 0; p < U; ++p, xc += step)
        in[p] = Vector::broadcast(xc);
      for (int v = 0; v < NV; ++v) {
        V wv = Vector::load(w_tap + v * lanes);
        Vector::keep_in_register(wv);
        for (int p = 0; p < U; ++p)
          acc[p][v] = Vector::fma(in[p], wv, acc[p][v]);
      }
    }
  }

  /// Bias, activation and one rounding from the item's buffer to y's pixels j0 .. j1 - 1
  /// of the plan's order (the first px), filters m0 .. min(m0 + MB, M) - 1.
  void store(const T* rows, std::int64_t j0, std::int64_t j1, TiledHostSimdPixel px, int m0) const {
    const int count = std::min(MB, M - m0);
    T bias_block[MB];
    for (int mm = 0; mm < MB; ++mm)
      bias_block[mm] =
          bias && mm < count ? static_cast<T>(to_compute(bias[(m0 + mm) * bias_stride])) : T(0);
    const auto at = [&](const TiledHostSimdPixel& p) {
      return y + p.n * ys.n + std::int64_t(p.oh) * ys.h + std::int64_t(p.ow) * ys.w +
             std::int64_t(m0) * ys.c;
    };
    // Filters a plane apart (NCHW) whose planes share L1 sets (planes of 64x64, 128x128,
    // 224x224 floats: a multiple of 4 KB apart): filter by filter, each plane written along
    // its rows. Pixel by pixel, a pixel's stores to those planes evicted each other's lines
    // (2-core Zen 5, session 42, Tiled NCHW, N = 8, 64 filters: 224x224 116-135 -> 23-26
    // ms, 128x128 67 -> 14, 64x64 14 -> 5.2); elsewhere pixel by pixel, 10-25% faster
    // (ResNet's NCHW layers, AlexNet conv1, LeNet C3; perf_tests/data/
    // cpu-2026-11-30-s42-tiled-nchw-store.txt).
    const bool by_filter =
        ys.c != 1 && host_l1_streams_collide(ys.c * std::int64_t(sizeof(Y)), count);
    // By filter: the pixels in runs along output rows, ys.w apart in y (walking them one
    // by one with plan.next for every filter took 40% of the 3 -> 16 channel 224x224
    // layer's time: 7.2-8.2 -> 4.5-4.9 ms).
    const auto for_each_run = [&](auto&& f) {
      TiledHostSimdPixel p = px;
      for (std::int64_t j = j0; j < j1;) {
        const int run =
            static_cast<int>(std::min<std::int64_t>(j1 - j, plan.cols.bound[p.cls % 3 + 1] - p.ow));
        f(at(p), rows + (j - j0) * MB, run);
        j += run;
        p.ow += run - 1;
        plan.next(p);
      }
    };
    const std::int64_t pixel_step = ys.w;
    with_activation(activation, [&](auto act) {
      constexpr Activation Act = decltype(act)::value;
      if (by_filter) {
        for (int mm = 0; mm < count; ++mm)
          for_each_run([&](Y* dst, const T* src, int run) {
            for (int q = 0; q < run; ++q)
              dst[q * pixel_step + mm * ys.c] =
                  from_compute<Y>(apply_activation(Act, src[q * MB + mm] + bias_block[mm]));
          });
        return;
      }
      TiledHostSimdPixel p = px;
      for (std::int64_t j = j0; j < j1; ++j, plan.next(p)) {
        const T* const src = rows + (j - j0) * MB;
        Y* const dst = at(p);
        if (ys.c == 1) {
          KCNN_HOST_SIMD
          for (int mm = 0; mm < count; ++mm)
            dst[mm] = from_compute<Y>(apply_activation(Act, src[mm] + bias_block[mm]));
        } else {
          for (int mm = 0; mm < count; ++mm)
            dst[mm * ys.c] = from_compute<Y>(apply_activation(Act, src[mm] + bias_block[mm]));
        }
      }
    });
  }
};

/// The operands of one call of the register-blocked kernel, as pointers and logical
/// strides (n, c, h, w in NCHW's roles; w's n: filter, c: channel, h: r, w: s), so that
/// the backward data convolution can pass dy in x's role and its filters rotated and
/// transposed (negative tap strides from the last tap: conv2d_backward_data_direct.hpp).
template <class T, class W, class Bias, class Y>
struct TiledHostSimdOperands {
  const T* x;
  LogicalStrides xs;
  const W* w;
  LogicalStrides ws;
  const Bias* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  Y* y;
  LogicalStrides ys;
};

/// The register-blocked kernel's workspace for `pb` (the packed weights and their
/// alignment slack).
template <class T>
std::size_t tiled_host_simd_workspace_bytes(const Conv2dProblem& pb) {
  return TiledHostSimdPlan::make<T>(pb).template workspace_bytes<T>();
}

/// Runs (or in LaunchMode::Check only plans) the register-blocked host kernel on raw
/// operands (see conv2d_tiled_host_simd); `pb` describes the convolution they hold.
template <class ExecSpace, class T, class W, class Bias, class Y>
std::size_t conv2d_tiled_host_simd_operands(const ExecSpace& space,
                                            const TiledHostSimdOperands<T, W, Bias, Y>& op,
                                            const Conv2dProblem& pb, LaunchMode mode) {
  const TiledHostSimdPlan plan = TiledHostSimdPlan::make<T>(pb);
  const std::size_t workspace = plan.workspace_bytes<T>();
  throw_if(workspace > pb.workspace_limit_bytes, "kcnn::conv2d_forward",
           "ConvAlgo::Tiled: the weights packed for its register-blocked host kernel take ",
           workspace, " bytes of workspace, more than the limit of ", pb.workspace_limit_bytes,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  if (mode == LaunchMode::Check || pb.empty()) return workspace;

  auto lease = WorkspaceCache<ExecSpace>::acquire(space, workspace);
  const std::size_t align = HostVector<T>::alignment;
  T* const packed = reinterpret_cast<T*>(
      (reinterpret_cast<std::uintptr_t>(lease.data()) + align - 1) / align * align);
  const TiledHostSimdPackWeights<T, W> pack{op.w,
                                            op.ws,
                                            packed,
                                            static_cast<int>(pb.M),
                                            static_cast<int>(pb.C),
                                            static_cast<int>(pb.R),
                                            static_cast<int>(pb.S),
                                            plan.mb,
                                            plan.cb,
                                            plan.c_blocks};
  Kokkos::parallel_for(
      "kcnn::conv2d::tiled::pack_weights",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, pack.items()),
      pack);

  auto run = [&](auto nv_tag, auto layout_tag) {
    constexpr int NV = decltype(nv_tag)::value;
    constexpr Layout L = decltype(layout_tag)::value;
    using Kernel = TiledHostSimdKernel<T, Y, Bias, NV, L, ExecSpace>;
    alignas(64) static const T zeros[Kernel::max_cb] = {};
    Kernel k{op.x,
             op.xs,
             packed,
             op.bias,
             op.bias ? op.bias_stride : 0,
             op.y,
             op.ys,
             static_cast<int>(pb.N),
             static_cast<int>(pb.H),
             static_cast<int>(pb.W),
             static_cast<int>(pb.C),
             static_cast<int>(pb.M),
             static_cast<int>(pb.R),
             static_cast<int>(pb.S),
             static_cast<int>(pb.P),
             static_cast<int>(pb.Q),
             pb.stride_h,
             pb.stride_w,
             pb.pad_h,
             pb.pad_w,
             pb.dilation_h,
             pb.dilation_w,
             pb.activation,
             plan,
             zeros,
             L == Layout::NHWC && plan.c_blocks == 1 && pb.dilation_w == 1 && op.xs.w == pb.C};
    typename Kernel::Policy policy(space, plan.items, 1);
    policy.set_chunk_size(1);
    policy.set_scratch_size(0, Kokkos::PerTeam(plan.row_buffer_bytes<T>()));
    Kokkos::parallel_for("kcnn::conv2d::tiled::host_simd", policy, k);
  };
  auto with_layout = [&](auto nv_tag) {
    if (pb.layout == Layout::NCHW) {
      run(nv_tag, std::integral_constant<Layout, Layout::NCHW>{});
    } else {
      run(nv_tag, std::integral_constant<Layout, Layout::NHWC>{});
    }
  };
  switch (plan.nv) {
    case 1:
      with_layout(std::integral_constant<int, 1>{});
      break;
    case 2:
      with_layout(std::integral_constant<int, 2>{});
      break;
    default:
      with_layout(std::integral_constant<int, 4>{});
      break;
  }
  return workspace;
}

/// Runs (or in LaunchMode::Check only plans) ConvAlgo::Tiled's register-blocked host
/// kernel; returns its workspace bytes (the packed weights), which must fit
/// pb.workspace_limit_bytes: a smaller budget throws kcnn::Error, in Check mode too, so
/// that Auto passes over Tiled for a call it cannot serve (as over TensorCoreGemm's
/// packed weights) instead of exceeding the budget the caller set.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_tiled_host_simd(const ExecSpace& space, const XView& x, const WView& w,
                                   const BView& bias, const YView& y, const Conv2dProblem& pb,
                                   LaunchMode mode) {
  const bool nchw = pb.layout == Layout::NCHW;
  const auto strides = [&](const auto& v) {
    return nchw ? logical_strides<Layout::NCHW>(v) : logical_strides<Layout::NHWC>(v);
  };
  const TiledHostSimdOperands<view_scalar_t<XView>, view_scalar_t<WView>, view_scalar_t<BView>,
                              view_scalar_t<YView>>
      op{x.data(),
         strides(x),
         w.data(),
         strides(w),
         pb.has_bias ? bias.data() : nullptr,
         pb.has_bias ? static_cast<std::int64_t>(bias.stride(0)) : 0,
         y.data(),
         strides(y)};
  return conv2d_tiled_host_simd_operands(space, op, pb, mode);
}

}  // namespace kcnn::Impl
