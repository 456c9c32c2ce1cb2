// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/conv2d_backward_weights_direct.hpp
/// \brief conv2d_backward_weights on CPUs around a register-blocked micro-kernel: the
///        weight gradient as a GEMM whose reduction runs over the batch's output pixels,
///        read in place from x (no unrolled matrix).
///
///   dw(m, c, r, s) = sum over n, p, q of dy(n, m, p, q) x(n, c, p sh - ph + r dh, q sw - pw + s
///   dw)
///
/// The register block is forward Tiled's (host_simd_kernel.hpp) with the roles turned: NV
/// vectors of filters m (MB = NV x lanes) times U channels c of one tap (r, s); per output
/// pixel it loads the pixel's NV vectors of dy and broadcasts the U input values the tap
/// reads there, U x NV FMAs. dy is first packed as [m block][n][p][q][MB] (filters past M
/// zero) so that those loads are aligned and contiguous in both layouts. Pixels are
/// walked in chunks of whole output rows whose packed dy (about kChunkPixels x MB values)
/// stays in L1/L2 while the register blocks pass over it; per row, only the columns
/// whose tap lies inside x are visited (rows whose tap row lies outside are skipped).
///
/// Two ways to split the work (BackwardWeightsScheme), chosen by the memory traffic they
/// cause (BackwardWeightsPlan::make):
///  - PerTap: a work item owns one block of the gradient (filter block x tap x channel
///    block) and streams all of its filter block's dy once; the sums wait between chunks
///    in a buffer laid out [m block][r][s][c][MB]. dy is read R S x (channel blocks)
///    times: cheap where dy is small against dw (the 256- and 512-channel layers).
///  - AllTaps: a work item owns a range of output rows (a part) of one filter block and
///    runs every tap and channel over each chunk while the chunk's dy sits in cache, so
///    dy is read once; each part sums into its own dw-sized buffer, and the parts are
///    added in part order when dw is written. Where dy is large against dw (LeNet C3:
///    74 MB of dy for 49 taps, the 64-channel 56x56 layer).
/// The parts are a function of the problem alone, never of the thread count: the
/// summation order, hence the result, is fixed.
///
/// Serves float and double where the extents fit int and the packed dy plus the buffers
/// fit the workspace limit; the caller runs the GEMM path otherwise.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../arch/device_traits.hpp"
#include "../arch/host_simd.hpp"
#include "../arch/macros.hpp"
#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/view_checks.hpp"
#include "../common/workspace_cache.hpp"
#include "../conv2d/tiled/host_simd_kernel.hpp"

namespace kcnn::Impl {

/// How the direct kernel splits its work (see the file comment); Auto chooses by traffic.
enum class BackwardWeightsScheme { Auto, PerTap, AllTaps };

/// The blocking and work split of one backward-weights call.
struct BackwardWeightsPlan {
  /// Output pixels per chunk (rounded to whole output rows): their packed dy, 256 x 32
  /// floats = 32 KB on AVX2, stays in L1/L2 while the item's channel groups pass. (64,
  /// 128, 256 and 512 measured alike on the ResNet 3x3 layers, 2-core Zen 3, session 32:
  /// within this VM's spread.)
  static constexpr std::int64_t kChunkPixels = 256;
  /// At least this many work items where the channels (PerTap) or the output rows
  /// (AllTaps) allow it, so that both cores (and more) find work on layers with few
  /// filter blocks and taps (1x1 layers).
  static constexpr std::int64_t kMinItems = 32;
  int nv = 1, mb = 0, m_blocks = 0;
  int cb = 0, c_blocks = 0;
  bool all_taps = false;   ///< the AllTaps scheme
  std::int64_t parts = 1;  ///< AllTaps: output-row ranges per filter block (PerTap: 1)
  std::int64_t rows_per_part = 0;
  std::int64_t items = 0;
  std::int64_t chunk_rows = 1;  ///< output rows (n, p) per chunk
  /// Packed dy, and one part's gradient buffer ([m block][r][s][c][MB]; saturated).
  std::size_t dy_elems = 0, grad_elems = 0;

  template <class T>
  static BackwardWeightsPlan make(const Conv2dProblem& pb,
                                  BackwardWeightsScheme scheme = BackwardWeightsScheme::Auto) {
    using B = TiledHostSimdBlocking<T>;
    BackwardWeightsPlan p;
    p.nv = pb.M > 2 * B::lanes ? 4 : (pb.M > B::lanes ? 2 : 1);
    p.mb = p.nv * B::lanes;
    p.m_blocks = static_cast<int>((pb.M + p.mb - 1) / p.mb);
    p.chunk_rows = std::max<std::int64_t>(1, kChunkPixels / std::max<std::int64_t>(1, pb.Q));
    const auto size = [](std::int64_t e) { return static_cast<std::size_t>(e); };
    p.dy_elems = tiled_host_simd_saturating_product(
        {size(p.m_blocks), size(pb.N), size(pb.P), size(pb.Q), size(p.mb)});
    p.grad_elems = tiled_host_simd_saturating_product(
        {size(p.m_blocks), size(pb.R), size(pb.S), size(pb.C), size(p.mb)});
    // PerTap: channel blocks of whole register blocks, enough of them for kMinItems.
    const std::int64_t base_items = std::int64_t(p.m_blocks) * pb.R * pb.S;
    const std::int64_t unit = B::pixels(p.nv);  // channels per register block
    const std::int64_t split = std::max<std::int64_t>(1, (kMinItems + base_items - 1) / base_items);
    std::int64_t cb = (pb.C + split - 1) / split;
    cb = std::max<std::int64_t>(std::min<std::int64_t>(unit, pb.C), (cb + unit - 1) / unit * unit);
    p.cb = static_cast<int>(std::max<std::int64_t>(1, cb));
    p.c_blocks = static_cast<int>((pb.C + p.cb - 1) / p.cb);
    p.items = base_items * p.c_blocks;
    // AllTaps: parts of at least one chunk, enough of them for kMinItems.
    const std::int64_t rows = pb.N * pb.P;
    const std::int64_t chunks = std::max<std::int64_t>(1, rows / p.chunk_rows);
    std::int64_t parts =
        std::clamp<std::int64_t>((kMinItems + p.m_blocks - 1) / p.m_blocks, 1, chunks);
    const std::int64_t rows_per_part = (rows + parts - 1) / parts;
    parts = (rows + rows_per_part - 1) / rows_per_part;
    // Values streamed from memory: PerTap reads a filter block's dy once per item;
    // AllTaps reads dy once and writes, then reads, a gradient buffer per part. AllTaps
    // where it streams at most a quarter of PerTap's values. Measured (2-core Zen 3, AVX2,
    // float, session 33, PerTap / AllTaps time): LeNet C3 (traffic ratio 49) 3.8-4.0x,
    // 3x3 64 channels 56x56 (ratio 10) 1.12x NCHW, 1.77x NHWC; 128 channels 28x28 (ratio
    // 2.3) 0.95-0.97x; 256 channels 14x14 (0.7) 0.88-0.90x.
    const double per_tap_traffic = double(p.dy_elems) * double(pb.R * pb.S) * p.c_blocks;
    const double all_taps_traffic = double(p.dy_elems) + 2.0 * double(parts) * double(p.grad_elems);
    p.all_taps = scheme == BackwardWeightsScheme::AllTaps ||
                 (scheme == BackwardWeightsScheme::Auto && 4 * all_taps_traffic <= per_tap_traffic);
    if (p.all_taps) {
      p.cb = static_cast<int>(pb.C);
      p.c_blocks = 1;
      p.parts = parts;
      p.rows_per_part = rows_per_part;
      p.items = parts * p.m_blocks;
    }
    return p;
  }
  /// The workspace: packed dy and the parts' gradient buffers, each aligned (saturated).
  template <class T>
  std::size_t workspace_bytes() const {
    constexpr std::size_t align = HostVector<T>::alignment;
    constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
    constexpr std::size_t limit = max - 2 * align;
    const std::size_t buffers =
        tiled_host_simd_saturating_product({grad_elems, static_cast<std::size_t>(parts)});
    const std::size_t a = dy_elems > limit / sizeof(T) ? max : dy_elems * sizeof(T);
    const std::size_t b = buffers > limit / sizeof(T) ? max : buffers * sizeof(T);
    return a > limit || b > limit - a ? max : a + b + 2 * align;
  }
};

/// Whether the direct kernel can take `pb` with element type T and work split `scheme`
/// (extents and block indices within int; the workspace is checked by the caller).
template <class T>
bool backward_weights_direct_applies(const Conv2dProblem& pb,
                                     BackwardWeightsScheme scheme = BackwardWeightsScheme::Auto) {
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  for (std::int64_t e : {pb.N, pb.C, pb.H, pb.W, pb.M, pb.R, pb.S, pb.P, pb.Q})
    if (e > int_max) return false;
  const BackwardWeightsPlan plan = BackwardWeightsPlan::make<T>(pb, scheme);
  return plan.items <= int_max && std::int64_t(plan.m_blocks) * plan.mb <= int_max;
}

/// Packs dy as [m block][n][p][q][mb] (filters past M zero); one work item per (m block,
/// n, p) row.
template <class T>
struct BackwardWeightsPackDy {
  const T* dy;
  LogicalStrides ys;  ///< n, c: filter m, h: p, w: q
  T* packed;
  int N, M, P, Q, mb, m_blocks;

  void operator()(std::int64_t row) const {
    const std::int64_t np = row % (std::int64_t(N) * P);
    const int mblk = static_cast<int>(row / (std::int64_t(N) * P));
    const std::int64_t n = np / P;
    const int p = static_cast<int>(np % P);
    const int m0 = mblk * mb, count = std::min(mb, M - m0);
    T* out = packed + row * Q * mb;
    const T* src = dy + n * ys.n + std::int64_t(p) * ys.h + std::int64_t(m0) * ys.c;
    for (int q = 0; q < Q; ++q, out += mb, src += ys.w) {
      if (ys.c == 1) {
        KCNN_HOST_SIMD
        for (int mm = 0; mm < count; ++mm)
          out[mm] = src[mm];
      } else {
        for (int mm = 0; mm < count; ++mm)
          out[mm] = src[std::int64_t(mm) * ys.c];
      }
      for (int mm = count; mm < mb; ++mm)
        out[mm] = T(0);
    }
  }
};

/// The gradient of one work item: filter block x tap (r, s) x channel block.
template <class T, int NV>
struct BackwardWeightsKernel {
  using Vector = HostVector<T>;
  using V = typename Vector::type;
  static constexpr int lanes = Vector::lanes;
  static constexpr int MB = NV * lanes;
  static constexpr int UR = TiledHostSimdBlocking<T>::pixels(NV);

  const T* x;
  LogicalStrides xs;
  const T* packed_dy;  ///< [m block][n][p][q][MB]
  T* grad;             ///< [m block][r][s][c][MB]
  int N, C, H, W, R, S, P, Q;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  BackwardWeightsPlan plan;

  void operator()(std::int64_t item) const {
    if (plan.all_taps) return all_taps_item(item);
    const int cblk = static_cast<int>(item % plan.c_blocks);
    const std::int64_t tap = item / plan.c_blocks % (std::int64_t(R) * S);
    const int mblk = static_cast<int>(item / plan.c_blocks / (std::int64_t(R) * S));
    const int r = static_cast<int>(tap / S), s = static_cast<int>(tap % S);
    const int c0 = cblk * plan.cb, cc = std::min(plan.cb, C - c0);
    T* const out = grad + ((std::int64_t(mblk) * R + r) * S + s) * C * MB + std::int64_t(c0) * MB;
    const TapWindow tw = tap_window(r, s);
    const std::int64_t rows = std::int64_t(N) * P;
    const T* const dy_block = packed_dy + std::int64_t(mblk) * rows * Q * MB;
    for (std::int64_t row0 = 0; row0 < rows; row0 += plan.chunk_rows) {
      const std::int64_t row1 = std::min(rows, row0 + plan.chunk_rows);
      const bool first = row0 == 0;
      for (int c = 0; c < cc; c += UR)
        channels_of_count<UR>(std::min(UR, cc - c), c0 + c, out + std::int64_t(c) * MB, first, row0,
                              row1, tw, dy_block);
    }
  }

  /// AllTaps: output rows of part item / m_blocks, filter block item % m_blocks, every tap
  /// and channel per chunk, into the part's own gradient buffer.
  void all_taps_item(std::int64_t item) const {
    const int mblk = static_cast<int>(item % plan.m_blocks);
    const std::int64_t part = item / plan.m_blocks;
    const std::int64_t rows = std::int64_t(N) * P;
    const std::int64_t row_begin = part * plan.rows_per_part;
    const std::int64_t row_end = std::min(rows, row_begin + plan.rows_per_part);
    T* const out = grad + static_cast<std::int64_t>(plan.grad_elems) * part +
                   std::int64_t(mblk) * R * S * C * MB;
    const T* const dy_block = packed_dy + std::int64_t(mblk) * rows * Q * MB;
    for (std::int64_t row0 = row_begin; row0 < row_end; row0 += plan.chunk_rows) {
      const std::int64_t row1 = std::min(row_end, row0 + plan.chunk_rows);
      const bool first = row0 == row_begin;
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          const TapWindow tw = tap_window(r, s);
          T* const tap_out = out + (std::int64_t(r) * S + s) * C * MB;
          for (int c = 0; c < C; c += UR)
            channels_of_count<UR>(std::min(UR, C - c), c, tap_out + std::int64_t(c) * MB, first,
                                  row0, row1, tw, dy_block);
        }
    }
  }

  /// Where tap (r, s) reads x: the offsets of its row and column from p sh and q sw, and
  /// the columns q whose tap column q sw - pw + s dw lies inside x, [q_lo, q_hi).
  struct TapWindow {
    std::int64_t offset_h, offset_w, q_lo, q_hi;
  };
  TapWindow tap_window(int r, int s) const {
    TapWindow t;
    t.offset_w = std::int64_t(s) * dilation_w - pad_w;
    t.q_lo = std::clamp<std::int64_t>(t.offset_w >= 0 ? 0 : (-t.offset_w + stride_w - 1) / stride_w,
                                      0, Q);
    const std::int64_t last = W - 1 - t.offset_w;  // q sw <= last
    t.q_hi = last < 0 ? t.q_lo : std::clamp<std::int64_t>(last / stride_w + 1, t.q_lo, Q);
    t.offset_h = std::int64_t(r) * dilation_h - pad_h;
    return t;
  }

  template <int U>
  KCNN_HOST_FORCEINLINE void channels_of_count(int count, int c, T* out, bool first,
                                               std::int64_t row0, std::int64_t row1,
                                               const TapWindow& tw, const T* dy_block) const {
    if constexpr (U > 1) {
      if (count < U)
        return channels_of_count<U - 1>(count, c, out, first, row0, row1, tw, dy_block);
    }
    channels<U>(c, out, first, row0, row1, tw, dy_block);
  }

  /// Channels c .. c + U - 1 of the item's tap over output rows row0 .. row1 - 1: sums
  /// into out (U x MB; added to it unless `first`).
  template <int U>
  KCNN_HOST_FORCEINLINE void channels(int c, T* out, bool first, std::int64_t row0,
                                      std::int64_t row1, const TapWindow& tw,
                                      const T* dy_block) const {
    const std::int64_t q_lo = tw.q_lo, q_hi = tw.q_hi, offset_h = tw.offset_h,
                       offset_w = tw.offset_w;
    V acc[U][NV];
    for (int u = 0; u < U; ++u)
      for (int v = 0; v < NV; ++v)
        acc[u][v] = first ? Vector::zero() : Vector::load(out + u * MB + v * lanes);
    const std::int64_t x_step = std::int64_t(stride_w) * xs.w;
    const std::int64_t cs = xs.c;
    for (std::int64_t row = row0; row < row1; ++row) {
      const std::int64_t n = row / P;
      const int p = static_cast<int>(row % P);
      const std::int64_t ih = std::int64_t(p) * stride_h + offset_h;
      if (ih < 0 || ih >= H || q_lo >= q_hi) continue;
      const T* xq =
          x + n * xs.n + ih * xs.h + (q_lo * stride_w + offset_w) * xs.w + std::int64_t(c) * cs;
      const T* dq = dy_block + (row * Q + q_lo) * MB;
      for (std::int64_t q = q_lo; q < q_hi; ++q, xq += x_step, dq += MB) {
        V in[U];
        for (int u = 0; u < U; ++u)
          in[u] = Vector::broadcast(xq + u * cs);
        for (int v = 0; v < NV; ++v) {
          V g = Vector::load(dq + v * lanes);
          Vector::keep_in_register(g);
          for (int u = 0; u < U; ++u)
            acc[u][v] = Vector::fma(in[u], g, acc[u][v]);
        }
      }
    }
    for (int u = 0; u < U; ++u)
      for (int v = 0; v < NV; ++v)
        Vector::store(out + u * MB + v * lanes, acc[u][v]);
  }
};

/// Writes dw from the gradient buffers ([part][m block][r][s][c][MB]), adding the parts
/// in part order (a fixed order: the result does not depend on the thread count); one
/// work item per filter.
template <class T>
struct BackwardWeightsStore {
  const T* grad;
  T* dw;
  LogicalStrides ws;  ///< n: filter, c: channel, h: r, w: s
  int C, R, S, mb;
  std::int64_t parts, part_elems;

  void operator()(std::int64_t m) const {
    const std::int64_t mblk = m / mb, mm = m % mb;
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s) {
        const T* src = grad + ((mblk * R + r) * S + s) * std::int64_t(C) * mb + mm;
        T* dst = dw + m * ws.n + std::int64_t(r) * ws.h + std::int64_t(s) * ws.w;
        for (int c = 0; c < C; ++c) {
          T sum = src[std::int64_t(c) * mb];
          for (std::int64_t k = 1; k < parts; ++k)
            sum += src[k * part_elems + std::int64_t(c) * mb];
          dst[std::int64_t(c) * ws.c] = sum;
        }
      }
  }
};

/// Computes dw of conv2d_backward_weights' problem `pb` (N > 0, M > 0) with the direct
/// kernel and returns true where it serves it (see the file comment); returns false,
/// having written nothing, where it does not. The bias gradient is the caller's.
/// `scheme` forces a work split (tests and measurements); Auto is the library's choice.
template <class ExecSpace, class XView, class DYView, class DWView>
bool conv2d_backward_weights_direct(const ExecSpace& space, const XView& x, const DYView& dy,
                                    const DWView& dw, const Conv2dProblem& pb,
                                    BackwardWeightsScheme scheme = BackwardWeightsScheme::Auto) {
  using T = view_scalar_t<DWView>;
  if constexpr (!runs_on_host_v<ExecSpace> || !tiled_host_simd_types_v<T>) {
    return false;
  } else {
    if (!backward_weights_direct_applies<T>(pb, scheme)) return false;
    const BackwardWeightsPlan plan = BackwardWeightsPlan::make<T>(pb, scheme);
    const std::size_t workspace = plan.workspace_bytes<T>();
    if (workspace > pb.workspace_limit_bytes) return false;
    const bool nchw = pb.layout == Layout::NCHW;
    const auto strides = [&](const auto& v) {
      return nchw ? logical_strides<Layout::NCHW>(v) : logical_strides<Layout::NHWC>(v);
    };
    auto lease = WorkspaceCache<ExecSpace>::acquire(space, workspace);
    constexpr std::size_t align = HostVector<T>::alignment;
    const auto aligned = [&](std::uintptr_t a) { return (a + align - 1) / align * align; };
    T* const packed_dy =
        reinterpret_cast<T*>(aligned(reinterpret_cast<std::uintptr_t>(lease.data())));
    T* const grad =
        reinterpret_cast<T*>(aligned(reinterpret_cast<std::uintptr_t>(packed_dy + plan.dy_elems)));
    using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    const int N = static_cast<int>(pb.N), M = static_cast<int>(pb.M), C = static_cast<int>(pb.C);
    const int P = static_cast<int>(pb.P), Q = static_cast<int>(pb.Q);
    const int R = static_cast<int>(pb.R), S = static_cast<int>(pb.S);
    Kokkos::parallel_for("kcnn::conv2d_backward_weights::pack_dy",
                         Range(space, 0, std::int64_t(plan.m_blocks) * N * P),
                         BackwardWeightsPackDy<T>{dy.data(), strides(dy), packed_dy, N, M, P, Q,
                                                  plan.mb, plan.m_blocks});
    auto run = [&](auto nv_tag) {
      constexpr int NV = decltype(nv_tag)::value;
      using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>,
                                         Kokkos::IndexType<std::int64_t>>;
      Policy policy(space, 0, plan.items);
      policy.set_chunk_size(1);
      Kokkos::parallel_for("kcnn::conv2d_backward_weights::direct", policy,
                           BackwardWeightsKernel<T, NV>{
                               x.data(), strides(x), packed_dy, grad, N, C, static_cast<int>(pb.H),
                               static_cast<int>(pb.W), R, S, P, Q, pb.stride_h, pb.stride_w,
                               pb.pad_h, pb.pad_w, pb.dilation_h, pb.dilation_w, plan});
    };
    switch (plan.nv) {
      case 1:
        run(std::integral_constant<int, 1>{});
        break;
      case 2:
        run(std::integral_constant<int, 2>{});
        break;
      default:
        run(std::integral_constant<int, 4>{});
        break;
    }
    Kokkos::parallel_for(
        "kcnn::conv2d_backward_weights::store", Range(space, 0, pb.M),
        BackwardWeightsStore<T>{grad, dw.data(), strides(dw), C, R, S, plan.mb, plan.parts,
                                static_cast<std::int64_t>(plan.grad_elems)});
    return true;
  }
}

}  // namespace kcnn::Impl
