// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file peaks.hpp
/// \brief The ceilings kcnn_perf relates its results to, measured once at start-up on the
///        default execution space: copy bandwidth and vendor sgemm rate.
#pragma once

#include <string>

namespace kcnn_perf {

struct Peaks {
  double gbs = 0;     ///< deep_copy between two device Views: (bytes read + written) / s
  double gflops = 0;  ///< KokkosBlas::gemm (cuBLAS / OpenBLAS), square: 2 n^3 / s
  double copy_mib = 0;
  int gemm_n = 0;
  /// Host builds: FMA rate of the host's vector unit from registers (HostVector<float>,
  /// the register-blocked kernels' operations), 2 FLOP per lane per FMA; one core, and
  /// every thread of the default execution space at once. 0 on device builds.
  double fma_gflops_core = 0, fma_gflops_all = 0;
  int fma_threads = 0;
  std::string fma;     ///< what was measured
  std::string device;  ///< GPU or CPU model
};

/// The GEMM whose rate is the floor of a run's convolutions: fp32 (sgemm), fp32 with
/// cuBLAS' TF32 tensor-core math (the floor of kcnn's TF32 and TF32x3 kernels; host BLAS
/// libraries compute strictly), fp64 (dgemm; cuBLAS runs it on the fp64 tensor cores
/// where the GPU has them), half and bfloat16 (cublasGemmEx: 16-bit matrices, float
/// sums; CUDA builds only, elsewhere no GEMM ceiling is measured).
enum class GemmKind { Float, FloatTF32, Double, Half, BFloat16 };

/// Measures the peaks (about a second). `device`: sizes for a GPU, else a CPU (and the
/// host FMA peaks).
Peaks measure_peaks(bool device, GemmKind gemm);

}  // namespace kcnn_perf
