// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 35 sweep (select/TUNING.md, "GPU, float: Winograd"): ConvAlgo::Winograd's fused
// CUDA kernel beside Tiled and ImplicitGemm (their descriptors, as conv2d_forward launches
// them) on 3x3 stride-1 pad-1 float layers with bias + ReLU, both layouts: the evidence
// for the device Auto rule. Median of REPS (15) calls, host clock around call + fence.
// Built as s35-winograd-fused-driver.cpp says.
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kcnn/impl/common/problem.hpp>
#include <kcnn/impl/conv2d/implicit_gemm/implicit_gemm_algorithm.hpp>
#include <kcnn/impl/conv2d/tiled/tiled_algorithm.hpp>
#include <kcnn/impl/conv2d/winograd/winograd_algorithm.hpp>
#include <vector>
namespace drv {
using namespace kcnn;
using namespace kcnn::Impl;
using Space = Kokkos::DefaultExecutionSpace;
using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;
template <class F>
double time_ms(F f, int reps) {
  f();
  Kokkos::fence();
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto s = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
void layer(Layout L, int N, int C, int HW, int M) {
  auto dims = [&](int n, int c, int h, int w) {
    return L == Layout::NCHW ? std::array<int, 4>{n, c, h, w} : std::array<int, 4>{n, h, w, c};
  };
  auto xd = dims(N, C, HW, HW), wd = dims(M, C, 3, 3), yd = dims(N, M, HW, HW);
  V4 x("x", xd[0], xd[1], xd[2], xd[3]), w("w", wd[0], wd[1], wd[2], wd[3]),
      y("y", yd[0], yd[1], yd[2], yd[3]);
  Kokkos::View<float*> b("b", M);
  Kokkos::Random_XorShift64_Pool<> pool(1);
  Kokkos::fill_random(x, pool, -1.f, 1.f);
  Kokkos::fill_random(w, pool, -1.f, 1.f);
  Conv2dParams prm;
  prm.layout = L;
  prm.pad_h = prm.pad_w = 1;
  prm.activation = Activation::ReLU;
  const Conv2dProblem pb = make_conv2d_problem("sweep", x, w, b, y, prm);
  auto xk = as_kernel_view<Space, false>(x);
  auto wk = as_kernel_view<Space, false>(w);
  auto bk = as_kernel_view<Space, false>(b);
  auto yk = as_kernel_view<Space, true>(y);
  int reps = getenv("REPS") ? atoi(getenv("REPS")) : 15;
  auto run = [&](auto algo) {
    return time_ms([&] { decltype(algo)::launch(Space(), xk, wk, bk, yk, pb, LaunchMode::Run); },
                   reps);
  };
  double tw = run(WinogradAlgorithm{});
  double tt = run(TiledAlgorithm{});
  double ti = run(ImplicitGemmAlgorithm{});
  printf(
      "%s N%d C%d M%d %dx%d: winograd %.4f tiled %.4f implicit_gemm %.4f ms  best other / winograd "
      "%.2f\n",
      L == Layout::NCHW ? "NCHW" : "NHWC", N, C, M, HW, HW, tw, tt, ti, std::min(tt, ti) / tw);
}
int run() {
  struct S {
    int N, C, HW, M;
  };
  std::vector<S> s = {{64, 64, 56, 64},  {64, 128, 28, 128}, {64, 256, 14, 256}, {32, 512, 7, 512},
                      {16, 32, 256, 32}, {64, 16, 56, 16},   {64, 32, 56, 32},   {64, 64, 56, 16},
                      {64, 64, 56, 32},  {64, 16, 56, 64},   {64, 8, 56, 64},    {8, 64, 56, 64},
                      {1, 64, 56, 64},   {1, 256, 14, 256},  {8, 512, 7, 512},   {64, 3, 224, 64}};
  for (Layout L : {Layout::NCHW, Layout::NHWC})
    for (auto c : s)
      layer(L, c.N, c.C, c.HW, c.M);
  return 0;
}
}  // namespace drv
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  return drv::run();
}
