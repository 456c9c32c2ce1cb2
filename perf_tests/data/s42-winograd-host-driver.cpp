// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 42 drivers (data, not built by CMake) behind RESULTS.md's "Winograd on AVX-512"
// section and the comments in impl/conv2d/winograd/ (host, OpenMP, 2 threads).
//   FILTERS=1 ./driver C reps   kcnn::WinogradFilters::update (the filter transform
//                               alone) on C x C 3x3 filters, NHWC (NCHW=1: NCHW), the
//                               mean of `reps` calls.
//   ./driver [K]                ConvAlgo::Winograd's entry point with the planner's
//                               choices (the shared-block pipeline where it applies)
//                               and with WinogradTuning::host_fused_filters off (the
//                               threads share the filters, U transformed whole first),
//                               and Tiled through conv2d_forward, on 3x3 pad-1 layers at
//                               N = 8 (256 ch 14x14, 512 ch 7x7 and 14x14, 128 ch
//                               28x28), bias + ReLU, both layouts, two rounds; median of
//                               K (9) calls each, and the largest difference between the
//                               two Winograd pipelines' outputs.
// Built like the openmp preset's programs:
//   g++ -std=c++17 -O3 -march=native -fopenmp -I src -I build/openmp/generated \
//     -isystem <deps>/include s42-winograd-host-driver.cpp -L<deps>/lib -lkokkoskernels \
//     -lkokkoscontainers -lkokkoscore -lopenblas -ldl
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kcnn/kcnn.hpp>
#include <kcnn/winograd_filters.hpp>
#include <vector>
template <class F>
double med(int K, F f) {
  std::vector<double> t;
  for (int k = 0; k < K + 1; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    auto t1 = std::chrono::steady_clock::now();
    if (k) t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
using T4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
int filters_only(int C, int reps) {
  const bool nchw = getenv("NCHW");
  T4 w = nchw ? T4("w", C, C, 3, 3) : T4("w", C, 3, 3, C);
  Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(7);
  Kokkos::fill_random(w, pool, -1.f, 1.f);
  kcnn::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  p.layout = nchw ? kcnn::Layout::NCHW : kcnn::Layout::NHWC;
  p.algo = kcnn::ConvAlgo::Winograd;
  Kokkos::OpenMP space;
  kcnn::WinogradFilters<float> u(space, w, p);
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r)
    u.update(space, w, p);
  Kokkos::fence();
  auto t1 = std::chrono::steady_clock::now();
  printf("C=%d %.3f ms\n", C, std::chrono::duration<double, std::milli>(t1 - t0).count() / reps);
  return 0;
}
int main(int argc, char** argv) {
  setenv("OMP_PROC_BIND", "false", 0);
  Kokkos::ScopeGuard g(argc, argv);
  if (getenv("FILTERS")) return filters_only(atoi(argv[1]), atoi(argv[2]));
  int K = argc > 1 ? atoi(argv[1]) : 9;
  struct L {
    int N, C, H;
  } layers[] = {{8, 256, 14}, {8, 512, 7}, {8, 512, 14}, {8, 128, 28}};
  for (int round = 0; round < 2; ++round)
    for (int nchw = 0; nchw < 2; ++nchw)
      for (auto l : layers) {
        int N = l.N, C = l.C, H = l.H, M = C;
        T4 x = nchw ? T4("x", N, C, H, H) : T4("x", N, H, H, C),
           w = nchw ? T4("w", M, C, 3, 3) : T4("w", M, 3, 3, C),
           y = nchw ? T4("y", N, M, H, H) : T4("y", N, H, H, M),
           y2("y2", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
        Kokkos::View<float*, Kokkos::HostSpace> b("b", M);
        Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(7);
        Kokkos::fill_random(x, pool, -1.f, 1.f);
        Kokkos::fill_random(w, pool, -1.f, 1.f);
        Kokkos::fill_random(b, pool, -1.f, 1.f);
        kcnn::Conv2dParams p;
        p.pad_h = p.pad_w = 1;
        p.layout = nchw ? kcnn::Layout::NCHW : kcnn::Layout::NHWC;
        p.activation = kcnn::Activation::ReLU;
        Kokkos::OpenMP space;
        p.algo = kcnn::ConvAlgo::Winograd;
        auto pb = kcnn::Impl::make_conv2d_problem("d", x, w, b, y, p);
        kcnn::Impl::WinogradTuning fused, parts;
        parts.host_fused_filters = false;
        double tf = med(K, [&] { kcnn::Impl::conv2d_winograd(space, x, w, b, y, pb, fused); });
        double tp = med(K, [&] { kcnn::Impl::conv2d_winograd(space, x, w, b, y2, pb, parts); });
        double diff = 0;
        for (size_t i = 0; i < y.span(); ++i)
          diff = std::max(diff, (double)std::abs(y.data()[i] - y2.data()[i]));
        p.algo = kcnn::ConvAlgo::Tiled;
        double tt = med(K, [&] { kcnn::conv2d_forward(space, x, w, b, y2, p); });
        int threads = Kokkos::Experimental::UniqueToken<Kokkos::OpenMP>(space).size();
        auto plan = kcnn::Impl::plan_winograd("d", pb, 4, pb.workspace_limit_bytes, true, 16,
                                              threads, fused);
        printf(
            "%s C=%3d H=%2d  shared-block %7.3f  parts %7.3f  tiled %7.3f ms  (fused=%d parts=%ld "
            "pf=%ld chunks=%ld) maxdiff %.2g\n",
            nchw ? "NCHW" : "NHWC", C, H, tf, tp, tt, (int)plan.host_fused_filters,
            (long)plan.parts, (long)plan.part_filters, (long)plan.chunks, diff);
        fflush(stdout);
      }
}
