// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/implicit_gemm_algorithm.hpp
/// \brief ConvAlgo::ImplicitGemm's descriptor: the GEMM view of the convolution with its
///        tiles gathered from x while loading (no unrolled matrix). Fuses non-overlapping
///        poolings of at most 64 cells; workspace only for a split K's partial sums.
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "implicit_gemm.hpp"

namespace kcnn::Impl {

struct ImplicitGemmAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::ImplicitGemm;
  template <class T>
  static bool fuses_pool(const Conv2dProblem& pb) {
    return implicit_gemm_fuses_pool(pb.pool);
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_implicit_gemm(space, x, w, bias, y, pb, mode);
  }
};

}  // namespace kcnn::Impl
