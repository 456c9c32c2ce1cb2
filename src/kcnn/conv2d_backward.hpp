// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file conv2d_backward.hpp
/// \brief The backward convolutions: kcnn::conv2d_backward_data (the gradient with
///        respect to the input) and kcnn::conv2d_backward_weights (with respect to the
///        filters and the bias), for training with kcnn::conv2d_forward.
///
/// Both are the gradients of the *linear* convolution y = conv(x, w) + bias: a layer
/// y = act(conv(x, w) + bias) first turns its output gradient into the gradient of the
/// pre-activation with kcnn::activation_backward, and a fused pooling is undone with
/// kcnn::pool2d_backward. The shapes, parameters and their rules are conv2d_forward's,
/// groups included: a grouped layer's gradients are computed group by group, on the
/// groups' slices of the tensors (each dx channel, filter and bias belongs to one group),
/// except a depthwise layer's (groups = C > 1, M a multiple of C), which kernels of its
/// own compute in one pass over the tensors (impl/backward/depthwise/).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "impl/backward/backward_launch.hpp"
#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/conv2d/prebuilt_instances.hpp"  // the backward launches' prebuilt instances
#include "types.hpp"
#include "workspace.hpp"

namespace kcnn {

/// \brief The gradient of y = conv(x, w) with respect to x: dx = conv^T(dy, w), the
///        adjoint of the convolution in x (<conv(x, w), dy> = <x, dx> for every x).
///
/// Overwrites every element of dx (elements that no window reads get 0). At unit stride
/// (with padding at most (R - 1) x dilation) dx is a forward convolution of dy with the
/// rotated, transposed filters: for 3x3 undilated filters ConvAlgo::Winograd computes it
/// where Auto picks Winograd for that forward convolution and its workspace fits
/// (impl/backward/conv2d_backward_data_winograd.hpp; float, on GPUs and AVX2 and AVX-512
/// CPUs with enough channels); else on CPUs, float and double, Tiled's register-blocked kernel
/// (impl/backward/conv2d_backward_data_direct.hpp); otherwise per chunk of images
/// a GEMM of the weights with dy into unrolled columns, folded back into dx by col2im
/// (impl/backward/conv2d_backward_gemm.hpp). Depthwise layers (groups = C > 1, M = k C):
/// one pass over dy, ConvAlgo::Depthwise's forward kernels on the rotated filters at
/// unit stride with multiplier 1, else a gather kernel
/// (impl/backward/depthwise/depthwise_backward_data.hpp). Deterministic. Asynchronous on
/// `space`, like any Kokkos kernel.
///
/// \param space  [in]  execution space instance (stream) to run on
/// \param dy     [in]  output gradient, rank 4: NCHW (N, M, P, Q) or NHWC (N, P, Q, M)
/// \param w      [in]  filters, rank 4: NCHW (M, C/G, R, S) or NHWC (M, R, S, C/G),
///                     G = params.groups
/// \param dx     [out] input gradient, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C)
/// \param params [in]  stride, padding, dilation, groups, layout and workspace limit of
///                     the forward convolution; activation must be Identity and pool unset
///                     (see the file comment); algo is ignored.
///
/// P and Q must be what conv2d_forward derives from H, W and params. Views hold float,
/// double, half_t or kcnn::bfloat16 (the same for all; inputs may be const; 16-bit
/// tensors: float GEMMs on float copies, dx rounded once), are contiguous (LayoutRight or
/// LayoutLeft) and accessible from `ExecSpace`; dx must not overlap dy or w. Scratch:
/// the cached workspace of kcnn/workspace.hpp, within the budget. An empty dx (N, C, H or
/// W = 0) is a no-op; M = 0 gives dx = 0.
/// \throws kcnn::Error, before anything is written, on every condition conv2d_forward
///         rejects (with dx in x's role, dy in y's), on a non-Identity activation or a
///         pool, and on the GEMM path (where the direct kernel does not serve the call or
///         its packed weights do not fit the workspace limit) when the workspace limit
///         cannot hold one image's unrolled matrix and when a GEMM extent (C*R*S, M or
///         P*Q) is 2^31 or more (BLAS' 32-bit dimensions).
template <class ExecSpace, class DYView, class WView, class DXView>
void conv2d_backward_data(const ExecSpace& space, const DYView& dy, const WView& w,
                          const DXView& dx, const Conv2dParams& params) {
  Impl::static_check_tensor<ExecSpace, DYView, 4, false>();
  Impl::static_check_tensor<ExecSpace, WView, 4, false>();
  Impl::static_check_tensor<ExecSpace, DXView, 4, true>();
  using T = Impl::view_scalar_t<DXView>;
  static_assert(std::is_same_v<Impl::view_scalar_t<DYView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<WView>, T>,
                "kcnn::conv2d_backward_data: dy, w and dx must have the same scalar type");
  constexpr const char* op = "kcnn::conv2d_backward_data";
  const Impl::Conv2dProblem pb = Impl::make_conv2d_backward_problem(
      op, dx, w, 0, dy, params, Impl::ConvTensorNames{"dx", "w", "bias", "dy"});
  Impl::check_no_overlap(op, "dx", dx, "dy", dy);
  Impl::check_no_overlap(op, "dx", dx, "w", w);

  Impl::ProfilingRegion region(op);
  // Nothing to write. Checked before any loop: with W = 0 the rows (n, h) still number
  // N*H, which can be 2^32 (the fuzzer's finding).
  if (pb.input_size() == 0) return;
  const auto dxk = Impl::as_kernel_view<ExecSpace, true>(dx);
  if (pb.M == 0) {  // no filters: y does not depend on x
    Impl::zero_fill<ExecSpace, T>(space, dxk);
    return;
  }
  Impl::conv2d_backward_data_launch<ExecSpace, T>(space, Impl::as_kernel_view<ExecSpace, false>(dy),
                                                  Impl::as_kernel_view<ExecSpace, false>(w), dxk,
                                                  pb);
}

/// \brief The gradients of y = conv(x, w) + bias with respect to w and bias:
///        dw = sum over the batch of dy correlated with x (the adjoint of the convolution
///        in w: <conv(x, w), dy> = <w, dw> for every w), dbias(m) = sum of dy(., m, ., .).
///
/// Overwrites dw and dbias (no accumulation into earlier gradients). On CPUs (float,
/// double), where its workspace (dy repacked, plus one dw-sized buffer, or one per range
/// of output rows where dy is large against dw) fits the limit: a register-blocked kernel
/// reading x in place (impl/backward/conv2d_backward_weights_direct.hpp); otherwise per
/// chunk of images im2col of x, then GEMMs that accumulate dw
/// (impl/backward/conv2d_backward_gemm.hpp). dbias by a per-channel reduction. Depthwise
/// layers (groups = C > 1, M = k C): one pass over x and dy, dw and dbias summed by
/// chunks of output rows whose partial sums wait in the workspace (none where it does
/// not fit: then one chunk; impl/backward/depthwise/depthwise_backward_weights.hpp).
/// Deterministic for a given backend and workspace limit (the blocking, a function of the
/// problem, orders the sums; the direct kernel's result does not depend on the thread
/// count either). Asynchronous on `space`.
///
/// \param space  [in]  execution space instance (stream) to run on
/// \param x      [in]  the forward input, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C)
/// \param dy     [in]  output gradient, rank 4: NCHW (N, M, P, Q) or NHWC (N, P, Q, M)
/// \param dw     [out] filter gradient, rank 4: NCHW (M, C/G, R, S) or NHWC (M, R, S,
///                     C/G), G = params.groups
/// \param dbias  [out] rank 1, extent M, or extent 0 when the layer has no bias
/// \param params [in]  as for conv2d_backward_data
///
/// Views hold float, double, half_t or kcnn::bfloat16 (the same for all; 16-bit tensors:
/// float GEMMs on float copies, dw accumulated in float over the chunks and rounded once,
/// dbias summed in float), are contiguous and accessible from `ExecSpace`; dw and dbias
/// must not overlap x, dy or each other. N = 0 gives dw = 0 and dbias = 0; M = 0 is a
/// no-op.
/// \throws kcnn::Error, before anything is written, as conv2d_backward_data (with dw in
///         w's role), and on a dbias extent other than 0 or M.
template <class ExecSpace, class XView, class DYView, class DWView, class DBView>
void conv2d_backward_weights(const ExecSpace& space, const XView& x, const DYView& dy,
                             const DWView& dw, const DBView& dbias, const Conv2dParams& params) {
  Impl::static_check_tensor<ExecSpace, XView, 4, false>();
  Impl::static_check_tensor<ExecSpace, DYView, 4, false>();
  Impl::static_check_tensor<ExecSpace, DWView, 4, true>();
  Impl::static_check_tensor<ExecSpace, DBView, 1, true>();
  using T = Impl::view_scalar_t<DWView>;
  static_assert(std::is_same_v<Impl::view_scalar_t<XView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<DYView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<DBView>, T>,
                "kcnn::conv2d_backward_weights: x, dy, dw and dbias must have the same scalar "
                "type");
  constexpr const char* op = "kcnn::conv2d_backward_weights";
  Impl::check_extents_fit(op, "dbias", dbias);
  const Impl::Conv2dProblem pb =
      Impl::make_conv2d_backward_problem(op, x, dw, static_cast<std::int64_t>(dbias.extent(0)), dy,
                                         params, Impl::ConvTensorNames{"x", "dw", "dbias", "dy"});
  Impl::check_contiguous(op, "dbias", dbias);
  Impl::check_no_overlap(op, "dw", dw, "x", x);
  Impl::check_no_overlap(op, "dw", dw, "dy", dy);
  Impl::check_no_overlap(op, "dbias", dbias, "x", x);
  Impl::check_no_overlap(op, "dbias", dbias, "dy", dy);
  Impl::check_no_overlap(op, "dbias", dbias, "dw", dw);

  Impl::ProfilingRegion region(op);
  if (pb.M == 0) return;
  Impl::conv2d_backward_weights_launch<ExecSpace, T>(
      space, Impl::as_kernel_view<ExecSpace, false>(x), Impl::as_kernel_view<ExecSpace, false>(dy),
      Impl::as_kernel_view<ExecSpace, true>(dw),
      Impl::kernel_view_t<ExecSpace, T*>(dbias.data(),
                                         Kokkos::LayoutStride(dbias.extent(0), dbias.stride(0))),
      pb);
}

/// \brief conv2d_backward_weights for a layer without bias (no bias gradient).
template <class ExecSpace, class XView, class DYView, class DWView>
void conv2d_backward_weights(const ExecSpace& space, const XView& x, const DYView& dy,
                             const DWView& dw, const Conv2dParams& params) {
  using NoBias = Kokkos::View<Impl::view_scalar_t<DWView>*, typename DWView::memory_space>;
  conv2d_backward_weights(space, x, dy, dw, NoBias(), params);
}

}  // namespace kcnn
