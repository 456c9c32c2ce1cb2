// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 33's driver (data, not built by CMake): the direct backward-weights kernel's two
// work splits (Impl::BackwardWeightsScheme::PerTap, AllTaps) forced on the same data, calls
// interleaved (PerTap, AllTaps, PerTap, ...), median of K calls each (argv[1], default 7),
// beside the public call (Auto's split) and the forward convolution; max |dw difference|
// between the splits relative to the largest |dw|. Layers: LeNet C3 of kcnn_perf (batch
// 1,000, 4 -> 16 channels, 40x40, 7x7) and the ResNet 3x3 layers at N = 8, pad 1, float,
// both layouts. Built against build/openmp like s32-backward-data-driver.cpp.
// Output: cpu-2026-11-29-s33-backward-weights-schemes.txt
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
  const int K = argc > 1 ? atoi(argv[1]) : 7;
  struct Layer {
    const char* name;
    int N, C, H, M, R, pad;
  } layers[] = {{"lenet_c3", 1000, 4, 40, 16, 7, 0},
                {"resnet64", 8, 64, 56, 64, 3, 1},
                {"resnet128", 8, 128, 28, 128, 3, 1},
                {"resnet256", 8, 256, 14, 256, 3, 1},
                {"resnet512", 8, 512, 7, 512, 3, 1}};
  using F4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using Scheme = kcnn::Impl::BackwardWeightsScheme;
  Kokkos::OpenMP space;
  for (int nchw = 1; nchw >= 0; --nchw)
    for (const Layer& l : layers) {
      const int N = l.N, C = l.C, H = l.H, M = l.M, R = l.R, P = H + 2 * l.pad - R + 1;
      F4 x = nchw ? F4("x", N, C, H, H) : F4("x", N, H, H, C);
      F4 w = nchw ? F4("w", M, C, R, R) : F4("w", M, R, R, C);
      F4 y = nchw ? F4("y", N, M, P, P) : F4("y", N, P, P, M);
      F4 dw1("dw1", w.extent(0), w.extent(1), w.extent(2), w.extent(3));
      F4 dw2("dw2", w.extent(0), w.extent(1), w.extent(2), w.extent(3));
      Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(5);
      Kokkos::fill_random(x, pool, -1.f, 1.f);
      Kokkos::fill_random(w, pool, -1.f, 1.f);
      Kokkos::fill_random(y, pool, -1.f, 1.f);
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = l.pad;
      p.layout = nchw ? kcnn::Layout::NCHW : kcnn::Layout::NHWC;
      const auto pb = kcnn::Impl::make_conv2d_backward_problem(
          "d", x, dw1, 0, y, p, kcnn::Impl::ConvTensorNames{"x", "dw", "dbias", "dy"});
      const auto xk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(x);
      const auto yk = kcnn::Impl::as_kernel_view<Kokkos::OpenMP, false>(y);
      auto once = [&](auto&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        space.fence();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
            .count();
      };
      auto direct = [&](F4 dw, Scheme s) {
        kcnn::Impl::conv2d_backward_weights_direct(
            space, xk, yk, kcnn::Impl::as_kernel_view<Kokkos::OpenMP, true>(dw), pb, s);
      };
      std::vector<double> t_tap, t_all, t_auto, t_fwd;
      for (int k = 0; k <= K; ++k) {
        const double a = once([&] { direct(dw1, Scheme::PerTap); });
        const double b = once([&] { direct(dw2, Scheme::AllTaps); });
        const double c = once([&] { kcnn::conv2d_backward_weights(space, x, y, w, p); });
        const double f = once([&] { kcnn::conv2d_forward(space, x, w, y, p); });
        if (k) t_tap.push_back(a), t_all.push_back(b), t_auto.push_back(c), t_fwd.push_back(f);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      double err = 0, mag = 0;
      for (size_t i = 0; i < dw1.size(); ++i) {
        err = std::max(err, (double)std::fabs(dw1.data()[i] - dw2.data()[i]));
        mag = std::max(mag, (double)std::fabs(dw1.data()[i]));
      }
      const auto plan = kcnn::Impl::BackwardWeightsPlan::make<float>(pb);
      std::printf(
          "%s %-9s PerTap %7.2f ms  AllTaps %7.2f ms (PerTap/AllTaps %.2f)  public %7.2f ms "
          "(Auto: %s, %lld parts)  forward %7.2f ms  max|diff|/max|dw| %.1e\n",
          nchw ? "NCHW" : "NHWC", l.name, median(t_tap), median(t_all),
          median(t_tap) / median(t_all), median(t_auto), plan.all_taps ? "AllTaps" : "PerTap",
          (long long)kcnn::Impl::BackwardWeightsPlan::make<float>(pb, Scheme::AllTaps).parts,
          median(t_fwd), err / mag);
      std::fflush(stdout);
    }
}
