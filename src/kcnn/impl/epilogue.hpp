// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/epilogue.hpp
/// \brief What happens to an accumulated convolution value before it is stored:
///        bias, then activation. Shared by every algorithm so that they agree exactly.
#pragma once

#include <Kokkos_Core.hpp>

#include "../types.hpp"
#include "macros.hpp"

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
