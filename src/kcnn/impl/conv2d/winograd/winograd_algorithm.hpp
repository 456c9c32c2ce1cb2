// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/winograd_algorithm.hpp
/// \brief ConvAlgo::Winograd's descriptor: 3 x 3, stride-1, undilated filters, any
///        padding, channels, extents and batch, both layouts, every element type (16-bit
///        tensors transform and multiply in float). No fused pooling (dispatch.hpp pools
///        its output); limits: the geometry, the GEMMs' 32-bit extents and the workspace
///        budget (the transformed filters and one tile must fit).
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "winograd.hpp"

namespace kcnn::Impl {

struct WinogradAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Winograd;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return false;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_winograd(space, x, w, bias, y, pb, WinogradTuning{}, mode);
  }
};

}  // namespace kcnn::Impl
