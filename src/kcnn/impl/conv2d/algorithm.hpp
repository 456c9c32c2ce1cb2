// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/algorithm.hpp
/// \brief The contract every convolution algorithm's descriptor meets, and the
///        operations built on it (can_implement, workspace, run).
///
/// A descriptor is a stateless struct (model: CUTLASS's device-level operators,
/// can_implement / get_workspace_size / run):
///
///     struct MyAlgorithm {
///       static constexpr ConvAlgo id = ConvAlgo::Mine;   // its name: to_string(id)
///       /// Whether its kernels apply pb's pooling (pb.pool) themselves, in the same
///       /// pass, on tensors of element type T.
///       template <class T>
///       static bool fuses_pool(const Conv2dProblem& pb);
///       /// Plans the problem and, with LaunchMode::Run, enqueues its kernels on
///       /// `space`; with LaunchMode::Check only plans, testing every limit (throwing
///       /// kcnn::Error naming it) and allocating nothing. Returns the workspace
///       /// bytes the run takes (kcnn's cached scratch, see workspace.hpp).
///       template <class ExecSpace, class XView, class WView, class BView, class YView>
///       static std::size_t launch(const ExecSpace&, const XView&, const WView&,
///                                 const BView&, const YView&, const Conv2dProblem&,
///                                 LaunchMode);
///       /// Optional: true when launch takes a grouped problem (pb.groups > 1) whole;
///       /// otherwise dispatch.hpp launches it once per group, on the group's slices.
///       static constexpr bool takes_groups = true;
///     };
///
/// The Views are kernel Views (as_kernel_view); `pb` is validated against them and,
/// when the algorithm does not fuse pb's pooling, is the unpooled problem (dispatch.hpp
/// runs the pooling after it). Because can_implement is the launch in Check mode, an
/// algorithm's limits live in one place, its planning code, and Auto never picks an
/// algorithm whose planning rejects the problem (what planning cannot know, such as
/// whether a workspace allocation succeeds, is left to the run).
///
/// The list of descriptors is registry.hpp's Conv2dRegistry: a new algorithm is its
/// folder with its kernels and descriptor, plus one line there.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>

#include "../../types.hpp"
#include "../common/element_traits.hpp"
#include "../common/problem.hpp"
#include "../common/view_checks.hpp"

namespace kcnn::Impl {

/// Why an algorithm cannot run a problem, or nothing when it can.
using UnsupportedReason = std::optional<std::string>;

/// A compile-time list of descriptors, walked in order.
template <class... Algos>
struct AlgorithmList {
  /// Their ids, in list order.
  static constexpr ConvAlgo ids[] = {Algos::id...};

  /// Calls f(Algo{}) for the descriptor whose id is `id`; false if there is none.
  template <class F>
  static bool visit(ConvAlgo id, F&& f) {
    return ((Algos::id == id ? (f(Algos{}), true) : false) || ...);
  }
};

/// Whether descriptor Algo computes grouped problems itself (Algo::takes_groups).
template <class Algo, class = void>
struct algo_takes_groups : std::false_type {};
template <class Algo>
struct algo_takes_groups<Algo, std::void_t<decltype(Algo::takes_groups)>>
    : std::bool_constant<Algo::takes_groups> {};

}  // namespace kcnn::Impl
