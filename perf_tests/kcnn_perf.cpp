// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kcnn_perf: Google Benchmark timings of kcnn's convolution algorithms beside a vendor
// baseline (cuDNN on CUDA builds, oneDNN on host builds) in the same run.
//
//   kcnn_perf [--batch B] [--shape N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc]]...
//             [--reps N] [--target-seconds T] [--max-seconds T]
//             [--algo-cache FILE] [--tune] [--save-algo-cache FILE]
//             [--workspace-mib MiB] [--scalar float|double|half|bfloat16]
//             [--math Strict|TF32|TF32x3] [--timing host|device]
//             [Google Benchmark flags, e.g. --benchmark_filter=lenet
//              --benchmark_out=f.json --benchmark_out_format=json]
//
// Suites (suites.hpp): LeNet-5's C1 and C3 (batch 10,000 on device builds, 1,000 on
// host builds; --batch overrides) at stride 1 and 2, ResNet/VGG-like 3x3 layers, 1x1
// layers, AlexNet's conv1, odd shapes; all in NCHW and NHWC; plus every --shape.
// Benchmarks are named conv2d/<suite>/<shape>/<layout>/<implementation>; per shape the
// baselines run first, then every kcnn algorithm (kcnn_algorithms()), then Auto.
//
// Timing: one untimed warm-up run, then --reps runs (default: as many as fit in
// --target-seconds, 3 to 100), each ending in a fence; the benchmark's time is their
// median. --timing host (default): each run's host wall time, launch to fence returned;
// --timing device (CUDA builds): the time between CUDA events recorded on Kokkos' stream
// before and after the run's launches, as PyTorch's anchors time (the device's time, no
// fence round trip; the host's launch work counts only where the device waits for it). Inputs are
// random in [-1, 1]. Counters: GFLOP/s, GB/s (x, w, bias and y each moved once), frac_peak_flops
// and frac_peak_bw (of the ceilings measured at start-up: KokkosBlas::gemm sgemm and a
// device-to-device deep_copy), vs_baseline (the baseline's median time on the same shape in this
// run / this time: > 1 means faster than the baseline), reps, spread ((max - min) / median).
//
// Auto is the heuristic alone unless: --algo-cache FILE loads a kcnn::save_algo_cache
// file first, or --tune makes each Auto benchmark call kcnn::find_best_algo on its
// problem first (untimed; it times every algorithm, the big ones included), so that Auto
// runs the tuned winner; --save-algo-cache FILE writes the cache at the end.
// --max-seconds: see the skip rule printed at start-up (default 2 s on device builds,
// 0.5 s on host builds).
//
// --workspace-mib sets kcnn::set_workspace_limit (Im2colGemm's scratch budget).
// --scalar double runs the convolution suites (and --shape) with double tensors: kcnn's
// algorithms and Auto only (no baseline, pooling, stack or im2col benchmarks), GFLOP/s
// against the dgemm ceiling, GB/s with 8-byte elements. --scalar half | bfloat16: the
// convolution suites in that type beside cuDNN in the same type and layout (float
// sums), GFLOP/s against cublasGemmEx's 16-bit rate, GB/s with 2-byte elements, and the
// LeNet stack in that type (lenet_stack_<type>/...) beside the float stack
// (lenet_stack/...) in the same run; no pooling or im2col rows. Default float.
// im2col/lenet/c3/<layout> times kcnn::im2col alone on LeNet C3's whole batch (GB/s = x
// read + the unrolled matrix written; frac_peak_bw against the copy ceiling).
//
// conv2d_backward_data/<suite>/<name>/<layout>/kcnn times kcnn::conv2d_backward_data on
// every suite shape (dx from a random dy; GFLOP/s and GB/s as the forward's), and
// conv2d_backward_weights/... kcnn::conv2d_backward_weights (dw and dbias), each beside
// oneDNN's counterpart in the layout and in its own formats (host builds, float;
// vs_baseline against oneDNN in the layout).
//
// Pooling (issue 6): pool2d/lenet/<s2|s4>/<layout>/<Max> times pool2d_forward alone on
// the seed network's subsampling layers (B,4,80,80 2x2 max; B,16,34,34 4x4 max; GB/s =
// bytes read + written, frac_peak_bw against the copy ceiling), and
// lenet_stack/<fused|unfused>/<layout>/<algo> the seed network's convolution stack
// (C1 -> ReLU -> 2x2 max -> C3 -> ReLU -> 4x4 max, with biases): "fused" is two
// conv2d_forward calls with params.pool, "unfused" the four calls conv, pool, conv, pool
// with the unpooled tensors in memory; lenet_fused/<c1_max2|c3_max4>/<layout>/<algo> one
// layer of it with its pooling fused (one call). Host builds with oneDNN add
// lenet_stack/<oneDNN|oneDNN_blocked>/<layout>: the same stack as oneDNN's six primitives
// (conv with bias, ReLU, pool, conv, ReLU, pool), in the layout or in its own formats.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "peaks.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace kcnn_perf {
namespace {

using Space = Kokkos::DefaultExecutionSpace;
constexpr bool kDeviceBuild = !std::is_same_v<Space::memory_space, Kokkos::HostSpace>;

/// Every kcnn algorithm kcnn_perf measures: all that this build implements (a new
/// algorithm joins by its line in the registry, impl/conv2d/registry.hpp), then Auto.
std::vector<kcnn::ConvAlgo> kcnn_algorithms() {
  auto algos = kcnn::implemented_conv_algos();
  algos.push_back(kcnn::ConvAlgo::Auto);
  return algos;
}

struct Options {
  int lenet_batch = kDeviceBuild ? 10000 : 1000;
  int reps = 0;  ///< 0: adaptive
  double target_seconds = 0.5;
  /// A kcnn algorithm is skipped on a shape whose estimated run time exceeds this.
  double max_seconds = kDeviceBuild ? 2.0 : 0.5;
  std::vector<Shape> custom;
  std::string algo_cache;       ///< kcnn::load_algo_cache(this) first: Auto uses tuned choices
  bool tune = false;            ///< Auto benchmarks call kcnn::find_best_algo first (untimed)
  std::string save_algo_cache;  ///< kcnn::save_algo_cache(this) at the end
  ScalarKind scalar = ScalarKind::Float;         ///< --scalar: the convolutions' element type
  kcnn::MathMode math = kcnn::MathMode::Strict;  ///< --math: Conv2dParams::math of kcnn's rows
  bool device_timing = false;                    ///< --timing device (CUDA builds)
};

/// What the benchmarks share: options, ceilings, calibrated rates and baseline times.
struct Run {
  Options opt;
  Peaks peaks;
  std::map<kcnn::ConvAlgo, double> calibrated_gflops;
  std::map<std::string, double> baseline_seconds;  ///< by Shape::key()
};
Run* g_run = nullptr;

/// The median time of `launch` (which enqueues its work on Space()) by this run's rule
/// (--timing): host wall time to a returned fence, or the time between CUDA events
/// recorded on Kokkos' stream around the launches.
template <class F>
Timing time_runs(F&& launch) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Space, Kokkos::Cuda>) {
    if (g_run->opt.device_timing) {
      struct Events {
        cudaEvent_t start = nullptr, stop = nullptr;
        Events() {
          if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
            throw std::runtime_error("cudaEventCreate failed");
        }
        ~Events() {
          cudaEventDestroy(start);
          cudaEventDestroy(stop);
        }
      } events;
      const cudaStream_t stream = Space().cuda_stream();
      return time_median_measured(
          [&] {
            float ms = 0;
            if (cudaEventRecord(events.start, stream) != cudaSuccess)
              throw std::runtime_error("cudaEventRecord failed");
            launch();
            if (cudaEventRecord(events.stop, stream) != cudaSuccess ||
                cudaEventSynchronize(events.stop) != cudaSuccess ||
                cudaEventElapsedTime(&ms, events.start, events.stop) != cudaSuccess)
              throw std::runtime_error("timing with CUDA events failed");
            return 1e-3 * ms;
          },
          g_run->opt.reps, g_run->opt.target_seconds);
    }
  }
#endif
  return time_median(
      [&] {
        launch();
        Space().fence();
      },
      g_run->opt.reps, g_run->opt.target_seconds);
}

/// A shape's data on the default execution space, and kcnn's convolution of it.
template <class Scalar>
struct KcnnProblem : ShapeData<Space, Scalar> {
  using ShapeData<Space, Scalar>::ShapeData;
  using ShapeData<Space, Scalar>::x;
  using ShapeData<Space, Scalar>::w;
  using ShapeData<Space, Scalar>::bias;
  using ShapeData<Space, Scalar>::y;
  void forward(kcnn::ConvAlgo algo, const Shape& sh) const {
    auto params = sh.params();
    params.algo = algo;
    params.math = g_run->opt.math;
    kcnn::conv2d_forward(Space(), x, w, bias, y, params);
  }
};

/// The problem each algorithm's rate is measured on at start-up, for the skip rule.
Shape calibration_shape() {
  return {"calibration", "c16_32", kDeviceBuild ? 256 : 2, 16, 32, 32, 16, 3, 3, 1, 1};
}

template <class Scalar>
void calibrate(Run& run) {
  const Shape sh = calibration_shape();
  const KcnnProblem<Scalar> p(sh);
  for (kcnn::ConvAlgo algo : kcnn::implemented_conv_algos()) {
    try {
      const Timing t = time_median(
          [&] {
            p.forward(algo, sh);
            Space().fence();
          },
          3, 0);
      run.calibrated_gflops[algo] = sh.flops() / t.median * 1e-9;
    } catch (const kcnn::Error&) {
      // Not applicable to the calibration problem: never skipped by the estimate.
    }
  }
}

void skip(benchmark::State& state, const std::string& why) {
  state.SkipWithError(why.c_str());
}

/// `op`: "" for the forward convolution, "backward_data " for its backward data rows
/// (their baseline times are kept apart: Run::baseline_seconds is keyed by op + key).
void report(benchmark::State& state, const Shape& sh, const Timing& t,
            std::size_t element_bytes = sizeof(float), const std::string& op = "") {
  for (auto _ : state)
    state.SetIterationTime(t.median);
  const double gflops = sh.flops() / t.median * 1e-9,
               gbs = sh.bytes(element_bytes) / t.median * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  state.counters["GB/s"] = gbs;
  if (g_run->peaks.gflops > 0) state.counters["frac_peak_flops"] = gflops / g_run->peaks.gflops;
  if (g_run->peaks.gbs > 0) state.counters["frac_peak_bw"] = gbs / g_run->peaks.gbs;
  const auto base = g_run->baseline_seconds.find(op + sh.key());
  if (base != g_run->baseline_seconds.end())
    state.counters["vs_baseline"] = base->second / t.median;
  state.counters["reps"] = t.reps;
  state.counters["spread"] = (t.max - t.min) / t.median;
}

template <class Scalar>
void bench_kcnn(benchmark::State& state, const Shape& sh, kcnn::ConvAlgo algo) {
  const KcnnProblem<Scalar> p(sh);
  auto params = sh.params();
  params.algo = algo;
  params.math = g_run->opt.math;
  kcnn::ConvAlgo runs = algo;
  try {
    if (algo == kcnn::ConvAlgo::Auto && g_run->opt.tune)
      kcnn::find_best_algo(Space(), p.x, p.w, p.bias, p.y, params, {3, true});
    runs = kcnn::resolve_conv2d_algo(Space(), p.x, p.w, p.bias, p.y, params);
  } catch (const kcnn::Error& e) {
    return skip(state, e.what());
  }
  const auto rate = g_run->calibrated_gflops.find(runs);
  if (rate != g_run->calibrated_gflops.end()) {
    const double estimate = sh.flops() / (rate->second * 1e9);
    if (estimate > g_run->opt.max_seconds) {
      std::ostringstream why;
      why.precision(3);
      why << "skipped: " << kcnn::to_string(runs) << " would take ~" << estimate
          << " s per run (> --max-seconds " << g_run->opt.max_seconds << ")";
      return skip(state, why.str());
    }
  }
  Timing t;
  try {
    t = time_runs([&] { p.forward(algo, sh); });
  } catch (const kcnn::Error& e) {
    return skip(state, e.what());
  }
  report(state, sh, t, sizeof(Scalar));
  state.SetLabel(sh.key() + (algo == kcnn::ConvAlgo::Auto
                                 ? std::string(" auto=") + kcnn::to_string(runs)
                                 : std::string()));
}

void bench_baseline(benchmark::State& state, const Shape& sh, const Baseline& baseline,
                    const std::string& op = "") {
  std::string label;
  Timing t;
  try {
    const std::unique_ptr<BaselineRun> run = baseline.prepare(sh);
    t = time_runs([&] { run->run(); });
    label = run->describe();
  } catch (const std::exception& e) {
    return skip(state, baseline.name + ": " + e.what());
  }
  if (baseline.is_reference) g_run->baseline_seconds[op + sh.key()] = t.median;
  report(state, sh, t, sizeof(float), op);
  state.SetLabel(sh.key() + " " + label);
}

/// The backward convolutions kcnn_perf times.
enum class BackwardOp { Data, Weights };

const char* backward_name(BackwardOp op) {
  return op == BackwardOp::Data ? "backward_data" : "backward_weights";
}

/// kcnn::conv2d_backward_data (dx, x's shape, from dy and w) or conv2d_backward_weights
/// (dw and dbias from x and dy) on the shape, dy random (y's shape); FLOPs and bytes
/// counted as the forward's.
template <class Scalar>
void bench_backward(benchmark::State& state, const Shape& sh, BackwardOp op) {
  const ShapeData<Space, Scalar> d(sh);
  Kokkos::Random_XorShift64_Pool<Space> pool(19);
  fill_uniform(d.y, pool);
  Space().fence();
  kcnn::Conv2dParams params = sh.params();
  params.activation = kcnn::Activation::Identity;  // the gradient of the linear convolution
  Timing t;
  try {
    t = time_runs([&] {
      if (op == BackwardOp::Data) {
        kcnn::conv2d_backward_data(Space(), d.y, d.w, d.x, params);
      } else {
        kcnn::conv2d_backward_weights(Space(), d.x, d.y, d.w, d.bias, params);
      }
    });
  } catch (const kcnn::Error& e) {
    return skip(state, e.what());
  }
  report(state, sh, t, sizeof(Scalar), std::string(backward_name(op)) + " ");
  state.SetLabel(sh.key());
}

/// Median time of `once` (its launches) by this run's rule (time_runs), or a skip.
template <class F>
bool time_or_skip(benchmark::State& state, F&& once, Timing& t) {
  try {
    t = time_runs(once);
  } catch (const kcnn::Error& e) {
    skip(state, e.what());
    return false;
  }
  for (auto _ : state)
    state.SetIterationTime(t.median);
  state.counters["reps"] = t.reps;
  state.counters["spread"] = (t.max - t.min) / t.median;
  return true;
}

template <class Scalar>
using Tensor4Of = Kokkos::View<Scalar****, Kokkos::LayoutRight, Space::memory_space>;
template <class Scalar>
using Tensor1Of = Kokkos::View<Scalar*, Space::memory_space>;
using Tensor4 = Tensor4Of<float>;
using Tensor1 = Tensor1Of<float>;

/// A tensor of logical extents (n, c, h, w) stored in `layout`; random in [-1, 1] if
/// `seed` is not 0.
template <class Scalar = float>
Tensor4Of<Scalar> tensor(const std::string& label, kcnn::Layout layout, int n, int c, int h, int w,
                         unsigned seed = 0) {
  using T4 = Tensor4Of<Scalar>;
  T4 t = layout == kcnn::Layout::NHWC ? T4(label, n, h, w, c) : T4(label, n, c, h, w);
  if (seed != 0) {
    Kokkos::Random_XorShift64_Pool<Space> pool(seed);
    fill_uniform(t, pool);
  }
  return t;
}

/// One pooling layer: (N, C, H, W) pooled by a square window.
struct PoolShape {
  std::string name;
  int N, C, H, W, window, stride;
  kcnn::PoolMode mode = kcnn::PoolMode::Max;
  kcnn::Layout layout = kcnn::Layout::NCHW;

  int out(int in) const { return (in - window) / stride + 1; }
  std::string key() const {
    std::ostringstream s;
    s << N << 'x' << C << 'x' << H << 'x' << W << ' ' << kcnn::to_string(mode) << ' ' << window
      << 'x' << window << " s" << stride << ' ' << kcnn::to_string(layout);
    return s.str();
  }
};

void bench_pool(benchmark::State& state, const PoolShape& sh) {
  const Tensor4 x = tensor("x", sh.layout, sh.N, sh.C, sh.H, sh.W, 11);
  const Tensor4 y = tensor("y", sh.layout, sh.N, sh.C, sh.out(sh.H), sh.out(sh.W));
  kcnn::Pool2dParams params;
  params.mode = sh.mode;
  params.window_h = params.window_w = sh.window;
  params.stride_h = params.stride_w = sh.stride;
  params.layout = sh.layout;
  Timing t;
  if (!time_or_skip(
          state, [&] { kcnn::pool2d_forward(Space(), x, y, params); }, t))
    return;
  const double gbs = sizeof(float) * (double(x.span()) + double(y.span())) / t.median * 1e-9;
  state.counters["GB/s"] = gbs;
  if (g_run->peaks.gbs > 0) state.counters["frac_peak_bw"] = gbs / g_run->peaks.gbs;
  state.SetLabel(sh.key());
}

/// im2col alone on a shape's whole batch (the public kcnn::im2col). GB/s counts x read
/// once plus the unrolled matrix written; frac_peak_bw compares it with the device copy.
void bench_im2col(benchmark::State& state, const Shape& sh) {
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space>;
  const bool nhwc = sh.layout == kcnn::Layout::NHWC;
  const std::size_t K = std::size_t(sh.C) * sh.R * sh.S;
  const std::size_t pixels = std::size_t(sh.N) * sh.out(sh.H, sh.R) * sh.out(sh.W, sh.S);
  const Tensor4 x = tensor("x", sh.layout, sh.N, sh.C, sh.H, sh.W, 7);
  const Matrix cols(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cols"), nhwc ? pixels : K,
                    nhwc ? K : pixels);
  const kcnn::Conv2dParams params = sh.params();
  Timing t;
  if (!time_or_skip(
          state, [&] { kcnn::im2col(Space(), x, sh.R, sh.S, params, cols); }, t))
    return;
  const double gbs = sizeof(float) * (double(x.span()) + double(cols.span())) / t.median * 1e-9;
  state.counters["GB/s"] = gbs;
  if (g_run->peaks.gbs > 0) state.counters["frac_peak_bw"] = gbs / g_run->peaks.gbs;
  state.SetLabel(sh.key() + " cols " + std::to_string(cols.extent(0)) + "x" +
                 std::to_string(cols.extent(1)));
}

/// The seed network's convolution stack at batch B: C1 (1 -> 4 maps, 7x7, 86x86 -> 80x80)
/// -> ReLU -> 2x2 max pool (40x40) -> C3 (4 -> 16 maps, 7x7, 34x34) -> ReLU -> 4x4 max
/// pool (8x8), with biases; tensors of Scalar.
template <class Scalar = float>
void bench_lenet_stack(benchmark::State& state, int B, kcnn::Layout layout, bool fused,
                       kcnn::ConvAlgo algo) {
  using Tensor4 = Tensor4Of<Scalar>;
  using Tensor1 = Tensor1Of<Scalar>;
  const double flops = 2.0 * B * (4.0 * 80 * 80 * 1 * 7 * 7 + 16.0 * 34 * 34 * 4 * 7 * 7);
  const auto rate = g_run->calibrated_gflops.find(algo);
  if (rate != g_run->calibrated_gflops.end() &&
      flops / (rate->second * 1e9) > g_run->opt.max_seconds)
    return skip(state, std::string("skipped: ") + kcnn::to_string(algo) +
                           " would exceed --max-seconds on this stack");
  const Tensor4 x = tensor<Scalar>("x", layout, B, 1, 86, 86, 1);
  const Tensor4 w1 = tensor<Scalar>("w1", layout, 4, 1, 7, 7, 2),
                w3 = tensor<Scalar>("w3", layout, 16, 4, 7, 7, 3);
  Tensor1 b1("b1", 4), b3("b3", 16);
  Kokkos::Random_XorShift64_Pool<Space> rng(4);
  fill_uniform(b1, rng);
  fill_uniform(b3, rng);
  const Tensor4 s2 = tensor<Scalar>("s2", layout, B, 4, 40, 40),
                s4 = tensor<Scalar>("s4", layout, B, 16, 8, 8);
  Tensor4 c1, c3;  // the unpooled outputs: the unfused sequence only
  if (!fused) {
    c1 = tensor<Scalar>("c1", layout, B, 4, 80, 80);
    c3 = tensor<Scalar>("c3", layout, B, 16, 34, 34);
  }
  kcnn::Conv2dParams conv;
  conv.layout = layout;
  conv.activation = kcnn::Activation::ReLU;
  conv.algo = algo;
  kcnn::Pool2dParams pool2, pool4;  // Max, 2x2 stride 2 by default
  pool2.layout = pool4.layout = layout;
  pool4.window_h = pool4.window_w = pool4.stride_h = pool4.stride_w = 4;
  kcnn::Conv2dParams conv_pool2 = conv, conv_pool4 = conv;
  conv_pool2.pool = pool2;
  conv_pool4.pool = pool4;
  Timing t;
  const bool ok = time_or_skip(
      state,
      [&] {
        if (fused) {
          kcnn::conv2d_forward(Space(), x, w1, b1, s2, conv_pool2);
          kcnn::conv2d_forward(Space(), s2, w3, b3, s4, conv_pool4);
        } else {
          kcnn::conv2d_forward(Space(), x, w1, b1, c1, conv);
          kcnn::pool2d_forward(Space(), c1, s2, pool2);
          kcnn::conv2d_forward(Space(), s2, w3, b3, c3, conv);
          kcnn::pool2d_forward(Space(), c3, s4, pool4);
        }
      },
      t);
  if (!ok) return;
  const double gflops = flops / t.median * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  if (g_run->peaks.gflops > 0) state.counters["frac_peak_flops"] = gflops / g_run->peaks.gflops;
  state.SetLabel("B=" + std::to_string(B) + " C1 7x7 ReLU max2 -> C3 7x7 ReLU max4 " +
                 kcnn::to_string(layout));
}

#if defined(KCNN_PERF_HAVE_ONEDNN)
/// The LeNet stack (bench_lenet_stack) as oneDNN's conv, eltwise, pool, conv, eltwise,
/// pool in the same run: lenet_stack/<oneDNN|oneDNN_blocked>/<layout>.
void bench_onednn_lenet_stack(benchmark::State& state, int B, kcnn::Layout layout, bool blocked) {
  const double flops = 2.0 * B * (4.0 * 80 * 80 * 1 * 7 * 7 + 16.0 * 34 * 34 * 4 * 7 * 7);
  std::unique_ptr<BaselineRun> run;
  try {
    run = onednn_lenet_stack(B, layout == kcnn::Layout::NHWC, blocked);
  } catch (const std::exception& e) {
    return skip(state, std::string("oneDNN: ") + e.what());
  }
  Timing t;
  if (!time_or_skip(
          state, [&] { run->run(); }, t))
    return;
  const double gflops = flops / t.median * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  if (g_run->peaks.gflops > 0) state.counters["frac_peak_flops"] = gflops / g_run->peaks.gflops;
  state.SetLabel("B=" + std::to_string(B) + " " + kcnn::to_string(layout) + " " + run->describe());
}
#endif

/// One layer of the stack with its pooling fused (one conv2d_forward call): C1 + ReLU +
/// 2x2 max (c3 = false) or C3 + ReLU + 4x4 max (c3 = true), biases included. GFLOP/s
/// counts the convolution's multiply-adds over the outputs the pooling reads.
void bench_lenet_fused_layer(benchmark::State& state, int B, kcnn::Layout layout, bool c3,
                             kcnn::ConvAlgo algo) {
  const int C = c3 ? 4 : 1, H = c3 ? 40 : 86, M = c3 ? 16 : 4, P = c3 ? 34 : 80;
  const int window = c3 ? 4 : 2, pooled = P / window;
  const double flops = 2.0 * B * M * double(pooled * window) * double(pooled * window) * C * 49;
  const auto rate = g_run->calibrated_gflops.find(algo);
  if (rate != g_run->calibrated_gflops.end() &&
      flops / (rate->second * 1e9) > g_run->opt.max_seconds)
    return skip(state, std::string("skipped: ") + kcnn::to_string(algo) +
                           " would exceed --max-seconds on this layer");
  const Tensor4 x = tensor("x", layout, B, C, H, H, 1);
  const Tensor4 w = tensor("w", layout, M, C, 7, 7, 2);
  Tensor1 b("b", M);
  Kokkos::Random_XorShift64_Pool<Space> rng(4);
  Kokkos::fill_random(b, rng, -1.0f, 1.0f);
  const Tensor4 y = tensor("y", layout, B, M, pooled, pooled);
  kcnn::Conv2dParams params;
  params.layout = layout;
  params.activation = kcnn::Activation::ReLU;
  params.algo = algo;
  kcnn::Pool2dParams pool;
  pool.layout = layout;
  pool.window_h = pool.window_w = pool.stride_h = pool.stride_w = window;
  params.pool = pool;
  Timing t;
  if (!time_or_skip(
          state, [&] { kcnn::conv2d_forward(Space(), x, w, b, y, params); }, t))
    return;
  const double gflops = flops / t.median * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  if (g_run->peaks.gflops > 0) state.counters["frac_peak_flops"] = gflops / g_run->peaks.gflops;
  state.SetLabel("B=" + std::to_string(B) + (c3 ? " C3 7x7 ReLU max4 " : " C1 7x7 ReLU max2 ") +
                 kcnn::to_string(layout));
}

void register_one(const std::string& name, std::function<void(benchmark::State&)> fn);

/// The LeNet stack fused and unfused in `layout` for every implemented algorithm, then
/// Auto, tensors of Scalar: lenet_stack/... for float, lenet_stack_<type>/... otherwise.
template <class Scalar = float>
void register_stack_benchmarks(int batch, kcnn::Layout layout) {
  auto stack_algos = kcnn::implemented_conv_algos();
  stack_algos.push_back(kcnn::ConvAlgo::Auto);
  const std::string prefix =
      std::is_same_v<Scalar, float>
          ? std::string("lenet_stack/")
          : std::string("lenet_stack_") + kcnn::Impl::ElementTraits<Scalar>::name + "/";
  for (kcnn::ConvAlgo algo : stack_algos)
    for (bool fused : {true, false})
      register_one(prefix + (fused ? "fused/" : "unfused/") + kcnn::to_string(layout) + "/" +
                       kcnn::to_string(algo),
                   [batch, layout, fused, algo](benchmark::State& st) {
                     bench_lenet_stack<Scalar>(st, batch, layout, fused, algo);
                   });
}

/// Pooling alone on the LeNet subsampling layers, and the LeNet stack fused and unfused
/// for every implemented algorithm, in both layouts.
void register_pool_benchmarks(int batch) {
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    for (const PoolShape& sh :
         {PoolShape{"s2", batch, 4, 80, 80, 2, 2, kcnn::PoolMode::Max, layout},
          PoolShape{"s4", batch, 16, 34, 34, 4, 4, kcnn::PoolMode::Max, layout}})
      register_one("pool2d/lenet/" + sh.name + "/" + kcnn::to_string(layout) + "/" +
                       kcnn::to_string(sh.mode),
                   [sh](benchmark::State& st) { bench_pool(st, sh); });
    // Every algorithm for both layers, then Auto (each layer its own pick).
    auto stack_algos = kcnn::implemented_conv_algos();
    stack_algos.push_back(kcnn::ConvAlgo::Auto);
    for (kcnn::ConvAlgo algo : stack_algos)
      for (bool c3 : {false, true})
        register_one(std::string("lenet_fused/") + (c3 ? "c3_max4/" : "c1_max2/") +
                         kcnn::to_string(layout) + "/" + kcnn::to_string(algo),
                     [batch, layout, c3, algo](benchmark::State& st) {
                       bench_lenet_fused_layer(st, batch, layout, c3, algo);
                     });
    register_stack_benchmarks(batch, layout);
#if defined(KCNN_PERF_HAVE_ONEDNN)
    for (bool blocked : {false, true})
      register_one(std::string("lenet_stack/") + (blocked ? "oneDNN_blocked/" : "oneDNN/") +
                       kcnn::to_string(layout),
                   [batch, layout, blocked](benchmark::State& st) {
                     bench_onednn_lenet_stack(st, batch, layout, blocked);
                   });
#endif
  }
}

void register_one(const std::string& name, std::function<void(benchmark::State&)> fn) {
  benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& st) { fn(st); })
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

void register_shape(const Shape& sh, const std::vector<Baseline>& baselines) {
  for (const Baseline& b : baselines)
    register_one(sh.benchmark_name(b.name),
                 [sh, b](benchmark::State& st) { bench_baseline(st, sh, b); });
  for (kcnn::ConvAlgo algo : kcnn_algorithms())
    register_one(sh.benchmark_name(kcnn::to_string(algo)), [sh, algo](benchmark::State& st) {
      switch (g_run->opt.scalar) {
        case ScalarKind::Double:
          return bench_kcnn<double>(st, sh, algo);
        case ScalarKind::Half:
          return bench_kcnn<Kokkos::Experimental::half_t>(st, sh, algo);
        case ScalarKind::BFloat16:
          return bench_kcnn<kcnn::bfloat16>(st, sh, algo);
        default:
          return bench_kcnn<float>(st, sh, algo);
      }
    });
}

/// conv2d_<backward_data | backward_weights>/<suite>/<name>/<layout>/<kcnn | baseline>.
void register_backward(const Shape& sh, BackwardOp op, const std::vector<Baseline>& baselines) {
  const std::string name = backward_name(op);
  const std::string prefix =
      "conv2d_" + name + "/" + sh.suite + "/" + sh.name + "/" + kcnn::to_string(sh.layout) + "/";
  for (const Baseline& b : baselines)
    register_one(prefix + b.name,
                 [sh, b, name](benchmark::State& st) { bench_baseline(st, sh, b, name + " "); });
  register_one(prefix + "kcnn", [sh, op](benchmark::State& st) {
    switch (g_run->opt.scalar) {
      case ScalarKind::Double:
        return bench_backward<double>(st, sh, op);
      case ScalarKind::Half:
        return bench_backward<Kokkos::Experimental::half_t>(st, sh, op);
      case ScalarKind::BFloat16:
        return bench_backward<kcnn::bfloat16>(st, sh, op);
      default:
        return bench_backward<float>(st, sh, op);
    }
  });
}

/// Reads our own flags; returns the rest for Google Benchmark. Throws on bad values.
std::vector<char*> parse_args(int argc, char** argv, Options& opt) {
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto is = [&](const char* flag) {
      return a == flag || a.rfind(std::string(flag) + "=", 0) == 0;
    };
    auto value = [&]() -> std::string {
      const auto eq = a.find('=');
      if (eq != std::string::npos) return a.substr(eq + 1);
      if (i + 1 < argc) return argv[++i];
      throw std::invalid_argument(a + " wants a value");
    };
    auto number = [&](double lo) {
      const std::string v = value();
      std::size_t used = 0;
      const double d = std::stod(v, &used);
      if (used != v.size() || d < lo) throw std::invalid_argument("bad value '" + v + "' for " + a);
      return d;
    };
    if (is("--shape")) {
      opt.custom.push_back(parse_shape(value()));
    } else if (is("--batch")) {
      opt.lenet_batch = static_cast<int>(number(1));
    } else if (is("--reps")) {
      opt.reps = static_cast<int>(number(1));
    } else if (is("--target-seconds")) {
      opt.target_seconds = number(0);
    } else if (is("--timing")) {
      const std::string v = value();
      if (v != "host" && v != "device")
        throw std::invalid_argument("--timing takes host or device");
      if (v == "device" && !kDeviceBuild)
        throw std::invalid_argument("--timing device needs a CUDA build");
      opt.device_timing = v == "device";
    } else if (is("--max-seconds")) {
      opt.max_seconds = number(0);
    } else if (is("--algo-cache")) {
      opt.algo_cache = value();
    } else if (a == "--tune") {
      opt.tune = true;
    } else if (is("--save-algo-cache")) {
      opt.save_algo_cache = value();
    } else if (is("--scalar")) {
      const std::string v = value();
      bool known = false;
      for (ScalarKind k :
           {ScalarKind::Float, ScalarKind::Double, ScalarKind::Half, ScalarKind::BFloat16})
        if (v == to_string(k)) opt.scalar = k, known = true;
      if (!known)
        throw std::invalid_argument("--scalar wants float, double, half or bfloat16, got '" + v +
                                    "'");
    } else if (is("--math")) {
      const std::string v = value();
      if (v == "Strict") {
        opt.math = kcnn::MathMode::Strict;
      } else if (v == "TF32") {
        opt.math = kcnn::MathMode::TF32;
      } else if (v == "TF32x3") {
        opt.math = kcnn::MathMode::TF32x3;
      } else {
        throw std::invalid_argument("--math wants Strict, TF32 or TF32x3, got '" + v + "'");
      }
    } else if (is("--workspace-mib")) {
      kcnn::set_workspace_limit(static_cast<std::size_t>(number(1)) << 20);
    } else {
      rest.push_back(argv[i]);
    }
  }
  return rest;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int run_all(int argc, char** argv) {
  Run run;
  std::vector<char*> rest;
  try {
    rest = parse_args(argc, argv, run.opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kcnn_perf: %s\n", e.what());
    return 2;
  }
  const bool double_scalar = run.opt.scalar == ScalarKind::Double;
  const bool scalar_16bit =
      run.opt.scalar == ScalarKind::Half || run.opt.scalar == ScalarKind::BFloat16;
  const GemmKind gemm_kind = double_scalar                            ? GemmKind::Double
                             : run.opt.scalar == ScalarKind::Half     ? GemmKind::Half
                             : run.opt.scalar == ScalarKind::BFloat16 ? GemmKind::BFloat16
                             : run.opt.math != kcnn::MathMode::Strict ? GemmKind::FloatTF32
                                                                      : GemmKind::Float;
  bool listing = false;  // --benchmark_list_tests: no need to measure anything
  for (const char* a : rest)
    listing |= std::string(a) == "--benchmark_list_tests" ||
               std::string(a) == "--benchmark_list_tests=true";
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  g_run = &run;

  if (!run.opt.algo_cache.empty() && !kcnn::load_algo_cache(run.opt.algo_cache))
    std::fprintf(stderr, "kcnn_perf: no algorithm cache loaded from '%s'\n",
                 run.opt.algo_cache.c_str());
  std::string cache_note =
      run.opt.algo_cache.empty()
          ? std::string("none")
          : run.opt.algo_cache + " (" + std::to_string(kcnn::algo_cache_size()) + " entries)";
  cache_note += run.opt.tune                 ? "; --tune: Auto runs find_best_algo's winner"
                : run.opt.algo_cache.empty() ? "; Auto = heuristic"
                                             : "";
  benchmark::AddCustomContext("algo_cache", cache_note);
  if (!listing) {
    run.peaks = measure_peaks(kDeviceBuild, gemm_kind);
    switch (run.opt.scalar) {
      case ScalarKind::Double:
        calibrate<double>(run);
        break;
      case ScalarKind::Half:
        calibrate<Kokkos::Experimental::half_t>(run);
        break;
      case ScalarKind::BFloat16:
        calibrate<kcnn::bfloat16>(run);
        break;
      default:
        calibrate<float>(run);
    }
  }
  // The baselines in the run's type (none beside the fp64 suites).
  const std::vector<Baseline> baselines = available_baselines(run.opt.scalar);
  const char* scalar = to_string(run.opt.scalar);

  // What this run is, for the console and the JSON context.
  std::string libs, calib;
  for (const auto& lib : baseline_libraries())
    libs += (libs.empty() ? "" : ", ") + lib.name + " " + lib.version;
  std::string reference = "none";
  for (const auto& b : baselines)
    if (b.is_reference) reference = b.name + " in the shape's layout";
  for (const auto& [algo, gflops] : run.calibrated_gflops) {
    calib += std::string(calib.empty() ? "" : ", ") + kcnn::to_string(algo) + " " +
             fixed(gflops, 2) + " GFLOP/s";
    benchmark::AddCustomContext(std::string("calibration_gflops_") + kcnn::to_string(algo),
                                fixed(gflops, 3));
  }
  const Shape cal = calibration_shape();
  const std::string skip_rule =
      "a kcnn algorithm is not run on a shape when its FLOPs / (its GFLOP/s on the calibration "
      "problem " +
      cal.key() + ") exceed --max-seconds=" + fixed(run.opt.max_seconds, 2) + " s";
  const std::string timing_rule =
      "median of " +
      (run.opt.reps > 0 ? std::to_string(run.opt.reps)
                        : "as many runs as fit in --target-seconds=" +
                              fixed(run.opt.target_seconds, 2) + " s (3 to 100)") +
      " after one warm-up run, each " +
      (run.opt.device_timing ? "between CUDA events on Kokkos' stream around its launches"
                             : "fenced, host wall time");
  const Peaks& pk = run.peaks;
  benchmark::AddCustomContext("kokkos_execution_space", Space::name());
  benchmark::AddCustomContext("math_mode", kcnn::to_string(run.opt.math));
  benchmark::AddCustomContext("device", pk.device);
  benchmark::AddCustomContext("kcnn_version", KCNN_VERSION_STRING);
  benchmark::AddCustomContext("lenet_batch", std::to_string(run.opt.lenet_batch));
  benchmark::AddCustomContext("workspace_limit_mib", std::to_string(kcnn::workspace_limit() >> 20));
  benchmark::AddCustomContext("peak_gbs", fixed(pk.gbs, 2));
  benchmark::AddCustomContext("peak_gflops", fixed(pk.gflops, 2));
  benchmark::AddCustomContext("peak_copy", "Kokkos::deep_copy, 2 x " + fixed(pk.copy_mib / 2, 0) +
                                               " MiB (bytes read + written)");
  if (pk.fma_threads > 0) {
    benchmark::AddCustomContext("peak_fma_gflops_core", fixed(pk.fma_gflops_core, 2));
    benchmark::AddCustomContext("peak_fma_gflops", fixed(pk.fma_gflops_all, 2));
    benchmark::AddCustomContext("peak_fma", pk.fma + "; one core, and " +
                                                std::to_string(pk.fma_threads) +
                                                " threads at once (peak_fma_gflops)");
  }
  benchmark::AddCustomContext("scalar", scalar);
  const bool tf32_peak = kDeviceBuild && gemm_kind == GemmKind::FloatTF32;
  benchmark::AddCustomContext(
      "peak_gemm", std::string(scalar_16bit ? "cublasGemmEx " : "KokkosBlas::gemm ") +
                       (double_scalar  ? "fp64 "
                        : scalar_16bit ? std::string(scalar) + " with float sums "
                        : tf32_peak    ? "fp32 with cuBLAS TF32 tensor-op math "
                                       : "fp32 ") +
                       std::to_string(pk.gemm_n) + "^3" +
                       (tf32_peak && run.opt.math == kcnn::MathMode::TF32x3
                            ? " (TF32x3 does 3 TF32 products per product: its floor is a third)"
                            : ""));
  benchmark::AddCustomContext("baseline_libraries", libs.empty() ? "none" : libs);
  benchmark::AddCustomContext("vs_baseline_reference", reference);
  std::string baseline_names, algo_names;
  for (const auto& b : baselines)
    baseline_names += (baseline_names.empty() ? "" : ",") + b.name;
  for (kcnn::ConvAlgo a : kcnn_algorithms())
    algo_names += std::string(algo_names.empty() ? "" : ",") + kcnn::to_string(a);
  benchmark::AddCustomContext("baselines", baseline_names);
  benchmark::AddCustomContext("kcnn_algorithms", algo_names);
  benchmark::AddCustomContext("timing_rule", timing_rule);
  benchmark::AddCustomContext("skip_rule", skip_rule);
  if (!listing)
    std::fprintf(stderr,
                 "kcnn_perf: Kokkos %s on %s\n"
                 "kcnn_perf: scalar %s\n"
                 "kcnn_perf: peaks: copy %.1f GB/s (%s), %s %.1f GFLOP/s (%s %d^3)\n"
                 "kcnn_perf: baselines: %s; vs_baseline = time of %s / time\n"
                 "kcnn_perf: timing: %s\n"
                 "kcnn_perf: calibration: %s\n"
                 "kcnn_perf: skip rule: %s\n",
                 Space::name(), pk.device.c_str(), scalar, pk.gbs,
                 ("deep_copy 2 x " + fixed(pk.copy_mib / 2, 0) + " MiB").c_str(),
                 double_scalar  ? "dgemm"
                 : scalar_16bit ? "16-bit gemm"
                                : "sgemm",
                 pk.gflops, scalar_16bit ? "cublasGemmEx" : "KokkosBlas::gemm", pk.gemm_n,
                 libs.empty() ? "none" : libs.c_str(), reference.c_str(), timing_rule.c_str(),
                 calib.c_str(), skip_rule.c_str());
  if (!listing && pk.fma_threads > 0)
    std::fprintf(stderr, "kcnn_perf: FMA peak: %.1f GFLOP/s on one core, %.1f on %d threads (%s)\n",
                 pk.fma_gflops_core, pk.fma_gflops_all, pk.fma_threads, pk.fma.c_str());

  for (const Shape& sh : default_suites(kDeviceBuild, run.opt.lenet_batch))
    register_shape(sh, baselines);
  for (const Shape& sh : run.opt.custom)
    register_shape(sh, baselines);
  const std::vector<Baseline> backward_data_baselines =
      available_backward_data_baselines(run.opt.scalar);
  const std::vector<Baseline> backward_weights_baselines =
      available_backward_weights_baselines(run.opt.scalar);
  for (const Shape& sh : default_suites(kDeviceBuild, run.opt.lenet_batch))
    register_backward(sh, BackwardOp::Data, backward_data_baselines);
  for (const Shape& sh : default_suites(kDeviceBuild, run.opt.lenet_batch))
    register_backward(sh, BackwardOp::Weights, backward_weights_baselines);
  if (run.opt.scalar == ScalarKind::Float) register_pool_benchmarks(run.opt.lenet_batch);
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    if (!scalar_16bit) break;
    register_stack_benchmarks(run.opt.lenet_batch, layout);  // float, for the ratio
    if (run.opt.scalar == ScalarKind::Half)
      register_stack_benchmarks<Kokkos::Experimental::half_t>(run.opt.lenet_batch, layout);
    else
      register_stack_benchmarks<kcnn::bfloat16>(run.opt.lenet_batch, layout);
  }
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    if (run.opt.scalar != ScalarKind::Float) break;
    Shape c3{"im2col", "c3", run.opt.lenet_batch, 4, 40, 40, 16, 7, 7};
    c3.layout = layout;
    register_one("im2col/lenet/c3/" + std::string(kcnn::to_string(layout)),
                 [c3](benchmark::State& st) { bench_im2col(st, c3); });
  }

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!run.opt.save_algo_cache.empty() && kcnn::save_algo_cache(run.opt.save_algo_cache))
    std::fprintf(stderr, "kcnn_perf: %zu algorithm choices saved to '%s'\n",
                 kcnn::algo_cache_size(), run.opt.save_algo_cache.c_str());
  shutdown_baselines();
  g_run = nullptr;
  return 0;
}

}  // namespace
}  // namespace kcnn_perf

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  return kcnn_perf::run_all(argc, argv);
}
