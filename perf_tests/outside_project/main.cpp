// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// outside_bench N,C,H,W,M,R,S,stride,pad [reps]: times conv2d_forward (Auto, NCHW, fp32,
// bias + ReLU) on random data the way kcnn_perf does: one untimed warm-up run, then
// `reps` runs (default 20) each ending in a fence; prints the median in ms and the
// algorithm Auto ran.
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  int N, C, H, W, M, R, S, stride, pad;
  if (argc < 2 || std::sscanf(argv[1], "%d,%d,%d,%d,%d,%d,%d,%d,%d", &N, &C, &H, &W, &M, &R, &S,
                              &stride, &pad) != 9) {
    std::fprintf(stderr, "usage: %s N,C,H,W,M,R,S,stride,pad [reps]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  using Space = Kokkos::DefaultExecutionSpace;
  kcnn::Conv2dParams params;
  params.stride_h = params.stride_w = stride;
  params.pad_h = params.pad_w = pad;
  params.activation = kcnn::Activation::ReLU;
  const int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  Kokkos::View<float****, Space::memory_space> x("x", N, C, H, W), w("w", M, C, R, S),
      y("y", N, M, P, Q);
  Kokkos::View<float*, Space::memory_space> bias("bias", M);
  Kokkos::Random_XorShift64_Pool<Space> pool(12345);
  Kokkos::fill_random(x, pool, -1.0f, 1.0f);
  Kokkos::fill_random(w, pool, -1.0f, 1.0f);
  Kokkos::fill_random(bias, pool, -1.0f, 1.0f);
  Space space;
  kcnn::conv2d_forward(space, x, w, bias, y, params);  // warm-up
  space.fence();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    kcnn::conv2d_forward(space, x, w, bias, y, params);
    space.fence();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("outside_bench %s: median %.3f ms (min %.3f, max %.3f, %d runs), Auto ran %s\n",
              argv[1], ms[ms.size() / 2], ms.front(), ms.back(), reps,
              kcnn::to_string(kcnn::resolve_conv2d_algo(space, x, w, bias, y, params)));
  return 0;
}
