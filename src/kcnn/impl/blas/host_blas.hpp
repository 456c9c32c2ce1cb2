// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/blas/host_blas.hpp
/// \brief The host BLAS called directly, for threads inside a Kokkos parallel region.
///
/// Kokkos forbids Kokkos calls inside a parallel region, and KokkosBlas::gemm is one:
/// it pushes profiling regions, and with a profiling tool attached Kokkos 4.x fences
/// on every region push, which inside an OpenMP parallel region deadlocks on the
/// instance's mutex. Threads that each multiply their own block (the concurrent host
/// pipeline of Im2colGemm) call the BLAS library that Kokkos Kernels' BLAS TPL links
/// (OpenBLAS here; MKL or any Fortran BLAS elsewhere) through its Fortran interface, as
/// Kokkos Kernels itself does, with Kokkos Kernels' name mangling (F77_BLAS_MANGLE).
/// Without a BLAS TPL (host_blas_available is false) such pipelines must not be used.
#pragma once

#include <KokkosKernels_config.h>

#include <type_traits>

#if defined(__has_include)
#if __has_include(<dlfcn.h>)
#include <dlfcn.h>  // dlsym: OpenBLAS' thread control, if OpenBLAS is linked
#define KCNN_HAS_DLSYM 1
#endif
#endif
#ifndef KCNN_HAS_DLSYM
#define KCNN_HAS_DLSYM 0
#endif
#include <mutex>

#if defined(KOKKOSKERNELS_ENABLE_TPL_MKL)
#include <mkl_types.h>
#endif

namespace kcnn::Impl {
/// The Fortran BLAS integer: Kokkos Kernels' KK_INT (MKL_INT with MKL, ILP64 aware).
#if defined(KOKKOSKERNELS_ENABLE_TPL_MKL)
using host_blas_int = MKL_INT;
#else
using host_blas_int = int;
#endif
}  // namespace kcnn::Impl

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
extern "C" {
void F77_BLAS_MANGLE(sgemm,
                     SGEMM)(const char* transa, const char* transb,
                            const kcnn::Impl::host_blas_int* m, const kcnn::Impl::host_blas_int* n,
                            const kcnn::Impl::host_blas_int* k, const float* alpha, const float* a,
                            const kcnn::Impl::host_blas_int* lda, const float* b,
                            const kcnn::Impl::host_blas_int* ldb, const float* beta, float* c,
                            const kcnn::Impl::host_blas_int* ldc);
void F77_BLAS_MANGLE(dgemm,
                     DGEMM)(const char* transa, const char* transb,
                            const kcnn::Impl::host_blas_int* m, const kcnn::Impl::host_blas_int* n,
                            const kcnn::Impl::host_blas_int* k, const double* alpha,
                            const double* a, const kcnn::Impl::host_blas_int* lda, const double* b,
                            const kcnn::Impl::host_blas_int* ldb, const double* beta, double* c,
                            const kcnn::Impl::host_blas_int* ldc);
}
#endif

namespace kcnn::Impl {

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
inline constexpr bool host_blas_available = true;
#else
inline constexpr bool host_blas_available = false;
#endif

/// Row-major C (m x n) = alpha op(A) op(B) + beta C on the calling thread's BLAS, with
/// op(A) m x k and op(B) k x n; lda/ldb/ldc are the row strides of A, B and C as stored.
/// T is float or double. Callable from inside a host parallel region.
template <class T>
void host_gemm_row_major(char trans_a, char trans_b, int m, int n, int k, T alpha, const T* A,
                         int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "kcnn: the host BLAS path takes float or double");
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same memory,
  // with the operands (and the dimensions m, n) swapped.
  const host_blas_int rows = n, cols = m, depth = k;
  const host_blas_int ld_first = ldb, ld_second = lda, ld_c = ldc;
  if constexpr (std::is_same_v<T, float>) {
    F77_BLAS_MANGLE(sgemm, SGEMM)
    (&trans_b, &trans_a, &rows, &cols, &depth, &alpha, B, &ld_first, A, &ld_second, &beta, C,
     &ld_c);
  } else {
    F77_BLAS_MANGLE(dgemm, DGEMM)
    (&trans_b, &trans_a, &rows, &cols, &depth, &alpha, B, &ld_first, A, &ld_second, &beta, C,
     &ld_c);
  }
#else
  // Never instantiated: callers reach it only where host_blas_available holds.
  static_assert(host_blas_available && sizeof(T) == 0,
                "kcnn: host_gemm_row_major needs Kokkos Kernels' BLAS TPL");
#endif
}

/// Guards the process-wide OpenBLAS thread count that with_single_threaded_host_blas
/// sets and restores: one mutex for every caller, whatever f's type.
inline std::mutex& host_blas_threads_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// Runs f() with the host BLAS doing each call on the calling thread. OpenBLAS (whose
/// pthreads build would start its own threads inside every call, oversubscribing the
/// cores kcnn's threads already use) is set to one thread through
/// openblas_set_num_threads, looked up at run time, and restored afterwards; other BLAS
/// libraries are left as they are (MKL and OpenMP builds run single-threaded inside
/// parallel regions by themselves). The setting is process-wide while f() runs, so f()
/// runs under host_blas_threads_mutex(): host threads that each drive an instance of their
/// own take turns here.
template <class F>
void with_single_threaded_host_blas(F&& f) {
#if KCNN_HAS_DLSYM
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  static const auto set_threads =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  static const auto get_threads =
      reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_threads && get_threads) {
    std::lock_guard<std::mutex> lock(host_blas_threads_mutex());
    const int previous = get_threads();
    if (previous > 1) set_threads(1);
    struct Restore {
      SetThreads set;
      int threads;
      ~Restore() {
        if (threads > 1) set(threads);
      }
    } restore{set_threads, previous};
    f();
    return;
  }
#endif
  f();
}

}  // namespace kcnn::Impl
