// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 36 driver (RESULTS.md, "Backward data through Winograd"): on the ResNet 3x3
// layers, both layouts, fp32, CUDA events around one call (median of REPS, default 20):
// conv2d_forward with ConvAlgo::Winograd, then with kcnn::WinogradFilters (the filters
// transformed beforehand; their update() timed too); the public conv2d_backward_data (Winograd's
// fused kernel on the rotated, transposed filters where Auto picks Winograd); and the GPU
// path it replaced (GPUs: Impl::conv2d_backward_data_gemm, cuBLAS and col2im per chunk;
// CPUs: Tiled's register-blocked kernel, conv2d_backward_data_direct), whose result it
// is compared with. CUDA: build as s35-winograd-fused-driver.cpp says; host (N=8, wall
// time with a fence): c++ -O3 -march=native -fopenmp -DKCNN_PREBUILT_INSTANCES with the
// openmp build's include paths, linked with its libkcnn_prebuilt_instances.a.
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kcnn/kcnn.hpp>
#include <vector>
namespace drv {
using Space = Kokkos::DefaultExecutionSpace;
using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;

#if !defined(KOKKOS_ENABLE_CUDA)
// Host builds: wall time around one call and a fence, median of reps.
template <class F>
double time_ms(F f, int reps) {
  f();
  Kokkos::fence();
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    const auto a = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
#else
template <class F>
double time_ms(F f, int reps) {
  f();
  Kokkos::fence();
  cudaStream_t stream = Kokkos::Cuda().cuda_stream();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    cudaEventRecord(a, stream);
    f();
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
#endif

int main_driver() {
  const int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 20;
  struct Layer {
    int N, C, HW;
  };
  const bool host = kcnn::Impl::runs_on_host_v<Space>;
  const int n = host ? 8 : 64;  // perf_tests' suites: N=8 on CPUs
  const Layer layers[] = {{n, 64, 56}, {n, 128, 28}, {n, 256, 14}, {host ? 8 : 32, 512, 7}};
  Kokkos::Random_XorShift64_Pool<Space> pool(5);
  for (kcnn::Layout L : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
    for (const Layer& l : layers) {
      const bool nhwc = L == kcnn::Layout::NHWC;
      V4 x = nhwc ? V4("x", l.N, l.HW, l.HW, l.C) : V4("x", l.N, l.C, l.HW, l.HW);
      V4 w = nhwc ? V4("w", l.C, 3, 3, l.C) : V4("w", l.C, l.C, 3, 3);
      V4 y = nhwc ? V4("y", l.N, l.HW, l.HW, l.C) : V4("y", l.N, l.C, l.HW, l.HW);
      V4 dx("dx", x.extent(0), x.extent(1), x.extent(2), x.extent(3));
      V4 dx_gemm("dx_gemm", x.extent(0), x.extent(1), x.extent(2), x.extent(3));
      Kokkos::fill_random(x, pool, -1.f, 1.f);
      Kokkos::fill_random(w, pool, -1.f, 1.f);
      Kokkos::fill_random(y, pool, -1.f, 1.f);  // dy
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = 1;
      p.layout = L;
      kcnn::Conv2dParams pf = p;
      pf.algo = kcnn::ConvAlgo::Winograd;
      V4 yf("yf", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
      const double fwd = time_ms([&] { kcnn::conv2d_forward(Space(), x, w, yf, pf); }, reps);
      const kcnn::WinogradFilters<float> u(Space(), w, pf);
      V4 yu("yu", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
      const double fwd_u = time_ms([&] { kcnn::conv2d_forward(Space(), x, u, yu, pf); }, reps);
      kcnn::WinogradFilters<float> u2(Space(), w, pf);
      const double transform = time_ms([&] { u2.update(Space(), w, pf); }, reps);
      const double bwd = time_ms([&] { kcnn::conv2d_backward_data(Space(), y, w, dx, p); }, reps);
      const auto pb = kcnn::Impl::make_conv2d_backward_problem(
          "driver", dx_gemm, w, 0, y, p, kcnn::Impl::ConvTensorNames{"dx", "w", "bias", "dy"});
      const auto yk = kcnn::Impl::as_kernel_view<Space, false>(y);
      const auto wk = kcnn::Impl::as_kernel_view<Space, false>(w);
      const auto dk = kcnn::Impl::as_kernel_view<Space, true>(dx_gemm);
      // The path before Winograd: on CPUs Tiled's register-blocked kernel where it serves,
      // else (and on GPUs) the GEMM path.
      const double gemm = time_ms(
          [&] {
            if (kcnn::Impl::conv2d_backward_data_direct(Space(), yk, wk, dk, pb)) return;
            nhwc
                ? kcnn::Impl::conv2d_backward_data_gemm<kcnn::Layout::NHWC>(Space(), yk, wk, dk, pb)
                : kcnn::Impl::conv2d_backward_data_gemm<kcnn::Layout::NCHW>(Space(), yk, wk, dk,
                                                                            pb);
          },
          reps);
      Kokkos::fence();
      auto fa = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yf);
      auto fb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yu);
      bool same = true;
      for (std::size_t i = 0; i < fa.size(); ++i)
        same = same && fa.data()[i] == fb.data()[i];
      auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dx);
      auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dx_gemm);
      double diff = 0, mag = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::abs(a.data()[i] - b.data()[i])));
        mag = std::max(mag, double(std::abs(b.data()[i])));
      }
      std::printf(
          "%s C%d %dx%d N%d: forward Winograd %.4f ms, with WinogradFilters %.4f ms (%s; "
          "update() %.4f ms) | backward data %.4f ms (previous path "
          "%.4f ms, %.2fx) | max |dx - dx_gemm| / max |dx_gemm| %.2e\n",
          nhwc ? "NHWC" : "NCHW", l.C, l.HW, l.HW, l.N, fwd, fwd_u,
          same ? "same bits" : "DIFFERENT", transform, bwd, gemm, gemm / bwd, diff / mag);
    }
  return 0;
}
}  // namespace drv

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = drv::main_driver();
  Kokkos::finalize();
  return rc;
}
