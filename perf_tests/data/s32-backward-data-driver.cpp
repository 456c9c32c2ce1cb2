// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 32's driver (data, not built by CMake): kcnn::conv2d_backward_data (the direct
// path on hosts) against the GEMM path it replaced (Impl::conv2d_backward_data_gemm) on the
// same data in one process, median of K calls (argv[1], default 7), max |difference|.
// Built like kcnn_perf against the openmp build tree (g++ -O3 -march=native -fopenmp
// -DKCNN_PREBUILT_INSTANCES -I src -I build/openmp/generated, Kokkos and Kokkos Kernels
// of the bootstrap, libkcnn_prebuilt_instances.a, OpenBLAS). Output:
// cpu-2026-11-29-s32-backward-data-driver.txt
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <kcnn/kcnn.hpp>
#include <vector>
int main(int argc, char** argv) {
  setenv("OMP_PROC_BIND", "false", 0);
  Kokkos::ScopeGuard g(argc, argv);
  int K = argc > 1 ? atoi(argv[1]) : 7;
  struct L {
    int N, C, H, W, M, R, S, pad, dil;
  } layers[] = {{8, 64, 56, 56, 64, 3, 3, 1, 1},   {8, 128, 28, 28, 128, 3, 3, 1, 1},
                {8, 256, 14, 14, 256, 3, 3, 1, 1}, {8, 512, 7, 7, 512, 3, 3, 1, 1},
                {1000, 4, 40, 40, 16, 7, 7, 0, 1}, {2, 5, 9, 11, 7, 3, 5, 2, 2}};
  using T4 = Kokkos::View<double****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using F4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  for (int nchw = 0; nchw < 2; ++nchw)
    for (auto l : layers) {
      int P = l.H + 2 * l.pad - l.dil * (l.R - 1), Q = l.W + 2 * l.pad - l.dil * (l.S - 1);
      F4 dy = nchw ? F4("dy", l.N, l.M, P, Q) : F4("dy", l.N, P, Q, l.M);
      F4 w = nchw ? F4("w", l.M, l.C, l.R, l.S) : F4("w", l.M, l.R, l.S, l.C);
      F4 dx = nchw ? F4("dx", l.N, l.C, l.H, l.W) : F4("dx", l.N, l.H, l.W, l.C);
      Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(5);
      Kokkos::fill_random(dy, pool, -1.f, 1.f);
      Kokkos::fill_random(w, pool, -1.f, 1.f);
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = l.pad;
      p.dilation_h = p.dilation_w = l.dil;
      p.layout = nchw ? kcnn::Layout::NCHW : kcnn::Layout::NHWC;
      Kokkos::OpenMP space;
      auto timeit = [&](auto&& f) {
        std::vector<double> t;
        for (int k = 0; k < K + 1; ++k) {
          auto t0 = std::chrono::steady_clock::now();
          f();
          space.fence();
          auto t1 = std::chrono::steady_clock::now();
          if (k) t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
      };
      Kokkos::deep_copy(dx, std::nanf(""));
      double td = timeit([&] { kcnn::conv2d_backward_data(space, dy, w, dx, p); });
      // GEMM path directly
      F4 dxg("dxg", dx.extent(0), dx.extent(1), dx.extent(2), dx.extent(3));
      auto pb = kcnn::Impl::make_conv2d_backward_problem(
          "d", dx, w, 0, dy, p, kcnn::Impl::ConvTensorNames{"dx", "w", "bias", "dy"});
      auto dyk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(dy);
      auto wk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(w);
      auto dxk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, true>(dxg);
      double tg = timeit([&] {
        if (nchw)
          kcnn::Impl::conv2d_backward_data_gemm<kcnn::Layout::NCHW>(space, dyk, wk, dxk, pb);
        else
          kcnn::Impl::conv2d_backward_data_gemm<kcnn::Layout::NHWC>(space, dyk, wk, dxk, pb);
      });
      double err = 0, mag = 0;
      for (size_t i = 0; i < dx.size(); ++i) {
        err = std::max(err, (double)std::fabs(dx.data()[i] - dxg.data()[i]));
        mag = std::max(mag, (double)std::fabs(dxg.data()[i]));
      }
      std::printf(
          "%s C=%d H=%d M=%d R=%d: direct %.3f ms  gemm %.3f ms  gemm/direct %.2f  maxdiff %.2e / "
          "%.2e\n",
          nchw ? "NCHW" : "NHWC", l.C, l.H, l.M, l.R, td, tg, tg / td, err, mag);
    }
}
