// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/registry.hpp
/// \brief The one list of convolution algorithms. Dispatch, Auto, find_best_algo, the
///        algorithm cache, the conformance tests and kcnn_perf all walk it: a new
///        algorithm is its folder (kernels + descriptor, see algorithm.hpp) and one line
///        here, in the order find_best_algo tries them.
#pragma once

#include "algorithm.hpp"
#include "depthwise/depthwise_algorithm.hpp"
#include "grouped/grouped_algorithm.hpp"
#include "im2col_gemm/im2col_gemm_algorithm.hpp"
#include "implicit_gemm/implicit_gemm_algorithm.hpp"
#include "reference/reference.hpp"
#include "tensor_core/tensor_core_algorithm.hpp"
#include "tiled/tiled_algorithm.hpp"
#include "winograd/winograd_algorithm.hpp"

namespace kcnn::Impl {

using Conv2dRegistry = AlgorithmList<ReferenceAlgorithm,       //
                                     TiledAlgorithm,           //
                                     Im2colGemmAlgorithm,      //
                                     ImplicitGemmAlgorithm,    //
                                     TensorCoreGemmAlgorithm,  //
                                     WinogradAlgorithm,        //
                                     DepthwiseAlgorithm,       //
                                     GroupedAlgorithm>;

}  // namespace kcnn::Impl
