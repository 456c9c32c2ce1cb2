// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kcnn_perf: Google Benchmark timings of kcnn's convolution algorithms and pooling.
//
//   kcnn_perf [--batch B] [--shape N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc]]...
//             [Google Benchmark flags, e.g. --benchmark_filter=lenet --benchmark_out=f.json]
//
// Suites: the seed project's LeNet-5 layers (C1: B,1,86,86 -> 4, 7x7; C3: B,4,40,40 -> 16,
// 7x7) at batch 10,000 on device builds and 1,000 on host builds (--batch overrides), plus
// every --shape given; pooling alone on the LeNet subsampling layers (B,4,80,80 2x2 max;
// B,16,34,34 4x4 max; GB/s = bytes read + written), and the LeNet convolution stack
// (C1 -> ReLU -> 2x2 max -> C3 -> ReLU -> 4x4 max, with biases) as conv2d_forward with
// params.pool ("fused") and as the sequence conv, pool, conv, pool of our own calls
// ("unfused"); and a device copy of the 2x2 pooling input's size, the bandwidth ceiling.
// Each run fences the execution space; the time is wall clock around launch + fence,
// inputs are random (never zeros), one warm-up run is excluded.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
constexpr bool kDeviceBuild = !std::is_same_v<Space::memory_space, Kokkos::HostSpace>;

struct Shape {
  std::string name;
  int N, C, H, W, M, R, S, stride = 1, pad = 0, dilation = 1;
  kcnn::Layout layout = kcnn::Layout::NCHW;

  int out(int in, int k) const { return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  std::string describe() const {
    std::ostringstream s;
    s << N << "x" << C << "x" << H << "x" << W << " M=" << M << " " << R << "x" << S << " s"
      << stride << " p" << pad << " d" << dilation << " " << kcnn::to_string(layout);
    return s.str();
  }
};

/// Parses N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc|nchw].
Shape parse_shape(const std::string& text) {
  Shape s{"custom", 0, 0, 0, 0, 0, 0, 0};
  std::vector<std::string> fields;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, ',');)
    fields.push_back(f);
  if (fields.size() < 9 || fields.size() > 11)
    throw std::invalid_argument("--shape wants N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc], got '" +
                                text + "'");
  int* ints[] = {&s.N, &s.C, &s.H, &s.W, &s.M, &s.R, &s.S, &s.stride, &s.pad, &s.dilation};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == "nhwc" || fields[i] == "nchw") {
      if (i + 1 != fields.size()) throw std::invalid_argument("layout must come last in --shape");
      s.layout = fields[i] == "nhwc" ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
    } else if (i < 10) {
      *ints[i] = std::stoi(fields[i]);
    } else {
      throw std::invalid_argument("11th --shape field must be nhwc or nchw, got '" + fields[i] +
                                  "'");
    }
  }
  s.name = "custom[" + text + "]";
  return s;
}

void run_conv(benchmark::State& state, const Shape& sh, kcnn::ConvAlgo algo) {
  using Tensor = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space>;
  const bool nhwc = sh.layout == kcnn::Layout::NHWC;
  const int P = sh.out(sh.H, sh.R), Q = sh.out(sh.W, sh.S);
  Tensor x = nhwc ? Tensor("x", sh.N, sh.H, sh.W, sh.C) : Tensor("x", sh.N, sh.C, sh.H, sh.W);
  Tensor w = nhwc ? Tensor("w", sh.M, sh.R, sh.S, sh.C) : Tensor("w", sh.M, sh.C, sh.R, sh.S);
  Tensor y = nhwc ? Tensor("y", sh.N, P, Q, sh.M) : Tensor("y", sh.N, sh.M, P, Q);
  Kokkos::View<float*, Space::memory_space> bias("bias", sh.M);
  Kokkos::Random_XorShift64_Pool<Space> pool(7);
  Kokkos::fill_random(x, pool, -1.0f, 1.0f);
  Kokkos::fill_random(w, pool, -1.0f, 1.0f);
  Kokkos::fill_random(bias, pool, -1.0f, 1.0f);

  kcnn::Conv2dParams params;
  params.stride_h = params.stride_w = sh.stride;
  params.pad_h = params.pad_w = sh.pad;
  params.dilation_h = params.dilation_w = sh.dilation;
  params.layout = sh.layout;
  params.activation = kcnn::Activation::ReLU;
  params.algo = algo;

  const Space space;
  try {
    kcnn::conv2d_forward(space, x, w, bias, y, params);  // warm-up, and validation
    space.fence();
  } catch (const kcnn::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    kcnn::conv2d_forward(space, x, w, bias, y, params);
    space.fence();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double flops = 2.0 * sh.N * sh.M * P * Q * double(sh.C) * sh.R * sh.S;
  const double bytes = sizeof(float) * (double(x.span()) + w.span() + bias.span() + y.span());
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(sh.describe());
}

using Tensor4 = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space>;
using Tensor1 = Kokkos::View<float*, Space::memory_space>;

/// A tensor of logical extents (n, c, h, w) stored in `layout`, filled with random values.
Tensor4 random_tensor(const std::string& label, kcnn::Layout layout, int n, int c, int h, int w,
                      std::uint64_t seed) {
  Tensor4 t =
      layout == kcnn::Layout::NHWC ? Tensor4(label, n, h, w, c) : Tensor4(label, n, c, h, w);
  Kokkos::Random_XorShift64_Pool<Space> pool(seed);
  Kokkos::fill_random(t, pool, -1.0f, 1.0f);
  return t;
}

Tensor4 output_tensor(const std::string& label, kcnn::Layout layout, int n, int c, int h, int w) {
  return layout == kcnn::Layout::NHWC ? Tensor4(label, n, h, w, c) : Tensor4(label, n, c, h, w);
}

/// Times `call` (launch + fence) after one warm-up call that also validates.
template <class Call>
bool time_calls(benchmark::State& state, Call&& call) {
  const Space space;
  try {
    call(space);
    space.fence();
  } catch (const kcnn::Error& e) {
    state.SkipWithError(e.what());
    return false;
  }
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    call(space);
    space.fence();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return true;
}

/// One pooling layer: x of (N, C, H, W) pooled by a square window.
struct PoolShape {
  std::string name;
  int N, C, H, W, window, stride, pad = 0;
  kcnn::PoolMode mode = kcnn::PoolMode::Max;
  kcnn::Layout layout = kcnn::Layout::NCHW;

  int out(int in) const { return (in + 2 * pad - window) / stride + 1; }
  std::string describe() const {
    std::ostringstream s;
    s << N << "x" << C << "x" << H << "x" << W << " " << kcnn::to_string(mode) << " " << window
      << "x" << window << " s" << stride << " p" << pad << " " << kcnn::to_string(layout);
    return s.str();
  }
};

void run_pool(benchmark::State& state, const PoolShape& sh) {
  Tensor4 x = random_tensor("x", sh.layout, sh.N, sh.C, sh.H, sh.W, 11);
  Tensor4 y = output_tensor("y", sh.layout, sh.N, sh.C, sh.out(sh.H), sh.out(sh.W));
  kcnn::Pool2dParams params;
  params.mode = sh.mode;
  params.window_h = params.window_w = sh.window;
  params.stride_h = params.stride_w = sh.stride;
  params.pad_h = params.pad_w = sh.pad;
  params.layout = sh.layout;
  if (!time_calls(state, [&](const Space& space) { kcnn::pool2d_forward(space, x, y, params); }))
    return;
  const double bytes = sizeof(float) * (double(x.span()) + y.span());
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(sh.describe());
}

void register_pool(const PoolShape& sh) {
  const std::string name =
      "pool2d/" + sh.name + "/" + kcnn::to_string(sh.mode) + "/" + kcnn::to_string(sh.layout);
  benchmark::RegisterBenchmark(name.c_str(), [sh](benchmark::State& st) { run_pool(st, sh); })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5);
}

/// The device's copy bandwidth on a tensor as large as a pooling input: deep_copy of
/// `elements` floats; GB/s counts bytes read + written, like the pooling benchmarks.
void run_copy(benchmark::State& state, std::int64_t elements) {
  Tensor1 a("a", elements), b("b", elements);
  Kokkos::Random_XorShift64_Pool<Space> rng(5);
  Kokkos::fill_random(a, rng, -1.0f, 1.0f);
  if (!time_calls(state, [&](const Space& space) { Kokkos::deep_copy(space, b, a); })) return;
  state.counters["GB/s"] = benchmark::Counter(2.0 * sizeof(float) * double(elements) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::to_string(elements) + " floats");
}

void register_copy(const std::string& name, std::int64_t elements) {
  benchmark::RegisterBenchmark(("copy/" + name).c_str(),
                               [elements](benchmark::State& st) { run_copy(st, elements); })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5);
}

/// The seed network's convolution stack at batch B: C1 (1 -> 4 maps, 7x7, 86x86 -> 80x80)
/// -> ReLU -> 2x2 max pool (40x40) -> C3 (4 -> 16 maps, 7x7, 34x34) -> ReLU -> 4x4 max
/// pool (8x8), with biases. `fused`: two conv2d_forward calls with params.pool; else the
/// four calls conv, pool, conv, pool with the unpooled tensors in memory.
void run_lenet_stack(benchmark::State& state, int batch, kcnn::Layout layout, bool fused,
                     kcnn::ConvAlgo algo) {
  const int B = batch;
  Tensor4 x = random_tensor("x", layout, B, 1, 86, 86, 1);
  Tensor4 w1 = random_tensor("w1", layout, 4, 1, 7, 7, 2);
  Tensor4 w3 = random_tensor("w3", layout, 16, 4, 7, 7, 3);
  Tensor1 b1("b1", 4), b3("b3", 16);
  Kokkos::Random_XorShift64_Pool<Space> rng(4);
  Kokkos::fill_random(b1, rng, -1.0f, 1.0f);
  Kokkos::fill_random(b3, rng, -1.0f, 1.0f);
  Tensor4 s2 = output_tensor("s2", layout, B, 4, 40, 40);
  Tensor4 s4 = output_tensor("s4", layout, B, 16, 8, 8);
  Tensor4 c1, c3;  // unpooled outputs, unfused sequence only
  if (!fused) {
    c1 = output_tensor("c1", layout, B, 4, 80, 80);
    c3 = output_tensor("c3", layout, B, 16, 34, 34);
  }

  kcnn::Conv2dParams conv;
  conv.layout = layout;
  conv.activation = kcnn::Activation::ReLU;
  conv.algo = algo;
  kcnn::Pool2dParams pool2, pool4;
  pool2.layout = pool4.layout = layout;  // Max, 2x2 stride 2 by default
  pool4.window_h = pool4.window_w = pool4.stride_h = pool4.stride_w = 4;
  kcnn::Conv2dParams conv_pool2 = conv, conv_pool4 = conv;
  conv_pool2.pool = pool2;
  conv_pool4.pool = pool4;

  const bool ok = time_calls(state, [&](const Space& space) {
    if (fused) {
      kcnn::conv2d_forward(space, x, w1, b1, s2, conv_pool2);
      kcnn::conv2d_forward(space, s2, w3, b3, s4, conv_pool4);
    } else {
      kcnn::conv2d_forward(space, x, w1, b1, c1, conv);
      kcnn::pool2d_forward(space, c1, s2, pool2);
      kcnn::conv2d_forward(space, s2, w3, b3, c3, conv);
      kcnn::pool2d_forward(space, c3, s4, pool4);
    }
  });
  if (!ok) return;
  const double flops =
      2.0 * B * (4.0 * 80 * 80 * 1 * 7 * 7) + 2.0 * B * (16.0 * 34 * 34 * 4 * 7 * 7);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  std::ostringstream label;
  label << "B=" << B << " C1 7x7 ReLU max2 -> C3 7x7 ReLU max4 " << kcnn::to_string(layout);
  state.SetLabel(label.str());
}

void register_lenet_stack(int batch) {
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
    for (bool fused : {true, false})
      for (kcnn::ConvAlgo algo : {kcnn::ConvAlgo::Reference}) {
        const std::string name = std::string("lenet_stack/") + (fused ? "fused/" : "unfused/") +
                                 kcnn::to_string(algo) + "/" + kcnn::to_string(layout);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [batch, layout, fused, algo](benchmark::State& st) {
                                       run_lenet_stack(st, batch, layout, fused, algo);
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.5);
      }
}

void register_shape(const Shape& sh) {
  for (kcnn::ConvAlgo algo : {kcnn::ConvAlgo::Reference}) {
    const std::string name = "conv2d/" + sh.name + "/" + kcnn::to_string(algo);
    benchmark::RegisterBenchmark(name.c_str(),
                                 [sh, algo](benchmark::State& st) { run_conv(st, sh, algo); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  int batch = kDeviceBuild ? 10000 : 1000;
  std::vector<Shape> custom;
  // Our own flags first; the rest goes to Google Benchmark.
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      const std::string f = flag;
      if (a.rfind(f + "=", 0) == 0) return a.substr(f.size() + 1);
      if (a == f && i + 1 < argc) return argv[++i];
      return {};
    };
    if (a.rfind("--shape", 0) == 0) {
      try {
        custom.push_back(parse_shape(value("--shape")));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kcnn_perf: %s\n", e.what());
        return 2;
      }
    } else if (a.rfind("--batch", 0) == 0) {
      batch = std::atoi(value("--batch").c_str());
      if (batch < 1) {
        std::fprintf(stderr, "kcnn_perf: --batch wants a positive integer\n");
        return 2;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());

  benchmark::AddCustomContext("kokkos_execution_space", Space::name());
  benchmark::AddCustomContext("batch", std::to_string(batch));
  // The seed project's LeNet-5 convolution layers.
  register_shape({"lenet_c1", batch, 1, 86, 86, 4, 7, 7});
  register_shape({"lenet_c3", batch, 4, 40, 40, 16, 7, 7});
  for (const auto& sh : custom)
    register_shape(sh);
  // The seed project's subsampling layers: pooling alone (against the copy bandwidth on
  // the larger input), then the whole conv stack.
  register_copy("lenet_s2_input", std::int64_t(batch) * 4 * 80 * 80);
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    register_pool({"lenet_s2", batch, 4, 80, 80, 2, 2, 0, kcnn::PoolMode::Max, layout});
    register_pool({"lenet_s4", batch, 16, 34, 34, 4, 4, 0, kcnn::PoolMode::Max, layout});
  }
  register_lenet_stack(batch);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
