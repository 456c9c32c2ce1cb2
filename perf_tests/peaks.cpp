// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Start-up measurements of the default execution space's ceilings (see peaks.hpp).
#include "peaks.hpp"

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/bfloat16.hpp>
#include <kcnn/impl/arch/host_simd.hpp>
#include <kcnn/impl/arch/macros.hpp>
#include <kcnn/impl/blas/kokkos_kernels_compat.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <type_traits>
#include <utility>

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

namespace {

using HostFloat = kcnn::Impl::HostVector<float>;
/// Independent accumulators of the FMA loop: every vector register but four, so that
/// the FMA units, not their latency, set the pace (AVX-512: 28, 4-cycle latency, 2 per
/// cycle: 8 needed; AVX2: 12).
constexpr int kFmaAccumulators = kcnn::Impl::kHostVectorRegisters - 4;

template <std::size_t... I>
KCNN_HOST_FORCEINLINE void fma_round(HostFloat::type (&acc)[sizeof...(I)], HostFloat::type m,
                                     HostFloat::type c, std::index_sequence<I...>) {
  ((acc[I] = HostFloat::fma(acc[I], m, c)), ...);
}

/// `rounds` rounds of kFmaAccumulators vector FMAs (acc = acc * m + c, no memory
/// traffic); returns a sum of the accumulators so that none is dropped.
float fma_loop(long rounds) {
  alignas(64) float init[HostFloat::lanes * 3];
  for (int i = 0; i < HostFloat::lanes; ++i) {
    init[i] = 1.0f - 1.0f / 1048576;  // m: the values converge, no overflow
    init[HostFloat::lanes + i] = 1e-6f;
    init[2 * HostFloat::lanes + i] = 0.5f;
  }
  HostFloat::type m = HostFloat::load(init), c = HostFloat::load(init + HostFloat::lanes);
  HostFloat::type acc[kFmaAccumulators];
  for (auto& a : acc)
    a = HostFloat::load(init + 2 * HostFloat::lanes);
  for (long r = 0; r < rounds; ++r) {
    fma_round(acc, m, c, std::make_index_sequence<kFmaAccumulators>{});
    HostFloat::keep_in_register(m);  // one opaque value per round: no folding of rounds
  }
  float sum = 0;
  for (auto& a : acc) {
    alignas(64) float out[HostFloat::lanes];
    HostFloat::store(out, a);
    for (float v : out)
      sum += v;
  }
  return sum;
}

/// GFLOP/s of fma_loop on `threads` host threads at once (1: the calling thread alone),
/// the best of 5 runs of about 0.05 s each.
double host_fma_gflops(int threads) {
  using clock = std::chrono::steady_clock;
  const long rounds = 1L << 21;  // 58.7M FMAs per thread: 0.03-0.1 s on 2026's cores
  const double flop_per_thread = 2.0 * HostFloat::lanes * kFmaAccumulators * double(rounds);
  double best = 0;
  float sink = 0;
  for (int run = 0; run < 6; ++run) {
    const auto t0 = clock::now();
    if (threads == 1) {
      sink += fma_loop(rounds);
    } else {
      float sum = 0;
      Kokkos::parallel_reduce(
          "kcnn_perf::fma_peak", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, threads),
          [=](int, float& s) { s += fma_loop(rounds); }, sum);
      sink += sum;
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (run > 0) best = std::max(best, flop_per_thread * threads / s * 1e-9);  // run 0 warms up
  }
  volatile float keep = sink;  // the sums are used
  (void)keep;
  return best;
}

const char* host_isa_name() {
  switch (kcnn::Impl::build_host_isa()) {
    case kcnn::Impl::HostIsa::Avx512Amx:
      return "AVX-512 (+AMX)";
    case kcnn::Impl::HostIsa::Avx512:
      return "AVX-512";
    case kcnn::Impl::HostIsa::Avx2:
      return "AVX2 + FMA";
    default:
      return "generic";
  }
}

}  // namespace

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
  if (!device) {
    // One core, then every host thread at once (the range's iterations as the OpenMP
    // backend spreads them: one per thread).
    peaks.fma_threads = Kokkos::DefaultHostExecutionSpace().concurrency();
    peaks.fma_gflops_core = host_fma_gflops(1);
    peaks.fma_gflops_all = host_fma_gflops(peaks.fma_threads);
    peaks.fma = std::string("HostVector<float> ") + host_isa_name() + ", " +
                std::to_string(HostFloat::lanes) + " lanes, " + std::to_string(kFmaAccumulators) +
                " accumulators in registers";
  }
  return peaks;
}

}  // namespace kcnn_perf
