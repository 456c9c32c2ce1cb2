// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/blas/gemm.hpp
/// \brief kcnn's GEMM entry point: row-major matrices over raw pointers, multiplied by
///        Kokkos Kernels (cuBLAS on CUDA, the host BLAS TPL on the host), ordered on the
///        execution space instance. Must be called from host code outside any Kokkos
///        parallel region (it is a Kokkos Kernels call: it may push profiling regions,
///        launch kernels and, with a profiling tool attached, fence). Threads inside a
///        host parallel region use impl/blas/host_blas.hpp instead.
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "../../types.hpp"
#include "../common/view_checks.hpp"
#include "kokkos_kernels_compat.hpp"

namespace kcnn::Impl {

/// The rank-2 View type of every GEMM operand: what Kokkos Kernels' BLAS/cuBLAS
/// specializations are declared for (same layout, device and Unmanaged trait).
template <class ExecSpace, class T>
using GemmMatrix = Kokkos::View<T**, Kokkos::LayoutRight,
                                Kokkos::Device<ExecSpace, typename ExecSpace::memory_space>,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// True when gemm on GemmMatrix operands is served by a TPL (the host BLAS or cuBLAS),
/// false when it would fall back to Kokkos Kernels' own kernel.
template <class ExecSpace, class T>
inline constexpr bool gemm_uses_tpl_v =
    kokkos_kernels_compat::gemm_tpl_available_v<ExecSpace, GemmMatrix<ExecSpace, const T>,
                                                GemmMatrix<ExecSpace, const T>,
                                                GemmMatrix<ExecSpace, T>>;

using kokkos_kernels_compat::GemmMath;

/// The GEMM arithmetic a convolution's math mode asks for: TF32 on cuBLAS' tensor cores
/// for MathMode::TF32; strict otherwise (cuBLAS has no 3xTF32 mode: MathMode::TF32x3
/// computes strictly there, more accurate than asked).
inline GemmMath gemm_math(MathMode math) {
  return math == MathMode::TF32 ? GemmMath::TF32 : GemmMath::Strict;
}

/// C = alpha op(A) op(B) + beta C on `space`'s stream (device backends: asynchronous,
/// no fence; host backends: done on return). trans_a/trans_b: "N" or "T".
template <class ExecSpace, class T>
void gemm(const ExecSpace& space, const char* trans_a, const char* trans_b, T alpha,
          const GemmMatrix<ExecSpace, const T>& A, const GemmMatrix<ExecSpace, const T>& B, T beta,
          const GemmMatrix<ExecSpace, T>& C, GemmMath math = GemmMath::Strict) {
  kokkos_kernels_compat::gemm(space, trans_a, trans_b, alpha, A, B, beta, C, math);
}

/// Whether gemm_16bit_float runs on ExecSpace (cuBLAS); elsewhere 16-bit operands are
/// converted to float and multiplied with gemm.
using kokkos_kernels_compat::gemm_16bit_available_v;

/// C (m x n float, row-major) = op(A) op(B) on 16-bit row-major A and B (T: half_t or
/// kcnn::bfloat16) with float products and sums, on space's stream; trans_a/trans_b 'N'
/// or 'T'; lda/ldb/ldc: the stored row lengths.
template <class T, class ExecSpace>
void gemm_16bit_float(const ExecSpace& space, char trans_a, char trans_b, int m, int n, int k,
                      const T* A, int lda, const T* B, int ldb, float* C, int ldc) {
  static_assert(sizeof(T) == 2, "gemm_16bit_float: half_t or bfloat16 operands");
  const bool done = kokkos_kernels_compat::gemm_16bit_float(
      space, trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc,
      !std::is_same_v<T, Kokkos::Experimental::half_t>);
  throw_if(!done, "kcnn::conv2d_forward", "cublasGemmEx (16-bit inputs, float sums) refused a ", m,
           "x", n, "x", k, " GEMM");
}

}  // namespace kcnn::Impl
