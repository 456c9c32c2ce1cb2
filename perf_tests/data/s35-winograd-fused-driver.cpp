// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 35 driver (RESULTS.md, "fp32 strict ResNet 3x3: Winograd's fused kernel"): the
// fused F(2x2) CUDA kernel through Impl::conv2d_winograd against a double reference on odd
// shapes (ONLYCHECK=1: only those), then the ResNet 3x3 layers timed (median of REPS,
// default 20, CUDA events around one call; the filter transform included) beside the
// staged pipeline (NOSTAGED=1: not). Built with the cuda deps' nvcc_wrapper:
//   nvcc_wrapper -DKOKKOS_DEPENDENCE -arch=sm_90 -std=c++17 -O3 -DNDEBUG
//     -expt-extended-lambda -Xcompiler -fopenmp -Isrc -Ibuild/cuda/generated
//     -isystem DEPS/include -c DRIVER.cpp, linked with -lkokkoskernels -lkokkoscontainers
//     -lkokkoscore -lcublas -ldl.
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kcnn/impl/conv2d/winograd/winograd.hpp>
#include <kcnn/kcnn.hpp>
#include <vector>
namespace drv {
using namespace kcnn;
using namespace kcnn::Impl;
using Space = Kokkos::DefaultExecutionSpace;
using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;

struct Case {
  int N, C, H, W, M, pad;
  Layout L;
  bool bias;
  Activation act;
};

// Device time (CUDA events around one call on the space's stream, as kcnn_perf's
// --timing device and PyTorch's events around F.conv2d), median of reps.
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

Conv2dProblem problem(const Case& c) {
  Conv2dProblem pb;
  pb.N = c.N;
  pb.C = c.C;
  pb.H = c.H;
  pb.W = c.W;
  pb.M = c.M;
  pb.R = 3;
  pb.S = 3;
  pb.pad_h = pb.pad_w = c.pad;
  pb.P = c.H + 2 * c.pad - 2;
  pb.Q = c.W + 2 * c.pad - 2;
  pb.layout = c.L;
  pb.has_bias = c.bias;
  pb.activation = c.act;
  pb.workspace_limit_bytes = std::size_t(1) << 33;
  return pb;
}

struct Tensors {
  V4 x, w, y;
  Kokkos::View<float*> b;
};
Tensors make(const Case& c, const Conv2dProblem& pb, unsigned seed) {
  auto dims = [&](int n, int ch, int h, int w) {
    return c.L == Layout::NCHW ? std::array<int, 4>{n, ch, h, w} : std::array<int, 4>{n, h, w, ch};
  };
  auto xd = dims(c.N, c.C, c.H, c.W), wd = dims(c.M, c.C, 3, 3), yd = dims(c.N, c.M, pb.P, pb.Q);
  Tensors t{V4("x", xd[0], xd[1], xd[2], xd[3]), V4("w", wd[0], wd[1], wd[2], wd[3]),
            V4("y", yd[0], yd[1], yd[2], yd[3]), Kokkos::View<float*>("b", c.M)};
  Kokkos::Random_XorShift64_Pool<> pool(seed);
  Kokkos::fill_random(t.x, pool, -1.f, 1.f);
  Kokkos::fill_random(t.w, pool, -1.f, 1.f);
  Kokkos::fill_random(t.b, pool, -1.f, 1.f);
  Kokkos::deep_copy(t.y, std::nanf(""));
  return t;
}

bool check(const Case& c, bool fused) {
  Conv2dProblem pb = problem(c);
  Tensors t = make(c, pb, 7 + c.C + c.M);
  WinogradTuning tu;
  tu.device_fused = fused;
  conv2d_winograd(Space(), t.x, t.w, t.b, t.y, pb, tu);
  Kokkos::fence();
  auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.x);
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.w);
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.y);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.b);
  bool nchw = c.L == Layout::NCHW;
  auto X = [&](int n, int ch, int h, int ww) { return nchw ? x(n, ch, h, ww) : x(n, h, ww, ch); };
  auto Wt = [&](int m, int ch, int r, int s) { return nchw ? w(m, ch, r, s) : w(m, r, s, ch); };
  auto Y = [&](int n, int m, int p, int q) { return nchw ? y(n, m, p, q) : y(n, p, q, m); };
  double worst = 0, mag = 0;
  long bad = 0;
  for (int n = 0; n < c.N; n++)
    for (int m = 0; m < c.M; m++)
      for (int p = 0; p < pb.P; p++)
        for (int q = 0; q < pb.Q; q++) {
          double s = c.bias ? b(m) : 0, a = c.bias ? std::fabs(b(m)) : 0;
          for (int ch = 0; ch < c.C; ch++)
            for (int r = 0; r < 3; r++)
              for (int ss = 0; ss < 3; ss++) {
                int h = p - c.pad + r, ww = q - c.pad + ss;
                if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                double v = double(X(n, ch, h, ww)) * Wt(m, ch, r, ss);
                s += v;
                a += std::fabs(v);
              }
          if (c.act == Activation::ReLU) s = std::max(0.0, s);
          double e = std::fabs(s - Y(n, m, p, q));
          if (!(e <= 1e-5 * a + 1e-6)) bad++;
          if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
          mag = std::max(mag, std::fabs(s));
        }
  printf("%s N%d C%d %dx%d M%d pad%d %s bias%d: max err %.3g (mag %.3g) bad %ld\n",
         fused ? "fused " : "staged", c.N, c.C, c.H, c.W, c.M, c.pad, nchw ? "NCHW" : "NHWC",
         c.bias, worst, mag, bad);
  return bad == 0;
}

int run() {
  bool ok = true;
  if (!getenv("NOCHECK")) {
    std::vector<Case> cases = {
        {1, 1, 5, 5, 1, 1, Layout::NCHW, true, Activation::ReLU},
        {2, 3, 7, 11, 5, 0, Layout::NCHW, true, Activation::Identity},
        {2, 3, 7, 11, 5, 2, Layout::NHWC, true, Activation::ReLU},
        {3, 13, 17, 19, 67, 1, Layout::NCHW, false, Activation::Identity},
        {3, 13, 17, 19, 67, 1, Layout::NHWC, true, Activation::ReLU},
        {1, 64, 9, 9, 130, 1, Layout::NHWC, true, Activation::Identity},
        {2, 37, 31, 29, 64, 1, Layout::NCHW, true, Activation::ReLU},
        {5, 8, 4, 4, 3, 0, Layout::NHWC, false, Activation::Identity},
        {1, 2, 3, 3, 2, 0, Layout::NCHW, false, Activation::Identity},
    };
    for (auto& c : cases)
      ok = check(c, true) && ok;
    ok = check(cases[4], false) && ok;
  }
  printf(ok ? "CHECK OK\n" : "CHECK FAILED\n");
  if (getenv("ONLYCHECK")) return ok ? 0 : 1;
  int reps = getenv("REPS") ? atoi(getenv("REPS")) : 20;
  std::vector<Case> layers = {{64, 64, 56, 56, 64, 1, Layout::NCHW, true, Activation::ReLU},
                              {64, 128, 28, 28, 128, 1, Layout::NCHW, true, Activation::ReLU},
                              {64, 256, 14, 14, 256, 1, Layout::NCHW, true, Activation::ReLU},
                              {32, 512, 7, 7, 512, 1, Layout::NCHW, true, Activation::ReLU}};
  for (Layout L : {Layout::NCHW, Layout::NHWC})
    for (auto c : layers) {
      c.L = L;
      c.bias = false;
      c.act = Activation::Identity;
      Conv2dProblem pb = problem(c);
      Tensors t = make(c, pb, 1);
      WinogradTuning f;
      WinogradTuning s;
      s.device_fused = false;
      double tf = time_ms([&] { conv2d_winograd(Space(), t.x, t.w, t.b, t.y, pb, f); }, reps);
      double ts = getenv("NOSTAGED")
                      ? 0
                      : time_ms([&] { conv2d_winograd(Space(), t.x, t.w, t.b, t.y, pb, s); }, reps);
      double gf = 2.0 * c.N * pb.P * pb.Q * double(c.M) * c.C * 9 / 1e6;
      printf("%s C%d %dx%d N%d: fused %.4f ms (%.1f eff TFLOP/s)  staged %.4f ms\n",
             L == Layout::NCHW ? "NCHW" : "NHWC", c.C, c.H, c.W, c.N, tf, gf / tf / 1e3, ts);
    }
  return ok ? 0 : 1;
}
}  // namespace drv
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  return drv::run();
}
