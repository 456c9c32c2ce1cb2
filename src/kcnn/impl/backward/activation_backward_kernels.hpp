// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/activation_backward_kernels.hpp
/// \brief The derivatives of the activations, written in terms of the activation's
///        output y = act(z) (what a forward pass keeps), and the element-wise kernel of
///        activation_backward.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../types.hpp"
#include "../common/element_traits.hpp"

namespace kcnn::Impl {

/// dL/dz = dL/dy * act'(z), with act'(z) expressed through y = act(z):
/// ReLU: y > 0 (0 at the kink), Sigmoid: y (1 - y), Tanh: 1 - y^2, Identity: 1.
template <Activation A, class T>
KOKKOS_FORCEINLINE_FUNCTION T activation_gradient(T y, T dy) {
  if constexpr (A == Activation::ReLU) {
    return y > T(0) ? dy : T(0);
  } else if constexpr (A == Activation::Sigmoid) {
    return dy * y * (T(1) - y);
  } else if constexpr (A == Activation::Tanh) {
    return dy * (T(1) - y * y);
  } else {
    return dy;
  }
}

/// dx[i] = activation_gradient(y[i], dy[i]) over equally strided arrays (the caller
/// checks that the three Views share extents and strides, so one offset serves all).
template <Activation A, class T>
struct ActivationBackward {
  const T* y;
  const T* dy;
  T* dx;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    using C = compute_t<T>;  // 16-bit: float, rounded once at the store
    dx[i] = from_compute<T>(activation_gradient<A>(C(y[i]), C(dy[i])));
  }
};

}  // namespace kcnn::Impl
