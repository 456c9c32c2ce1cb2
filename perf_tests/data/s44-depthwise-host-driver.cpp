// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 44 driver (data, not built by CMake) behind cpu-2026-11-30-s44-depthwise-window.txt:
// ConvAlgo::Depthwise on the CPU, N = 8, C = M = groups, bias + ReLU, NHWC then NCHW,
// the three depthwise suite layers (128 ch 56x56, 256 ch 28x28, 512 ch 14x14); TAPS=5|7
// for 5x5 / 7x7 filters, PAD to override (R-1)/2; `driver [k [reps]]` runs only layer
// k / 2 in layout k % 2 (1: NHWC); a 2,000-output spot check against a double loop.
// Build: g++ -std=c++17 -O3 -march=native -fopenmp -I src -I build/openmp/generated
//   -isystem <kokkos>/include this.cpp -L<kokkos>/lib -lkokkoskernels -lkokkoscontainers
//   -lkokkoscore -lopenblas -ldl   (AVX2: -march=x86-64-v3 -mtune=znver3)
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <kcnn/kcnn.hpp>
#include <vector>
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  struct L {
    int N, C, H, R, stride, pad;
  } layers[] = {{8, 128, 56, 3, 1, 1}, {8, 256, 28, 3, 1, 1}, {8, 512, 14, 3, 1, 1}};
  using T4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  int taps = getenv("TAPS") ? atoi(getenv("TAPS")) : 3;
  int padenv = getenv("PAD") ? atoi(getenv("PAD")) : (taps - 1) / 2;
  for (auto& l : layers) {
    l.pad = padenv;
    l.R = taps;
  }
  int only = argc > 1 ? atoi(argv[1]) : -1;
  int reps = argc > 2 ? atoi(argv[2]) : 50;
  for (int li = 0; li < 3; ++li)
    for (int nhwc = 1; nhwc >= 0; --nhwc) {
      if (only >= 0 && only != li * 2 + nhwc) continue;
      L l = layers[li];
      int P = (l.H + 2 * l.pad - l.R) / l.stride + 1;
      T4 x = nhwc ? T4("x", l.N, l.H, l.H, l.C) : T4("x", l.N, l.C, l.H, l.H);
      T4 w = nhwc ? T4("w", l.C, l.R, l.R, 1) : T4("w", l.C, 1, l.R, l.R);
      T4 y = nhwc ? T4("y", l.N, P, P, l.C) : T4("y", l.N, l.C, P, P);
      Kokkos::View<float*, Kokkos::HostSpace> b("b", l.C);
      Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(7);
      Kokkos::fill_random(x, pool, -1.f, 1.f);
      Kokkos::fill_random(w, pool, -1.f, 1.f);
      Kokkos::fill_random(b, pool, -1.f, 1.f);
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = l.pad;
      p.stride_h = p.stride_w = l.stride;
      p.groups = l.C;
      p.layout = nhwc ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
      p.activation = kcnn::Activation::ReLU;
      p.algo = kcnn::ConvAlgo::Depthwise;
      std::vector<double> t;
      for (int k = 0; k < reps; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        kcnn::conv2d_forward(Kokkos::OpenMP(), x, w, b, y, p);
        Kokkos::fence();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count());
      }
      std::sort(t.begin(), t.end());
      // check a few outputs against a double loop
      auto xh = x;
      auto wh = w;
      auto yh = y;
      double maxerr = 0;
      for (int s = 0; s < 2000; ++s) {
        int n = (s * 7) % l.N, c = (s * 131) % l.C, pp = (s * 13) % P, q = (s * 29) % P;
        double acc = b(c);
        for (int r = 0; r < l.R; ++r)
          for (int ss = 0; ss < l.R; ++ss) {
            int h = pp * l.stride - l.pad + r, wc = q * l.stride - l.pad + ss;
            if (h < 0 || h >= l.H || wc < 0 || wc >= l.H) continue;
            double xv = nhwc ? xh(n, h, wc, c) : xh(n, c, h, wc);
            double wv = nhwc ? wh(c, r, ss, 0) : wh(c, 0, r, ss);
            acc += xv * wv;
          }
        acc = acc > 0 ? acc : 0;
        double yv = nhwc ? yh(n, pp, q, c) : yh(n, c, pp, q);
        maxerr = std::max(maxerr, std::abs(yv - acc));
      }
      double bytes = 1.0 * l.N * l.C * (l.H * l.H + P * P) * 4;
      printf("layer %d %s median %.4f ms min %.4f  GB/s %.1f maxerr %.2e\n", li,
             nhwc ? "NHWC" : "NCHW", t[t.size() / 2], t[0], bytes / t[t.size() / 2] / 1e6, maxerr);
    }
}
