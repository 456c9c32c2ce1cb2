// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/reference/reference.hpp
/// \brief ConvAlgo::Reference's descriptor: the direct loop nest, the ground truth the
///        other algorithms are tested against. No limits, no workspace, no fused pooling
///        (two passes by design).
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "reference_kernel.hpp"

namespace kcnn::Impl {

struct ReferenceAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Reference;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return false;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    if (mode == LaunchMode::Run) conv2d_reference(space, x, w, bias, y, pb);
    return 0;
  }
};

}  // namespace kcnn::Impl
