// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/async_copy.hpp
/// \brief Element copies from global memory into team scratch that do not wait for
///        their load: on NVIDIA GPUs from sm_80 on, `cp.async` (the hardware moves the
///        element straight into shared memory, no register holds it, the thread goes
///        on to issue the next one); elsewhere a plain load and store.
///
/// Use: every thread issues its copies, then calls scratch_copies_wait(), then the team
/// barrier publishes the scratch to the other threads. A thread staging dozens of
/// elements thus pays one memory latency instead of one per element (or per batch of
/// elements held in registers, which the kernels' accumulators leave no room for).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kcnn::Impl {

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define KCNN_ASYNC_SCRATCH_COPY 1
#endif

/// *dst = valid ? *src : 0, possibly still in flight on return. dst: level-0 team
/// scratch; src: global memory, a valid address even when !valid (nothing is read
/// then: the copy writes zeros, e.g. for padding cells). 2-byte elements (the 16-bit
/// types): cp.async copies 4, 8 or 16 bytes, so the thread loads and stores them itself
/// and waits for the load (contiguous runs go through scratch_copy_async_16).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void scratch_copy_async(T* dst, const T* src, bool valid) {
  if constexpr (sizeof(T) == 2) {
    std::uint16_t bits = 0;
    if (valid) bits = *reinterpret_cast<const std::uint16_t*>(src);
    *reinterpret_cast<std::uint16_t*>(dst) = bits;
  } else {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async copies 4, 8 or 16 bytes");
    const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const int src_bytes = valid ? static_cast<int>(sizeof(T)) : 0;  // the rest is zero-filled
    // No "memory" clobber: the copy's destination is only read after
    // scratch_copies_wait() (which has one) and a team barrier. With the clobber the
    // compiler reloaded every kernel parameter from constant memory after each copy.
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared), "l"(src),
                 "n"(static_cast<int>(sizeof(T))), "r"(src_bytes));
#else
    *dst = valid ? *src : T(0);
#endif
  }
}

/// Waits until this thread's scratch_copy_async copies have landed (each thread its
/// own: a team barrier must follow before other threads read them).
KOKKOS_FORCEINLINE_FUNCTION void scratch_copies_wait() {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

/// The shared-window address of level-0 team scratch `p` (sm_80 on; 0 elsewhere): kernels
/// that issue many copies or fragment loads into one buffer form this once and add
/// offsets, instead of converting a generic pointer per instruction.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t scratch_address(const void* p) {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
#else
  (void)p;
  return 0;
#endif
}

/// Writes `value` to the scratch at shared-window address `address` (scratch_address):
/// one 32-bit register per address where a generic pointer takes two. Only on sm_80 and
/// newer, as scratch_address.
KOKKOS_FORCEINLINE_FUNCTION void scratch_store_32(std::uint32_t address, std::uint32_t value) {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
#else
  (void)address, (void)value;
#endif
}

/// scratch_copy_async_16 to the scratch at shared-window address `dst` (scratch_address).
/// Only on sm_80 and newer: callers keep a generic pointer path for other targets.
/// ThroughL1: cp.async.ca, which keeps the 16 bytes in L1 as well, for data that other
/// copies of the same team read again soon (an implicit GEMM's neighbouring filter taps
/// gather shifted copies of the same input rows); else .cg (L2 only).
template <bool ThroughL1 = false>
KOKKOS_FORCEINLINE_FUNCTION void scratch_copy_async_16_at(std::uint32_t dst, const void* src,
                                                          bool valid) {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  const int src_bytes = valid ? 16 : 0;
  if constexpr (ThroughL1) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
  }
#else
  (void)dst, (void)src, (void)valid;
#endif
}

/// Copies 16 bytes, src to dst (both 16-byte aligned), or zeros when !valid, possibly
/// still in flight on return (sm_80 on: cp.async.cg, which bypasses L1: each 16 bytes
/// staged once per team). Elsewhere a plain copy.
KOKKOS_FORCEINLINE_FUNCTION void scratch_copy_async_16(void* dst, const void* src, bool valid) {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  scratch_copy_async_16_at(scratch_address(dst), src, valid);
#else
  struct alignas(16) Bytes16 {
    unsigned char b[16];
  };
  *static_cast<Bytes16*>(dst) = valid ? *static_cast<const Bytes16*>(src) : Bytes16{};
#endif
}

/// Closes the group of this thread's copies issued since the last commit (pipelines
/// of several stages wait for all but the newest groups: scratch_copies_wait_groups).
KOKKOS_FORCEINLINE_FUNCTION void scratch_copies_commit() {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `Pending` of this thread's committed groups are still in flight
/// (a team barrier must follow before other threads read the landed copies).
template <int Pending>
KOKKOS_FORCEINLINE_FUNCTION void scratch_copies_wait_groups() {
#if defined(KCNN_ASYNC_SCRATCH_COPY)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

}  // namespace kcnn::Impl
