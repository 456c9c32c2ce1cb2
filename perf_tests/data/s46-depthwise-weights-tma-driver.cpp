// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 46 driver (RESULTS.md, "depthwise weight gradient on the TMA kernel"): the
// depthwise weight gradient (dw and dbias; fp32, 3x3, stride 1) on the issue-22 layers
// (N = 64, pad 1) and odd shapes, both layouts: the library's choice (`lib`), the walk
// kernel it replaced (`walk`, also the reference every row is compared with: reldiff =
// max |dw - dw_walk| / max |dw_walk|, dbias likewise, the larger), and
// DepthwiseWeightsTmaKernel at other launch shapes, band heights and team counts
// (`tma_t<threads>_r<rows a stage>_s<stages>_b<band>_g<target teams>`), the store kernels
// alone (`store_chunks<n>`: Kokkos' team launch; `raw_store_chunks<n>`: the TMA path's
// grid-constant one), and the forward for comparison (`forward_lib`; its reldiff is
// meaningless). Median of argv[1] (30) calls timed with CUDA events
// (perf_tests/data/driver_timing.hpp), then of argv[1] runs of 10 calls between the events
// (x10: the host's launch work then overlaps the kernels; per call); argv[2] filters
// the rows by name. % of copy: x and dy once against a 1 GiB Kokkos::deep_copy in the same
// process. Build (CUDA only; a Hopper build of Kokkos), from the repository root:
//   $D/bin/nvcc_wrapper -DKOKKOS_DEPENDENCE -I$PWD/src -I$PWD/perf_tests/data -isystem \
//     $D/include -arch=sm_90 -O3 -expt-extended-lambda -Xcompiler -fopenmp -std=c++17 \
//     -o $PWD/dww.o -c $PWD/<this file>
//   $D/bin/nvcc_wrapper -arch=sm_90 -Xcompiler -fopenmp dww.o $D/lib/libkokkoscontainers.a \
//     $D/lib/libkokkoscore.a -ldl -o s46-depthwise-weights-tma-driver
// with D the cuda deps' prefix (absolute paths: nvcc_wrapper misreads relative ones).
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <kcnn/impl/backward/depthwise/depthwise_backward.hpp>
#include <kcnn/impl/conv2d/depthwise/depthwise.hpp>

#include "driver_timing.hpp"

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;
using T = float;
using kcnn::Layout;
using kcnn::Impl::Conv2dProblem;
using kcnn::Impl::DepthwiseBackwardWeightsOperands;
using kcnn::Impl::LogicalStrides;

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

double max_abs(Kokkos::View<T*, Mem> a) {
  double m = 0;
  Kokkos::parallel_reduce(
      "max", Kokkos::RangePolicy<Space>(0, a.extent(0)),
      KOKKOS_LAMBDA(std::size_t i, double& r) {
        const double d = a(i) < 0 ? -a(i) : a(i);
        if (!(d <= r)) r = d;
      },
      Kokkos::Max<double>(m));
  return m;
}

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

template <int Th, int MinT, int R, int S>
using Sh = kcnn::Impl::DepthwiseTmaShape<Th, MinT, R, S>;

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
      const double ms = drv::time_ms([&] { Kokkos::deep_copy(b, a); }, reps);
      copy_gbs = 2.0 * big * sizeof(T) / ms / 1e6;
      std::printf("copy %.3f ms %.0f GB/s\n", ms, copy_gbs);
    }
    struct Lr {
      const char* name;
      int N, C, H, W, pad;
    };
    for (Lr l : {Lr{"c128_56", 64, 128, 56, 56, 1}, Lr{"c256_28", 64, 256, 28, 28, 1},
                 Lr{"c512_14", 64, 512, 14, 14, 1}, Lr{"c64_112", 32, 64, 112, 112, 1},
                 Lr{"odd_a", 3, 36, 17, 24, 1}, Lr{"odd_b", 2, 4, 5, 300, 0},
                 Lr{"odd_c", 1, 100, 30, 8, 2}, Lr{"odd_d", 1100, 4, 3, 4, 1},
                 Lr{"odd_e", 3, 8, 13, 60, 3}, Lr{"odd_f", 1, 8, 5, 8, 1}})
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        Conv2dProblem pb;
        pb.N = l.N, pb.C = l.C, pb.H = l.H, pb.W = l.W, pb.M = l.C, pb.R = pb.S = 3;
        pb.stride_h = pb.stride_w = 1, pb.pad_h = pb.pad_w = l.pad;
        pb.P = l.H + 2 * l.pad - 2, pb.Q = l.W + 2 * l.pad - 2;
        pb.groups = l.C, pb.layout = layout, pb.has_bias = true;
        const bool nhwc = layout == Layout::NHWC;
        const std::int64_t xn = std::int64_t(pb.N) * pb.C * pb.H * pb.W, wn = pb.M * 9,
                           yn = std::int64_t(pb.N) * pb.M * pb.P * pb.Q;
        Kokkos::View<T*, Mem> x("x", xn), dy("dy", yn), dw("dw", wn), db("db", pb.M);
        Kokkos::View<T*, Mem> dw_ref("dw_ref", wn), db_ref("db_ref", pb.M);
        fill(x, 3), fill(dy, 4);
        auto s4 = [&](std::int64_t C, std::int64_t H, std::int64_t W) {
          return nhwc ? LogicalStrides{H * W * C, 1, W * C, C}
                      : LogicalStrides{C * H * W, H * W, W, 1};
        };
        const auto xs = s4(pb.C, pb.H, pb.W), ys = s4(pb.M, pb.P, pb.Q);
        const auto ws = nhwc ? LogicalStrides{9, 1, 3, 1} : LogicalStrides{9, 9, 3, 1};
        const DepthwiseBackwardWeightsOperands<T> op{x.data(),  xs, dy.data(), ys,
                                                     dw.data(), ws, db.data(), 1};
        const DepthwiseBackwardWeightsOperands<T> ref{x.data(),      xs, dy.data(),     ys,
                                                      dw_ref.data(), ws, db_ref.data(), 1};
        kcnn::Impl::conv2d_backward_weights_depthwise_walk(Space(), ref, pb);
        Kokkos::fence();
        const double dw_scale = max_abs(dw_ref), db_scale = max_abs(db_ref);
        const double bytes = double(xn + yn) * sizeof(T);
        auto row = [&](const std::string& v, auto&& f) {
          const std::string tag = std::string(l.name) + (nhwc ? "_nhwc_" : "_nchw_") + v;
          if (*only && tag.find(only) == std::string::npos) return;
          Kokkos::deep_copy(dw, std::nanf("")), Kokkos::deep_copy(db, std::nanf(""));
          bool ran = false;
          try {
            ran = f();
            Kokkos::fence();
          } catch (const std::exception& e) {
            std::printf("%s: %s\n", tag.c_str(), e.what());
            return;
          }
          if (!ran) {
            std::printf("%-40s not launched\n", tag.c_str());
            return;
          }
          const double diff =
              std::max(max_diff(dw, dw_ref) / dw_scale, max_diff(db, db_ref) / db_scale);
          const double ms = drv::time_ms(f, reps);
          // Ten calls between the events: the GPU's time where the host's launch work
          // overlaps the previous call's kernels.
          const double ms10 = drv::time_ms(
                                  [&] {
                                    for (int i = 0; i < 10; ++i)
                                      f();
                                  },
                                  reps) /
                              10;
          std::printf("%-40s %8.4f ms %5.1f%% of copy  x10 %8.4f ms %5.1f%%  reldiff %.2e\n",
                      tag.c_str(), ms, 100 * bytes / ms / 1e6 / copy_gbs, ms10,
                      100 * bytes / ms10 / 1e6 / copy_gbs, diff);
          std::fflush(stdout);
        };
        {
          kcnn::Impl::Conv2dProblem fwd = pb;
          fwd.activation = kcnn::Activation::ReLU;
          Kokkos::View<T*, Mem> w("w", wn), bias("bias", pb.M), y("y", yn);
          fill(w, 5), fill(bias, 6);
          const kcnn::Impl::DepthwiseOperands<T, T> fop{x.data(),    xs, w.data(), ws,
                                                        bias.data(), 1,  y.data(), ys};
          row("forward_lib", [&] {
            kcnn::Impl::conv2d_depthwise_run(Space(), fop, fwd);
            return true;
          });
        }
        row("walk",
            [&] { return kcnn::Impl::conv2d_backward_weights_depthwise_walk(Space(), op, pb); });
        row("lib", [&] {
          kcnn::Impl::conv2d_backward_weights_depthwise_run(Space(), op, pb);
          return true;
        });
        if (!kcnn::Impl::depthwise_weights_tma_fits(pb, op)) continue;
        auto tma = [&](auto shape, int band, int target) {
          using S = decltype(shape);
          const std::string v = "tma_t" + std::to_string(S::threads) + "_r" +
                                std::to_string(S::rows_per_stage) + "_s" +
                                std::to_string(S::stages) + "_b" + std::to_string(band) + "_g" +
                                std::to_string(target);
          row(v, [&] {
            return nhwc ? kcnn::Impl::launch_depthwise_weights_tma<Layout::NHWC, S>(Space(), op, pb,
                                                                                    band, target)
                        : kcnn::Impl::launch_depthwise_weights_tma<Layout::NCHW, S>(Space(), op, pb,
                                                                                    band, target);
          });
        };
        // (Session 46's first sweep, data/h200-2026-12-01-s46-depthwise-weights-sweep.txt,
        // also ran targets 264-1024 with 6 stages and 64 threads and bands of 7 and 28.)
        const bool sweep = l.name[0] == 'c';  // the issue-22 layers (and 64 ch 112x112)
        if (sweep)
          for (int target : {264, 396, 528, 792}) {
            tma(Sh<128, 1, 2, 4>{}, 14, target);
            tma(Sh<128, 1, 4, 4>{}, 14, target);
          }
        // The store kernel alone, on as many chunks as the launch at 528 and 1024 teams.
        if (sweep)
          for (int target : {528, 1024}) {
            const int cols = nhwc ? 16 : 248;
            const std::int64_t col_tiles = (pb.Q + cols - 1) / cols;
            const std::int64_t bands = (pb.P + 13) / 14;
            const std::int64_t tile = (pb.Q + col_tiles - 1) / col_tiles;
            const std::int64_t planes = nhwc ? 32 : 128 / ((tile + 3) / 4);
            const std::int64_t per_image = bands * col_tiles * ((pb.M + planes - 1) / planes);
            const std::int64_t splits =
                std::min<std::int64_t>(pb.N, (target + per_image - 1) / per_image);
            kcnn::Impl::DepthwiseWeightsPlan plan;
            plan.taps = 9, plan.slots = 10, plan.chunks = splits * bands * col_tiles;
            Kokkos::View<float*, Mem> partial("partial", plan.chunks * pb.M * 10);
            fill(partial, 7);
            row("store_chunks" + std::to_string(plan.chunks), [&] {
              kcnn::Impl::depthwise_weights_store(Space(), partial.data(), op, pb, plan, true);
              return true;
            });
            using Store = kcnn::Impl::DepthwiseWeightsTmaStore;
            const Store store{partial.data(), op, pb.M, plan.chunks, 10};
            row("raw_store_chunks" + std::to_string(plan.chunks), [&] {
              kcnn::Impl::launch_grid_constant_teams<Store::threads, 1, 2064>(
                  Space(), "store", int((pb.M * 10 + 31) / 32), 2064, store, Store::Constants{});
              return true;
            });
          }
      }
  }
  Kokkos::finalize();
}
