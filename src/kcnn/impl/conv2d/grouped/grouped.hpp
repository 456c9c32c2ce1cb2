// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/grouped/grouped.hpp
/// \brief ConvAlgo::Grouped's planning and launch: which problems it computes, the work
///        split per backend and the vector accesses the tensors allow (the kernel:
///        grouped_kernel.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/device_traits.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "grouped_kernel.hpp"

namespace kcnn::Impl {

/// ConvAlgo::Grouped's workspace for pb with accumulator type Acc: the packed filters
/// (groups x M/G rounded up to the slot's 4 or 8 x C/G x R x S accumulators) and 16
/// bytes of alignment.
template <class Acc>
std::int64_t grouped_workspace_bytes(const Conv2dProblem& pb) {
  const int outputs = grouped_slot_filters(pb.group_filters());
  const std::int64_t slots = pb.groups * ((pb.group_filters() + outputs - 1) / outputs);
  return slots * outputs * pb.group_channels() * pb.R * pb.S * std::int64_t(sizeof(Acc)) +
         std::int64_t(kVectorAccessBytes);
}

/// Why ConvAlgo::Grouped cannot compute pb with accumulator type Acc, or nothing. It
/// computes any group count, filter, stride, padding and dilation, both layouts, where
/// its packed filters fit the workspace budget and a group's channels and filters and a
/// slot's packed values fit int.
template <class Acc>
std::optional<std::string> grouped_reason(const Conv2dProblem& pb) {
  // In double first: a validated problem bounds N M P Q and N P Q C R S, not C R S or M
  // alone (an empty or unmanaged x may come with any filter).
  constexpr double int_max = std::numeric_limits<int>::max();
  const double slot_values = double(pb.group_channels()) * double(pb.R) * double(pb.S) * 8;
  if (slot_values > int_max || double(pb.group_filters()) > int_max - 8)
    return msg("ConvAlgo::Grouped indexes a group's filters in int; this layer has C/groups=",
               pb.group_channels(), ", M/groups=", pb.group_filters(), ", R=", pb.R, ", S=", pb.S);
  if (double(pb.M + 8 * pb.groups) * slot_values * sizeof(Acc) >= 0x1p62)
    return msg("ConvAlgo::Grouped: its packed filters would take 2^62 bytes or more (M=", pb.M,
               ", C/groups=", pb.group_channels(), ", R=", pb.R, ", S=", pb.S, ")");
  const std::int64_t bytes = grouped_workspace_bytes<Acc>(pb);
  if (static_cast<std::uint64_t>(bytes) > pb.workspace_limit_bytes)
    return msg("ConvAlgo::Grouped: its packed filters take ", bytes,
               " bytes of workspace, more than the limit of ", pb.workspace_limit_bytes,
               " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  return {};
}

namespace grouped_detail {

/// GPU blocks of 128 threads (a slot's 4 warps), at least this many resident on an SM:
/// with float accumulators 4 (128 registers a thread; 6 blocks, 80 registers, spill),
/// 6 for NCHW slots of 4 filters (H200, session 41, 128 channels 56x56 in 32 groups:
/// 0.162 ms with 4, 0.143 with 6; NHWC, 0.436 with 4, 0.463 with 6); with double ones 2
/// (their 32 accumulators and window take twice the registers).
template <class Acc, Layout L, int Outputs>
inline constexpr int kGroupedMinBlocks = sizeof(Acc) > 4
                                             ? 2
                                             : (Outputs == 4 && L == Layout::NCHW ? 6 : 4);

template <Layout L, int Taps, int Stride, int Vec, class ExecSpace, class T, class Y>
void launch(const ExecSpace& space, const GroupedArgs<T, Y>& args) {
  auto run = [&](auto outputs) {
    constexpr int Outputs = decltype(outputs)::value;
    using Bounds = Kokkos::LaunchBounds<128, kGroupedMinBlocks<accumulator_t<T>, L, Outputs>>;
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>, Bounds>;
    GroupedKernel<L, Taps, Stride, Vec, Outputs, T, Y> k;
    static_cast<GroupedArgs<T, Y>&>(k) = args;
    Kokkos::parallel_for("kcnn::conv2d::grouped", Policy(space, 0, args.threads()), k);
  };
  if (args.outputs == 4) return run(std::integral_constant<int, 4>{});
  run(std::integral_constant<int, 8>{});
}

/// launch with the compile-time filter (3x3 at equal strides 1 or 2, no dilation) or
/// the run-time one.
template <Layout L, int Vec, class ExecSpace, class T, class Y>
void launch_for(const ExecSpace& space, const Conv2dProblem& pb, const GroupedArgs<T, Y>& args) {
  const bool window = pb.R == 3 && pb.S == 3 && pb.dilation_h == 1 && pb.dilation_w == 1 &&
                      pb.stride_h == pb.stride_w;
  if (window && pb.stride_h == 1) return launch<L, 3, 1, Vec>(space, args);
  if (window && pb.stride_h == 2) return launch<L, 3, 2, Vec>(space, args);
  launch<L, 0, 0, Vec>(space, args);
}

}  // namespace grouped_detail

/// Runs ConvAlgo::Grouped on kernel Views of validated problem pb (unpooled:
/// dispatch.hpp pools), or with LaunchMode::Check only tests its limits. Returns its
/// workspace bytes (the packed filters).
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_grouped(const ExecSpace& space, const XView& x, const WView& w,
                           const BView& bias, const YView& y, const Conv2dProblem& pb,
                           LaunchMode mode) {
  namespace D = grouped_detail;
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  using Acc = accumulator_t<T>;
  if (auto reason = grouped_reason<Acc>(pb)) throw_if(true, "kcnn::conv2d_forward", *reason);
  const auto workspace = static_cast<std::size_t>(grouped_workspace_bytes<Acc>(pb));
  if (mode == LaunchMode::Check || pb.empty()) return workspace;
  const Layout L = pb.layout;
  GroupedArgs<T, Y> a;
  a.x = x.data(), a.w = w.data(), a.y = y.data();
  a.bias = pb.has_bias ? bias.data() : nullptr;
  a.bias_stride = pb.has_bias ? static_cast<std::int64_t>(bias.stride(0)) : 0;
  a.xs = logical_strides(x, L), a.ws = logical_strides(w, L), a.ys = logical_strides(y, L);
  a.H = pb.H, a.W = pb.W, a.P = pb.P, a.Q = pb.Q;
  a.group_c = static_cast<int>(pb.group_channels());
  a.group_m = static_cast<int>(pb.group_filters());
  a.outputs = grouped_slot_filters(a.group_m);
  a.slot_blocks = (a.group_m + a.outputs - 1) / a.outputs;
  a.slots = pb.groups * a.slot_blocks;
  a.R = static_cast<int>(pb.R), a.S = static_cast<int>(pb.S);
  a.stride_h = pb.stride_h, a.stride_w = pb.stride_w, a.pad_h = pb.pad_h, a.pad_w = pb.pad_w;
  a.dilation_h = pb.dilation_h, a.dilation_w = pb.dilation_w;
  a.activation = pb.activation;
  const GroupedItemShape item = grouped_item_shape(L);
  a.col_blocks = (pb.Q + item.cols - 1) / item.cols;
  a.image_items = (pb.P + item.rows - 1) / item.rows * a.col_blocks;
  a.items = pb.N * a.image_items;
  a.runs = (a.items + a.Warps * 32 - 1) / (a.Warps * 32);
  // The kernel's store: vectors of min(outputs, 16 bytes) channels.
  const int y_vector = std::min<int>(a.outputs, int(kVectorAccessBytes / sizeof(Y)));
  a.vector_y = L == Layout::NHWC && channel_vectors_aligned(a.ys, y_vector) &&
               a.group_m % y_vector == 0 && aligned_to(a.y, y_vector * sizeof(Y));

  auto lease = WorkspaceCache<ExecSpace>::acquire(space, workspace);
  a.packed = reinterpret_cast<Acc*>(
      (reinterpret_cast<std::uintptr_t>(lease.data()) + kVectorAccessBytes - 1) /
      kVectorAccessBytes * kVectorAccessBytes);
  const GroupedPackFilters<T, Y> pack{a};
  Kokkos::parallel_for(
      "kcnn::conv2d::grouped::pack_filters",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, pack.items()),
      pack);

  constexpr int V = vector_elements_v<T>;
  if (L == Layout::NCHW) {
    D::launch_for<Layout::NCHW, 1>(space, pb, a);
  } else if constexpr (runs_on_host_v<ExecSpace>) {
    D::launch_for<Layout::NHWC, 1>(space, pb, a);
  } else {
    const bool vector_x = channel_vectors_aligned(a.xs, V) && a.group_c % V == 0 &&
                          aligned_to(a.x, kVectorAccessBytes);
    if (vector_x) {
      D::launch_for<Layout::NHWC, V>(space, pb, a);
    } else {
      D::launch_for<Layout::NHWC, 1>(space, pb, a);
    }
  }
  return workspace;
}

}  // namespace kcnn::Impl
