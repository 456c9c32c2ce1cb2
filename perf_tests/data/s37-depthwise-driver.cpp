// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 37 driver (RESULTS.md, "Depthwise and grouped convolutions"): issue 22's
// layers, fp32, median of REPS (default 20) calls (driver_timing.hpp): the depthwise 3x3
// pad 1 layers (C = M = groups 128 at 56x56, 256 at 28x28, 512 at 14x14; N = 64 on GPUs,
// 8 on CPUs) with ConvAlgo::Depthwise and Auto, and the grouped ResNeXt layer (C = M = 256
// at 28x28, 32 groups) with Auto and each algorithm, both layouts; in the same run, a copy
// of x's size (Kokkos::deep_copy) for the copy bandwidth. Bytes of a depthwise call: x
// and y once, w and the bias. Build: as s35-winograd-fused-driver.cpp says (CUDA), or as
// s36-winograd-backward-driver.cpp says (host).
#include <Kokkos_Random.hpp>
#include <cstdio>
#include <cstdlib>
#include <kcnn/kcnn.hpp>

#include "driver_timing.hpp"

namespace drv {
using Space = Kokkos::DefaultExecutionSpace;
using V4 = Kokkos::View<float****, Kokkos::LayoutRight>;
using V1 = Kokkos::View<float*, Kokkos::LayoutRight>;

int main_driver() {
  const int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 20;
  const bool host = kcnn::Impl::runs_on_host_v<Space>;
  const int n = host ? 8 : 64;
  struct Layer {
    int C, HW, groups;
  };
  const Layer layers[] = {{128, 56, 128}, {256, 28, 256}, {512, 14, 512}, {256, 28, 32}};
  Kokkos::Random_XorShift64_Pool<Space> pool(5);
  for (kcnn::Layout L : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
    for (const Layer& l : layers) {
      const bool nhwc = L == kcnn::Layout::NHWC;
      const int Cg = l.C / l.groups;
      V4 x = nhwc ? V4("x", n, l.HW, l.HW, l.C) : V4("x", n, l.C, l.HW, l.HW);
      V4 w = nhwc ? V4("w", l.C, 3, 3, Cg) : V4("w", l.C, Cg, 3, 3);
      V4 y = nhwc ? V4("y", n, l.HW, l.HW, l.C) : V4("y", n, l.C, l.HW, l.HW);
      V4 copy("copy", x.extent(0), x.extent(1), x.extent(2), x.extent(3));
      V1 b("b", l.C);
      Kokkos::fill_random(x, pool, -1.0f, 1.0f);
      Kokkos::fill_random(w, pool, -1.0f, 1.0f);
      Kokkos::fill_random(b, pool, -1.0f, 1.0f);
      kcnn::Conv2dParams p;
      p.layout = L;
      p.pad_h = p.pad_w = 1;
      p.groups = l.groups;
      p.activation = kcnn::Activation::ReLU;
      const double bytes = 4.0 * (x.size() + y.size() + w.size() + b.size());
      const double copy_ms = time_ms([&] { Kokkos::deep_copy(copy, x); }, reps);
      const double copy_gbs = 2.0 * 4.0 * x.size() / copy_ms * 1e-6;
      std::printf("%s C=%d %dx%d groups=%d N=%d: copy %.4f ms (%.0f GB/s)\n", kcnn::to_string(L),
                  l.C, l.HW, l.HW, l.groups, n, copy_ms, copy_gbs);
      const bool depthwise = l.groups == l.C;
      std::vector<kcnn::ConvAlgo> algos = {kcnn::ConvAlgo::Auto};
      if (depthwise) algos.push_back(kcnn::ConvAlgo::Depthwise);
      if (!depthwise)
        for (kcnn::ConvAlgo a : kcnn::implemented_conv_algos())
          algos.push_back(a);
      for (kcnn::ConvAlgo a : algos) {
        p.algo = a;
        if (a == kcnn::ConvAlgo::Reference || a == kcnn::ConvAlgo::Depthwise && !depthwise)
          continue;
        try {
          const double ms = time_ms([&] { kcnn::conv2d_forward(Space(), x, w, b, y, p); }, reps);
          const double gbs = bytes / ms * 1e-6;
          std::printf("  %-14s %.4f ms  %.0f GB/s  %.0f%% of copy\n", kcnn::to_string(a), ms, gbs,
                      100.0 * gbs / copy_gbs);
        } catch (const std::exception& e) {
          std::printf("  %-14s refused: %.80s\n", kcnn::to_string(a), e.what());
        }
      }
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
