// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/dispatch.hpp
/// \brief From a concrete ConvAlgo to its descriptor's launch: the registry lookup, and
///        the fused pooling for algorithms that do not fuse it (convolution into the
///        cached unpooled-output buffer, then the pooling kernel), and grouped problems
///        as one launch per group (common/groups.hpp). can_implement and the workspace
///        size are the same path in LaunchMode::Check.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <exception>
#include <string>

#include "../../types.hpp"
#include "../../workspace.hpp"
#include "../common/groups.hpp"
#include "../common/problem.hpp"
#include "../common/view_checks.hpp"
#include "../common/workspace_cache.hpp"
#include "../pool2d/pool2d_kernels.hpp"
#include "algorithm.hpp"
#include "registry.hpp"

namespace kcnn::Impl {

/// Runs (or checks) a convolution through `launch(y_view, problem)` (which returns its
/// workspace bytes) on validated problem `pb`, pooled or not: where `fuses_pool` is false,
/// a pooling runs as a second pass from the instance's cached unpooled-output buffer (see
/// workspace.hpp): no allocation and no fence per call, and calls on one instance are
/// stream-ordered, so the next call's convolution cannot overwrite it before this call's
/// pooling has read it. Returns the workspace bytes (that buffer included).
template <class ExecSpace, class YView, class Launch>
std::size_t conv2d_launch_then_pool(const ExecSpace& space, const YView& y, const Conv2dProblem& pb,
                                    LaunchMode mode, bool fuses_pool, const Launch& launch) {
  if (!pb.has_pool || fuses_pool) return launch(y, pb);
  // The unpooled output in the accumulator type: 16-bit results are rounded once,
  // after the pooling (float and double: their own type).
  using T = accumulator_t<view_scalar_t<YView>>;
  using Temp = Kokkos::View<T****, Kokkos::LayoutRight, typename ExecSpace::memory_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using NoBias = Kokkos::View<const T*, typename ExecSpace::memory_space>;
  const bool nhwc = pb.layout == Layout::NHWC;
  const std::size_t temp_bytes = static_cast<std::size_t>(pb.output_size()) * sizeof(T);
  auto temp = [&](T* data) {
    return Temp(data, pb.N, nhwc ? pb.P : pb.M, nhwc ? pb.Q : pb.P, nhwc ? pb.M : pb.Q);
  };
  if (mode == LaunchMode::Check)
    return temp_bytes + launch(as_kernel_view<ExecSpace, true>(temp(nullptr)), pb.unpooled());
  auto lease = WorkspaceCache<ExecSpace, ScratchForUnpooledOutput>::acquire(space, temp_bytes);
  const Temp unpooled = temp(reinterpret_cast<T*>(lease.data()));
  const std::size_t workspace =
      temp_bytes + launch(as_kernel_view<ExecSpace, true>(unpooled), pb.unpooled());
  pool2d_launch(space, as_kernel_view<ExecSpace, false>(unpooled),
                as_kernel_view<ExecSpace, false>(NoBias()), y, pb.pooling());
  return workspace;
}

/// Runs (or checks, see LaunchMode) registered algorithm `algo` on kernel Views with
/// validated problem `pb`, pooled or not (conv2d_launch_then_pool), grouped or not (the
/// algorithm runs each group's slices in turn, for_each_group; a fused pooling pools each
/// group's channels, a second pass all of them at once). Returns the workspace bytes.
/// Throws kcnn::Error for an algorithm that is not registered or cannot run the problem
/// (in Check mode every group is checked: a slice's alignment may differ).
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_launch(const ExecSpace& space, ConvAlgo algo, const XView& x, const WView& w,
                          const BView& bias, const YView& y, const Conv2dProblem& pb,
                          LaunchMode mode) {
  // A group's launch checks its own slices before it writes: check them all first, so
  // that a refusal leaves y untouched (a slice's alignment may differ from the first's).
  // (Descriptors that take grouped problems whole check them whole, in their run.)
  if (mode == LaunchMode::Run && pb.groups > 1)
    conv2d_launch(space, algo, x, w, bias, y, pb, LaunchMode::Check);
  std::size_t workspace = 0;
  const bool registered = Conv2dRegistry::visit(algo, [&](auto descriptor) {
    using Algo = decltype(descriptor);
    constexpr bool whole = algo_takes_groups<Algo>::value;
    workspace = conv2d_launch_then_pool(
        space, y, pb, mode,
        Algo::template fuses_pool<view_scalar_t<XView>>(whole ? pb : pb.group_slice()),
        [&](const auto& y_view, const Conv2dProblem& problem) {
          if constexpr (whole) {
            return Algo::launch(space, x, w, bias, y_view, problem, mode);
          } else {
            return for_each_group(problem, x, w, bias, y_view,
                                  [&](const auto& xg, const auto& wg, const auto& bg,
                                      const auto& yg, const Conv2dProblem& group) {
                                    return Algo::launch(space, xg, wg, bg, yg, group, mode);
                                  });
          }
        });
  });
  throw_if(!registered, "kcnn::conv2d_forward", "ConvAlgo::", to_string(algo),
           " is not a registered algorithm");
  return workspace;
}

/// Why registered algorithm `algo` cannot run `pb` on these kernel Views, or nothing:
/// its launch in Check mode, i.e. every limit its planning tests (what it does not test:
/// whether the workspace allocation succeeds). A Kokkos policy the planning builds may
/// throw too (e.g. a league beyond the device's grid): that is a reason as well.
template <class ExecSpace, class XView, class WView, class BView, class YView>
UnsupportedReason conv2d_can_implement(const ExecSpace& space, ConvAlgo algo, const XView& x,
                                       const WView& w, const BView& bias, const YView& y,
                                       const Conv2dProblem& pb) {
  try {
    conv2d_launch(space, algo, x, w, bias, y, pb, LaunchMode::Check);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace kcnn::Impl
