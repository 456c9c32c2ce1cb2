// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kcnn_perf: Google Benchmark timings of kcnn's convolution algorithms.
//
//   kcnn_perf [--batch B] [--workspace-mib MiB] [--shape
//   N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc]]...
//             [Google Benchmark flags, e.g. --benchmark_filter=lenet --benchmark_out=f.json]
//
// Suites: the seed project's LeNet-5 layers (C1: B,1,86,86 -> 4, 7x7; C3: B,4,40,40 -> 16,
// 7x7) at batch 10,000 on device builds and 1,000 on host builds (--batch overrides);
// 3x3 pad-1 layers like ResNet's (C=M=64 at 56x56, 128 at 28x28, 256 at 14x14) at batch
// 64 on device builds and 8 on host builds; im2col alone on LeNet C3 in both layouts
// next to a copy of as many bytes (im2col/..., copy/...: GB/s counts bytes read +
// written); plus every --shape given. Each run fences the execution space; the time is
// wall clock around launch + fence, inputs are random (never zeros), one warm-up run is
// excluded.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <chrono>
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

/// im2col alone on a shape's input (the whole batch): GB/s counts x read + cols written.
void run_im2col(benchmark::State& state, const Shape& sh) {
  using Tensor = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space>;
  using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space>;
  const bool nhwc = sh.layout == kcnn::Layout::NHWC;
  const std::size_t P = sh.out(sh.H, sh.R), Q = sh.out(sh.W, sh.S);
  const std::size_t K = std::size_t(sh.C) * sh.R * sh.S, pixels = std::size_t(sh.N) * P * Q;
  Tensor x = nhwc ? Tensor("x", sh.N, sh.H, sh.W, sh.C) : Tensor("x", sh.N, sh.C, sh.H, sh.W);
  Matrix cols(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cols"), nhwc ? pixels : K,
              nhwc ? K : pixels);
  Kokkos::Random_XorShift64_Pool<Space> pool(7);
  Kokkos::fill_random(x, pool, -1.0f, 1.0f);

  kcnn::Conv2dParams params;
  params.stride_h = params.stride_w = sh.stride;
  params.pad_h = params.pad_w = sh.pad;
  params.dilation_h = params.dilation_w = sh.dilation;
  params.layout = sh.layout;
  const Space space;
  try {
    kcnn::im2col(space, x, sh.R, sh.S, params, cols);  // warm-up, and validation
    space.fence();
  } catch (const kcnn::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    kcnn::im2col(space, x, sh.R, sh.S, params, cols);
    space.fence();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double bytes = sizeof(float) * (double(x.span()) + double(cols.span()));
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(sh.describe() + " cols " + std::to_string(cols.extent(0)) + "x" +
                 std::to_string(cols.extent(1)));
}

/// The yardstick for im2col: a device-to-device copy of as many bytes as im2col writes
/// (GB/s counts bytes read + written, like im2col's).
void run_copy(benchmark::State& state, std::size_t floats) {
  Kokkos::View<float*, Space::memory_space> a("a", floats), b("b", floats);
  Kokkos::deep_copy(a, 1.0f);
  const Space space;
  Kokkos::deep_copy(space, b, a);
  space.fence();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    Kokkos::deep_copy(space, b, a);
    space.fence();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * sizeof(float) * double(floats) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::to_string(floats * sizeof(float) >> 20) + " MiB each way");
}

void register_im2col(const Shape& sh) {
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    Shape s = sh;
    s.layout = layout;
    const std::string name = "im2col/" + sh.name + "/" + kcnn::to_string(layout);
    benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { run_im2col(st, s); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
  }
  const std::size_t cols =
      std::size_t(sh.C) * sh.R * sh.S * sh.N * sh.out(sh.H, sh.R) * sh.out(sh.W, sh.S);
  benchmark::RegisterBenchmark(("copy/" + sh.name + "_cols_size").c_str(),
                               [cols](benchmark::State& st) { run_copy(st, cols); })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(0.5);
}

void register_shape(const Shape& sh) {
  for (kcnn::ConvAlgo algo : {kcnn::ConvAlgo::Reference, kcnn::ConvAlgo::Im2colGemm}) {
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
    } else if (a.rfind("--workspace-mib", 0) == 0) {
      const int mib = std::atoi(value("--workspace-mib").c_str());
      if (mib < 1) {
        std::fprintf(stderr, "kcnn_perf: --workspace-mib wants a positive integer\n");
        return 2;
      }
      kcnn::set_workspace_limit(std::size_t(mib) << 20);
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
  benchmark::AddCustomContext("workspace_limit_mib", std::to_string(kcnn::workspace_limit() >> 20));
  // The seed project's LeNet-5 convolution layers.
  register_shape({"lenet_c1", batch, 1, 86, 86, 4, 7, 7});
  register_shape({"lenet_c3", batch, 4, 40, 40, 16, 7, 7});
  // 3x3 layers like ResNet's (pad 1), at their own batch: 64 on GPUs, 8 on the host.
  const int resnet_batch = kDeviceBuild ? 64 : 8;
  register_shape({"resnet3x3_64", resnet_batch, 64, 56, 56, 64, 3, 3, 1, 1});
  register_shape({"resnet3x3_128", resnet_batch, 128, 28, 28, 128, 3, 3, 1, 1});
  register_shape({"resnet3x3_256", resnet_batch, 256, 14, 14, 256, 3, 3, 1, 1});
  // im2col alone, against a plain copy of the same size.
  register_im2col({"lenet_c3", batch, 4, 40, 40, 16, 7, 7});
  for (const auto& sh : custom)
    register_shape(sh);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
