// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/tensor_core_algorithm.hpp
/// \brief ConvAlgo::TensorCoreGemm's descriptor: the implicit GEMM on NVIDIA tensor
///        cores (sm_80 on): float tensors under MathMode::TF32 / ::TF32x3, double
///        tensors with IEEE fp64 products (DMMA), half_t and kcnn::bfloat16 tensors
///        (m16n8k16, float sums). Fuses the pooling of its 16-bit few-channel kernel
///        (2x2 and 4x4 windows at their stride; tensor_core_fuses_pool), no other;
///        float and 16-bit pack their weights into the workspace.
#pragma once

#include <cstddef>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "../algorithm.hpp"
#include "launch.hpp"

namespace kcnn::Impl {

struct TensorCoreGemmAlgorithm {
  static constexpr ConvAlgo id = ConvAlgo::TensorCoreGemm;
  template <class T>
  static bool fuses_pool(const Conv2dProblem& pb) {
    return tensor_core_fuses_pool<T>(pb);
  }
  template <class ExecSpace, class XView, class WView, class BView, class YView>
  static std::size_t launch(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            LaunchMode mode) {
    return conv2d_tensor_core(space, x, w, bias, y, pb, mode);
  }
};

}  // namespace kcnn::Impl
