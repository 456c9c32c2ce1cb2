// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_backward.hpp
/// \brief The backward operations of depthwise layers (groups = C > 1, M = k C), each
///        one pass over its tensors (a memory-bound stencil or reduction) instead of one
///        backward convolution per channel: depthwise_backward_data.hpp,
///        depthwise_backward_weights.hpp.
#pragma once

#include "../../common/problem.hpp"
#include "depthwise_backward_data.hpp"
#include "depthwise_backward_weights.hpp"

namespace kcnn::Impl {

/// Whether conv2d_backward_data and conv2d_backward_weights compute validated problem
/// pb with the depthwise kernels: a grouped layer with one input channel per group
/// (an ungrouped one with C = 1 keeps the dense kernels), extents the kernels' work
/// split holds.
inline bool depthwise_backward_takes(const Conv2dProblem& pb) {
  return pb.groups > 1 && pb.depthwise() && DepthwiseWeightsPlan::takes(pb);
}

}  // namespace kcnn::Impl
