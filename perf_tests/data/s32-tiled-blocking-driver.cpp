// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 32's driver (data, not built by CMake) behind the AVX2 table in
// src/kcnn/impl/conv2d/tiled/host_simd_kernel.hpp: Tiled's register-blocked kernel
// (Impl::conv2d_tiled_host_simd, NHWC, or NCHW with NCHW=1) on the four ResNet 3x3 layers at
// N = 8, bias + ReLU, median of K calls (argv[1]); ONEDNN=1 also times oneDNN (BASE: its
// baseline's name, default oneDNN_blocked) in the same process; CHECK=1 compares with
// ConvAlgo::Reference. Each row of that table was a build with QT / QT_wide /
// weight_block_bytes set through temporary macros in the header (since removed), run in
// interleaved rounds. Built like s32-backward-data-driver.cpp, plus
// perf_tests/baselines_onednn.cpp and -ldnnl.
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kcnn/impl/conv2d/tiled/host_simd_kernel.hpp>
#include <kcnn/kcnn.hpp>
#include <memory>
#include <vector>
#include "../../perf_tests/baselines.hpp"
int main(int argc, char** argv) {
  setenv("OMP_PROC_BIND", "false", 0);
  Kokkos::ScopeGuard g(argc, argv);
  int K = argc > 1 ? atoi(argv[1]) : 15;
  int only = argc > 2 ? atoi(argv[2]) : -1;
  struct L {
    int N, C, H;
  } layers[] = {{8, 64, 56}, {8, 128, 28}, {8, 256, 14}, {8, 512, 7}};
  using T4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  for (int li = 0; li < 4; ++li) {
    if (only >= 0 && only != li) continue;
    auto l = layers[li];
    int N = l.N, C = l.C, H = l.H, M = C;
    bool nchw = getenv("NCHW");
    T4 x = nchw ? T4("x", N, C, H, H) : T4("x", N, H, H, C),
       w = nchw ? T4("w", M, C, 3, 3) : T4("w", M, 3, 3, C),
       y = nchw ? T4("y", N, M, H, H) : T4("y", N, H, H, M);
    Kokkos::View<float*, Kokkos::HostSpace> b("b", M);
    Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(7);
    Kokkos::fill_random(x, pool, -1.f, 1.f);
    Kokkos::fill_random(w, pool, -1.f, 1.f);
    Kokkos::fill_random(b, pool, -1.f, 1.f);
    kcnn::Conv2dParams p;
    p.pad_h = p.pad_w = 1;
    p.layout = getenv("NCHW") ? kcnn::Layout::NCHW : kcnn::Layout::NHWC;
    p.activation = kcnn::Activation::ReLU;
    p.algo = kcnn::ConvAlgo::Tiled;
    Kokkos::View<const float****, Kokkos::LayoutRight, Kokkos::HostSpace> xc = x, wc = w;
    Kokkos::View<const float*, Kokkos::HostSpace> bc = b;
    auto pb = kcnn::Impl::make_conv2d_problem("d", xc, wc, bc, y, p);
    pb.workspace_limit_bytes = std::size_t(1) << 30;
    Kokkos::OpenMP space;
    std::vector<double> t;
    for (int k = 0; k < K + 2; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      kcnn::Impl::conv2d_tiled_host_simd(space, xc, wc, bc, y, pb, kcnn::Impl::LaunchMode::Run);
      space.fence();
      auto t1 = std::chrono::steady_clock::now();
      if (k >= 2) t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(t.begin(), t.end());
    std::vector<double> tb;
    if (getenv("ONEDNN")) {
      kcnn_perf::Shape sh{"resnet3x3", "x", N, C, H, H, M, 3, 3, 1, 1};
      sh.layout = p.layout;
      for (auto& bl : kcnn_perf::onednn_baselines())
        if (bl.name == (getenv("BASE") ? getenv("BASE") : "oneDNN_blocked")) {
          auto run = bl.prepare(sh);
          for (int k = 0; k < K + 2; ++k) {
            auto t0 = std::chrono::steady_clock::now();
            run->run();
            auto t1 = std::chrono::steady_clock::now();
            if (k >= 2) tb.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          }
        }
      std::sort(tb.begin(), tb.end());
    }
    // check vs kcnn Reference
    double err = 0, mag = 0;
    if (getenv("CHECK")) {
      T4 yr("yr", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
      p.algo = kcnn::ConvAlgo::Reference;
      kcnn::conv2d_forward(space, x, w, b, yr, p);
      for (int i = 0; i < (int)y.size(); ++i) {
        err = std::max(err, (double)std::fabs(y.data()[i] - yr.data()[i]));
        mag = std::max(mag, (double)std::fabs(yr.data()[i]));
      }
    }
    double gf = pb.flops() / 1e6 / t[t.size() / 2];
    if (!tb.empty())
      std::printf("C=%d H=%d  onednn %.3f ms min %.3f\n", C, H, tb[tb.size() / 2], tb[0]);
    std::printf("C=%d H=%d  median %.3f ms  min %.3f  %.1f GFLOP/s  err %.2e/%.2e\n", C, H,
                t[t.size() / 2], t[0], gf, err, mag);
  }
}
