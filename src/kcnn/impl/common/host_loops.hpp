// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/host_loops.hpp
/// \brief Vectorizable host loop bodies (zero, copy, gather, add, scatter-add over raw
///        pointers) and HostJob, a host-shaped kernel that can run in parallel or
///        serially inside another host kernel.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kcnn::Impl {

// ---------------------------------------------------------------------------------
// Host loop bodies. Separate functions with restrict-qualified pointers so that the
// compiler knows the source and destination do not alias and vectorizes. The
// contiguous ones are written in blocks of 16: as plain loops GCC turns them into
// memcpy/memset calls, whose call overhead dominates the short runs im2col moves (an
// output row, often a few dozen elements; padding, one or two). Copies and fills end
// with one block overlapping the previous one; runs shorter than a block take two
// overlapping pieces of 8 or 4 elements (a scalar loop with an early exit was turned
// into a memmove call by GCC 12: LeNet C1's NHWC im2col, seven 28-byte runs per pixel,
// then made 45 M calls per convolution and ran 5% slower or faster with its placement
// in memory).
// ---------------------------------------------------------------------------------

inline constexpr std::int64_t kHostBlock = 16;

template <class T>
inline void host_zero(T* KOKKOS_RESTRICT dst, std::int64_t n) {
  if (n < kHostBlock) {
    if (n >= 8) {
      for (std::int64_t j = 0; j < 8; ++j)
        dst[j] = T(0);
      for (std::int64_t j = 0; j < 8; ++j)
        dst[n - 8 + j] = T(0);
    } else if (n >= 4) {
      for (std::int64_t j = 0; j < 4; ++j)
        dst[j] = T(0);
      for (std::int64_t j = 0; j < 4; ++j)
        dst[n - 4 + j] = T(0);
    } else {
      if (n > 0) dst[0] = T(0);
      if (n > 1) dst[1] = T(0);
      if (n > 2) dst[2] = T(0);
    }
    return;
  }
  // Indexed blocks, not a pointer walk: with the pointer walk (session 11, for register
  // pressure in the then out-of-line NCHW row walker) the LeNet Im2colGemm rows ran 5-8%
  // slower on an EPYC, the im2col and OpenBLAS' packing of its output alike (per-row
  // alternation against the pre-refactor build, session 14; ImplicitGemm's rows equal or
  // faster with the indexed form).
  for (std::int64_t i = 0; i + kHostBlock <= n; i += kHostBlock)
    for (std::int64_t j = 0; j < kHostBlock; ++j)
      dst[i + j] = T(0);
  for (std::int64_t j = 0; j < kHostBlock; ++j)
    dst[n - kHostBlock + j] = T(0);
}

template <class T>
inline void host_copy(T* KOKKOS_RESTRICT dst, const T* KOKKOS_RESTRICT src, std::int64_t n) {
  if (n < kHostBlock) {
    if (n >= 8) {
      for (std::int64_t j = 0; j < 8; ++j)
        dst[j] = src[j];
      for (std::int64_t j = 0; j < 8; ++j)
        dst[n - 8 + j] = src[n - 8 + j];
    } else if (n >= 4) {
      for (std::int64_t j = 0; j < 4; ++j)
        dst[j] = src[j];
      for (std::int64_t j = 0; j < 4; ++j)
        dst[n - 4 + j] = src[n - 4 + j];
    } else {
      if (n > 0) dst[0] = src[0];
      if (n > 1) dst[1] = src[1];
      if (n > 2) dst[2] = src[2];
    }
    return;
  }
  for (std::int64_t i = 0; i + kHostBlock <= n; i += kHostBlock)
    for (std::int64_t j = 0; j < kHostBlock; ++j)
      dst[i + j] = src[i + j];
  for (std::int64_t j = 0; j < kHostBlock; ++j)
    dst[n - kHostBlock + j] = src[n - kHostBlock + j];
}

template <class T>
inline void host_gather(T* KOKKOS_RESTRICT dst, const T* KOKKOS_RESTRICT src, std::int64_t n,
                        std::int64_t src_step) {
  // Indexed like the blocks above: pointer-walked (session 11), LeNet C3 stride 2 NCHW
  // ImplicitGemm ran 4-6% slower than before the refactor (EPYC, session 15).
  for (std::int64_t i = 0; i < n; ++i)
    dst[i] = src[i * src_step];
}

template <class T>
inline void host_add(T* KOKKOS_RESTRICT dst, const T* KOKKOS_RESTRICT src, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + kHostBlock <= n; i += kHostBlock)
    for (std::int64_t j = 0; j < kHostBlock; ++j)
      dst[i + j] += src[i + j];
  for (; i < n; ++i)
    dst[i] += src[i];
}

template <class T>
inline void host_scatter_add(T* KOKKOS_RESTRICT dst, std::int64_t dst_step,
                             const T* KOKKOS_RESTRICT src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    dst[i * dst_step] += src[i];
}

/// dst[i*step] for i < n, any step (1 takes the contiguous loop).
template <class T>
inline void host_copy_strided(T* dst, const T* src, std::int64_t n, std::int64_t src_step) {
  if (src_step == 1) {
    host_copy(dst, src, n);
  } else {
    host_gather(dst, src, n, src_step);
  }
}

template <class T>
inline void host_zero_strided(T* dst, std::int64_t n, std::int64_t step) {
  if (step == 1) {
    host_zero(dst, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      dst[i * step] = T(0);
  }
}

template <class T>
inline void host_add_strided(T* dst, std::int64_t dst_step, const T* src, std::int64_t n) {
  if (dst_step == 1) {
    host_add(dst, src, n);
  } else {
    host_scatter_add(dst, dst_step, src, n);
  }
}

/// A host-shaped kernel as a functor and its number of work items, so that it can run
/// as a parallel_for or serially inside another host kernel.
template <class Functor>
struct HostJob {
  Functor functor;
  std::int64_t items;

  void run_serial() const {
    for (std::int64_t i = 0; i < items; ++i)
      functor(i);
  }
};

}  // namespace kcnn::Impl
