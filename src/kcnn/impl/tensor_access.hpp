// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/tensor_access.hpp
/// \brief Layout-aware element access to 4-D tensors by logical (batch, channel, row,
///        column) coordinates, so kernels are written once for NCHW and NHWC.
#pragma once

#include <Kokkos_Core.hpp>

#include "../types.hpp"

namespace kcnn::Impl {

/// Element (n, c, h, w) of a tensor stored in layout `L`: (n, c, h, w) for NCHW,
/// (n, h, w, c) for NHWC. Weights use it too, with n = output channel.
template <Layout L, class View, class I0, class I1, class I2, class I3>
KOKKOS_FORCEINLINE_FUNCTION decltype(auto) at(const View& v, I0 n, I1 c, I2 h, I3 w) {
  if constexpr (L == Layout::NCHW) {
    return v(n, c, h, w);
  } else {
    return v(n, h, w, c);
  }
}

}  // namespace kcnn::Impl
