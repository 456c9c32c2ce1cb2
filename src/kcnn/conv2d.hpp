// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file conv2d.hpp
/// \brief kcnn::conv2d_forward: y = activation(conv(x, w) + bias), several algorithms
///        behind one call.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>

#include "impl/conv2d_im2col_gemm.hpp"
#include "impl/conv2d_reference.hpp"
#include "impl/problem.hpp"
#include "impl/profiling.hpp"
#include "impl/view_checks.hpp"
#include "types.hpp"
#include "workspace.hpp"

namespace kcnn {

namespace Impl {

/// The algorithm `Auto` stands for on this problem: still Reference (Im2colGemm is much
/// faster but holds scratch memory; choosing it by shape is left to a later change).
inline ConvAlgo select_conv2d_algo(const Conv2dProblem& /*pb*/) {
  return ConvAlgo::Reference;
}

template <class ExecSpace, class XView, class WView, class BView, class YView>
constexpr void static_check_conv2d_views() {
  static_check_tensor<ExecSpace, XView, 4, false>();
  static_check_tensor<ExecSpace, WView, 4, false>();
  static_check_tensor<ExecSpace, BView, 1, false>();
  static_check_tensor<ExecSpace, YView, 4, true>();
  using T = view_scalar_t<YView>;
  static_assert(std::is_same_v<view_scalar_t<XView>, T> &&
                    std::is_same_v<view_scalar_t<WView>, T> &&
                    std::is_same_v<view_scalar_t<BView>, T>,
                "kcnn::conv2d_forward: x, w, bias and y must have the same scalar type");
}

}  // namespace Impl

/// \brief 2-D convolution forward: y = activation(conv(x, w) + bias).
///
/// Asynchronous on `space`, like any Kokkos kernel: it does not fence. All checks happen
/// before anything is written; on invalid input it throws kcnn::Error (a
/// std::invalid_argument) naming the offending values and leaves y untouched.
///
/// \tparam ExecSpace  Kokkos execution space the kernels run on
/// \param space  [in]  execution space instance (stream) to run on
/// \param x      [in]  input, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C)
/// \param w      [in]  filters, rank 4: NCHW (M, C, R, S) or NHWC (M, R, S, C)
/// \param bias   [in]  rank 1, extent M, or extent 0 for no bias
/// \param y      [out] output, rank 4: NCHW (N, M, P, Q) or NHWC (N, P, Q, M), with
///                     P = (H + 2*pad_h - dilation_h*(R-1) - 1)/stride_h + 1, Q likewise
/// \param params [in]  stride, padding, dilation, layout, activation, algorithm, and
///                     the scratch budget of algorithms that need scratch
///
/// ConvAlgo::Im2colGemm unrolls the input chunk by chunk into cached scratch memory
/// within a budget (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit();
/// see kcnn/workspace.hpp) and multiplies with KokkosBlas::gemm (cuBLAS on CUDA, bound
/// to `space`'s stream for the call; the host BLAS on host backends, where OpenBLAS is
/// set to one thread while kcnn's own threads run the GEMMs concurrently, and restored
/// afterwards). Its scratch allows one call at a time per execution-space instance:
/// concurrent calls from several host threads on one instance take turns.
///
/// Views hold float or double (the same for all; inputs may be const), are contiguous
/// (LayoutRight or LayoutLeft) and accessible from `ExecSpace`; y must not overlap x, w
/// or bias. An empty batch (N = 0) or no filters (M = 0) is a valid no-op.
/// \throws kcnn::Error on any invalid argument; also for algorithms not implemented yet.
template <class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                    const YView& y, const Conv2dParams& params) {
  Impl::static_check_conv2d_views<ExecSpace, XView, WView, BView, YView>();
  constexpr const char* op = "kcnn::conv2d_forward";
  const Impl::Conv2dProblem pb = Impl::make_conv2d_problem(op, x, w, bias, y, params);

  const ConvAlgo algo = params.algo == ConvAlgo::Auto ? Impl::select_conv2d_algo(pb) : params.algo;
  Impl::throw_if(algo != ConvAlgo::Reference && algo != ConvAlgo::Im2colGemm, op,
                 "ConvAlgo::", to_string(algo),
                 " is not implemented yet (available: Reference, Im2colGemm, Auto)");

  Impl::ProfilingRegion region(std::string(op) + "[" + to_string(algo) + "]");
  if (pb.empty()) return;
  if (algo == ConvAlgo::Im2colGemm) {
    const std::size_t limit =
        params.workspace_limit_bytes != 0 ? params.workspace_limit_bytes : workspace_limit();
    Impl::conv2d_im2col_gemm(space, x, w, bias, y, pb, limit);
  } else {
    Impl::conv2d_reference(space, x, w, bias, y, pb);
  }
}

/// \brief conv2d_forward without bias: y = activation(conv(x, w)).
template <class ExecSpace, class XView, class WView, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x, const WView& w, const YView& y,
                    const Conv2dParams& params) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  conv2d_forward(space, x, w, NoBias(), y, params);
}

}  // namespace kcnn
