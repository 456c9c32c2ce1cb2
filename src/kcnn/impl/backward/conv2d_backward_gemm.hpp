// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/conv2d_backward_gemm.hpp
/// \brief The backward convolutions through the unrolled matrix and KokkosBlas::gemm:
///        the input gradient as a GEMM into unrolled columns folded back by col2im, the
///        weight gradient as im2col followed by a GEMM, the bias gradient as a reduction.
///
/// With K = C*R*S, the weights are the row-major (M, K) matrix W (the unrolled tap order
/// follows their memory order, see unroll_map.hpp), and per image the convolution is
///   NCHW: y_b (M, P*Q) = W * cols_b (K, P*Q),    NHWC: y (pixels, M) = cols (pixels, K) * W^T.
/// Hence
///   backward data:    NCHW cols_b = W^T * dy_b        NHWC cols = dy * W,
///                     then dx = col2im(cols) (the adjoint of im2col);
///   backward weights: NCHW dW += dy_b * cols_b^T      NHWC dW += dy^T * cols,
///                     with cols = im2col(x);  dbias(m) = sum over n, p, q of dy.
/// NCHW keeps one chunk's unrolled matrix image-blocked, (images, K, P*Q), so that every
/// cols_b is a row-major matrix for a per-image GEMM; NHWC uses the (pixels, K) rows of
/// the whole chunk in one GEMM.
///
/// Memory: whole images per chunk, the chunk's scratch (unrolled matrix, plus a
/// row-major copy of dy where dy is not stored row-major) within the budget
/// (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit()), in the cached
/// per-instance workspace (workspace_cache.hpp). Weights (backward data) or the weight
/// gradient (backward weights) that are not stored row-major get a row-major copy in the
/// workspace too. Every GEMM operand is an unmanaged LayoutRight rank-2 View
/// (GemmMatrix), the type the cuBLAS/host-BLAS specializations take, and the GEMMs run
/// on `space`'s stream (impl/blas/gemm.hpp). All index arithmetic outside BLAS is 64-bit.
///
/// 16-bit tensors: the GEMMs run in float on float copies (the weights, each chunk's dy
/// and unrolled x), the unrolled gradient and the weight gradient are float, and each
/// result is rounded once: by col2im (backward data) and by the copy of the float weight
/// gradient into dw (backward weights); the bias gradient sums in float.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../arch/device_traits.hpp"
#include "../blas/gemm.hpp"
#include "../common/index_math.hpp"
#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/unroll_map.hpp"
#include "../common/view_checks.hpp"
#include "../common/workspace_cache.hpp"
#include "../conv2d/im2col_gemm/im2col_gemm.hpp"
#include "../im2col/im2col_kernels.hpp"

namespace kcnn::Impl {

/// Copies images [n0, n0 + count) of a rank-4 strided View to or from a row-major
/// buffer in the View's index order (ToBuffer), or back (!ToBuffer). Used where a GEMM
/// operand (dy, w) or result (dw) is not stored row-major, and to convert 16-bit
/// tensors to or from their float copies (S: the source's type, D: the destination's).
template <class S, class D, bool ToBuffer>
struct RowMajorCopy {
  const S* src;
  D* dst;
  std::int64_t s0, s1, s2, s3;  ///< the strided side's element strides
  std::int64_t e1, e2, e3;      ///< extents of dimensions 1..3
  std::int64_t n0;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t t) const {
    std::int64_t rest = t;
    const std::int64_t i3 = rest % e3;
    rest /= e3;
    const std::int64_t i2 = rest % e2;
    rest /= e2;
    const std::int64_t i1 = rest % e1;
    const std::int64_t i0 = n0 + rest / e1;
    const std::int64_t strided = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
    if constexpr (ToBuffer) {
      dst[t] = D(to_compute(src[strided]));
    } else {
      dst[strided] = src ? from_compute<D>(src[t]) : D(0);  // no source: zero_fill
    }
  }
};

/// Launches a RowMajorCopy of images [n0, n0 + count) of `v` (a rank-4 kernel View)
/// into `buffer` (ToBuffer) or from it; B: the buffer's element type (v's, or float).
template <bool ToBuffer, class ExecSpace, class View, class B>
void row_major_copy(const ExecSpace& space, const char* label, const View& v, B* buffer,
                    std::int64_t n0, std::int64_t count) {
  using V = std::remove_const_t<typename View::value_type>;
  const std::int64_t e1 = v.extent(1), e2 = v.extent(2), e3 = v.extent(3);
  using Copy = std::conditional_t<ToBuffer, RowMajorCopy<V, B, true>, RowMajorCopy<B, V, false>>;
  Copy f{};
  if constexpr (ToBuffer) {
    f.src = v.data(), f.dst = buffer;
  } else {
    f.src = buffer, f.dst = v.data();
  }
  f.s0 = v.stride(0), f.s1 = v.stride(1), f.s2 = v.stride(2), f.s3 = v.stride(3);
  f.e1 = e1, f.e2 = e2, f.e3 = e3, f.n0 = n0;
  Kokkos::parallel_for(label,
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, count * e1 * e2 * e3),
                       f);
}

/// Sets every element of a rank-4 kernel View to zero (Kokkos 3.4's deep_copy cannot
/// fill a LayoutStride View).
template <class ExecSpace, class T>
void zero_fill(const ExecSpace& space, const kernel_output4_t<ExecSpace, T>& v) {
  RowMajorCopy<T, T, false> f{};
  f.s0 = v.stride(0), f.s1 = v.stride(1), f.s2 = v.stride(2), f.s3 = v.stride(3);
  f.e1 = v.extent(1), f.e2 = v.extent(2), f.e3 = v.extent(3), f.n0 = 0;
  f.src = nullptr, f.dst = v.data();
  Kokkos::parallel_for("kcnn::conv2d_backward::zero_fill",
                       Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                           space, 0, static_cast<std::int64_t>(v.size())),
                       f);
}

/// Chunking of a backward convolution: whole images per chunk, the scratch of one chunk
/// (`per_image_bytes` each) plus the fixed parts within the budget.
struct BackwardChunks {
  std::int64_t images = 0;  ///< images per chunk
  std::size_t fixed_bytes = 0, chunk_bytes = 0;
  std::size_t workspace_bytes() const { return fixed_bytes + chunk_bytes; }
};

/// Sizes the chunks (host backends keep them near the last-level cache, like
/// Im2colGemm's); throws kcnn::Error when one image does not fit the budget, and when a
/// GEMM extent exceeds BLAS' 32-bit dimensions.
inline BackwardChunks plan_backward_chunks(const char* op, const Conv2dProblem& pb,
                                           std::size_t fixed_bytes, std::size_t per_image_bytes,
                                           std::size_t limit_bytes, bool host) {
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  const std::int64_t K = pb.C * pb.R * pb.S, PQ = pb.P * pb.Q;
  throw_if(K > int_max || pb.M > int_max || PQ > int_max, op,
           "a GEMM extent exceeds BLAS' 32-bit limit (C*R*S=", K, ", M=", pb.M, ", P*Q=", PQ, ")");
  BackwardChunks plan;
  plan.fixed_bytes = align_up(fixed_bytes) + 2 * kScratchAlign;
  const std::size_t need = plan.fixed_bytes + align_up(per_image_bytes);
  throw_if(limit_bytes < need, op, "the workspace limit of ", limit_bytes,
           " bytes is too small; this problem needs at least ", need, " bytes (", per_image_bytes,
           " per image", fixed_bytes ? " plus the packed weights" : "", ")");
  const std::size_t avail = limit_bytes - plan.fixed_bytes;
  const std::size_t preferred =
      host ? std::min(avail, Im2colGemmTuning{}.host_chunk_target_bytes) : avail;
  const auto fit = static_cast<std::int64_t>(preferred / std::max<std::size_t>(1, per_image_bytes));
  plan.images = std::clamp<std::int64_t>(fit, 1, std::max<std::int64_t>(1, pb.N));
  // BLAS dimensions: the NHWC GEMM has images*P*Q rows.
  plan.images = std::min(plan.images, std::max<std::int64_t>(1, int_max / PQ));
  plan.chunk_bytes = align_up(static_cast<std::size_t>(plan.images) * per_image_bytes);
  return plan;
}

/// dx = the input gradient of y = conv(x, w) for the output gradient dy (the adjoint of
/// the convolution in x). `pb` is validated, N >= 1 and M >= 1.
template <Layout L, class ExecSpace, class DYView, class WView, class DXView>
void conv2d_backward_data_gemm(const ExecSpace& space, const DYView& dy, const WView& w,
                               const DXView& dx, const Conv2dProblem& pb) {
  using T = view_scalar_t<DXView>;
  using G = accumulator_t<T>;  // the GEMMs' type: T, or float for 16-bit T (float copies)
  constexpr bool convert = !std::is_same_v<G, T>;
  using Matrix = GemmMatrix<ExecSpace, G>;
  using ConstMatrix = GemmMatrix<ExecSpace, const G>;
  constexpr const char* op = "kcnn::conv2d_backward_data";
  const auto map = UnrollMap<L>::from(pb);
  const std::int64_t K = map.taps(), M = pb.M, PQ = map.pixels_per_image();
  const bool pack_w = convert || !is_row_major(w), pack_dy = convert || !is_row_major(dy);
  const std::size_t Gb = sizeof(G);
  const BackwardChunks plan =
      plan_backward_chunks(op, pb, pack_w ? std::size_t(M * K) * Gb : 0,
                           std::size_t(K * PQ) * Gb + (pack_dy ? std::size_t(M * PQ) * Gb : 0),
                           pb.workspace_limit_bytes, runs_on_host_v<ExecSpace>);

  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes());
  unsigned char* base = lease.data();
  const G* w_matrix = nullptr;
  if constexpr (!convert) w_matrix = w.data();
  if (pack_w) {
    G* packed = reinterpret_cast<G*>(base);
    row_major_copy<true>(space, "kcnn::conv2d_backward::pack_weights", w, packed, 0, M);
    w_matrix = packed;
  }
  G* cols = reinterpret_cast<G*>(base + plan.fixed_bytes);
  G* dy_packed = cols + plan.images * K * PQ;
  const ConstMatrix W(w_matrix, M, K);
  const G one = 1, zero = 0;

  for (std::int64_t n0 = 0; n0 < pb.N; n0 += plan.images) {
    const std::int64_t n = std::min(plan.images, pb.N - n0);
    const G* dy_chunk = nullptr;
    if constexpr (!convert) dy_chunk = dy.data() + n0 * M * PQ;  // row-major: images follow
    if (pack_dy) {
      row_major_copy<true>(space, "kcnn::conv2d_backward::pack_dy", dy, dy_packed, n0, n);
      dy_chunk = dy_packed;
    }
    if constexpr (L == Layout::NCHW) {
      // cols_b (K, P*Q) = W^T * dy_b (M, P*Q), image by image
      for (std::int64_t b = 0; b < n; ++b)
        gemm(space, "T", "N", one, W, ConstMatrix(dy_chunk + b * M * PQ, M, PQ), zero,
             Matrix(cols + b * K * PQ, K, PQ), gemm_math(pb.math));
      col2im_launch(space, map, cols, UnrolledStorage::nchw_image_blocks(K, PQ, n0), dx.data(),
                    logical_strides<L>(dx), n0, n);
    } else {
      // cols (pixels, K) = dy (pixels, M) * W (M, K)
      gemm(space, "N", "N", one, ConstMatrix(dy_chunk, n * PQ, M), W, zero, Matrix(cols, n * PQ, K),
           gemm_math(pb.math));
      col2im_launch(space, map, cols, UnrolledStorage::nhwc_rows(K, PQ, n0 * PQ), dx.data(),
                    logical_strides<L>(dx), n0, n);
    }
  }
}

/// dbias(m) = sum over (n, p, q) of dy: one team per output channel; its threads take
/// rows (n, p), their vector lanes the row's q (one index division per row, the lanes
/// reading a row together), a team reduction of the rows' sums (deterministic for a
/// given team size). One thread an element with its own index divisions took 1.52 ms
/// a call for LeNet C1's dy at N = 64 (4 channels of 409,600 values, H200, session 47).
template <Layout L, class ExecSpace, class T>
struct BiasGradient {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  kernel_input4_t<ExecSpace, T> dy;
  kernel_view_t<ExecSpace, T*> dbias;
  std::int64_t N, P, Q;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    using Acc = accumulator_t<T>;  // 16-bit: float sums, rounded once
    const std::int64_t m = team.league_rank();
    Acc sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, N * P),
        [&](const std::int64_t row, Acc& acc) {
          const std::int64_t n = row / P, p = row % P;
          Acc row_sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, Q),
              [&](const std::int64_t q, Acc& lane) { lane += to_compute(at<L>(dy, n, m, p, q)); },
              row_sum);
          acc += row_sum;
        },
        sum);
    Kokkos::single(Kokkos::PerTeam(team), [&] { dbias(m) = from_compute<T>(sum); });
  }
};

/// Hosts: dbias(m) = sum over (n, p, q) of dy, one work item per output channel, rows
/// (n, p) in order, each row's values summed into kPartials interleaved partial sums
/// (independent adds the compiler can pipeline, without the per-element index divisions
/// of the team kernel), added in a fixed order at the end: deterministic whatever the
/// thread count. kcnn_perf's conv2d_backward_weights with dbias, team kernel / this
/// (2-core Zen 3, float, session 33): LeNet C3 (dy 74 MB) 116-124 / 87 ms NCHW, 163-167
/// / 124 ms NHWC (there each channel's item still streams all of dy, M values apart).
template <Layout L, class ExecSpace, class T>
struct HostBiasGradient {
  static constexpr int kPartials = 8;
  kernel_input4_t<ExecSpace, T> dy;
  kernel_view_t<ExecSpace, T*> dbias;
  LogicalStrides ys;  ///< n, c: filter m, h: p, w: q
  std::int64_t N, P, Q;

  void operator()(std::int64_t m) const {
    using Acc = accumulator_t<T>;  // 16-bit: float sums, rounded once
    Acc partial[kPartials] = {};
    const auto* base = dy.data() + m * ys.c;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t p = 0; p < P; ++p) {
        const auto* row = base + n * ys.n + p * ys.h;
        std::int64_t q = 0;
        for (; q + kPartials <= Q; q += kPartials)
          for (int k = 0; k < kPartials; ++k)
            partial[k] += to_compute(row[(q + k) * ys.w]);
        for (int k = 0; q < Q; ++q, ++k)
          partial[k] += to_compute(row[q * ys.w]);
      }
    for (int width = kPartials / 2; width > 0; width /= 2)
      for (int k = 0; k < width; ++k)
        partial[k] += partial[k + width];
    dbias(m) = from_compute<T>(partial[0]);
  }
};

template <Layout L, class ExecSpace, class DYView, class DBView>
void conv2d_bias_gradient(const ExecSpace& space, const DYView& dy, const DBView& dbias,
                          const Conv2dProblem& pb) {
  using T = view_scalar_t<DBView>;
  if constexpr (runs_on_host_v<ExecSpace>) {
    using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for(
        "kcnn::conv2d_backward::bias_gradient", Range(space, 0, pb.M),
        HostBiasGradient<L, ExecSpace, T>{dy, dbias, logical_strides<L>(dy), pb.N, pb.P, pb.Q});
  } else {
    using Policy = Kokkos::TeamPolicy<ExecSpace>;
    // 256 threads: 8 rows at a time, 32 lanes each.
    Kokkos::parallel_for("kcnn::conv2d_backward::bias_gradient",
                         Policy(space, static_cast<int>(pb.M), 8, 32),
                         BiasGradient<L, ExecSpace, T>{dy, dbias, pb.N, pb.P, pb.Q});
  }
}

/// dw (and dbias when pb.has_bias) = the weight (bias) gradient of y = conv(x, w) + bias
/// for the output gradient dy. `pb` is validated, M >= 1.
template <Layout L, class ExecSpace, class XView, class DYView, class DWView, class DBView>
void conv2d_backward_weights_gemm(const ExecSpace& space, const XView& x, const DYView& dy,
                                  const DWView& dw, const DBView& dbias, const Conv2dProblem& pb) {
  using T = view_scalar_t<DWView>;
  using G = accumulator_t<T>;  // the GEMMs' type: T, or float for 16-bit T (float copies)
  constexpr bool convert = !std::is_same_v<G, T>;
  using Matrix = GemmMatrix<ExecSpace, G>;
  using ConstMatrix = GemmMatrix<ExecSpace, const G>;
  constexpr const char* op = "kcnn::conv2d_backward_weights";
  const auto map = UnrollMap<L>::from(pb);
  const std::int64_t K = map.taps(), M = pb.M, PQ = map.pixels_per_image();
  const bool pack_dw = convert || !is_row_major(dw), pack_dy = convert || !is_row_major(dy);
  const std::size_t Gb = sizeof(G);
  // Per image: the unrolled x (converting: as stored, then its float copy) and dy's copy.
  const std::size_t cols_bytes = std::size_t(K * PQ) * (Gb + (convert ? sizeof(T) : 0));
  if (pb.N == 0) {  // the gradient of an empty batch is zero: no GEMM to plan
    if (pb.has_bias) conv2d_bias_gradient<L>(space, dy, dbias, pb);
    zero_fill<ExecSpace, T>(space, dw);
    return;
  }
  // Planned (and so checked against the workspace limit) before anything is written.
  const BackwardChunks plan =
      plan_backward_chunks(op, pb, pack_dw ? std::size_t(M * K) * Gb : 0,
                           cols_bytes + (pack_dy ? std::size_t(M * PQ) * Gb : 0),
                           pb.workspace_limit_bytes, runs_on_host_v<ExecSpace>);
  if (pb.has_bias) conv2d_bias_gradient<L>(space, dy, dbias, pb);

  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes());
  unsigned char* base = lease.data();
  G* dw_matrix = nullptr;
  if constexpr (!convert) dw_matrix = dw.data();
  if (pack_dw) dw_matrix = reinterpret_cast<G*>(base);
  G* cols = reinterpret_cast<G*>(base + plan.fixed_bytes);
  G* dy_packed = cols + plan.images * K * PQ;
  // Converting: im2col writes x's values after dy's copy, then they are copied to float.
  T* cols_stored = reinterpret_cast<T*>(dy_packed + plan.images * M * PQ);
  const Matrix dW(dw_matrix, M, K);
  const G one = 1;
  // The chunk's unrolled x as the GEMM's operand (converting: its float copy).
  auto unroll = [&](const UnrolledStorage& cs, std::int64_t n0, std::int64_t n) {
    if constexpr (convert) {
      im2col_launch(space, map, x.data(), logical_strides<L>(x), cols_stored, cs, n0 * PQ, n * PQ);
      Kokkos::parallel_for(
          "kcnn::conv2d_backward::unrolled_to_float",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, n * K * PQ),
          ConvertToCompute<T>{cols_stored, cols});
    } else {
      im2col_launch(space, map, x.data(), logical_strides<L>(x), cols, cs, n0 * PQ, n * PQ);
    }
  };

  for (std::int64_t n0 = 0; n0 < pb.N; n0 += plan.images) {
    const std::int64_t n = std::min(plan.images, pb.N - n0);
    const G* dy_chunk = nullptr;
    if constexpr (!convert) dy_chunk = dy.data() + n0 * M * PQ;
    if (pack_dy) {
      row_major_copy<true>(space, "kcnn::conv2d_backward::pack_dy", dy, dy_packed, n0, n);
      dy_chunk = dy_packed;
    }
    if constexpr (L == Layout::NCHW) {
      unroll(UnrolledStorage::nchw_image_blocks(K, PQ, n0), n0, n);
      // dW (M, K) += dy_b (M, P*Q) * cols_b^T (P*Q, K); the first GEMM overwrites
      // (beta = 0: BLAS does not read dW then, so its old contents never matter)
      for (std::int64_t b = 0; b < n; ++b)
        gemm(space, "N", "T", one, ConstMatrix(dy_chunk + b * M * PQ, M, PQ),
             ConstMatrix(cols + b * K * PQ, K, PQ), G(n0 + b == 0 ? 0 : 1), dW, gemm_math(pb.math));
    } else {
      unroll(UnrolledStorage::nhwc_rows(K, PQ, n0 * PQ), n0, n);
      // dW (M, K) += dy^T (M, pixels) * cols (pixels, K)
      gemm(space, "T", "N", one, ConstMatrix(dy_chunk, n * PQ, M), ConstMatrix(cols, n * PQ, K),
           G(n0 == 0 ? 0 : 1), dW, gemm_math(pb.math));
    }
  }
  if (pack_dw)
    row_major_copy<false>(space, "kcnn::conv2d_backward::unpack_dw", dw, dw_matrix, 0, M);
}

}  // namespace kcnn::Impl
