// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/grouped/grouped_algorithm.hpp
/// \brief ConvAlgo::Grouped's descriptor: grouped layers with narrow groups as one direct
///        convolution (grouped_kernel.hpp), any filter, stride, padding, dilation and
///        element type, both layouts; it takes the grouped problem whole (takes_groups).
///        No fused pooling (dispatch.hpp pools its output); its workspace holds the
///        packed filters.
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "grouped.hpp"

namespace kcnn::Impl {

struct GroupedAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Grouped;
  static constexpr bool takes_groups = true;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return false;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_grouped(space, x, w, bias, y, pb, mode);
  }
};

}  // namespace kcnn::Impl
