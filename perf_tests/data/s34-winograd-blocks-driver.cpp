// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 34 driver (select/TUNING.md, Winograd): Tiled through conv2d_forward beside
// Impl::conv2d_winograd with forced tiles and host block sizes, median of REPS (7) runs.
// Built against build/openmp's flags and libkcnn_prebuilt_instances.a; env TILE, KB,
// NCHW / NHWC (one layout only), NOTILED, REPS; argument: the ResNet layer 0-3.
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kcnn/impl/conv2d/winograd/winograd.hpp>
#include <kcnn/kcnn.hpp>
using namespace kcnn;
using namespace kcnn::Impl;
using Space = Kokkos::DefaultExecutionSpace;
template <Layout L>
void bench(int N, int C, int HW, int M) {
  auto dims = [&](int n, int c, int h, int w) {
    return L == Layout::NCHW ? std::array<int, 4>{n, c, h, w} : std::array<int, 4>{n, h, w, c};
  };
  auto xd = dims(N, C, HW, HW), wd = dims(M, C, 3, 3), yd = dims(N, M, HW, HW);
  using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;
  V4 x("x", xd[0], xd[1], xd[2], xd[3]), w("w", wd[0], wd[1], wd[2], wd[3]),
      y("y", yd[0], yd[1], yd[2], yd[3]);
  Kokkos::View<float*> b("b", M);
  Kokkos::Random_XorShift64_Pool<> pool(1);
  Kokkos::fill_random(x, pool, 1.f);
  Kokkos::fill_random(w, pool, 1.f);
  Conv2dParams prm;
  prm.layout = L;
  prm.pad_h = prm.pad_w = 1;
  prm.activation = Activation::ReLU;
  auto time = [&](auto f) {
    f();
    Kokkos::fence();
    std::vector<double> t;
    int reps = getenv("REPS") ? atoi(getenv("REPS")) : 7;
    for (int i = 0; i < reps; i++) {
      auto s = std::chrono::steady_clock::now();
      f();
      Kokkos::fence();
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  prm.algo = ConvAlgo::Tiled;
  double tt = getenv("NOTILED") ? 0 : time([&] { conv2d_forward(Space(), x, w, b, y, prm); });
  Conv2dProblem pb;
  pb.N = N;
  pb.C = C;
  pb.H = HW;
  pb.W = HW;
  pb.M = M;
  pb.R = 3;
  pb.S = 3;
  pb.pad_h = pb.pad_w = 1;
  pb.P = HW;
  pb.Q = HW;
  pb.layout = L;
  pb.activation = Activation::ReLU;
  pb.has_bias = true;
  pb.workspace_limit_bytes = size_t(1) << 31;
  Kokkos::View<const float****, Kokkos::LayoutStride> xk = x, wk = w;
  Kokkos::View<const float*, Kokkos::LayoutStride> bk = b;
  Kokkos::View<float****, Kokkos::LayoutStride> yk = y;
  printf("%s N%d C%d %d M%d: Tiled %.2f ms |", L == Layout::NCHW ? "NCHW" : "NHWC", N, C, HW, M,
         tt);
  for (int tile : {2, 4})
    for (size_t kb : {1024, 2048}) {
      if (getenv("TILE") && atoi(getenv("TILE")) != tile) continue;
      if (getenv("KB") && size_t(atoi(getenv("KB"))) != kb) continue;
      WinogradTuning tu;
      tu.tile = tile;
      tu.host_block_bytes = kb << 10;
      double t = time([&] { conv2d_winograd(Space(), xk, wk, bk, yk, pb, tu); });
      printf(" F%d/%zuK %.2f", tile, kb, t);
    }
  printf("\n");
  fflush(stdout);
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int which = argc > 1 ? atoi(argv[1]) : -1;
  struct S {
    int N, C, HW, M;
  } s[] = {{8, 64, 56, 64}, {8, 128, 28, 128}, {8, 256, 14, 256}, {8, 512, 7, 512}};
  for (int i = 0; i < 4; i++)
    if (which < 0 || which == i) {
      if (!getenv("NCHW")) bench<Layout::NHWC>(s[i].N, s[i].C, s[i].HW, s[i].M);
      if (!getenv("NHWC")) bench<Layout::NCHW>(s[i].N, s[i].C, s[i].HW, s[i].M);
    }
}
