// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Start-up measurements of the default execution space's ceilings (see peaks.hpp).
#include "peaks.hpp"

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/bfloat16.hpp>
#include <kcnn/impl/blas/kokkos_kernels_compat.hpp>

#include <fstream>
#include <type_traits>

#include "timing.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
#include <cublas_v2.h>
#endif

namespace kcnn_perf {
namespace {

using Space = Kokkos::DefaultExecutionSpace;

std::string device_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Space, Kokkos::Cuda>) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, Space().cuda_device()) == cudaSuccess) return prop.name;
  }
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

namespace {

/// 2 n^3 / s of KokkosBlas::gemm on square n x n matrices of `Scalar`.
template <class Scalar>
double gemm_gflops(int n, Kokkos::Random_XorShift64_Pool<Space>& pool,
                   kcnn::Impl::kokkos_kernels_compat::GemmMath math) {
  using Matrix = Kokkos::View<Scalar**, Kokkos::LayoutLeft, Space::memory_space>;
  Matrix a("gemm_a", n, n), b("gemm_b", n, n), c("gemm_c", n, n);
  Kokkos::fill_random(a, pool, Scalar(-1), Scalar(1));
  Kokkos::fill_random(b, pool, Scalar(-1), Scalar(1));
  const Timing t = time_median(
      [&] {
        kcnn::Impl::kokkos_kernels_compat::gemm(Space(), "N", "N", Scalar(1), a, b, Scalar(0), c,
                                                math);
        Space().fence();
      },
      5, 0);
  return 2.0 * n * double(n) * n / t.median * 1e-9;
}

}  // namespace

/// 2 n^3 / s of cublasGemmEx on square n x n matrices of 16-bit `Scalar` with float sums
/// (CUBLAS_COMPUTE_32F), on Kokkos' stream; 0 where there is no cuBLAS.
template <class Scalar>
double gemm16_gflops(int n) {
#if defined(KCNN_KOKKOSKERNELS_CUBLAS_HANDLE)
  using Matrix = Kokkos::View<Scalar**, Kokkos::LayoutLeft, Space::memory_space>;
  Matrix a("gemm_a", n, n), b("gemm_b", n, n), c("gemm_c", n, n);
  Kokkos::deep_copy(a, Scalar(0.5f));
  Kokkos::deep_copy(b, Scalar(-0.25f));
  const cudaDataType type =
      std::is_same_v<Scalar, Kokkos::Experimental::half_t> ? CUDA_R_16F : CUDA_R_16BF;
  cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  cublasSetStream(handle, Space().cuda_stream());
  const float one = 1.0f, zero = 0.0f;
  const Timing t = time_median(
      [&] {
        cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.data(), type, n, b.data(),
                     type, n, &zero, c.data(), type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        Space().fence();
      },
      5, 0);
  return 2.0 * n * double(n) * n / t.median * 1e-9;
#else
  (void)n;
  return 0;
#endif
}

Peaks measure_peaks(bool device, GemmKind gemm) {
  Peaks peaks;
  peaks.device = device_name();
  Kokkos::Random_XorShift64_Pool<Space> pool(5);
  {
    // Far beyond any cache: 1 GiB per View on a GPU, 128 MiB on a CPU.
    const std::size_t n = device ? std::size_t(1) << 28 : std::size_t(1) << 25;
    Kokkos::View<float*, Space::memory_space> src("copy_src", n), dst("copy_dst", n);
    Kokkos::fill_random(src, pool, -1.0f, 1.0f);
    const Timing t = time_median([&] { Kokkos::deep_copy(dst, src); }, 10, 0);
    peaks.copy_mib = 2.0 * n * sizeof(float) / (1 << 20);
    peaks.gbs = 2.0 * n * sizeof(float) / t.median * 1e-9;
  }
  {
    // Large enough to run near the GEMM peak: 8192^3 on a GPU, 2048^3 on a CPU.
    const int n = device ? 8192 : 2048;
    peaks.gemm_n = n;
    using kcnn::Impl::kokkos_kernels_compat::GemmMath;
    switch (gemm) {
      case GemmKind::Double:
        peaks.gflops = gemm_gflops<double>(n, pool, GemmMath::Strict);
        break;
      case GemmKind::Half:
        peaks.gflops = device ? gemm16_gflops<Kokkos::Experimental::half_t>(n) : 0;
        break;
      case GemmKind::BFloat16:
        peaks.gflops = device ? gemm16_gflops<kcnn::bfloat16>(n) : 0;
        break;
      default:
        peaks.gflops = gemm_gflops<float>(
            n, pool, gemm == GemmKind::FloatTF32 ? GemmMath::TF32 : GemmMath::Strict);
    }
  }
  return peaks;
}

}  // namespace kcnn_perf
