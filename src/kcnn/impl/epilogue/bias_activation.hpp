// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/epilogue/bias_activation.hpp
/// \brief What happens to an accumulated convolution value before it is stored:
///        bias, then activation. Shared by every algorithm so that they agree exactly.
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "../../types.hpp"
#include "../arch/macros.hpp"

namespace kcnn::Impl {

// Kokkos moved its math functions out of Experimental in 3.6 (and removed the old
// names in 4.x); use whichever this Kokkos has.
#if KOKKOS_VERSION >= 30600
using Kokkos::exp;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::tanh;
#endif

template <class T>
KOKKOS_INLINE_FUNCTION T apply_activation(Activation activation, T v) {
  switch (activation) {
    case Activation::ReLU:
      return v > T(0) ? v : T(0);
    case Activation::Sigmoid:
      return T(1) / (T(1) + exp(-v));
    case Activation::Tanh:
      return tanh(v);
    case Activation::Identity:
      break;
  }
  return v;
}

/// Calls f(std::integral_constant<Activation, a>{}) for the run-time activation a, so
/// that the code f instantiates sees it at compile time: host loops calling
/// apply_activation(decltype(tag)::value, v) have no switch inside and vectorize, and GPU
/// epilogues take the switch once instead of once per unrolled element (with a switch
/// per element LeNet C1's fused kernel spent 21% of its stall samples waiting for
/// instruction fetches, H100).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class F>
KOKKOS_FORCEINLINE_FUNCTION void with_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::ReLU:
      f(std::integral_constant<Activation, Activation::ReLU>{});
      return;
    case Activation::Sigmoid:
      f(std::integral_constant<Activation, Activation::Sigmoid>{});
      return;
    case Activation::Tanh:
      f(std::integral_constant<Activation, Activation::Tanh>{});
      return;
    case Activation::Identity:
      break;
  }
  f(std::integral_constant<Activation, Activation::Identity>{});
}

/// out[i] = activation(in[i] + bias) for a row of N values. The switch sits outside the
/// loops so that each loop is one SIMD stream on CPUs.
template <int N, class T>
KOKKOS_INLINE_FUNCTION void bias_activation_row(Activation activation, const T* in, T bias,
                                                T* out) {
  switch (activation) {
    case Activation::ReLU:
      KCNN_HOST_SIMD
      for (int i = 0; i < N; ++i)
        out[i] = in[i] + bias > T(0) ? in[i] + bias : T(0);
      return;
    case Activation::Identity:
      KCNN_HOST_SIMD
      for (int i = 0; i < N; ++i)
        out[i] = in[i] + bias;
      return;
    default:
      for (int i = 0; i < N; ++i)
        out[i] = apply_activation(activation, in[i] + bias);
      return;
  }
}

}  // namespace kcnn::Impl
