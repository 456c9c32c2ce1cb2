// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/host_simd.hpp
/// \brief The host's vector unit, in one place: the instruction set the host kernels are
///        compiled for (HostIsa, from the target flags) and HostVector<T>, the few
///        operations the register-blocked host micro-kernels need (aligned load and
///        store, broadcast from memory, fused multiply-add) on AVX-512, AVX2 + FMA, or a
///        portable fallback of fixed-size arrays that the compiler may vectorize.
///
/// Kokkos 3.x has no SIMD types (Kokkos::Experimental::simd came with 4.x), and the
/// micro-kernels need what an auto-vectorizer does not promise: every accumulator in a
/// register for the whole reduction, one broadcast load per input element, and an FMA
/// whatever -ffp-contract says (ISO C++ modes, e.g. -std=c++17 with
/// CMAKE_CXX_EXTENSIONS OFF, turn GCC's contraction off and would halve the rate). So
/// the intrinsics live here and nowhere else. Device passes and nvcc-compiled units take
/// the portable fallback (their host kernels are not the ones users time).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>

#if !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
#include <immintrin.h>
#define KCNN_HOST_VECTOR_INTRINSICS 1
#endif

namespace kcnn::Impl {

/// The host instruction set the kernels were compiled for (kcnn's headers compile in the
/// caller's translation units: its -march, see KCNN_HOST_ARCH), which decides how wide
/// the host kernels' vectors are. Avx512Amx: AVX-512 plus AMX tiles, i.e. Intel Xeon from
/// Sapphire Rapids on (no kernel uses the tiles: they multiply 16-bit and 8-bit values,
/// kcnn's host kernels float and double ones).
enum class HostIsa { Generic, Avx2, Avx512, Avx512Amx };

/// Whether the build's host kernels have AVX-512 vectors (with or without AMX).
constexpr bool has_avx512(HostIsa isa) {
  return isa == HostIsa::Avx512 || isa == HostIsa::Avx512Amx;
}

constexpr HostIsa build_host_isa() {
#if defined(__AVX512F__) && defined(__AMX_TILE__)
  return HostIsa::Avx512Amx;
#elif defined(__AVX512F__)
  return HostIsa::Avx512;
#elif defined(__AVX2__)
  return HostIsa::Avx2;
#else
  return HostIsa::Generic;
#endif
}

/// Whether HostVector<float|double> are the intrinsics below (AVX-512 or AVX2 + FMA, not
/// in nvcc or hipcc units) rather than the portable fallback.
inline constexpr bool kHostVectorIntrinsics =
#if defined(KCNN_HOST_VECTOR_INTRINSICS)
    true;
#else
    false;
#endif

/// Vector registers of the host ISA: what a register block may hold (accumulators,
/// operands and the broadcast value).
inline constexpr int kHostVectorRegisters =
#if defined(__AVX512F__)
    32;
#else
    16;
#endif

/// The L1 data cache as the host kernels' store orders assume it: addresses a multiple of
/// kHostL1SetSpan bytes apart fall into one set of kHostL1Ways lines of kHostCacheLine
/// bytes (x86 cores since Intel Sandy Bridge and AMD Zen: 32 KB 8-way or 48 KB 12-way;
/// the smaller associativity).
inline constexpr std::size_t kHostL1SetSpan = 4096;
inline constexpr std::size_t kHostL1Ways = 8;
inline constexpr std::size_t kHostCacheLine = 64;

/// Whether `streams` store streams `stride_bytes` apart (writing a line of each in turn)
/// need more lines of one L1 set than it holds.
inline bool host_l1_streams_collide(std::int64_t stride_bytes, std::int64_t streams) {
  const auto stride = static_cast<std::size_t>(stride_bytes < 0 ? -stride_bytes : stride_bytes);
  const std::size_t shared = std::gcd(stride, kHostL1SetSpan);  // gcd(0, span) = span
  const std::size_t sets = kHostL1SetSpan / std::max(shared, kHostCacheLine);
  return static_cast<std::size_t>(streams) > kHostL1Ways * sets;
}

/// The portable fallback: `lanes` values in an array, element loops the compiler may
/// vectorize (16 bytes: SSE2, x86-64's baseline).
template <class T>
struct HostVectorGeneric {
  static constexpr int lanes = static_cast<int>(16 / sizeof(T));
  static constexpr std::size_t alignment = 16;
  struct type {
    alignas(16) T e[lanes];
  };
  static type zero() {
    type v;
    for (int i = 0; i < lanes; ++i)
      v.e[i] = T(0);
    return v;
  }
  static type load(const T* p) {
    type v;
    for (int i = 0; i < lanes; ++i)
      v.e[i] = p[i];
    return v;
  }
  static type load_unaligned(const T* p) { return load(p); }
  static void store(T* p, const type& v) {
    for (int i = 0; i < lanes; ++i)
      p[i] = v.e[i];
  }
  static void store_unaligned(T* p, const type& v) { store(p, v); }
  static void store_streaming(T* p, const type& v) { store(p, v); }
  static void streaming_fence() {}
  static type broadcast(const T* p) {
    type v;
    const T s = *p;
    for (int i = 0; i < lanes; ++i)
      v.e[i] = s;
    return v;
  }
  /// a * b + c (contracted where the compiler's flags allow it).
  static type fma(const type& a, const type& b, const type& c) {
    type v;
    for (int i = 0; i < lanes; ++i)
      v.e[i] = a.e[i] * b.e[i] + c.e[i];
    return v;
  }
  /// See HostVector<float> on AVX2.
  static void keep_in_register(type&) {}
};

/// HostVector<T>: T = float or double. `load` / `store` need `alignment`-byte aligned
/// addresses, `load_unaligned` / `store_unaligned` any. `store_streaming` (aligned) writes
/// past the caches, without reading the line first: for outputs larger than the caches
/// that a later pass reads; `streaming_fence()` orders such stores before the ones after
/// it (before another thread may read them). `keep_in_register(v)` makes a loaded value
/// opaque to the compiler, so that it stays in one register instead of being folded back into every
/// FMA that reads it: GCC 12 folded a micro-kernel's weight vector into its 3 FMAs (AVX2, 4 x 3
/// block), 15 loads per 12 FMAs instead of 7, and the load ports, not the FMA units, set the pace.
template <class T>
struct HostVector : HostVectorGeneric<T> {};

#if defined(KCNN_HOST_VECTOR_INTRINSICS) && defined(__AVX512F__)
template <>
struct HostVector<float> {
  static constexpr int lanes = 16;
  static constexpr std::size_t alignment = 64;
  using type = __m512;
  static type zero() { return _mm512_setzero_ps(); }
  static type load(const float* p) { return _mm512_load_ps(p); }
  static type load_unaligned(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, type v) { _mm512_store_ps(p, v); }
  static void store_unaligned(float* p, type v) { _mm512_storeu_ps(p, v); }
  static void store_streaming(float* p, type v) { _mm512_stream_ps(p, v); }
  static void streaming_fence() { _mm_sfence(); }
  static type broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static void keep_in_register(type& v) { asm("" : "+v"(v)); }
};
template <>
struct HostVector<double> {
  static constexpr int lanes = 8;
  static constexpr std::size_t alignment = 64;
  using type = __m512d;
  static type zero() { return _mm512_setzero_pd(); }
  static type load(const double* p) { return _mm512_load_pd(p); }
  static type load_unaligned(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, type v) { _mm512_store_pd(p, v); }
  static void store_unaligned(double* p, type v) { _mm512_storeu_pd(p, v); }
  static void store_streaming(double* p, type v) { _mm512_stream_pd(p, v); }
  static void streaming_fence() { _mm_sfence(); }
  static type broadcast(const double* p) { return _mm512_set1_pd(*p); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
  static void keep_in_register(type& v) { asm("" : "+v"(v)); }
};
#elif defined(KCNN_HOST_VECTOR_INTRINSICS)
template <>
struct HostVector<float> {
  static constexpr int lanes = 8;
  static constexpr std::size_t alignment = 32;
  using type = __m256;
  static type zero() { return _mm256_setzero_ps(); }
  static type load(const float* p) { return _mm256_load_ps(p); }
  static type load_unaligned(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, type v) { _mm256_store_ps(p, v); }
  static void store_unaligned(float* p, type v) { _mm256_storeu_ps(p, v); }
  static void store_streaming(float* p, type v) { _mm256_stream_ps(p, v); }
  static void streaming_fence() { _mm_sfence(); }
  static type broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  static void keep_in_register(type& v) { asm("" : "+x"(v)); }
};
template <>
struct HostVector<double> {
  static constexpr int lanes = 4;
  static constexpr std::size_t alignment = 32;
  using type = __m256d;
  static type zero() { return _mm256_setzero_pd(); }
  static type load(const double* p) { return _mm256_load_pd(p); }
  static type load_unaligned(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, type v) { _mm256_store_pd(p, v); }
  static void store_unaligned(double* p, type v) { _mm256_storeu_pd(p, v); }
  static void store_streaming(double* p, type v) { _mm256_stream_pd(p, v); }
  static void streaming_fence() { _mm_sfence(); }
  static type broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_pd(a, b, c); }
  static void keep_in_register(type& v) { asm("" : "+x"(v)); }
};
#endif

}  // namespace kcnn::Impl
