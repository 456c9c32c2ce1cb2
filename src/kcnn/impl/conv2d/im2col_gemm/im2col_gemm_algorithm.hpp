// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/im2col_gemm/im2col_gemm_algorithm.hpp
/// \brief ConvAlgo::Im2colGemm's descriptor: im2col into cached scratch within the
///        workspace budget, then the vendor GEMM (cuBLAS, host BLAS). No fused pooling
///        (the GEMM's output is the unpooled tensor); limits: BLAS' 32-bit extents and
///        the workspace budget.
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "im2col_gemm.hpp"

namespace kcnn::Impl {

struct Im2colGemmAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::Im2colGemm;
  template <class T>
  static bool fuses_pool(const Conv2dProblem&) {
    return false;
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_im2col_gemm(space, x, w, bias, y, pb, pb.workspace_limit_bytes, {}, mode);
  }
};

}  // namespace kcnn::Impl
