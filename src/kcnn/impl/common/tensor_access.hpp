// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/tensor_access.hpp
/// \brief Layout-aware element access to 4-D tensors by logical (batch, channel, row,
///        column) coordinates, so kernels are written once for NCHW and NHWC.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../../types.hpp"
#include "element_traits.hpp"

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

/// N consecutive values as one aligned unit, for the vector loads and stores of the
/// GPU kernels: aligned to their size up to 16 bytes (kVectorAccessBytes), so that
/// vector_elements_v<T> of them are one 128-bit access. Only for addresses the caller
/// has proven so aligned.
template <class T, int N>
struct alignas(sizeof(T) * N < kVectorAccessBytes ? sizeof(T) * N : kVectorAccessBytes) AlignedVec {
  static_assert((sizeof(T) * N & (sizeof(T) * N - 1)) == 0,
                "AlignedVec: the vector's size must be a power of two (an alignment)");
  T v[N];
};

/// Four values: one 128-bit access for float, two for double (the kernels' micro-tiles
/// are multiples of 4 wide).
template <class T>
using AlignedVec4 = AlignedVec<T, 4>;

/// Element strides of a rank-4 tensor by logical dimension (batch, channel, row,
/// column), whatever the View's layout: for raw-pointer kernels that form 64-bit
/// addresses themselves. Weights use it too, with n = output channel.
struct LogicalStrides {
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  KOKKOS_INLINE_FUNCTION std::int64_t offset(std::int64_t in, std::int64_t ic, std::int64_t ih,
                                             std::int64_t iw) const {
    return in * n + ic * c + ih * h + iw * w;
  }
};

template <Layout L, class View>
LogicalStrides logical_strides(const View& v) {
  const auto s = [&](int i) { return static_cast<std::int64_t>(v.stride(i)); };
  if constexpr (L == Layout::NCHW) {
    return {s(0), s(1), s(2), s(3)};
  } else {
    return {s(0), s(3), s(1), s(2)};
  }
}

/// logical_strides for a layout known at run time.
template <class View>
LogicalStrides logical_strides(const View& v, Layout layout) {
  return layout == Layout::NCHW ? logical_strides<Layout::NCHW>(v)
                                : logical_strides<Layout::NHWC>(v);
}

/// LogicalStrides in 32 bits, for tensors whose every element offset fits int (see
/// offsets_fit_int): a GPU then forms an offset with one 32-bit multiply-add per index
/// instead of a chain of 64-bit multiplies.
struct LogicalStrides32 {
  int n = 0, c = 0, h = 0, w = 0;
  KOKKOS_INLINE_FUNCTION int offset(int in, int ic, int ih, int iw) const {
    return in * n + ic * c + ih * h + iw * w;
  }
};

/// Whether pointer p is aligned to `bytes` (the vector accesses' launch checks).
template <class T>
bool aligned_to(const T* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}
/// Whether vectors of k elements along the channels (NHWC) that start at a channel
/// multiple of k are aligned to k elements wherever the base pointer is: channels
/// contiguous, every other stride a multiple of k.
inline bool channel_vectors_aligned(const LogicalStrides& s, std::int64_t k) {
  return s.c == 1 && s.n % k == 0 && s.h % k == 0 && s.w % k == 0;
}
/// The same for vectors along the columns (NCHW) starting at a column multiple of k.
inline bool column_vectors_aligned(const LogicalStrides& s, std::int64_t k) {
  return s.w == 1 && s.n % k == 0 && s.c % k == 0 && s.h % k == 0;
}

/// Whether every element offset of `v` fits int.
template <class View>
bool offsets_fit_int(const View& v) {
  return v.span() <= static_cast<std::size_t>(std::numeric_limits<int>::max());
}

/// The 32-bit strides of `v`; only for Views with offsets_fit_int(v).
template <Layout L, class View>
LogicalStrides32 logical_strides32(const View& v) {
  const LogicalStrides s = logical_strides<L>(v);
  return {static_cast<int>(s.n), static_cast<int>(s.c), static_cast<int>(s.h),
          static_cast<int>(s.w)};
}

}  // namespace kcnn::Impl
