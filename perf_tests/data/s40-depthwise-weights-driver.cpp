// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 40 driver (RESULTS.md, "depthwise weight gradient"): session 39's driver
// (s39-depthwise-backward-driver.cpp: the depthwise forward and backward entry points on
// pointers and strides; fp32, N = 64, the issue 22 layers and stride 2, 5x5, 7x7
// variants, both layouts) timed with CUDA events around each call, as kcnn_perf does
// (session 39's fenced host clock added the launch and synchronization, 5-10 us), median
// of argv[1] (30) calls; GB/s = x and dy (or y) once against a 1 GiB Kokkos::deep_copy
// in the same process. Build (CUDA only):
//   $D/bin/nvcc_wrapper -DKOKKOS_DEPENDENCE -I$PWD/src -isystem $D/include -arch=sm_90 -O3 \
//     -expt-extended-lambda -Xcompiler -fopenmp -std=c++17 -o $PWD/dw.o -c $PWD/<this file>
//   $D/bin/nvcc_wrapper -arch=sm_90 -Xcompiler -fopenmp dw.o $D/lib/libkokkoscontainers.a \
//     $D/lib/libkokkoscore.a -ldl -o s40-depthwise-weights-driver
// with D the cuda deps' prefix (absolute paths: nvcc_wrapper misreads relative ones).
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <kcnn/impl/backward/depthwise/depthwise_backward.hpp>

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;
using T = float;

template <class F>
double median_ms(F&& f, int reps = 30) {
  for (int i = 0; i < 5; ++i)
    f();
  Kokkos::fence();
  std::vector<double> t;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const cudaStream_t stream = Space().cuda_stream();
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(start, stream);
    f();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    t.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void fill(Kokkos::View<T*, Mem> v, unsigned seed) {
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<Space>(0, v.extent(0)), KOKKOS_LAMBDA(std::size_t i) {
        unsigned h = unsigned(i) * 2654435761u + seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        v(i) = float(h & 0xffff) / 65536.0f - 0.5f;
      });
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
    // Copy bandwidth: 1 GiB read + 1 GiB written.
    const std::size_t big = std::size_t(1) << 28;
    Kokkos::View<T*, Mem> a("a", big), b("b", big);
    fill(a, 1);
    const double copy_ms = median_ms([&] { Kokkos::deep_copy(b, a); }, reps);
    const double copy_gbs = 2.0 * big * sizeof(T) / copy_ms / 1e6;
    std::printf("copy %.3f ms %.0f GB/s\n", copy_ms, copy_gbs);
    a = {}, b = {};

    struct L {
      const char* name;
      int N, C, H;
      int R = 3, stride = 1, pad = 1;
    };
    std::vector<L> layers = {{"c128_56", 64, 128, 56},
                             {"c256_28", 64, 256, 28},
                             {"c512_14", 64, 512, 14},
                             {"c128_56_s2", 64, 128, 56, 3, 2, 1},
                             {"c256_28_k5", 64, 256, 28, 5, 1, 2},
                             {"c128_56_k7", 64, 128, 56, 7, 1, 3}};
    for (const L& l : layers)
      for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
        kcnn::Impl::Conv2dProblem pb;
        pb.N = l.N, pb.C = l.C, pb.H = pb.W = l.H, pb.M = l.C, pb.R = pb.S = l.R;
        pb.stride_h = pb.stride_w = l.stride, pb.pad_h = pb.pad_w = l.pad;
        pb.P = pb.Q = (l.H + 2 * l.pad - l.R) / l.stride + 1;
        pb.groups = l.C;
        pb.layout = layout;
        const bool nhwc = layout == kcnn::Layout::NHWC;
        const std::int64_t xn = pb.N * pb.C * pb.H * pb.W, yn = pb.N * pb.M * pb.P * pb.Q,
                           wn = pb.M * pb.R * pb.S;
        Kokkos::View<T*, Mem> x("x", xn), y("y", yn), w("w", wn), dx("dx", xn), dw("dw", wn),
            db("db", pb.M), bias("bias", pb.M);
        fill(x, 3), fill(y, 4), fill(w, 5), fill(bias, 6);
        const auto s4 = [&](std::int64_t C, std::int64_t H, std::int64_t W) {
          return nhwc ? kcnn::Impl::LogicalStrides{H * W * C, 1, W * C, C}
                      : kcnn::Impl::LogicalStrides{C * H * W, H * W, W, 1};
        };
        const auto xs = s4(pb.C, pb.H, pb.W), ys = s4(pb.M, pb.P, pb.Q);
        const auto ws = nhwc ? kcnn::Impl::LogicalStrides{pb.R * pb.S, 1, pb.S, 1}
                             : kcnn::Impl::LogicalStrides{pb.R * pb.S, pb.R * pb.S, pb.S, 1};
        Kokkos::View<T*, Mem> yout("yout", yn);
        kcnn::Impl::Conv2dProblem fwd = pb;
        fwd.has_bias = true;
        fwd.activation = kcnn::Activation::ReLU;
        const kcnn::Impl::DepthwiseOperands<T, T> fop{x.data(),    xs, w.data(),    ws,
                                                      bias.data(), 1,  yout.data(), ys};
        const double f_ms =
            median_ms([&] { kcnn::Impl::conv2d_depthwise_run(Space(), fop, fwd); }, reps);
        const kcnn::Impl::DepthwiseBackwardDataOperands<T> dop{y.data(), ys,        w.data(),
                                                               ws,       dx.data(), xs};
        const double d_ms = median_ms(
            [&] { kcnn::Impl::conv2d_backward_data_depthwise_run(Space(), dop, pb); }, reps);
        kcnn::Impl::Conv2dProblem wpb = pb;
        wpb.has_bias = true;
        const kcnn::Impl::DepthwiseBackwardWeightsOperands<T> wop{x.data(),  xs, y.data(),  ys,
                                                                  dw.data(), ws, db.data(), 1};
        const double w_ms = median_ms(
            [&] { kcnn::Impl::conv2d_backward_weights_depthwise_run(Space(), wop, wpb); }, reps);
        const double bytes = double(xn + yn) * sizeof(T);
        auto row = [&](const char* op, double ms) {
          const double gbs = bytes / ms / 1e6;
          std::printf("%-12s %s %-16s %8.4f ms %7.0f GB/s %5.1f%% of copy\n", l.name,
                      nhwc ? "NHWC" : "NCHW", op, ms, gbs, 100 * gbs / copy_gbs);
        };
        row("forward", f_ms);
        row("backward_data", d_ms);
        row("backward_weights", w_ms);
        std::fflush(stdout);
      }
  }
  Kokkos::finalize();
}
