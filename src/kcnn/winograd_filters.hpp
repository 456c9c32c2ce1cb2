// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file winograd_filters.hpp
/// \brief kcnn::WinogradFilters: filters transformed once for ConvAlgo::Winograd, and the
///        conv2d_forward that takes them in place of w, for layers whose weights do not
///        change between calls (inference, or the forward passes between two updates).
///
/// conv2d_forward with ConvAlgo::Winograd transforms w (U = G g G^T, one kernel) on
/// every call: it cannot know whether w changed since the last one, and a cache keyed on
/// w's address would miss the in-place updates an optimizer makes. This object moves
/// that decision to the caller, who knows when the weights change: it holds U, computed
/// from w when it is built or update()d, and conv2d_forward reads U instead of
/// transforming w again. Measured (RESULTS.md, session 36): 0.5-7% of a fused GPU call on
/// the ResNet 3x3 layers (H200), a fifth to more than half of a CPU call on the 256- and
/// 512-channel ones (2-core Zen 3).
///
/// Example:
/// \code
///   kcnn::Conv2dParams params;             // pad 1, layout, activation, ...
///   params.pad_h = params.pad_w = 1;
///   kcnn::WinogradFilters<float> u(space, w, params);  // transforms w once
///   for (...) kcnn::conv2d_forward(space, x, u, bias, y, params);
///   // after changing w: u.update(space, w, params);
/// \endcode
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "conv2d.hpp"
#include "impl/common/element_traits.hpp"
#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/tensor_access.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/conv2d/dispatch.hpp"
#include "impl/conv2d/winograd/winograd.hpp"
#include "types.hpp"

namespace kcnn {

/// \brief Filters w (M, C, 3, 3) transformed for ConvAlgo::Winograd on `ExecSpace`, for
///        elements of type T (float, double, half_t or kcnn::bfloat16; U itself is in
///        the compute type: float for the 16-bit types).
///
/// U's layout depends on the backend, the element type, the layout, the tile (F(4x4) up
/// to 4,096 channels, F(2x2) beyond and in CUDA's fused float kernel) and C and M, so the
/// object is made for one of each; conv2d_forward checks that it fits the call. Building
/// and update() run the transform asynchronously on `space`, reading w: w must stay
/// unchanged until that work is done, conv2d_forward calls on the same instance are
/// ordered after it, and calls on other instances must be fenced against it (and an
/// update() against their reads of U). U takes alpha^2 x M x C values (16 for F(2x2), 36
/// for F(4x4), rows padded: bytes()), in its own allocation, outside the workspace limit.
/// Copies share U, as Kokkos Views do (an update() through one is seen by all); a
/// moved-from object holds nothing.
template <class T, class ExecSpace = Kokkos::DefaultExecutionSpace>
class WinogradFilters {
 public:
  using execution_space = ExecSpace;
  using value_type = T;
  using compute_type = Impl::compute_t<T>;

  /// Holds nothing: conv2d_forward refuses it until update() has run.
  WinogradFilters() = default;
  WinogradFilters(const WinogradFilters&) = default;
  WinogradFilters& operator=(const WinogradFilters&) = default;
  WinogradFilters(WinogradFilters&& other) noexcept
      : u_(std::move(other.u_)), layout_(other.layout_), ready_(other.ready_) {
    other.u_ = Storage(), other.ready_ = false;
  }
  WinogradFilters& operator=(WinogradFilters&& other) noexcept {
    if (this != &other) {
      u_ = std::move(other.u_), layout_ = other.layout_, ready_ = other.ready_;
      other.u_ = Storage(), other.ready_ = false;
    }
    return *this;
  }

  /// Transforms w for conv2d_forward calls with these params (see update()).
  template <class WView>
  WinogradFilters(const ExecSpace& space, const WView& w, const Conv2dParams& params) {
    update(space, w, params);
  }

  /// Transforms w (NCHW (M, C, 3, 3) or NHWC (M, 3, 3, C), as params.layout says) again,
  /// for conv2d_forward calls with params' layout, stride 1 and dilation 1 (the other
  /// parameters may differ between calls). Call it after every change of w.
  /// \throws kcnn::Error, leaving the object as it was, when w is not a 3x3 filter of at
  ///         least one channel, when params' stride or dilation is not 1, when M or C
  ///         reach 2^31, when w is not contiguous or its extents overflow.
  template <class WView>
  void update(const ExecSpace& space, const WView& w, const Conv2dParams& params) {
    Impl::static_check_tensor<ExecSpace, WView, 4, false>();
    static_assert(std::is_same_v<Impl::view_scalar_t<WView>, T>,
                  "kcnn::WinogradFilters::update: w's scalar type must be the filters' T");
    constexpr const char* op = "kcnn::WinogradFilters::update";
    Impl::check_extents_fit(op, "w", w);
    Impl::check_contiguous(op, "w", w);
    Impl::throw_if(params.groups != 1, op,
                   "WinogradFilters hold an ungrouped layer's filters; params.groups is ",
                   params.groups);
    Impl::Conv2dProblem pb;
    pb.layout = params.layout;
    pb.math = params.math;
    Impl::activation_extents(w, params.layout, pb.M, pb.C, pb.R, pb.S);
    pb.stride_h = params.stride_h, pb.stride_w = params.stride_w;
    pb.dilation_h = params.dilation_h, pb.dilation_w = params.dilation_w;
    if (auto reason = Impl::winograd_geometry_reason(pb)) Impl::throw_if(true, op, *reason);
    Impl::throw_if(pb.C < 1, op, "w has no input channels (", to_string(params.layout), " extents ",
                   Impl::extents_text(w), ")");
    // U's layout is that of any call with these filters whose extents fit 32 bits (the
    // fused kernel's): one image of 3x3 inputs plans it.
    pb.N = 1, pb.H = pb.W = 3, pb.P = pb.Q = 1;
    const Impl::WinogradPlan plan =
        Impl::plan_winograd(op, pb, sizeof(compute_type), std::numeric_limits<std::size_t>::max(),
                            Impl::runs_on_host_v<ExecSpace>, Impl::HostVector<compute_type>::lanes,
                            1, Impl::WinogradTuning{}, Impl::winograd_fusable<ExecSpace, T>, false);
    if (u_.extent(0) * sizeof(compute_type) != plan.u_bytes)
      u_ = Storage(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kcnn::WinogradFilters"),
                   plan.u_bytes / sizeof(compute_type));
    layout_ = Impl::winograd_filters_layout(pb, plan);
    ready_ = true;
    if (pb.M == 0) return;
    Impl::ProfilingRegion region(op);
    const auto wk = Impl::as_kernel_view<ExecSpace, false>(w);
    const Impl::LogicalStrides ws = params.layout == Layout::NCHW
                                        ? Impl::logical_strides<Layout::NCHW>(wk)
                                        : Impl::logical_strides<Layout::NHWC>(wk);
    const auto source = Impl::WinogradFilterSource<T>::strided(wk.data(), ws);
    if (params.layout == Layout::NCHW) {
      Impl::winograd_transform_filters<Layout::NCHW>(space, source, u_.data(), pb, plan);
    } else {
      Impl::winograd_transform_filters<Layout::NHWC>(space, source, u_.data(), pb, plan);
    }
  }

  /// Whether update() has run (a default-constructed object holds nothing).
  bool ready() const { return ready_; }
  std::int64_t filters() const { return layout_.M; }   ///< M
  std::int64_t channels() const { return layout_.C; }  ///< C
  Layout layout() const { return layout_.layout; }
  int tile() const { return layout_.tile; }  ///< m of F(m x m, 3 x 3)
  std::size_t bytes() const { return u_.extent(0) * sizeof(compute_type); }

  /// For conv2d_forward: U and its layout.
  Impl::WinogradFilterSource<T> impl_source() const {
    return Impl::WinogradFilterSource<T>::of_transformed(u_.data(), layout_);
  }
  /// For conv2d_forward's aliasing check.
  const auto& impl_storage() const { return u_; }

 private:
  using Storage = Kokkos::View<compute_type*, typename ExecSpace::memory_space>;
  Storage u_;
  Impl::WinogradFiltersLayout layout_;
  bool ready_ = false;
};

/// \brief conv2d_forward with filters transformed beforehand: y = activation(conv(x, w) +
///        bias) (and the fused pooling of params.pool) by ConvAlgo::Winograd, reading the
///        WinogradFilters' U instead of transforming w.
///
/// As conv2d_forward with w and params.algo = ConvAlgo::Winograd, from the same w;
/// params.algo must be Winograd or Auto. The results are bit-identical to that call's
/// wherever the workspace limit does not bind (with U outside the workspace, the staged
/// GPU pipeline of double and 16-bit tensors may take larger chunks of tiles, i.e.
/// other GEMM shapes). An empty problem (N or M = 0) is a no-op, as for w. The workspace holds no
/// U (on CUDA's fused float kernel none at all, unless pooled).
/// \throws kcnn::Error, before anything is written, on everything conv2d_forward refuses
///         (with the filters in w's role), when `filters` holds nothing, when params.algo
///         is another algorithm, when params.layout is not the filters' layout or
///         params.groups is not 1 (grouped layers take w), and when
///         U's layout does not fit the call (a CUDA float call whose extents exceed the
///         fused kernel's 32 bits needs F(4x4)'s staged U: pass w instead).
template <class ExecSpace, class XView, class T, class BView, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x,
                    const WinogradFilters<T, ExecSpace>& filters, const BView& bias, const YView& y,
                    const Conv2dParams& params) {
  Impl::static_check_tensor<ExecSpace, XView, 4, false>();
  Impl::static_check_tensor<ExecSpace, BView, 1, false>();
  Impl::static_check_tensor<ExecSpace, YView, 4, true>();
  static_assert(std::is_same_v<Impl::view_scalar_t<XView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<BView>, T> &&
                    std::is_same_v<Impl::view_scalar_t<YView>, T>,
                "kcnn::conv2d_forward: x, bias and y must have the WinogradFilters' scalar type");
  constexpr const char* op = "kcnn::conv2d_forward";
  Impl::throw_if(!filters.ready(), op, "the WinogradFilters hold no filters (update() them first)");
  Impl::throw_if(
      params.algo != ConvAlgo::Winograd && params.algo != ConvAlgo::Auto, op,
      "WinogradFilters run ConvAlgo::Winograd; params.algo is ConvAlgo::", to_string(params.algo));
  Impl::throw_if(params.layout != filters.layout(), op, "the WinogradFilters were transformed for ",
                 to_string(filters.layout()), "; params.layout is ", to_string(params.layout));
  Impl::throw_if(params.groups != 1, op,
                 "WinogradFilters hold an ungrouped layer's filters; params.groups is ",
                 params.groups);
  // The filters' shape, for the one validation of the geometry (extents only: no data).
  const bool nhwc = params.layout == Layout::NHWC;
  using Shape = Kokkos::View<const T****, Kokkos::LayoutRight, typename ExecSpace::memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto M = static_cast<std::size_t>(filters.filters());
  const auto C = static_cast<std::size_t>(filters.channels());
  const Shape shape(nullptr, M, nhwc ? 3 : C, 3, nhwc ? C : 3);
  Impl::check_extents_fit(op, "bias", bias);
  const Impl::Conv2dProblem pb =
      Impl::make_conv2d_geometry(op, x, shape, static_cast<std::int64_t>(bias.extent(0)), y, params,
                                 Impl::ConvTensorNames{"x", "the WinogradFilters", "bias", "y"});
  Impl::check_no_overlap(op, "y", y, "x", x);
  Impl::check_no_overlap(op, "y", y, "the WinogradFilters", filters.impl_storage());
  Impl::check_no_overlap(op, "y", y, "bias", bias);

  const auto xk = Impl::as_kernel_view<ExecSpace, false>(x);
  const auto bk = Impl::as_kernel_view<ExecSpace, false>(bias);
  const auto yk = Impl::as_kernel_view<ExecSpace, true>(y);
  const Impl::WinogradFilterSource<T> source = filters.impl_source();
  auto launch = [&](Impl::LaunchMode mode) {
    return Impl::conv2d_launch_then_pool(
        space, yk, pb, mode, false, [&](const auto& y_view, const Impl::Conv2dProblem& problem) {
          return Impl::conv2d_winograd_from(space, xk, source, bk, y_view, problem,
                                            Impl::WinogradTuning{}, mode);
        });
  };
  if (pb.empty()) return;           // as conv2d_forward with w: validated, nothing to run
  launch(Impl::LaunchMode::Check);  // every refusal before anything runs
  Impl::ProfilingRegion region(std::string(op) + "[Winograd, transformed filters]");
  launch(Impl::LaunchMode::Run);
}

/// \brief conv2d_forward with transformed filters, without bias.
template <class ExecSpace, class XView, class T, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x,
                    const WinogradFilters<T, ExecSpace>& filters, const YView& y,
                    const Conv2dParams& params) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  conv2d_forward(space, x, filters, NoBias(), y, params);
}

}  // namespace kcnn
