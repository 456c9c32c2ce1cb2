// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 32's driver (data, not built by CMake): kcnn::conv2d_backward_weights (the direct
// path on hosts) against the GEMM path (Impl::conv2d_backward_weights_gemm) and the forward
// convolution on the same data in one process, median of K calls (argv[1], default 5), max
// |difference| of dw (relative to the largest |dw|) and dbias. Built as
// s32-backward-data-driver.cpp. Output: cpu-2026-11-29-s32-backward-weights-driver.txt
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
  int K = argc > 1 ? atoi(argv[1]) : 5;
  struct L {
    int C, H;
  } layers[] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}};
  using F4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  for (int nchw = 0; nchw < 2; ++nchw)
    for (auto l : layers) {
      int N = 8, C = l.C, H = l.H, M = C;
      F4 x = nchw ? F4("x", N, C, H, H) : F4("x", N, H, H, C);
      F4 w = nchw ? F4("w", M, C, 3, 3) : F4("w", M, 3, 3, C);
      F4 y = nchw ? F4("y", N, M, H, H) : F4("y", N, H, H, M);
      Kokkos::View<float*, Kokkos::HostSpace> db("db", M);
      Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(5);
      Kokkos::fill_random(x, pool, -1.f, 1.f);
      Kokkos::fill_random(w, pool, -1.f, 1.f);
      Kokkos::fill_random(y, pool, -1.f, 1.f);
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = 1;
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
      F4 yo("yo", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
      F4 wg("wg", w.extent(0), w.extent(1), w.extent(2), w.extent(3));
      Kokkos::View<float*, Kokkos::HostSpace> dbg("dbg", M);
      double tf = timeit([&] { kcnn::conv2d_forward(space, x, w, yo, p); });
      Kokkos::deep_copy(w, std::nanf(""));
      double tw = timeit([&] { kcnn::conv2d_backward_weights(space, x, y, w, db, p); });
      auto pb = kcnn::Impl::make_conv2d_backward_problem(
          "d", x, wg, M, y, p, kcnn::Impl::ConvTensorNames{"x", "dw", "dbias", "dy"});
      auto xk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(x);
      auto yk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(y);
      auto wk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, true>(wg);
      const kcnn::Impl::kernel_view_t<Kokkos::OpenMP, float*> dbk(dbg.data(),
                                                                  Kokkos::LayoutStride(M, 1));
      double tg = timeit([&] {
        if (nchw)
          kcnn::Impl::conv2d_backward_weights_gemm<kcnn::Layout::NCHW>(space, xk, yk, wk, dbk, pb);
        else
          kcnn::Impl::conv2d_backward_weights_gemm<kcnn::Layout::NHWC>(space, xk, yk, wk, dbk, pb);
      });
      double err = 0, mag = 0, errb = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        err = std::max(err, (double)std::fabs(w.data()[i] - wg.data()[i]));
        mag = std::max(mag, (double)std::fabs(wg.data()[i]));
      }
      for (int i = 0; i < M; ++i)
        errb = std::max(errb, (double)std::fabs(db(i) - dbg(i)));
      std::printf(
          "%s C=%d: forward %.2f ms, backward weights direct %.2f ms, gemm %.2f ms (gemm/direct "
          "%.2f)  maxdiff %.2e / %.2e  db %.2e\n",
          nchw ? "NCHW" : "NHWC", C, tf, tw, tg, tg / tw, err, mag, errb);
    }
}
