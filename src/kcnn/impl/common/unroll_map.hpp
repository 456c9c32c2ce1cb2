// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/unroll_map.hpp
/// \brief THE index mapping of the unrolled ("im2col") matrix of a convolution: which
///        input element (n, c, h, w) sits at which row and column. im2col, col2im,
///        Im2colGemm and any implicit-GEMM kernel use these helpers and nothing else,
///        so that they cannot disagree.
///
/// Vocabulary (layout-neutral):
///  - k, the *tap* index, runs over the GEMM reduction dimension K = C*R*S. Its
///    (c, r, s) decomposition follows the weight tensor's memory order, so that the
///    weights are the (M, K) matrix as they are stored:
///      NCHW: k = (c*R + r)*S + s     (w is (M, C, R, S))
///      NHWC: k = (r*S + s)*C + c     (w is (M, R, S, C), channel innermost)
///  - j, the *pixel* index, runs over output pixels: j = (n*P + p)*Q + q.
///  - The unrolled matrix holds element (k, j) = x(n, c, h, w) with
///      h = p*stride_h - pad_h + r*dilation_h,  w = q*stride_w - pad_w + s*dilation_w,
///    or 0 where (h, w) falls into the zero padding.
///  - Storage ("UnrolledStorage"): NCHW keeps it as a (K, pixels) matrix (row k,
///    column j), NHWC as a (pixels, K) matrix (row j, column k, channel innermost).
///
/// Everything is 64-bit by default. The decompositions are templates on the index type
/// so that a kernel that has proven its indices fit in 32 bits can divide in 32 bits
/// (much cheaper on GPUs); addresses are always formed in 64 bits.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../types.hpp"
#include "index_math.hpp"
#include "problem.hpp"
#include "tensor_access.hpp"

namespace kcnn::Impl {

/// floor(a / b) for b > 0 and a of either sign. b == 1 (unit strides and dilations, most
/// layers) skips the 64-bit division: host loops call this per tap.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return b == 1 ? a : (a >= 0 ? a : a - (b - 1)) / b;
}

/// Half-open index range [begin, end); empty when begin >= end.
struct IndexRange {
  std::int64_t begin = 0, end = 0;
  KOKKOS_INLINE_FUNCTION constexpr bool empty() const { return begin >= end; }
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t size() const { return empty() ? 0 : end - begin; }
};

/// A filter tap: input channel c, filter row r, filter column s.
template <class I = std::int64_t>
struct Tap {
  I c, r, s;
};

/// An output pixel: image n, output row p, output column q.
template <class I = std::int64_t>
struct Pixel {
  I n, p, q;
};

/// What an implicit-GEMM gather needs of tap k, computed once per tap (not per pixel):
/// the unrolled element (k, j) is x[pixel.x_offset + tap.x_offset] when the window row
/// pixel.h + tap.dh and column pixel.w + tap.dw lie inside the image, else 0 (see
/// UnrollMap::gather_tap / gather_pixel / gathers_inside).
struct GatherTap {
  std::int64_t x_offset = 0;    ///< c*xs.c + dh*xs.h + dw*xs.w (may be negative)
  std::int64_t w_offset = 0;    ///< c*ws.c + r*ws.h + s*ws.w: the weight is w[m*ws.n + w_offset]
  std::int32_t dh = 0, dw = 0;  ///< row_offset(r), col_offset(s)
};

/// The pixel half of a gather: output pixel j's window origin (without padding).
struct GatherPixel {
  std::int64_t x_offset = 0;  ///< n*xs.n + p*stride_h*xs.h + q*stride_w*xs.w
  std::int32_t h = 0, w = 0;  ///< p*stride_h, q*stride_w
};

/// Marks a tap beyond K or a pixel beyond the last one: every gather through it reads
/// zero. Geometries an implicit-GEMM kernel accepts keep H + 2*pad_h and W + 2*pad_w
/// below kGatherExtentLimit, so that a window coordinate plus this offset stays
/// negative and no sum of two int32 coordinates overflows.
inline constexpr std::int32_t kGatherOutside = -(1 << 30);
inline constexpr std::int64_t kGatherExtentLimit = std::int64_t(1) << 29;

KOKKOS_INLINE_FUNCTION constexpr GatherTap outside_tap() {
  return {0, 0, kGatherOutside, kGatherOutside};
}
KOKKOS_INLINE_FUNCTION constexpr GatherPixel outside_pixel() {
  return {0, kGatherOutside, kGatherOutside};
}

/// The unrolled-matrix index mapping of one convolution geometry, for layout L.
/// Trivially copyable: pass it to kernels by value.
template <Layout L>
struct UnrollMap {
  std::int64_t C = 0, H = 0, W = 0;  ///< input channels, height, width
  std::int64_t R = 0, S = 0;         ///< filter height, width
  std::int64_t P = 0, Q = 0;         ///< output height, width
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;

  /// The map of a validated problem (only its geometry is read; N and M are not).
  static UnrollMap from(const Conv2dProblem& pb) {
    UnrollMap m;
    m.C = pb.C, m.H = pb.H, m.W = pb.W, m.R = pb.R, m.S = pb.S, m.P = pb.P, m.Q = pb.Q;
    m.stride_h = pb.stride_h, m.stride_w = pb.stride_w;
    m.pad_h = pb.pad_h, m.pad_w = pb.pad_w;
    m.dilation_h = pb.dilation_h, m.dilation_w = pb.dilation_w;
    return m;
  }

  // --- extents --------------------------------------------------------------------

  /// K = C*R*S, the number of taps (the GEMM reduction extent).
  KOKKOS_INLINE_FUNCTION std::int64_t taps() const { return C * R * S; }
  /// P*Q, the pixels of one image.
  KOKKOS_INLINE_FUNCTION std::int64_t pixels_per_image() const { return P * Q; }

  // --- tap index k <-> (c, r, s) ---------------------------------------------------

  /// (c, r, s) of tap k; see the file comment for the order. An implicit-GEMM kernel
  /// calls this once per k tile (or keeps the digits incrementally), not per MAC.
  template <class I>
  KOKKOS_INLINE_FUNCTION Tap<I> decompose_k(I k) const {
    Tap<I> t;
    if constexpr (L == Layout::NCHW) {
      const I rs = static_cast<I>(R * S);
      t.c = k / rs;
      const I rem = k - t.c * rs;
      t.r = rem / static_cast<I>(S);
      t.s = rem - t.r * static_cast<I>(S);
    } else {
      const I sc = static_cast<I>(S * C);
      t.r = k / sc;
      const I rem = k - t.r * sc;
      t.s = rem / static_cast<I>(C);
      t.c = rem - t.s * static_cast<I>(C);
    }
    return t;
  }

  KOKKOS_INLINE_FUNCTION std::int64_t compose_k(std::int64_t c, std::int64_t r,
                                                std::int64_t s) const {
    if constexpr (L == Layout::NCHW) {
      return (c * R + r) * S + s;
    } else {
      return (r * S + s) * C + c;
    }
  }

  /// Distance in k between consecutive channels (same r, s): R*S in NCHW, 1 in NHWC.
  KOKKOS_INLINE_FUNCTION std::int64_t k_stride_c() const { return L == Layout::NCHW ? R * S : 1; }
  /// Distance in k between consecutive filter columns s (same c, r): 1 in NCHW, C in NHWC.
  KOKKOS_INLINE_FUNCTION std::int64_t k_stride_s() const { return L == Layout::NCHW ? 1 : C; }
  /// Distance in k between consecutive filter rows r (same c, s): S in NCHW, S*C in NHWC.
  KOKKOS_INLINE_FUNCTION std::int64_t k_stride_r() const { return L == Layout::NCHW ? S : S * C; }

  // --- pixel index j <-> (n, p, q) -------------------------------------------------

  template <class I>
  KOKKOS_INLINE_FUNCTION Pixel<I> decompose_pixel(I j) const {
    Pixel<I> px;
    const I pq = static_cast<I>(P * Q);
    px.n = j / pq;
    const I rem = j - px.n * pq;
    px.p = rem / static_cast<I>(Q);
    px.q = rem - px.p * static_cast<I>(Q);
    return px;
  }

  KOKKOS_INLINE_FUNCTION std::int64_t compose_pixel(std::int64_t n, std::int64_t p,
                                                    std::int64_t q) const {
    return (n * P + p) * Q + q;
  }

  // --- (pixel, tap) -> input coordinate --------------------------------------------

  /// Offset of filter row r within the input window: input_h(p, r) = p*stride_h + row_offset(r).
  /// Hoist it (and col_offset) per tap; the per-pixel part is a multiply-add.
  KOKKOS_INLINE_FUNCTION std::int64_t row_offset(std::int64_t r) const {
    return r * dilation_h - pad_h;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t col_offset(std::int64_t s) const {
    return s * dilation_w - pad_w;
  }
  /// Input row h that output row p reads through filter row r (may lie in the padding).
  KOKKOS_INLINE_FUNCTION std::int64_t input_h(std::int64_t p, std::int64_t r) const {
    return p * stride_h + row_offset(r);
  }
  /// Input column w that output column q reads through filter column s.
  KOKKOS_INLINE_FUNCTION std::int64_t input_w(std::int64_t q, std::int64_t s) const {
    return q * stride_w + col_offset(s);
  }
  /// Whether input row h is inside the image (else it is zero padding). One unsigned
  /// compare: negative values wrap to huge ones.
  KOKKOS_INLINE_FUNCTION bool row_inside(std::int64_t h) const {
    return static_cast<std::uint64_t>(h) < static_cast<std::uint64_t>(H);
  }
  KOKKOS_INLINE_FUNCTION bool col_inside(std::int64_t w) const {
    return static_cast<std::uint64_t>(w) < static_cast<std::uint64_t>(W);
  }
  KOKKOS_INLINE_FUNCTION bool inside(std::int64_t h, std::int64_t w) const {
    return row_inside(h) && col_inside(w);
  }

  // --- validity ranges: lets loops run without per-element bounds tests -----------

  /// The output rows p in [0, P) for which filter row r reads inside the image.
  KOKKOS_INLINE_FUNCTION IndexRange valid_p(std::int64_t r) const {
    return valid_outputs(row_offset(r), stride_h, H, P);
  }
  /// The output columns q in [0, Q) for which filter column s reads inside the image.
  KOKKOS_INLINE_FUNCTION IndexRange valid_q(std::int64_t s) const {
    return valid_outputs(col_offset(s), stride_w, W, Q);
  }
  /// The filter rows r in [0, R) that read inside the image from output row p.
  KOKKOS_INLINE_FUNCTION IndexRange valid_r(std::int64_t p) const {
    return valid_outputs(p * stride_h - pad_h, dilation_h, H, R);
  }
  /// The filter columns s in [0, S) that read inside the image from output column q.
  KOKKOS_INLINE_FUNCTION IndexRange valid_s(std::int64_t q) const {
    return valid_outputs(q * stride_w - pad_w, dilation_w, W, S);
  }

  // --- gathers: (pixel, tap) -> input element, split in a per-tap and a per-pixel part

  /// Tap k's part of every gather (I: the index type to divide in).
  template <class I>
  KOKKOS_INLINE_FUNCTION GatherTap gather_tap(I k, const LogicalStrides& xs,
                                              const LogicalStrides& ws) const {
    return gather_tap_at(decompose_k(k), xs, ws);
  }
  /// The same for tap (c, r, s).
  template <class I>
  KOKKOS_INLINE_FUNCTION GatherTap gather_tap_at(const Tap<I>& t, const LogicalStrides& xs,
                                                 const LogicalStrides& ws) const {
    GatherTap g;
    g.dh = static_cast<std::int32_t>(row_offset(t.r));
    g.dw = static_cast<std::int32_t>(col_offset(t.s));
    g.x_offset = std::int64_t(t.c) * xs.c + std::int64_t(g.dh) * xs.h + std::int64_t(g.dw) * xs.w;
    g.w_offset = std::int64_t(t.c) * ws.c + std::int64_t(t.r) * ws.h + std::int64_t(t.s) * ws.w;
    return g;
  }

  /// Pixel j's part of every gather.
  template <class I>
  KOKKOS_INLINE_FUNCTION GatherPixel gather_pixel(I j, const LogicalStrides& xs) const {
    return gather_pixel_at(decompose_pixel(j), xs);
  }
  /// The same for output pixel (n, p, q).
  template <class I>
  KOKKOS_INLINE_FUNCTION GatherPixel gather_pixel_at(const Pixel<I>& px,
                                                     const LogicalStrides& xs) const {
    GatherPixel g;
    g.h = static_cast<std::int32_t>(std::int64_t(px.p) * stride_h);
    g.w = static_cast<std::int32_t>(std::int64_t(px.q) * stride_w);
    g.x_offset = std::int64_t(px.n) * xs.n + std::int64_t(g.h) * xs.h + std::int64_t(g.w) * xs.w;
    return g;
  }

  /// Whether the gather (pixel, tap) reads inside the image (else the element is 0).
  KOKKOS_FORCEINLINE_FUNCTION bool gathers_inside(const GatherPixel& px,
                                                  const GatherTap& tap) const {
    return static_cast<std::uint32_t>(px.h + tap.dh) < static_cast<std::uint32_t>(H) &&
           static_cast<std::uint32_t>(px.w + tap.dw) < static_cast<std::uint32_t>(W);
  }

  // --- inverse: input coordinate -> the output that reads it (col2im) -------------

  /// The output row p with input_h(p, r) == h, or -1 if no output row reads input
  /// row h through filter row r.
  KOKKOS_INLINE_FUNCTION std::int64_t output_p(std::int64_t h, std::int64_t r) const {
    return inverse(h - row_offset(r), stride_h, P);
  }
  /// The output column q with input_w(q, s) == w, or -1.
  KOKKOS_INLINE_FUNCTION std::int64_t output_q(std::int64_t w, std::int64_t s) const {
    return inverse(w - col_offset(s), stride_w, Q);
  }

 private:
  /// {i in [0, count) : 0 <= i*step + offset < extent}, step > 0.
  KOKKOS_INLINE_FUNCTION static IndexRange valid_outputs(std::int64_t offset, std::int64_t step,
                                                         std::int64_t extent, std::int64_t count) {
    std::int64_t lo = floor_div(-offset + step - 1, step);  // ceil(-offset / step)
    std::int64_t hi = floor_div(extent - 1 - offset, step) + 1;
    lo = lo < 0 ? 0 : lo;
    hi = hi > count ? count : hi;
    return {lo, hi < lo ? lo : hi};
  }
  /// i with i*step == t and 0 <= i < count, else -1.
  KOKKOS_INLINE_FUNCTION static std::int64_t inverse(std::int64_t t, std::int64_t step,
                                                     std::int64_t count) {
    if (t < 0) return -1;
    const std::int64_t i = step == 1 ? t : t / step;
    return (i * step == t && i < count) ? i : -1;
  }
};

/// Taps k_start, k_start + step, k_start + 2*step, ... of layout L, walked without a
/// division per step: (c, r, s) are the digits of k in the tap order of the file
/// comment (NCHW: s fastest, then r, then c; NHWC: c, then s, then r), kept by a
/// GridWalker's carries. Two integer divisions per tap were most of TensorCoreGemm's
/// per-stage instructions (SASS, H100).
template <Layout L>
struct TapWalker {
  GridWalker digits;  ///< (a, b, c) = NCHW (c, r, s), NHWC (r, s, c)
  int k, step, K;

  KOKKOS_INLINE_FUNCTION TapWalker(const UnrollMap<L>& map, int k_start, int step_, int K_)
      : digits(k_start, step_, static_cast<int>(L == Layout::NCHW ? map.S : map.C),
               static_cast<int>(L == Layout::NCHW ? map.R : map.S)),
        k(k_start),
        step(step_),
        K(K_) {}

  KOKKOS_INLINE_FUNCTION void advance() {
    digits.advance();
    k += step;
  }
  /// The current tap (c, r, s), for k < K.
  KOKKOS_INLINE_FUNCTION Tap<int> current() const {
    return L == Layout::NCHW ? Tap<int>{digits.a, digits.b, digits.c}
                             : Tap<int>{digits.c, digits.a, digits.b};
  }
  /// The current tap's part of every gather; outside_tap() once k >= K.
  KOKKOS_INLINE_FUNCTION GatherTap tap(const UnrollMap<L>& map, const LogicalStrides& xs,
                                       const LogicalStrides& ws) const {
    if (k >= K) return outside_tap();
    return map.gather_tap_at(current(), xs, ws);
  }
};

/// Where element (k, pixel j) of an unrolled matrix lives in memory, as a linear
/// function of (k, n, pq) with pq = p*Q + q:
///   offset = base + k*k_stride + n*n_stride + pq*pq_stride.
/// One struct covers the public layouts and the chunked workspaces:
///  - NCHW (K, cols) row-major, columns for images [n0, n0 + n):
///      k_stride = cols, n_stride = P*Q, pq_stride = 1, base = -n0*P*Q
///  - NCHW image-blocked (n, K, P*Q), what per-image GEMMs read:
///      k_stride = P*Q, n_stride = K*P*Q, pq_stride = 1, base = -n0*K*P*Q
///  - NHWC (rows, K) row-major, rows for pixels [j0, j0 + rows):
///      k_stride = 1, n_stride = P*Q*K, pq_stride = K, base = -j0*K
struct UnrolledStorage {
  std::int64_t base = 0, k_stride = 0, n_stride = 0, pq_stride = 0;

  KOKKOS_INLINE_FUNCTION std::int64_t offset(std::int64_t k, std::int64_t n,
                                             std::int64_t pq) const {
    return base + k * k_stride + n * n_stride + pq * pq_stride;
  }

  /// NCHW (K, columns) row-major whose column 0 is pixel j0 (columns run over pixels).
  static UnrolledStorage nchw_columns(std::int64_t columns, std::int64_t pixels_per_image,
                                      std::int64_t j0) {
    return {-j0, columns, pixels_per_image, 1};
  }
  /// NCHW image-blocked (images, K, P*Q) whose block 0 is image n0.
  static UnrolledStorage nchw_image_blocks(std::int64_t K, std::int64_t pixels_per_image,
                                           std::int64_t n0) {
    return {-n0 * K * pixels_per_image, pixels_per_image, K * pixels_per_image, 1};
  }
  /// NHWC (rows, K) row-major whose row 0 is pixel j0.
  static UnrolledStorage nhwc_rows(std::int64_t K, std::int64_t pixels_per_image, std::int64_t j0) {
    return {-j0 * K, 1, pixels_per_image * K, K};
  }
};

}  // namespace kcnn::Impl
