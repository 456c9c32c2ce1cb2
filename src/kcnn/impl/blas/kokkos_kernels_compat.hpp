// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/blas/kokkos_kernels_compat.hpp
/// \brief The one place where kcnn names Kokkos Kernels internals or depends on its
///        version. Everything else goes through impl/blas/gemm.hpp.
///
/// Supported: Kokkos Kernels 3.4.01 (Debian's, built by cmake/bootstrap-deps.sh) and
/// 4.x (tested with 4.6.02). Kokkos Kernels before 3.6 defines no version macro; 3.6
/// and later define KOKKOSKERNELS_VERSION (major * 10000 + minor * 100 + patch).
#pragma once

#include <KokkosKernels_config.h>
#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <type_traits>

#if defined(KOKKOSKERNELS_VERSION)
#define KCNN_KOKKOSKERNELS_VERSION KOKKOSKERNELS_VERSION
#else
#define KCNN_KOKKOSKERNELS_VERSION 30400  // 3.4 and 3.5 define no version macro
#endif

/// Kokkos Kernels 3.6 added KokkosBlas::gemm(space, ...), whose cuBLAS path runs on
/// space's stream. Before it, gemm takes no execution space and cuBLAS runs on the
/// stream its process-wide handle holds.
#if KCNN_KOKKOSKERNELS_VERSION >= 30600
#define KCNN_KOKKOSKERNELS_GEMM_TAKES_SPACE 1
#else
#define KCNN_KOKKOSKERNELS_GEMM_TAKES_SPACE 0
#endif

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
// Kokkos Kernels' process-wide cuBLAS handle: its math mode is set for each call
// (GemmMath), and before 3.6 its stream too.
#include <KokkosBlas_tpl_spec.hpp>
#include <mutex>
#define KCNN_KOKKOSKERNELS_CUBLAS_HANDLE 1
#endif

namespace kcnn::Impl::kokkos_kernels_compat {

#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
/// Serializes kcnn's uses of Kokkos Kernels' process-wide cuBLAS handle, whose stream
/// and math mode each call binds and restores. One mutex for every caller (not one per
/// template instantiation): a float and a 16-bit GEMM on two streams share the handle.
inline std::mutex& cublas_handle_mutex() {
  static std::mutex mutex;
  return mutex;
}
#endif

/// True when KokkosBlas::gemm on these operand View types is served by a TPL (the host
/// BLAS or cuBLAS) rather than Kokkos Kernels' own kernel.
/// Kokkos Kernels < 3.6: gemm_tpl_spec_avail<A, B, C>; 3.6 and later take the execution
/// space as a first template argument.
template <class ExecSpace, class AView, class BView, class CView>
inline constexpr bool gemm_tpl_available_v =
#if KCNN_KOKKOSKERNELS_GEMM_TAKES_SPACE
    KokkosBlas::Impl::gemm_tpl_spec_avail<ExecSpace, AView, BView, CView>::value;
#else
    KokkosBlas::Impl::gemm_tpl_spec_avail<AView, BView, CView>::value;
#endif

/// The arithmetic a GEMM may use on tensor cores (cuBLAS' math mode): Strict computes
/// IEEE float/double products (cuBLAS' default math; fp64 tensor cores are IEEE and
/// cuBLAS uses them for double in this mode), TF32 rounds float factors to TF32 on
/// tensor cores (CUBLAS_TF32_TENSOR_OP_MATH). Host BLAS libraries have no such mode:
/// they compute strictly.
enum class GemmMath { Strict, TF32 };

/// C = alpha op(A) op(B) + beta C, ordered on `space` (on device backends: enqueued on
/// space's stream, no fence), with `math` bound to the cuBLAS handle for this call.
template <class ExecSpace, class AView, class BView, class CView, class Scalar>
void gemm(const ExecSpace& space, const char* trans_a, const char* trans_b, Scalar alpha,
          const AView& A, const BView& B, Scalar beta, const CView& C,
          GemmMath math = GemmMath::Strict) {
#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    // The handle is Kokkos Kernels' and process-wide: bind the math mode (and, before
    // Kokkos Kernels 3.6, space's stream, else cuBLAS would run on whatever stream the
    // handle holds, unordered with kcnn's kernels on `space`) for this call and restore
    // what it held afterwards. The mutex serializes kcnn's uses of the handle. cuBLAS
    // reads the math mode when the call is enqueued, so restoring on return is safe.
    const std::lock_guard<std::mutex> lock(cublas_handle_mutex());
    cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
    cublasMath_t previous_math = CUBLAS_DEFAULT_MATH;
    cublasGetMathMode(handle, &previous_math);
    cublasSetMathMode(handle,
                      math == GemmMath::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    struct RestoreMath {
      cublasHandle_t handle;
      cublasMath_t math;
      ~RestoreMath() { cublasSetMathMode(handle, math); }
    } restore_math{handle, previous_math};
#if KCNN_KOKKOSKERNELS_GEMM_TAKES_SPACE
    KokkosBlas::gemm(space, trans_a, trans_b, alpha, A, B, beta, C);
#else
    cudaStream_t previous = nullptr;
    cublasGetStream(handle, &previous);
    cublasSetStream(handle, space.cuda_stream());
    struct RestoreStream {
      cublasHandle_t handle;
      cudaStream_t stream;
      ~RestoreStream() { cublasSetStream(handle, stream); }
    } restore_stream{handle, previous};
    KokkosBlas::gemm(trans_a, trans_b, alpha, A, B, beta, C);
#endif
    return;
  }
#endif
  (void)math;  // host BLAS: strict
#if KCNN_KOKKOSKERNELS_GEMM_TAKES_SPACE
  KokkosBlas::gemm(space, trans_a, trans_b, alpha, A, B, beta, C);
#else
  // Host backends: the host BLAS runs synchronously on the calling thread, so the call
  // is ordered after whatever `space` ran before (host kernels complete on return).
  (void)space;
  KokkosBlas::gemm(trans_a, trans_b, alpha, A, B, beta, C);
#endif
}

/// Whether gemm_16bit_float can run on ExecSpace: cuBLAS' mixed-precision GEMM through
/// Kokkos Kernels' handle (CUDA builds with the cuBLAS TPL).
template <class ExecSpace>
inline constexpr bool gemm_16bit_available_v =
#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
    std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
    false;
#endif

/// C (m x n, float, row-major, leading dimension ldc) = op(A) op(B) for row-major 16-bit
/// A and B (half_t or bfloat16 bits, `bfloat16` says which) with float products and sums
/// (cublasGemmEx, CUBLAS_COMPUTE_32F): one rounding, at the caller's store. Enqueued on
/// space's stream. Only where gemm_16bit_available_v<ExecSpace>; false if cuBLAS
/// refused the call.
template <class ExecSpace>
bool gemm_16bit_float(const ExecSpace& space, char trans_a, char trans_b, int m, int n, int k,
                      const void* A, int lda, const void* B, int ldb, float* C, int ldc,
                      bool bfloat16) {
#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands swap.
    const std::lock_guard<std::mutex> lock(cublas_handle_mutex());
    cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
    cudaStream_t previous = nullptr;
    cublasGetStream(handle, &previous);
    cublasSetStream(handle, space.cuda_stream());
    const cudaDataType type = bfloat16 ? CUDA_R_16BF : CUDA_R_16F;
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t status =
        cublasGemmEx(handle, trans_b == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T,
                     trans_a == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T, n, m, k, &one, B, type, ldb, A,
                     type, lda, &zero, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cublasSetStream(handle, previous);
    return status == CUBLAS_STATUS_SUCCESS;
  }
#endif
  (void)space, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)A, (void)lda;
  (void)B, (void)ldb, (void)C, (void)ldc, (void)bfloat16;
  return false;
}

}  // namespace kcnn::Impl::kokkos_kernels_compat
