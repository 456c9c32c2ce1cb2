// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/macros.hpp
/// \brief Small portability macros for kernels.
#pragma once

/// Asks the device compiler to unroll the next loop (CUDA device code only). Host
/// builds leave unrolling to the compiler: their kernels vectorize across an inner
/// loop instead, and forced unrolling of large bodies costs minutes of compile time.
#if defined(__CUDA_ARCH__)
#define KCNN_DEVICE_UNROLL _Pragma("unroll")
#else
#define KCNN_DEVICE_UNROLL
#endif

/// Asks the device compiler to keep the next loop a loop (CUDA device code only): for
/// loops whose unrolled body would not fit the instruction cache.
#if defined(__CUDA_ARCH__)
#define KCNN_DEVICE_NO_UNROLL _Pragma("unroll 1")
#else
#define KCNN_DEVICE_NO_UNROLL
#endif

/// Unrolls a device loop with a runtime trip count by two (the next iteration's loads
/// overlap this one's arithmetic).
#if defined(__CUDA_ARCH__)
#define KCNN_DEVICE_UNROLL_2 _Pragma("unroll 2")
#else
#define KCNN_DEVICE_UNROLL_2
#endif

/// Asks the host compiler to vectorize the next loop (OpenMP SIMD, honoured when the
/// host compiler runs with OpenMP, as Kokkos' OpenMP backend requires). Nothing in
/// device code, where the loop runs per thread anyway.
#if !defined(__CUDA_ARCH__) && defined(_OPENMP)
#define KCNN_HOST_SIMD _Pragma("omp simd")
#else
#define KCNN_HOST_SIMD
#endif

/// Unrolls the next host loop completely (GCC and Clang host code; its trip count must
/// be a small compile-time constant): for register-blocked host kernels whose
/// accumulator array GCC otherwise keeps on the stack across the loop's iterations
/// (the NHWC depthwise kernel: a load and a store around every FMA, perf, session 38).
#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define KCNN_HOST_UNROLL _Pragma("GCC unroll 16")
#else
#define KCNN_HOST_UNROLL
#endif

/// Asks a host CPU to start loading the cache line at `address` (GCC and Clang; elsewhere
/// nothing): for host loops whose accesses the hardware prefetchers do not foresee.
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
#define KCNN_HOST_PREFETCH(address) __builtin_prefetch(address)
#else
#define KCNN_HOST_PREFETCH(address)
#endif

/// Inlines a host function into its caller (GCC and Clang; elsewhere a plain `inline`):
/// for host loop bodies whose call boundary measurably costs (the NCHW im2col's row
/// walker, kept out of line by GCC, took 7-9% of LeNet C3's Im2colGemm row on an EPYC).
#if defined(__GNUC__) || defined(__clang__)
#define KCNN_HOST_FORCEINLINE inline __attribute__((always_inline))
#else
#define KCNN_HOST_FORCEINLINE inline
#endif

/// The same for a lambda, written after its parameter list (`[&](auto i)
/// KCNN_HOST_INLINE_LAMBDA { ... }`): GCC kept the lambdas of a register-blocked host
/// kernel's compile-time loops out of line, its accumulators in memory (the NHWC
/// depthwise windowed block: 2.5x slower, session 44).
#if defined(__GNUC__) || defined(__clang__)
#define KCNN_HOST_INLINE_LAMBDA __attribute__((always_inline))
#else
#define KCNN_HOST_INLINE_LAMBDA
#endif

/// Keeps a host function out of line: for a hot inner loop whose caller has so many live
/// values that, inlined, the loop would reload spilled ones on every iteration.
#if defined(__GNUC__) || defined(__clang__)
#define KCNN_HOST_NOINLINE __attribute__((noinline))
#else
#define KCNN_HOST_NOINLINE
#endif

/// Starts a hot host function on a 64-byte boundary, so that the alignment of its inner
/// loops no longer depends on what the linker placed before it. The NCHW im2col's work
/// item ran its LeNet C3 stride 2 rows 20% slower (`perf`: samples per run) when an
/// unrelated change moved it from a 64-byte to a 16-byte boundary, the code unchanged
/// (EPYC, session 15).
#if defined(__GNUC__) || defined(__clang__)
#define KCNN_HOST_ALIGN_HOT __attribute__((aligned(64)))
#else
#define KCNN_HOST_ALIGN_HOT
#endif
