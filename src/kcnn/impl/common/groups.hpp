// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/groups.hpp
/// \brief A grouped convolution (Conv2dParams::groups) as one ungrouped convolution per
///        group, on the group's channel slices of the tensors.
///
/// Group g reads input channels [g C/G, (g+1) C/G) and writes output channels
/// [g M/G, (g+1) M/G) with filters [g M/G, (g+1) M/G), whose channel extent is already
/// C/G: each group is an ordinary convolution (Conv2dProblem::group_slice) on strided
/// slices of x, w, bias and y. The kernels take LayoutStride Views (as_kernel_view) and
/// read strides, not extents, so a slice is a View of the same type: no new kernel
/// instantiation, no copy. The groups run one after the other on the caller's stream,
/// each reusing the cached workspace of the one before (stream order keeps them apart).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../types.hpp"
#include "problem.hpp"

namespace kcnn::Impl {

/// The dimension of a rank-4 activation tensor that holds its channels.
constexpr int channel_dimension(Layout layout) {
  return layout == Layout::NCHW ? 1 : 3;
}

/// Indices [begin, begin + count) of dimension `dim` of a LayoutStride kernel View, as a
/// View of the same type (same strides, same memory).
template <class View>
View slice_dimension(const View& v, int dim, std::int64_t begin, std::int64_t count) {
  static_assert(std::is_same_v<typename View::array_layout, Kokkos::LayoutStride>,
                "kcnn: slices are taken of kernel Views (as_kernel_view)");
  Kokkos::LayoutStride layout;
  for (int d = 0; d < static_cast<int>(View::rank); ++d) {
    layout.dimension[d] = d == dim ? static_cast<std::size_t>(count) : v.extent(d);
    layout.stride[d] = v.stride(d);
  }
  // A slice of an empty View (a missing bias) stays empty.
  if (v.extent(dim) == 0) return v;
  // A View without memory (the Check pass's stand-in for the fused pooling's unpooled
  // output, dispatch.hpp) or without elements: its slices get no offset either (the
  // fuzzer's finding: UBSan on an offset applied to a null pointer).
  if (v.data() == nullptr || v.size() == 0) return View(v.data(), layout);
  return View(v.data() + begin * static_cast<std::int64_t>(v.stride(dim)), layout);
}

/// Calls `launch(x, w, bias, y, problem)` once per group of validated problem `pb` with
/// the group's slices (x-shaped, w-shaped, bias, y-shaped kernel Views: the backward
/// operations pass dx, w or dw, dbias, dy in these roles) and the group's problem; once
/// with the tensors as they are when pb has one group. Returns the largest workspace
/// a group's launch returned (the groups run in turn, on one workspace).
template <class XView, class WView, class BView, class YView, class Launch>
std::size_t for_each_group(const Conv2dProblem& pb, const XView& x, const WView& w,
                           const BView& bias, const YView& y, const Launch& launch) {
  if (pb.groups == 1) return launch(x, w, bias, y, pb);
  const Conv2dProblem group = pb.group_slice();
  const int channels = channel_dimension(pb.layout);
  std::size_t workspace = 0;
  for (std::int64_t g = 0; g < pb.groups; ++g) {
    const std::int64_t c0 = g * group.C, m0 = g * group.M;
    workspace = std::max(
        workspace, launch(slice_dimension(x, channels, c0, group.C),
                          slice_dimension(w, 0, m0, group.M), slice_dimension(bias, 0, m0, group.M),
                          slice_dimension(y, channels, m0, group.M), group));
  }
  return workspace;
}

}  // namespace kcnn::Impl
