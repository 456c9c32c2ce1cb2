// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 37 driver (RESULTS.md, "Depthwise and grouped convolutions"): ConvAlgo::
// Depthwise's launch alone (Impl::conv2d_depthwise, so that only its kernels and the
// host reference are compiled: a minute, not the whole library's), fp32. Checks it
// against a double-precision host loop from the definition (max |difference| / max
// |reference|) on odd depthwise shapes and the timed layers, then times issue 22's layers (3x3 pad
// 1, bias, ReLU; N = 64 on GPUs, 8 on CPUs), both layouts, median of REPS (default 20) calls
// (driver_timing.hpp), with a copy of x's size (Kokkos::deep_copy) in the same run. Bytes: x and y
// once, w, bias. Build as s35-winograd-fused-driver.cpp says (CUDA) or
// s36-winograd-backward-driver.cpp (host).
#include <Kokkos_Random.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <kcnn/kcnn.hpp>

#include "driver_timing.hpp"

namespace drv {
using Space = Kokkos::DefaultExecutionSpace;
using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;
using V1 = Kokkos::View<float*, Kokkos::LayoutRight>;
namespace I = kcnn::Impl;

struct Layer {
  int N, C, H, W, M, R, stride, pad, dilation;
};

struct Tensors {
  V4 x, w, y;
  V1 b;
  kcnn::Conv2dParams p;
  I::Conv2dProblem pb;
  Tensors(const Layer& l, kcnn::Layout L, Kokkos::Random_XorShift64_Pool<Space>& pool) {
    const bool nhwc = L == kcnn::Layout::NHWC;
    p.layout = L;
    p.stride_h = p.stride_w = l.stride;
    p.pad_h = p.pad_w = l.pad;
    p.dilation_h = p.dilation_w = l.dilation;
    p.groups = l.C;
    p.activation = kcnn::Activation::ReLU;
    const int P = (l.H + 2 * l.pad - l.dilation * (l.R - 1) - 1) / l.stride + 1;
    const int Q = (l.W + 2 * l.pad - l.dilation * (l.R - 1) - 1) / l.stride + 1;
    x = nhwc ? V4("x", l.N, l.H, l.W, l.C) : V4("x", l.N, l.C, l.H, l.W);
    w = nhwc ? V4("w", l.M, l.R, l.R, 1) : V4("w", l.M, 1, l.R, l.R);
    y = nhwc ? V4("y", l.N, P, Q, l.M) : V4("y", l.N, l.M, P, Q);
    b = V1("b", l.M);
    Kokkos::fill_random(x, pool, -1.0f, 1.0f);
    Kokkos::fill_random(w, pool, -1.0f, 1.0f);
    Kokkos::fill_random(b, pool, -1.0f, 1.0f);
    pb = I::make_conv2d_problem("driver", x, w, b, y, p);
  }
  void depthwise() const {
    I::conv2d_depthwise(Space(), I::as_kernel_view<Space, false>(x),
                        I::as_kernel_view<Space, false>(w), I::as_kernel_view<Space, false>(b),
                        I::as_kernel_view<Space, true>(y), pb, I::LaunchMode::Run);
  }
  /// The depthwise convolution on the host in double, from its definition.
  double error() const {
    Kokkos::deep_copy(y, std::nanf(""));
    depthwise();
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
    const bool nhwc = p.layout == kcnn::Layout::NHWC;
    const std::int64_t k = pb.M / pb.C;
    double diff = 0, ref = 0;
    for (std::int64_t n = 0; n < pb.N; ++n)
      for (std::int64_t m = 0; m < pb.M; ++m)
        for (std::int64_t op = 0; op < pb.P; ++op)
          for (std::int64_t oq = 0; oq < pb.Q; ++oq) {
            double sum = hb(m);
            for (std::int64_t r = 0; r < pb.R; ++r)
              for (std::int64_t s = 0; s < pb.S; ++s) {
                const std::int64_t ih = op * p.stride_h - p.pad_h + r * p.dilation_h;
                const std::int64_t iw = oq * p.stride_w - p.pad_w + s * p.dilation_w;
                if (ih < 0 || ih >= pb.H || iw < 0 || iw >= pb.W) continue;
                const double xv = nhwc ? hx(n, ih, iw, m / k) : hx(n, m / k, ih, iw);
                const double wv = nhwc ? hw(m, r, s, 0) : hw(m, 0, r, s);
                sum += xv * wv;
              }
            const double want = sum > 0 ? sum : 0;  // ReLU
            const double got = nhwc ? h(n, op, oq, m) : h(n, m, op, oq);
            const double d = std::abs(got - want);
            diff = std::isfinite(d) ? std::max(diff, d) : INFINITY;
            ref = std::max(ref, std::abs(want));
          }
    return diff / ref;
  }
};

int main_driver() {
  const int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 20;
  const bool host = I::runs_on_host_v<Space>;
  Kokkos::Random_XorShift64_Pool<Space> pool(5);
  // N, C, H, W, M, R, stride, pad, dilation
  const Layer odd[] = {{2, 12, 9, 16, 12, 3, 1, 1, 1}, {1, 5, 13, 11, 10, 3, 2, 1, 1},
                       {2, 8, 17, 15, 8, 5, 1, 2, 1},  {1, 6, 19, 20, 6, 5, 2, 2, 1},
                       {2, 4, 23, 21, 8, 7, 1, 3, 1},  {1, 3, 20, 18, 3, 7, 2, 0, 1},
                       {2, 8, 12, 12, 8, 3, 3, 1, 1},  {1, 4, 15, 14, 4, 3, 1, 2, 2},
                       {3, 64, 7, 9, 64, 3, 1, 1, 1},  {1, 20, 6, 6, 40, 3, 1, 0, 1}};
  double worst = 0;
  for (kcnn::Layout L : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
    for (const Layer& l : odd)
      worst = std::max(worst, Tensors(l, L, pool).error());
  std::printf("odd shapes: max error / max |reference| %.3g\n", worst);
  const int n = host ? 8 : 64;
  const Layer layers[] = {{n, 128, 56, 56, 128, 3, 1, 1, 1},
                          {n, 256, 28, 28, 256, 3, 1, 1, 1},
                          {n, 512, 14, 14, 512, 3, 1, 1, 1}};
  for (kcnn::Layout L : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
    for (const Layer& l : layers) {
      const Tensors t(l, L, pool);
      const double err = t.error();
      V4 copy("copy", t.x.extent(0), t.x.extent(1), t.x.extent(2), t.x.extent(3));
      const double copy_ms = time_ms([&] { Kokkos::deep_copy(copy, t.x); }, reps);
      const double copy_gbs = 2.0 * 4.0 * t.x.size() / copy_ms * 1e-6;
      const double ms = time_ms([&] { t.depthwise(); }, reps);
      const double gbs = 4.0 * (t.x.size() + t.y.size() + t.w.size() + t.b.size()) / ms * 1e-6;
      std::printf(
          "%s C=%d %dx%d N=%d: depthwise %.4f ms %.0f GB/s, copy %.4f ms %.0f GB/s: "
          "%.0f%% of copy; error %.2g\n",
          kcnn::to_string(L), l.C, l.H, l.W, l.N, ms, gbs, copy_ms, copy_gbs, 100 * gbs / copy_gbs,
          err);
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
