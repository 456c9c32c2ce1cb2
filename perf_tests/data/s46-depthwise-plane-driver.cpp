// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 46 driver (RESULTS.md, "NCHW 14x14 planes on a TMA kernel"): the depthwise
// forward (fp32, 3x3, stride 1, bias + ReLU) on NCHW layers whose rows are not a multiple
// of 4 floats but whose planes are (14x14 and odd shapes): the library's choice (`lib`),
// the strip kernel it replaced (`strip`, also the reference every row is compared with:
// maxdiff), and DepthwiseTmaPlaneKernel at other launch shapes
// (`plane_t<threads>_s<stages>_k<steps a team>`), then the backward data of the same
// layer (`data_lib`: the forward kernels on the rotated filters). Median of argv[1] (30)
// calls timed with CUDA events (perf_tests/data/driver_timing.hpp); argv[2] filters the
// rows by name. % of copy: x and y once against a 1 GiB Kokkos::deep_copy in the same
// process. Build (CUDA only; a Hopper build of Kokkos), from the repository root:
//   $D/bin/nvcc_wrapper -DKOKKOS_DEPENDENCE -I$PWD/src -I$PWD/perf_tests/data -isystem \
//     $D/include -arch=sm_90 -O3 -expt-extended-lambda -Xcompiler -fopenmp -std=c++17 \
//     -o $PWD/dwp.o -c $PWD/<this file>
//   $D/bin/nvcc_wrapper -arch=sm_90 -Xcompiler -fopenmp dwp.o $D/lib/libkokkoscontainers.a \
//     $D/lib/libkokkoscore.a -ldl -o s46-depthwise-plane-driver
// with D the cuda deps' prefix (absolute paths: nvcc_wrapper misreads relative ones).
#include <cuda_runtime.h>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <kcnn/impl/backward/depthwise/depthwise_backward.hpp>
#include <kcnn/impl/conv2d/depthwise/depthwise.hpp>
#include <stdexcept>

#include <string>
#include <vector>
#include "driver_timing.hpp"

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;
using T = float;
using kcnn::Layout;
using kcnn::Impl::conv2d_depthwise_run;
using kcnn::Impl::Conv2dProblem;
using kcnn::Impl::DepthwiseArgs;
using kcnn::Impl::DepthwiseOperands;
using kcnn::Impl::DepthwiseStripKernel;
using kcnn::Impl::LogicalStrides;
using kcnn::Impl::make_depthwise_args;

template <class F>
double median_ms(F&& f, int reps) {
  for (int i = 0; i < 3; ++i)
    f();
  Kokkos::fence();
  std::vector<double> t;
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  const cudaStream_t s = Space().cuda_stream();
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a, s);
    f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
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

template <Layout L, int Rows, int Cols, int Lanes, int MT = 0, int MB = 0>
void strip(const DepthwiseArgs<T, T>& args) {
  DepthwiseStripKernel<L, 3, 1, Rows, Cols, Lanes, T, T> k;
  static_cast<DepthwiseArgs<T, T>&>(k) = args;
  k.row_blocks = (args.P + Rows - 1) / Rows;
  k.col_blocks = (args.Q + Cols - 1) / Cols;
  k.lane_blocks = (args.M + Lanes - 1) / Lanes;
  k.index32 = true;
  k.xh = int(args.xs.h), k.xw = int(args.xs.w), k.yh = int(args.ys.h), k.yw = int(args.ys.w);
  if constexpr (MT == 0) {
    Kokkos::parallel_for(
        "strip", Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, k.items()), k);
  } else {
    Kokkos::parallel_for(
        "strip",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>, Kokkos::LaunchBounds<MT, MB>>(
            0, k.items()),
        k);
  }
}

template <class Shape>
void plane(const DepthwiseOperands<T, T>& op, const Conv2dProblem& pb) {
  if (!kcnn::Impl::depthwise_tma_plane_fits(pb, op)) throw std::runtime_error("plane: no fit");
  kcnn::Impl::launch_depthwise_tma_plane<Shape>(Space(), op, pb);
}
template <int Th, int MinT, int S, int K>
using Pl = kcnn::Impl::DepthwiseTmaPlaneShape<Th, MinT, S, K>;

double max_diff(Kokkos::View<T*, Mem> a, Kokkos::View<T*, Mem> b) {
  double m = 0;
  Kokkos::parallel_reduce(
      "diff", Kokkos::RangePolicy<Space>(0, a.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& r) {
        double d = a(i) - b(i);
        d = d < 0 ? -d : d;
        if (!(d <= r)) r = d;
      },
      Kokkos::Max<double>(m));
  return m;
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
    const char* only = argc > 2 ? argv[2] : "";
    const std::size_t big = std::size_t(1) << 28;
    double copy_gbs;
    {
      Kokkos::View<T*, Mem> a("a", big), b("b", big);
      fill(a, 1);
      const double ms = median_ms([&] { Kokkos::deep_copy(b, a); }, reps);
      copy_gbs = 2.0 * big * sizeof(T) / ms / 1e6;
      std::printf("copy %.3f ms %.0f GB/s\n", ms, copy_gbs);
    }
    struct Lr {
      const char* name;
      int N, C, H, W, pad;
    };
    for (Lr l :
         {Lr{"c512_14", 64, 512, 14, 14, 1}, Lr{"c256_14", 64, 256, 14, 14, 1},
          Lr{"c1024_14", 32, 1024, 14, 14, 1}, Lr{"odd_a", 2, 10, 14, 14, 1},
          Lr{"odd_b", 1, 7, 6, 10, 0}, Lr{"odd_c", 3, 20, 10, 10, 2}, Lr{"odd_d", 1, 3, 18, 14, 1},
          Lr{"odd_e", 4, 9, 4, 5, 1}, Lr{"odd_f", 2, 11, 12, 7, 1}, Lr{"odd_g", 1, 130, 14, 14, 1},
          Lr{"odd_h", 3, 5, 2, 2, 1}})
      for (Layout layout : {Layout::NCHW})
        try {
          Conv2dProblem pb;
          pb.N = l.N, pb.C = l.C, pb.H = l.H, pb.W = l.W, pb.M = l.C, pb.R = pb.S = 3;
          pb.stride_h = pb.stride_w = 1, pb.pad_h = pb.pad_w = l.pad, pb.P = l.H + 2 * l.pad - 2,
          pb.Q = l.W + 2 * l.pad - 2;
          pb.groups = l.C, pb.layout = layout, pb.has_bias = true,
          pb.activation = kcnn::Activation::ReLU;
          const bool nhwc = layout == Layout::NHWC;
          const std::int64_t xn = std::int64_t(pb.N) * pb.C * pb.H * pb.W, wn = pb.M * 9,
                             yn = std::int64_t(pb.N) * pb.M * pb.P * pb.Q;
          Kokkos::View<T*, Mem> x("x", xn), y("y", yn), w("w", wn), bias("b", pb.M);
          fill(x, 3), fill(w, 5), fill(bias, 6);
          auto s4 = [&](std::int64_t C, std::int64_t H, std::int64_t W) {
            return nhwc ? LogicalStrides{H * W * C, 1, W * C, C}
                        : LogicalStrides{C * H * W, H * W, W, 1};
          };
          const auto xs = s4(pb.C, pb.H, pb.W), ys = s4(pb.M, pb.P, pb.Q);
          const auto ws = nhwc ? LogicalStrides{9, 1, 3, 1} : LogicalStrides{9, 9, 3, 1};
          const DepthwiseOperands<T, T> op{x.data(),    xs, w.data(), ws,
                                           bias.data(), 1,  y.data(), ys};
          const auto args = make_depthwise_args(op, pb);
          Kokkos::View<T*, Mem> yref("yref", yn);
          if (!nhwc)
            strip<Layout::NCHW, 7, 2, 1>(args);
          else if (pb.C % 4 == 0)
            strip<Layout::NHWC, 7, 1, 4>(args);
          else
            strip<Layout::NHWC, 7, 1, 1>(args);
          Kokkos::deep_copy(yref, y);
          const double bytes = double(xn + yn) * sizeof(T);
          auto row = [&](const char* v, auto&& f) {
            std::string tag = std::string(l.name) + (nhwc ? "_nhwc_" : "_nchw_") + v;
            if (*only && tag.find(only) == std::string::npos) return;
            try {
              f();
              Kokkos::fence();
            } catch (const std::exception& e) {
              std::printf("%s: %s\n", tag.c_str(), e.what());
              return;
            }
            const double ms = median_ms(f, reps);
            Kokkos::deep_copy(y, std::nanf(""));
            f();
            const double diff = max_diff(y, yref);
            std::printf("%-28s %8.4f ms %5.1f%% of copy  maxdiff %.2e\n", tag.c_str(), ms,
                        100 * bytes / ms / 1e6 / copy_gbs, diff);
            std::fflush(stdout);
          };
          row("lib", [&] { conv2d_depthwise_run(Space(), op, pb); });
          row("strip", [&] { strip<Layout::NCHW, 7, 2, 1>(args); });
          // The strip kernel as the library launched it before (one column an item, Q < 28).
          row("strip_c1", [&] { strip<Layout::NCHW, 7, 1, 1>(args); });
          row("plane_t128_s4_k4", [&] { plane<Pl<128, 1, 4, 4>>(op, pb); });
          row("plane_t128_s4_k2", [&] { plane<Pl<128, 1, 4, 2>>(op, pb); });
          row("plane_t128_s4_k8", [&] { plane<Pl<128, 1, 4, 8>>(op, pb); });
          row("plane_t128_s2_k4", [&] { plane<Pl<128, 1, 2, 4>>(op, pb); });
          row("plane_t128_s3_k6", [&] { plane<Pl<128, 1, 3, 6>>(op, pb); });
          row("plane_t256_s4_k4", [&] { plane<Pl<256, 1, 4, 4>>(op, pb); });
          row("plane_t64_s4_k4", [&] { plane<Pl<64, 1, 4, 4>>(op, pb); });
          {
            // Backward data: dx from dy (= y here) and w; % of copy for dy and dx once.
            Kokkos::View<T*, Mem> dx("dx", xn);
            const kcnn::Impl::DepthwiseBackwardDataOperands<T> dop{y.data(), ys,        w.data(),
                                                                   ws,       dx.data(), xs};
            Conv2dProblem dpb = pb;
            dpb.has_bias = false, dpb.activation = kcnn::Activation::Identity;
            const double ms = drv::time_ms(
                [&] { kcnn::Impl::conv2d_backward_data_depthwise_run(Space(), dop, dpb); }, reps);
            std::printf("%-28s %8.4f ms %5.1f%% of copy\n",
                        (std::string(l.name) + "_nchw_data_lib").c_str(), ms,
                        100 * bytes / ms / 1e6 / copy_gbs);
          }
        } catch (const std::exception& e) {
          std::printf("layer %s: %s\n", l.name, e.what());
        }
  }
  Kokkos::finalize();
}
