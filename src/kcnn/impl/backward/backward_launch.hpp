// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/backward_launch.hpp
/// \brief The backward operations after their checks, on the kernel View types: the
///        functions conv2d_backward_data and conv2d_backward_weights (conv2d_backward.hpp)
///        call with whatever Views the caller passed, so that one instance per execution
///        space and element type covers every call (conv2d/prebuilt_instances.hpp: kcnn's
///        own programs compile them once, not in every unit that takes a gradient).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../types.hpp"
#include "../common/groups.hpp"
#include "../common/problem.hpp"
#include "../common/view_checks.hpp"
#include "conv2d_backward_data_direct.hpp"
#include "conv2d_backward_data_winograd.hpp"
#include "conv2d_backward_gemm.hpp"
#include "conv2d_backward_weights_direct.hpp"
#include "depthwise/depthwise_backward.hpp"

namespace kcnn::Impl {

/// dx of problem pb (pb.M > 0, dx not empty), the checks done: a depthwise layer in one
/// pass, else group by group Winograd, the direct kernel or the GEMM path (see
/// conv2d_backward_data).
template <class ExecSpace, class T>
void conv2d_backward_data_launch(const ExecSpace& space, const kernel_input4_t<ExecSpace, T>& dyk,
                                 const kernel_input4_t<ExecSpace, T>& wk,
                                 const kernel_output4_t<ExecSpace, T>& dxk,
                                 const Conv2dProblem& pb) {
  if (depthwise_backward_takes(pb)) {  // one pass over dy, every channel at once
    const Layout L = pb.layout;
    conv2d_backward_data_depthwise_run(
        space,
        DepthwiseBackwardDataOperands<T>{dyk.data(), logical_strides(dyk, L), wk.data(),
                                         logical_strides(wk, L), dxk.data(),
                                         logical_strides(dxk, L)},
        pb);
    return;
  }
  // Group g's dx channels depend on its dy channels and filters only: one backward
  // convolution per group, on the slices (impl/common/groups.hpp).
  for_each_group(pb, dxk, wk, kernel_input1_t<ExecSpace, T>(), dyk,
                 [&](const auto& dxg, const auto& wg, const auto&, const auto& dyg,
                     const Conv2dProblem& group) {
                   if (conv2d_backward_data_winograd(space, dyg, wg, dxg, group))
                     return std::size_t{0};
                   if (conv2d_backward_data_direct(space, dyg, wg, dxg, group))
                     return std::size_t{0};
                   if (group.layout == Layout::NCHW) {
                     conv2d_backward_data_gemm<Layout::NCHW>(space, dyg, wg, dxg, group);
                   } else {
                     conv2d_backward_data_gemm<Layout::NHWC>(space, dyg, wg, dxg, group);
                   }
                   return std::size_t{0};
                 });
}

/// dw and (pb.has_bias) dbias of problem pb (pb.M > 0), the checks done: a depthwise
/// layer in one pass, else group by group the direct kernel and the bias reduction or
/// the GEMM path (see conv2d_backward_weights).
template <class ExecSpace, class T>
void conv2d_backward_weights_launch(const ExecSpace& space, const kernel_input4_t<ExecSpace, T>& xk,
                                    const kernel_input4_t<ExecSpace, T>& dyk,
                                    const kernel_output4_t<ExecSpace, T>& dwk,
                                    const kernel_view_t<ExecSpace, T*>& dbk,
                                    const Conv2dProblem& pb) {
  // One pass over x and dy, every channel at once (batches without output pixels take
  // the group path below, which writes the zero gradients).
  if (depthwise_backward_takes(pb) && pb.N > 0 && pb.P > 0 && pb.Q > 0) {
    const Layout L = pb.layout;
    conv2d_backward_weights_depthwise_run(
        space,
        DepthwiseBackwardWeightsOperands<T>{
            xk.data(), logical_strides(xk, L), dyk.data(), logical_strides(dyk, L), dwk.data(),
            logical_strides(dwk, L), pb.has_bias ? dbk.data() : nullptr,
            static_cast<std::int64_t>(dbk.stride(0))},
        pb);
    return;
  }
  // Group g's filters and biases depend on its x and dy channels only: one backward
  // convolution per group, on the slices (impl/common/groups.hpp).
  for_each_group(pb, xk, dwk, dbk, dyk,
                 [&](const auto& xg, const auto& dwg, const auto& dbg, const auto& dyg,
                     const Conv2dProblem& group) {
                   if (group.N > 0 && group.P > 0 && group.Q > 0 &&
                       conv2d_backward_weights_direct(space, xg, dyg, dwg, group)) {
                     if (group.has_bias) {
                       if (group.layout == Layout::NCHW) {
                         conv2d_bias_gradient<Layout::NCHW>(space, dyg, dbg, group);
                       } else {
                         conv2d_bias_gradient<Layout::NHWC>(space, dyg, dbg, group);
                       }
                     }
                     return std::size_t{0};
                   }
                   if (group.layout == Layout::NCHW) {
                     conv2d_backward_weights_gemm<Layout::NCHW>(space, xg, dyg, dwg, dbg, group);
                   } else {
                     conv2d_backward_weights_gemm<Layout::NHWC>(space, xg, dyg, dwg, dbg, group);
                   }
                   return std::size_t{0};
                 });
}

}  // namespace kcnn::Impl
