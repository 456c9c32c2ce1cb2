// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 43 driver (data, not built by CMake) behind RESULTS.md's session-43 CPU section
// and cpu-2026-11-30-s43-tiled-row-blocks.txt: ConvAlgo::Tiled forced on layers of at most
// 16 filters (one AVX-512 vector: row blocks) and two 64-filter ones, NCHW and NHWC, bias
// + ReLU, 5 rounds of 9 calls, medians. `rt [k]` runs only layer k / 2 in layout k % 2.
// Build: g++ -std=c++17 -O3 -march=native -fopenmp -I src -I build/openmp/generated
//   -isystem <kokkos>/include this.cpp -L<kokkos>/lib -lkokkoskernels -lkokkoscontainers
//   -lkokkoscore -lopenblas -ldl
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
    int N, C, H, M, R, stride, pad;
  } layers[] = {{1000, 4, 40, 16, 7, 1, 0}, {1000, 1, 86, 4, 7, 1, 0}, {8, 16, 56, 16, 3, 1, 1},
                {8, 3, 224, 16, 3, 1, 1},   {8, 16, 57, 16, 3, 2, 1},  {64, 6, 14, 16, 5, 1, 0},
                {8, 64, 56, 64, 3, 1, 1},   {32, 64, 56, 64, 3, 1, 1}};
  using T4 = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  int rounds = 5;
  std::vector<std::vector<double>> med(16);
  for (int round = 0; round < rounds; ++round)
    for (int li = 0; li < 8; ++li)
      for (int nhwc = 0; nhwc < 2; ++nhwc) {
        if (argc > 1 && (atoi(argv[1]) != li * 2 + nhwc)) continue;
        L l = layers[li];
        int P = (l.H + 2 * l.pad - l.R) / l.stride + 1;
        T4 x = nhwc ? T4("x", l.N, l.H, l.H, l.C) : T4("x", l.N, l.C, l.H, l.H);
        T4 w = nhwc ? T4("w", l.M, l.R, l.R, l.C) : T4("w", l.M, l.C, l.R, l.R);
        T4 y = nhwc ? T4("y", l.N, P, P, l.M) : T4("y", l.N, l.M, P, P);
        Kokkos::View<float*, Kokkos::HostSpace> b("b", l.M);
        Kokkos::Random_XorShift64_Pool<Kokkos::OpenMP> pool(7);
        Kokkos::fill_random(x, pool, -1.f, 1.f);
        Kokkos::fill_random(w, pool, -1.f, 1.f);
        kcnn::Conv2dParams p;
        p.pad_h = p.pad_w = l.pad;
        p.stride_h = p.stride_w = l.stride;
        p.layout = nhwc ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
        p.activation = kcnn::Activation::ReLU;
        p.algo = kcnn::ConvAlgo::Tiled;
        std::vector<double> t;
        for (int k = 0; k < 9; ++k) {
          auto t0 = std::chrono::steady_clock::now();
          kcnn::conv2d_forward(Kokkos::OpenMP(), x, w, b, y, p);
          Kokkos::fence();
          t.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
        std::sort(t.begin(), t.end());
        med[li * 2 + nhwc].push_back(t[4]);
      }
  for (int li = 0; li < 8; ++li)
    for (int nhwc = 0; nhwc < 2; ++nhwc) {
      L l = layers[li];
      auto v = med[li * 2 + nhwc];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      printf("%5d %3d %3d %3d R%d s%d p%d %s  median %8.3f ms  (min %.3f max %.3f)\n", l.N, l.C,
             l.H, l.M, l.R, l.stride, l.pad, nhwc ? "NHWC" : "NCHW", v[rounds / 2], v[0], v.back());
    }
}
