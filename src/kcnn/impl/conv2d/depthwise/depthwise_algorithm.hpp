// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/depthwise/depthwise_algorithm.hpp
/// \brief ConvAlgo::Depthwise's descriptor: depthwise layers (groups = C, M a multiple of
///        C), any filter, stride, padding, dilation and element type, both layouts; it
///        takes the grouped problem whole (takes_groups), not group by group. No fused
///        pooling (dispatch.hpp pools its output), no workspace.
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "depthwise.hpp"

namespace kcnn::Impl {

struct DepthwiseAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Depthwise;
  static constexpr bool takes_groups = true;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return false;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_depthwise(space, x, w, bias, y, pb, mode);
  }
};

}  // namespace kcnn::Impl
