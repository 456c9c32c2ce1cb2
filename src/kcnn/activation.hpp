// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file activation.hpp
/// \brief kcnn::activation_backward: the gradient through an element-wise activation,
///        from the activation's output.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#include "impl/backward/activation_backward_kernels.hpp"
#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/epilogue/bias_activation.hpp"  // with_activation
#include "types.hpp"

namespace kcnn {

/// \brief dx = dy * act'(z) where y = act(z) is the forward output: the gradient of the
///        activation's input, computed from its **output** y (what conv2d_forward and
///        pool2d_forward write), so the pre-activation need not be kept.
///
/// ReLU: dx = y > 0 ? dy : 0 (0 at the kink); Sigmoid: dy * y * (1 - y);
/// Tanh: dy * (1 - y^2); Identity: dx = dy.
///
/// \param space      [in]  execution space instance (stream) to run on
/// \param activation [in]  the forward activation
/// \param y          [in]  the forward output act(z), any rank 1 to 4
/// \param dy         [in]  the gradient of y, same extents and strides as y
/// \param dx         [out] the gradient of z, same extents and strides as y
///
/// Views hold float, double, Kokkos::Experimental::half_t or kcnn::bfloat16 (the same for
/// all; 16-bit values are computed in float and rounded once), are contiguous, accessible from
/// `ExecSpace` and laid out alike (the same extents and strides: e.g. all LayoutRight).
/// dx may be the same View as dy (or y), element for element, for an in-place update;
/// any other overlap is an error. Asynchronous on `space`. Empty Views are a no-op.
/// \throws kcnn::Error, before anything is written, on an unknown activation, different
///         extents or strides, non-contiguous Views or a partial overlap.
template <class ExecSpace, class YView, class DYView, class DXView>
void activation_backward(const ExecSpace& space, Activation activation, const YView& y,
                         const DYView& dy, const DXView& dx) {
  static_assert(Kokkos::is_view<YView>::value && Kokkos::is_view<DYView>::value &&
                    Kokkos::is_view<DXView>::value,
                "kcnn::activation_backward: y, dy and dx must be Kokkos::View");
  constexpr int rank = static_cast<int>(YView::rank);
  static_assert(rank >= 1 && rank <= 4 && static_cast<int>(DYView::rank) == rank &&
                    static_cast<int>(DXView::rank) == rank,
                "kcnn::activation_backward: y, dy and dx must have the same rank, 1 to 4");
  using T = Impl::view_scalar_t<DXView>;
  static_assert(Impl::is_supported_scalar_v<T> && std::is_same_v<Impl::view_scalar_t<YView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<DYView>, T>,
                "kcnn::activation_backward: y, dy and dx must hold the same type (float, double, "
                "half_t or kcnn::bfloat16)");
  static_assert(!std::is_const_v<typename DXView::value_type>,
                "kcnn::activation_backward: dx is the output and must not be const");
  static_assert(Impl::is_accessible_from_v<ExecSpace, YView> &&
                    Impl::is_accessible_from_v<ExecSpace, DYView> &&
                    Impl::is_accessible_from_v<ExecSpace, DXView>,
                "kcnn::activation_backward: a View's memory space is not accessible from the "
                "execution space");
  constexpr const char* op = "kcnn::activation_backward";
  Impl::check_layout_activation(op, "", Layout::NCHW, activation);
  Impl::check_extents_fit(op, "y", y);
  Impl::check_extents_fit(op, "dy", dy);
  Impl::check_extents_fit(op, "dx", dx);
  auto same_shape = [&](const char* name, const auto& v) {
    bool same = true;
    for (int i = 0; i < rank; ++i)
      same = same && v.extent(i) == y.extent(i) && (y.extent(i) <= 1 || v.stride(i) == y.stride(i));
    Impl::throw_if(!same, op, name, " has extents ", Impl::extents_text(v), " or strides unlike y ",
                   Impl::extents_text(y), "; y, dy and dx must have the same extents and layout");
  };
  same_shape("dy", dy);
  same_shape("dx", dx);
  Impl::check_contiguous(op, "y", y);
  Impl::check_contiguous(op, "dy", dy);
  Impl::check_contiguous(op, "dx", dx);
  auto overlap_unless_same = [&](const char* name, const auto& v) {
    if (static_cast<const void*>(v.data()) != static_cast<const void*>(dx.data()))
      Impl::check_no_overlap(op, "dx", dx, name, v);
  };
  overlap_unless_same("y", y);
  overlap_unless_same("dy", dy);

  Impl::ProfilingRegion region(std::string(op) + "[" + to_string(activation) + "]");
  const auto count = static_cast<std::int64_t>(y.span());
  if (y.size() == 0) return;
  Impl::with_activation(activation, [&](auto tag) {
    constexpr Activation A = decltype(tag)::value;
    Kokkos::parallel_for(
        "kcnn::activation_backward",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, count),
        Impl::ActivationBackward<A, T>{y.data(), dy.data(), dx.data()});
  });
}

}  // namespace kcnn
