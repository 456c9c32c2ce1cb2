// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 41 driver (RESULTS.md, "grouped layers"): ConvAlgo::Grouped's entry point
// (conv2d_grouped on kernel Views: the filter packing and the convolution, as
// conv2d_forward runs them after its validation).
//   check [count]  random grouped problems (groups 1-6 of 1-40 channels and filters,
//                  3x3 at stride 1/2 or any filter, stride, padding and dilation, both
//                  layouts, bias and activations, float and double) against a double
//                  host loop, outputs poisoned (NaN) first; prints the failures.
//   bench [reps]   ResNeXt-like 3x3 pad 1 layers at N = 64 (GPU) or 8 (host), fp32,
//                  bias and ReLU: C = M = 256 28x28 and 128 56x56, 512 14x14, 1024 7x7
//                  with 32 groups, 256 28x28 with 64 groups; median of `reps` (20)
//                  calls timed with CUDA events (host: a fenced clock).
// Build (CUDA; host: g++ -O3 -fopenmp with the openmp deps, no nvcc_wrapper), D the deps'
// prefix, absolute paths (nvcc_wrapper misreads relative ones):
//   $D/bin/nvcc_wrapper -DKOKKOS_DEPENDENCE -I$PWD/src -isystem $D/include -arch=sm_90
//     -O3 -expt-extended-lambda -Xcompiler -fopenmp -std=c++17 -o $PWD/g.o
//     -c $PWD/<this file>
//   $D/bin/nvcc_wrapper -arch=sm_90 -Xcompiler -fopenmp g.o
//     $D/lib/libkokkoscontainers.a $D/lib/libkokkoscore.a -ldl -o s41-grouped-driver
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <kcnn/impl/conv2d/grouped/grouped.hpp>

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;
using kcnn::Activation;
using kcnn::Layout;
using kcnn::Impl::as_kernel_view;
using kcnn::Impl::conv2d_grouped;
using kcnn::Impl::Conv2dProblem;
using kcnn::Impl::LaunchMode;

template <class T>
using V4 = Kokkos::View<T****, Kokkos::LayoutRight, Mem>;

double activate(Activation a, double v) {
  switch (a) {
    case Activation::ReLU:
      return v > 0 ? v : 0;
    case Activation::Sigmoid:
      return 1 / (1 + std::exp(-v));
    case Activation::Tanh:
      return std::tanh(v);
    default:
      return v;
  }
}

Conv2dProblem make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t M,
                   std::int64_t R, std::int64_t S, int sh, int sw, int ph, int pw, int dh, int dw,
                   std::int64_t groups, Layout L) {
  Conv2dProblem pb;
  pb.N = N, pb.C = C, pb.H = H, pb.W = W, pb.M = M, pb.R = R, pb.S = S;
  pb.stride_h = sh, pb.stride_w = sw, pb.pad_h = ph, pb.pad_w = pw;
  pb.dilation_h = dh, pb.dilation_w = dw, pb.groups = groups, pb.layout = L;
  pb.P = (H + 2 * ph - dh * (R - 1) - 1) / sh + 1;
  pb.Q = (W + 2 * pw - dw * (S - 1) - 1) / sw + 1;
  return pb;
}

template <class T>
V4<T> activation_tensor(const Conv2dProblem& pb, std::int64_t channels, std::int64_t h,
                        std::int64_t w, const std::string& label) {
  const bool nhwc = pb.layout == Layout::NHWC;
  return nhwc ? V4<T>(label, pb.N, h, w, channels) : V4<T>(label, pb.N, channels, h, w);
}
template <class T>
V4<T> filter_tensor(const Conv2dProblem& pb) {
  const std::int64_t cg = pb.C / pb.groups;
  return pb.layout == Layout::NHWC ? V4<T>("w", pb.M, pb.R, pb.S, cg)
                                   : V4<T>("w", pb.M, cg, pb.R, pb.S);
}

/// One random problem against the double loop; returns whether it passed.
template <class T>
bool check(const Conv2dProblem& pb, std::mt19937& rng) {
  const bool nhwc = pb.layout == Layout::NHWC;
  const std::int64_t Cg = pb.C / pb.groups, Mg = pb.M / pb.groups;
  auto x = activation_tensor<T>(pb, pb.C, pb.H, pb.W, "x");
  auto y = activation_tensor<T>(pb, pb.M, pb.P, pb.Q, "y");
  auto w = filter_tensor<T>(pb);
  Kokkos::View<T*, Mem> b("b", pb.M);
  std::uniform_real_distribution<double> u(-1, 1);
  auto hx = Kokkos::create_mirror_view(x);
  auto hw = Kokkos::create_mirror_view(w);
  auto hb = Kokkos::create_mirror_view(b);
  for (std::size_t i = 0; i < hx.size(); ++i)
    hx.data()[i] = T(u(rng));
  for (std::size_t i = 0; i < hw.size(); ++i)
    hw.data()[i] = T(u(rng));
  for (std::size_t i = 0; i < hb.size(); ++i)
    hb.data()[i] = T(u(rng));
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(w, hw);
  Kokkos::deep_copy(b, hb);
  Kokkos::deep_copy(y, T(NAN));
  conv2d_grouped(Space(), as_kernel_view<Space, false>(x), as_kernel_view<Space, false>(w),
                 as_kernel_view<Space, false>(b), as_kernel_view<Space, true>(y), pb,
                 LaunchMode::Run);
  auto hy = Kokkos::create_mirror_view(y);
  Kokkos::deep_copy(hy, y);
  auto X = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t ww) {
    return nhwc ? double(hx(n, h, ww, c)) : double(hx(n, c, h, ww));
  };
  auto Wt = [&](std::int64_t m, std::int64_t c, std::int64_t r, std::int64_t s) {
    return nhwc ? double(hw(m, r, s, c)) : double(hw(m, c, r, s));
  };
  double worst = 0;  // error relative to sum |w x| + 1
  for (std::int64_t n = 0; n < pb.N; ++n)
    for (std::int64_t m = 0; m < pb.M; ++m)
      for (std::int64_t p = 0; p < pb.P; ++p)
        for (std::int64_t q = 0; q < pb.Q; ++q) {
          const std::int64_t g = m / Mg;
          double sum = 0, magnitude = 0;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t r = 0; r < pb.R; ++r)
              for (std::int64_t s = 0; s < pb.S; ++s) {
                const std::int64_t h = p * pb.stride_h - pb.pad_h + r * pb.dilation_h;
                const std::int64_t ww = q * pb.stride_w - pb.pad_w + s * pb.dilation_w;
                if (h < 0 || h >= pb.H || ww < 0 || ww >= pb.W) continue;
                const double v = Wt(m, c, r, s) * X(n, g * Cg + c, h, ww);
                sum += v, magnitude += std::fabs(v);
              }
          if (pb.has_bias) sum += double(hb(m));
          const double got = nhwc ? double(hy(n, p, q, m)) : double(hy(n, m, p, q));
          const double e = std::fabs(got - activate(pb.activation, sum)) / (magnitude + 1);
          worst = std::isnan(e) ? INFINITY : std::max(worst, e);
        }
  const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
  if (worst <= tolerance) return true;
  std::printf(
      "FAIL N%ld C%ld M%ld g%ld %ldx%ld R%ld S%ld stride %d,%d pad %d,%d dil %d,%d %s %s: %.3g\n",
      long(pb.N), long(pb.C), long(pb.M), long(pb.groups), long(pb.H), long(pb.W), long(pb.R),
      long(pb.S), pb.stride_h, pb.stride_w, pb.pad_h, pb.pad_w, pb.dilation_h, pb.dilation_w,
      nhwc ? "NHWC" : "NCHW", sizeof(T) == 4 ? "float" : "double", worst);
  return false;
}

int check_random(int count) {
  std::mt19937 rng(41);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int cases = 0, failures = 0;
  while (cases < count) {
    const int groups = uni(1, 6);
    const int Cg = uni(0, 3) ? uni(1, 12) : uni(13, 40), Mg = uni(0, 3) ? uni(1, 12) : uni(13, 30);
    const bool three = uni(0, 2) != 0;
    const int R = three ? 3 : uni(1, 7), S = three ? 3 : uni(1, 7);
    const int sh = three ? uni(1, 2) : uni(1, 3), sw = three ? sh : uni(1, 3);
    const int dh = three ? 1 : uni(1, 2), dw = three ? 1 : uni(1, 2);
    const int ph = uni(0, R), pw = uni(0, S), H = uni(1, 30), W = uni(1, 30);
    if (H + 2 * ph < dh * (R - 1) + 1 || W + 2 * pw < dw * (S - 1) + 1) continue;
    Conv2dProblem pb =
        make(uni(1, 3), std::int64_t(groups) * Cg, H, W, std::int64_t(groups) * Mg, R, S, sh, sw,
             ph, pw, dh, dw, groups, uni(0, 1) ? Layout::NHWC : Layout::NCHW);
    pb.has_bias = uni(0, 1);
    pb.activation = Activation(uni(0, 3));
    ++cases;
    if (!check<float>(pb, rng)) ++failures;
    if (uni(0, 3) == 0 && !check<double>(pb, rng)) ++failures;
  }
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures;
}

void bench(int reps) {
  const std::int64_t N = kcnn::Impl::runs_on_host_v<Space> ? 8 : 64;
  const std::array<std::int64_t, 3> layers[] = {
      {256, 28, 32}, {128, 56, 32}, {512, 14, 32}, {1024, 7, 32}, {256, 28, 64}};
  for (Layout L : {Layout::NCHW, Layout::NHWC})
    for (const auto& l : layers) {
      Conv2dProblem pb = make(N, l[0], l[1], l[1], l[0], 3, 3, 1, 1, 1, 1, 1, 1, l[2], L);
      pb.has_bias = true;
      pb.activation = Activation::ReLU;
      auto x = activation_tensor<float>(pb, pb.C, pb.H, pb.W, "x");
      auto y = activation_tensor<float>(pb, pb.M, pb.P, pb.Q, "y");
      auto w = filter_tensor<float>(pb);
      Kokkos::View<float*, Mem> b("b", pb.M);
      Kokkos::deep_copy(x, 0.5f);
      Kokkos::deep_copy(w, 0.25f);
      auto call = [&] {
        conv2d_grouped(Space(), as_kernel_view<Space, false>(x), as_kernel_view<Space, false>(w),
                       as_kernel_view<Space, false>(b), as_kernel_view<Space, true>(y), pb,
                       LaunchMode::Run);
      };
      std::vector<double> ms;
      for (int i = 0; i < reps + 3; ++i) {
        Space().fence();
#if defined(KOKKOS_ENABLE_CUDA)
        cudaEvent_t start, stop;
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
        cudaEventRecord(start, Space().cuda_stream());
        call();
        cudaEventRecord(stop, Space().cuda_stream());
        cudaEventSynchronize(stop);
        float t = 0;
        cudaEventElapsedTime(&t, start, stop);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
#else
        const auto t0 = std::chrono::steady_clock::now();
        call();
        Space().fence();
        const double t =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
#endif
        if (i >= 3) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      const double flops = 2.0 * pb.N * pb.M * pb.P * pb.Q * (pb.C / pb.groups) * 9;
      std::printf("grouped %s N=%ld C=M=%ld %ldx%ld groups=%ld: %.4f ms (min %.4f), %.2f TFLOP/s\n",
                  L == Layout::NHWC ? "NHWC" : "NCHW", long(pb.N), long(pb.C), long(pb.H),
                  long(pb.W), long(pb.groups), median, ms[0], flops / median * 1e-9);
    }
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int failures = 0;
  {
    const bool timing = argc > 1 && !std::strcmp(argv[1], "bench");
    const int count = argc > 2 ? std::atoi(argv[2]) : timing ? 20 : 300;
    if (timing) {
      bench(count);
    } else {
      failures = check_random(count);
    }
  }
  Kokkos::finalize();
  return failures != 0;
}
