// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/conv2d_backward_data_winograd.hpp
/// \brief conv2d_backward_data through ConvAlgo::Winograd: for 3 x 3 filters at stride 1
///        without dilation, dx is the forward convolution of dy with the filters rotated by
///        180 degrees and transposed (conv2d_backward_data_direct.hpp derives it), which
///        Winograd computes with a quarter (F(4x4)) or 0.44x (F(2x2)) of the multiplies.
///
/// Winograd's filter transform reads w' (C, M, 3, 3), w'(c, m, r, s) = w(m, c, 2 - r,
/// 2 - s), through strides from w's last tap (WinogradFilterSource): no copy of w. The
/// path is taken where ConvAlgo::Auto picks Winograd for that forward convolution (the
/// rules measured for it: select/TUNING.md), where its accuracy holds (the same tile rule
/// as the forward convolution's, on the reduction over the M filters) and where its
/// workspace fits the limit; elsewhere conv2d_backward_data runs its other paths. The
/// padding of the forward convolution, 2 - pad, must be 0, 1 or 2: pad <= 2.
#pragma once

#include <Kokkos_Core.hpp>

#include <exception>

#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/view_checks.hpp"
#include "../conv2d/select/auto_rules.hpp"
#include "../conv2d/winograd/winograd.hpp"
#include "conv2d_backward_data_direct.hpp"

namespace kcnn::Impl {

/// Whether conv2d_backward_data takes Winograd: `as` (backward_data_as_forward's
/// problem) is a Winograd geometry and Auto picks Winograd for it.
template <class ExecSpace, class T>
bool backward_data_prefers_winograd(const BackwardDataAsForward& as) {
  if (!as.ok || winograd_geometry_reason(as.forward)) return false;
  return select_conv2d_algo(as.forward, auto_context<ExecSpace, T>()).algo == ConvAlgo::Winograd;
}

/// Runs conv2d_backward_data's problem `pb` through Winograd and returns true where it
/// serves it (see the file comment; `always`: wherever the geometry and the workspace
/// allow, for tests); returns false, having written nothing, where it does not. Views:
/// the kernel views of conv2d_backward_data.
template <class ExecSpace, class DYView, class WView, class DXView>
bool conv2d_backward_data_winograd(const ExecSpace& space, const DYView& dy, const WView& w,
                                   const DXView& dx, const Conv2dProblem& pb, bool always = false,
                                   const WinogradTuning& tuning = {}) {
  using T = view_scalar_t<DXView>;
  const BackwardDataAsForward as = backward_data_as_forward(pb);
  if (!as.ok || winograd_geometry_reason(as.forward)) return false;
  if (!always && !backward_data_prefers_winograd<ExecSpace, T>(as)) return false;
  const bool nchw = pb.layout == Layout::NCHW;
  const LogicalStrides ws =
      nchw ? logical_strides<Layout::NCHW>(w) : logical_strides<Layout::NHWC>(w);
  // w (M, C, 3, 3) read as w' (C, M, 3, 3) from its last tap backwards.
  const auto rotated = WinogradFilterSource<view_scalar_t<WView>>::strided(
      w.data() + 2 * ws.h + 2 * ws.w, {ws.c, ws.n, -ws.h, -ws.w});
  using NoBias = Kokkos::View<const T*, typename ExecSpace::memory_space>;
  const auto bias = as_kernel_view<ExecSpace, false>(NoBias());
  try {  // the limits its planning tests (the workspace budget, 32-bit GEMM extents)
    conv2d_winograd_from(space, dy, rotated, bias, dx, as.forward, tuning, LaunchMode::Check);
  } catch (const std::exception&) {
    return false;
  }
  conv2d_winograd_from(space, dy, rotated, bias, dx, as.forward, tuning, LaunchMode::Run);
  return true;
}

}  // namespace kcnn::Impl
