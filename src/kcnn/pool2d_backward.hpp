// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file pool2d_backward.hpp
/// \brief kcnn::pool2d_backward: the input gradient of max or average pooling.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "impl/backward/pool2d_backward_kernels.hpp"
#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "types.hpp"

namespace kcnn {

/// \brief The gradient of y = pool(x) with respect to x, for the output gradient dy.
///
/// - Max: each dy(n, c, p, q) goes to the input cell that won its window in the forward
///   pass, recomputed from x with pool2d_forward's comparison: the first maximal real
///   cell in row-major window order (ties go to the first), or the last NaN of a window
///   holding NaN. The forward output is therefore not needed.
/// - Average: each dy(n, c, p, q) / divisor goes to every real cell of its window, with
///   pool2d_forward's divisor (count_include_pad).
/// Every element of dx is overwritten: the sum over the windows that cover it (0 for
/// cells no window covers). A gather without atomics, so deterministic with overlapping
/// windows too. Asynchronous on `space`.
///
/// \param space  [in]  execution space instance (stream) to run on
/// \param x      [in]  the forward input, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C);
///                     Max reads it, Average only its extents
/// \param dy     [in]  output gradient with the pooled extents: NCHW (N, C, P, Q) or
///                     NHWC (N, P, Q, C)
/// \param dx     [out] input gradient, the extents of x
/// \param params [in]  the forward pooling's parameters; activation must be Identity
///                     (apply kcnn::activation_backward to dy first; a pooling bias has
///                     the gradient sum(dy) per channel)
///
/// Views hold float, double, half_t or kcnn::bfloat16 (the same for all; inputs may be
/// const; 16-bit gradients are summed in float and rounded once), are contiguous and
/// accessible from `ExecSpace`; dx must not overlap x or dy. N = 0 or C = 0 is a no-op.
/// \throws kcnn::Error, before anything is written, on every parameter pool2d_forward
///         rejects, a non-Identity activation, dy extents other than the pooled extents
///         of x, dx extents other than x's, non-contiguous Views, or overlap.
template <class ExecSpace, class XView, class DYView, class DXView>
void pool2d_backward(const ExecSpace& space, const XView& x, const DYView& dy, const DXView& dx,
                     const Pool2dParams& params) {
  Impl::static_check_tensor<ExecSpace, XView, 4, false>();
  Impl::static_check_tensor<ExecSpace, DYView, 4, false>();
  Impl::static_check_tensor<ExecSpace, DXView, 4, true>();
  using T = Impl::view_scalar_t<DXView>;
  static_assert(std::is_same_v<Impl::view_scalar_t<XView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<DYView>, T>,
                "kcnn::pool2d_backward: x, dy and dx must have the same scalar type");
  constexpr const char* op = "kcnn::pool2d_backward";
  Impl::throw_if(params.activation != Activation::Identity, op, "params.activation is ",
                 to_string(params.activation),
                 "; apply kcnn::activation_backward to dy first and pass Activation::Identity");
  Impl::check_extents_fit(op, "dx", dx);
  const Impl::Pool2dProblem pb = Impl::make_pool2d_geometry(op, x, dy, params, "dy");
  Impl::check_output_extents(op, dx, params.layout, "C", pb.N, pb.C, pb.H, pb.W,
                             " (the extents of x)", "dx");
  Impl::check_contiguous(op, "dx", dx);
  Impl::check_no_overlap(op, "dx", dx, "x", x);
  Impl::check_no_overlap(op, "dx", dx, "dy", dy);

  Impl::ProfilingRegion region(std::string(op) + "[" + to_string(params.mode) + "]");
  if (pb.empty()) return;
  Impl::pool2d_backward_launch<ExecSpace, T>(space, Impl::as_kernel_view<ExecSpace, false>(x),
                                             Impl::as_kernel_view<ExecSpace, false>(dy),
                                             Impl::as_kernel_view<ExecSpace, true>(dx), pb);
}

}  // namespace kcnn
