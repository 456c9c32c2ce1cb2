// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file im2col.hpp
/// \brief kcnn::im2col (unroll the receptive fields of a batch slice into a matrix) and
///        kcnn::col2im (its adjoint: fold such a matrix back into images).
///
/// The unrolled matrix ("cols") of a convolution with a kernel_h x kernel_w (R x S)
/// window, output extents P x Q and the batch slice [batch_begin, batch_begin + n):
///  - NCHW: shape (C*R*S, n*P*Q). Row c*R*S + r*S + s, column (b*P + p)*Q + q, where
///    b = image - batch_begin. Then conv = W(M, C*R*S) * cols per image.
///  - NHWC: shape (n*P*Q, R*S*C). Row (b*P + p)*Q + q, column (r*S + s)*C + c (the
///    channel innermost, like the NHWC weights (M, R, S, C)). Then conv = cols * W^T.
/// Entry = x(image, c, h, w) with h = p*stride_h - pad_h + r*dilation_h and
/// w = q*stride_w - pad_w + s*dilation_w, or 0 where (h, w) is in the zero padding.
/// P and Q follow Conv2dParams' formula. The mapping is defined once, in
/// impl/common/unroll_map.hpp, and shared with the convolution algorithms.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/tensor_access.hpp"
#include "impl/common/unroll_map.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/im2col/im2col_kernels.hpp"
#include "types.hpp"

namespace kcnn {

namespace Impl {

template <class ExecSpace, class ImageView, class ColsView, bool ImageWritable>
constexpr void static_check_unroll_views(const char* /*op*/) {
  static_check_tensor<ExecSpace, ImageView, 4, ImageWritable>();
  static_assert(Kokkos::is_view<ColsView>::value, "kcnn: cols must be a Kokkos::View");
  static_assert(static_cast<int>(ColsView::rank) == 2, "kcnn: cols must be a rank-2 View");
  static_assert(std::is_same_v<view_scalar_t<ColsView>, view_scalar_t<ImageView>>,
                "kcnn: x and cols must have the same scalar type");
  static_assert(ImageWritable || !std::is_const_v<typename ColsView::value_type>,
                "kcnn::im2col: cols is the output and must not have a const value type");
  static_assert(std::is_same_v<typename ColsView::array_layout, Kokkos::LayoutRight>,
                "kcnn: cols must be Kokkos::LayoutRight (the unrolled matrix is row-major); "
                "note that Kokkos' default layout on GPUs is LayoutLeft");
  static_assert(is_accessible_from_v<ExecSpace, ColsView>,
                "kcnn: cols' memory space is not accessible from the execution space");
}

/// Validates an im2col/col2im call and returns the problem (N, C, H, W, R, S, P, Q) and
/// the slice size n. Throws kcnn::Error before anything is written.
template <class XView, class ColsView>
Conv2dProblem check_unroll_call(const char* op, const XView& x, int kernel_h, int kernel_w,
                                const Conv2dParams& params, const ColsView& cols,
                                std::int64_t batch_begin, std::int64_t& n) {
  check_extents_fit(op, "cols", cols);
  const Conv2dProblem pb = make_unroll_problem(op, x, kernel_h, kernel_w, params);
  const std::int64_t K = pb.C * pb.R * pb.S, PQ = pb.P * pb.Q;
  const bool nchw = params.layout == Layout::NCHW;
  const auto k_extent = static_cast<std::int64_t>(nchw ? cols.extent(0) : cols.extent(1));
  const auto pix_extent = static_cast<std::int64_t>(nchw ? cols.extent(1) : cols.extent(0));
  throw_if(k_extent != K || pix_extent % PQ != 0, op, "wrong cols extents ", extents_text(cols),
           ": with C=", pb.C, ", a ", pb.R, "x", pb.S, " window and a ", pb.P, "x", pb.Q,
           " output, ", to_string(params.layout), " cols must be ",
           nchw ? "(C*R*S, n*P*Q) = (" : "(n*P*Q, R*S*C) = (n*", nchw ? K : PQ,
           nchw ? ", n*" : ", ", nchw ? PQ : K, ") for a batch count n");
  n = pix_extent / PQ;
  throw_if(batch_begin < 0 || batch_begin > pb.N || n > pb.N - batch_begin, op, "batch slice [",
           batch_begin, ", ", batch_begin + n, ") (batch_begin=", batch_begin, ", n=", n,
           " images from cols' extents) is outside x's batch [0, ", pb.N, ")");
  check_contiguous(op, "cols", cols);
  return pb;
}

template <Layout L, class ExecSpace, class T>
void im2col_dispatch(const ExecSpace& space, const Conv2dProblem& pb, const T* x,
                     const LogicalStrides& xs, T* cols, std::int64_t batch_begin, std::int64_t n,
                     KernelVariant variant) {
  const auto map = UnrollMap<L>::from(pb);
  const std::int64_t PQ = map.pixels_per_image(), K = map.taps(), j0 = batch_begin * PQ;
  const UnrolledStorage cs = L == Layout::NCHW ? UnrolledStorage::nchw_columns(n * PQ, PQ, j0)
                                               : UnrolledStorage::nhwc_rows(K, PQ, j0);
  im2col_launch(space, map, x, xs, cols, cs, j0, n * PQ, variant);
}

template <Layout L, class ExecSpace, class T>
void col2im_dispatch(const ExecSpace& space, const Conv2dProblem& pb, const T* cols, T* x,
                     const LogicalStrides& xs, std::int64_t batch_begin, std::int64_t n,
                     KernelVariant variant) {
  const auto map = UnrollMap<L>::from(pb);
  const std::int64_t PQ = map.pixels_per_image(), K = map.taps(), j0 = batch_begin * PQ;
  const UnrolledStorage cs = L == Layout::NCHW ? UnrolledStorage::nchw_columns(n * PQ, PQ, j0)
                                               : UnrolledStorage::nhwc_rows(K, PQ, j0);
  col2im_launch(space, map, cols, cs, x, xs, batch_begin, n, variant);
}

/// im2col with a choice of kernel variant (tests force the GPU-shaped kernels).
template <class ExecSpace, class XView, class ColsView>
void im2col(const ExecSpace& space, const XView& x, int kernel_h, int kernel_w,
            const Conv2dParams& params, const ColsView& cols, std::int64_t batch_begin,
            KernelVariant variant) {
  static_check_unroll_views<ExecSpace, XView, ColsView, false>("kcnn::im2col");
  constexpr const char* op = "kcnn::im2col";
  std::int64_t n = 0;
  const Conv2dProblem pb =
      check_unroll_call(op, x, kernel_h, kernel_w, params, cols, batch_begin, n);
  check_no_overlap(op, "cols", cols, "x", x);
  ProfilingRegion region(op);
  if (n == 0) return;
  using T = view_scalar_t<XView>;
  const T* xp = x.data();
  T* cp = cols.data();
  if (params.layout == Layout::NCHW) {
    im2col_dispatch<Layout::NCHW>(space, pb, xp, logical_strides<Layout::NCHW>(x), cp, batch_begin,
                                  n, variant);
  } else {
    im2col_dispatch<Layout::NHWC>(space, pb, xp, logical_strides<Layout::NHWC>(x), cp, batch_begin,
                                  n, variant);
  }
}

/// col2im with a choice of kernel variant.
template <class ExecSpace, class ColsView, class XView>
void col2im(const ExecSpace& space, const ColsView& cols, int kernel_h, int kernel_w,
            const Conv2dParams& params, const XView& x, std::int64_t batch_begin,
            KernelVariant variant) {
  static_check_unroll_views<ExecSpace, XView, ColsView, true>("kcnn::col2im");
  constexpr const char* op = "kcnn::col2im";
  std::int64_t n = 0;
  const Conv2dProblem pb =
      check_unroll_call(op, x, kernel_h, kernel_w, params, cols, batch_begin, n);
  check_no_overlap(op, "x", x, "cols", cols);
  ProfilingRegion region(op);
  if (n == 0) return;
  using T = view_scalar_t<XView>;
  const T* cp = cols.data();
  T* xp = x.data();
  if (params.layout == Layout::NCHW) {
    col2im_dispatch<Layout::NCHW>(space, pb, cp, xp, logical_strides<Layout::NCHW>(x), batch_begin,
                                  n, variant);
  } else {
    col2im_dispatch<Layout::NHWC>(space, pb, cp, xp, logical_strides<Layout::NHWC>(x), batch_begin,
                                  n, variant);
  }
}

}  // namespace Impl

/// \brief Unrolls the receptive fields of the images [batch_begin, batch_begin + n) of x
///        into the matrix `cols` (see the file comment for its shape and order).
///
/// n is read from cols' extents: NCHW cols (C*R*S, n*P*Q), NHWC cols (n*P*Q, R*S*C).
/// Padding is zero-filled; stride and dilation are honoured. Every entry of cols is
/// written. Asynchronous on `space` (no fence). Checks everything before writing and
/// throws kcnn::Error (leaving cols untouched) on: invalid stride/padding/dilation or
/// kernel extents, a window that does not fit the padded input, cols extents that do
/// not match, a batch slice outside x's batch, non-contiguous Views, or cols sharing
/// memory with x. n = 0 (cols with no pixels) is a valid no-op.
///
/// \param space       execution space instance (stream) to run on
/// \param x           [in]  rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C); float,
///                          double, half_t or kcnn::bfloat16 (col2im sums those in
///                          float and rounds once), may be const; LayoutRight or
///                          LayoutLeft, contiguous
/// \param kernel_h    window height R (>= 1)
/// \param kernel_w    window width S (>= 1)
/// \param params      stride, padding, dilation and layout; groups must divide C but
///                    do not change the matrix (a grouped convolution multiplies group
///                    g's filters with the rows of its channels); activation, algo and
///                    the workspace limit are ignored
/// \param cols        [out] rank 2, LayoutRight (row-major), same scalar as x
/// \param batch_begin first image of x to unroll (>= 0)
template <class ExecSpace, class XView, class ColsView>
void im2col(const ExecSpace& space, const XView& x, int kernel_h, int kernel_w,
            const Conv2dParams& params, const ColsView& cols, std::int64_t batch_begin = 0) {
  Impl::im2col(space, x, kernel_h, kernel_w, params, cols, batch_begin, Impl::KernelVariant::Auto);
}

/// \brief The adjoint of im2col: folds the unrolled matrix `cols` of the images
///        [batch_begin, batch_begin + n) back into x, summing every entry into the
///        input element it was copied from.
///
/// Overwrites: each x element of the slice becomes the sum of all cols entries that
/// im2col would copy from it (0 for elements that no window covers, such as a border
/// that a stride skips); images outside the slice are not touched. (To accumulate into
/// an existing gradient, col2im into a scratch tensor and add.) Entries of cols that
/// im2col fills with padding zeros are ignored. So <im2col(x), c> = <x, col2im(c)>.
/// Deterministic (a gather, no atomics). Same shapes, rules, errors and asynchrony as
/// im2col, with cols the input (may be const) and x the output; x must not overlap
/// cols.
template <class ExecSpace, class ColsView, class XView>
void col2im(const ExecSpace& space, const ColsView& cols, int kernel_h, int kernel_w,
            const Conv2dParams& params, const XView& x, std::int64_t batch_begin = 0) {
  Impl::col2im(space, cols, kernel_h, kernel_w, params, x, batch_begin, Impl::KernelVariant::Auto);
}

}  // namespace kcnn
