// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file suites.hpp
/// \brief kcnn_perf's problems: the Shape of one convolution, the suites of shapes the
///        benchmark runs by default, and the parser of --shape.
#pragma once

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kcnn_perf {

/// One convolution problem (bias and ReLU, like a network layer; fp32 unless kcnn_perf
/// runs with another --scalar).
struct Shape {
  std::string suite;  ///< "lenet", "resnet3x3", "pointwise", "alexnet", "odd", "custom"
  std::string name;   ///< unique within its suite, e.g. "c1_s2"
  int N, C, H, W, M, R, S, stride = 1, pad = 0, dilation = 1;
  kcnn::Layout layout = kcnn::Layout::NCHW;
  int groups = 1;  ///< Conv2dParams::groups: w holds C / groups channels

  int out(int in, int k) const { return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int P() const { return out(H, R); }
  int Q() const { return out(W, S); }
  bool nhwc() const { return layout == kcnn::Layout::NHWC; }

  double flops() const { return 2.0 * N * M * double(P()) * Q() * double(C / groups) * R * S; }
  /// Bytes moved if each tensor (x, w, bias, y) of `element_bytes`-byte elements is read
  /// or written exactly once.
  double bytes(std::size_t element_bytes = sizeof(float)) const {
    return double(element_bytes) * (double(N) * C * H * W + double(M) * (C / groups) * R * S + M +
                                    double(N) * M * P() * Q());
  }

  kcnn::Conv2dParams params() const {
    kcnn::Conv2dParams p;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    p.dilation_h = p.dilation_w = dilation;
    p.layout = layout;
    p.groups = groups;
    p.activation = kcnn::Activation::ReLU;
    return p;
  }

  /// The geometry and layout: identifies the problem (the baseline map's key).
  std::string key() const {
    std::ostringstream s;
    s << N << 'x' << C << 'x' << H << 'x' << W << " M=" << M << ' ' << R << 'x' << S << " s"
      << stride << " p" << pad << " d" << dilation << ' ' << kcnn::to_string(layout);
    if (groups != 1) s << " g" << groups;
    return s.str();
  }
  /// Benchmark name: conv2d/<suite>/<name>/<layout>/<implementation>.
  std::string benchmark_name(const std::string& impl) const {
    return "conv2d/" + suite + "/" + name + "/" + kcnn::to_string(layout) + "/" + impl;
  }
};

/// The element types kcnn_perf's convolutions run in (--scalar).
enum class ScalarKind { Float, Double, Half, BFloat16 };

inline const char* to_string(ScalarKind s) {
  switch (s) {
    case ScalarKind::Double:
      return "double";
    case ScalarKind::Half:
      return "half";
    case ScalarKind::BFloat16:
      return "bfloat16";
    default:
      return "float";
  }
}

/// Uniform random values in [-1, 1] into `v` (any rank, contiguous): drawn in float and
/// rounded to the View's type where that is a 16-bit one (Kokkos' random pools draw
/// float and double only).
template <class ExecSpace, class View>
void fill_uniform(const View& v, Kokkos::Random_XorShift64_Pool<ExecSpace>& pool) {
  using Scalar = typename View::non_const_value_type;
  if constexpr (std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>) {
    Kokkos::fill_random(v, pool, Scalar(-1), Scalar(1));
  } else {
    Kokkos::View<float*, typename ExecSpace::memory_space> drawn("drawn", v.span());
    Kokkos::fill_random(drawn, pool, -1.0f, 1.0f);
    Scalar* const out = v.data();
    Kokkos::parallel_for(
        "kcnn_perf::round_inputs", Kokkos::RangePolicy<ExecSpace>(0, v.span()),
        KOKKOS_LAMBDA(const std::size_t i) { out[i] = Scalar(drawn(i)); });
  }
}

/// x, w, bias and y of a shape in the shape's layout (kcnn's storage order, which is
/// also cuDNN's and oneDNN's for NCHW/NHWC), in the memory of `ExecSpace`, elements of
/// `Scalar`; the inputs random in [-1, 1], never zeros.
template <class ExecSpace, class Scalar = float>
struct ShapeData {
  using Tensor = Kokkos::View<Scalar****, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  Tensor x, w, y;
  Kokkos::View<Scalar*, typename ExecSpace::memory_space> bias;

  explicit ShapeData(const Shape& sh, unsigned seed = 7) {
    x = sh.nhwc() ? Tensor("x", sh.N, sh.H, sh.W, sh.C) : Tensor("x", sh.N, sh.C, sh.H, sh.W);
    const int Cg = sh.C / sh.groups;
    w = sh.nhwc() ? Tensor("w", sh.M, sh.R, sh.S, Cg) : Tensor("w", sh.M, Cg, sh.R, sh.S);
    y = sh.nhwc() ? Tensor("y", sh.N, sh.P(), sh.Q(), sh.M)
                  : Tensor("y", sh.N, sh.M, sh.P(), sh.Q());
    bias = decltype(bias)("bias", sh.M);
    Kokkos::Random_XorShift64_Pool<ExecSpace> pool(seed);
    fill_uniform(x, pool);
    fill_uniform(w, pool);
    fill_uniform(bias, pool);
    ExecSpace().fence();
  }
};

/// The default suites. `device`: sizes for a GPU (else a CPU); `lenet_batch`: the
/// batch of the LeNet-5 layers. Every shape comes in both layouts (NCHW, NHWC).
inline std::vector<Shape> default_suites(bool device, int lenet_batch) {
  const int B = lenet_batch;
  const int n64 = device ? 64 : 8, n32 = device ? 32 : 8, n128 = device ? 128 : 8;
  const int odd_n = device ? 61 : 7;
  // suite, name, N, C, H, W, M, R, S, stride, pad, dilation
  const std::vector<Shape> nchw = {
      // The seed project's LeNet-5 convolution layers, stride 1 and 2.
      {"lenet", "c1_s1", B, 1, 86, 86, 4, 7, 7, 1},
      {"lenet", "c1_s2", B, 1, 86, 86, 4, 7, 7, 2},
      {"lenet", "c3_s1", B, 4, 40, 40, 16, 7, 7, 1},
      {"lenet", "c3_s2", B, 4, 40, 40, 16, 7, 7, 2},
      // ResNet/VGG-like 3x3 layers, padding 1.
      {"resnet3x3", "c64_56", n64, 64, 56, 56, 64, 3, 3, 1, 1},
      {"resnet3x3", "c128_28", n64, 128, 28, 28, 128, 3, 3, 1, 1},
      {"resnet3x3", "c256_14", n64, 256, 14, 14, 256, 3, 3, 1, 1},
      {"resnet3x3", "c512_7", n32, 512, 7, 7, 512, 3, 3, 1, 1},
      // A 3x3 layer on a 2-D field (the size scientific codes feed a CNN; issue 21):
      // few channels, many pixels.
      {"field2d", "c32_256", device ? 16 : 2, 32, 256, 256, 32, 3, 3, 1, 1},
      // 1x1 (bottleneck) layers: a GEMM in disguise.
      {"pointwise", "c256_m64_56", n64, 256, 56, 56, 64, 1, 1},
      {"pointwise", "c64_m256_56", n64, 64, 56, 56, 256, 1, 1},
      // AlexNet's first layer: 11x11, stride 4, three input channels.
      {"alexnet", "conv1", n128, 3, 227, 227, 96, 11, 11, 4},
      // Odd shapes: prime extents everywhere, C = 3, stride 2, dilation.
      {"odd", "c3_prime", odd_n, 3, 127, 131, 29, 5, 5, 1, 2},
      {"odd", "prime_s2", odd_n, 17, 61, 59, 31, 3, 3, 2, 1},
      {"odd", "dilated", odd_n, 13, 47, 53, 23, 3, 3, 1, 2, 2},
      // Depthwise 3x3 layers (MobileNet-like; groups = C = M) and a grouped one
      // (ResNeXt-like, 32 groups): issue 22's layers, groups set below.
      {"depthwise", "c128_56", n64, 128, 56, 56, 128, 3, 3, 1, 1},
      {"depthwise", "c256_28", n64, 256, 28, 28, 256, 3, 3, 1, 1},
      {"depthwise", "c512_14", n64, 512, 14, 14, 512, 3, 3, 1, 1},
      {"grouped", "c256_28_g32", n64, 256, 28, 28, 256, 3, 3, 1, 1},
  };
  std::vector<Shape> all;
  for (Shape s : nchw) {
    if (s.suite == "depthwise") s.groups = s.C;
    if (s.suite == "grouped") s.groups = 32;
    all.push_back(s);
    Shape t = s;
    t.layout = kcnn::Layout::NHWC;
    all.push_back(t);
  }
  return all;
}

/// Parses N,C,H,W,M,R,S,stride,pad[,dilation][,nhwc|nchw] (the layout last if given).
inline Shape parse_shape(const std::string& text) {
  Shape s{"custom", "", 0, 0, 0, 0, 0, 0, 0};
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
      if (i + 1 != fields.size() || i < 9)
        throw std::invalid_argument("--shape: the layout must come last, got '" + text + "'");
      s.layout = fields[i] == "nhwc" ? kcnn::Layout::NHWC : kcnn::Layout::NCHW;
    } else if (i < 10) {
      std::size_t used = 0;
      *ints[i] = std::stoi(fields[i], &used);
      if (used != fields[i].size())
        throw std::invalid_argument("--shape: '" + fields[i] + "' is not an integer");
    } else {
      throw std::invalid_argument("--shape: the 11th field must be nhwc or nchw, got '" +
                                  fields[i] + "'");
    }
  }
  if (s.N < 1 || s.C < 1 || s.H < 1 || s.W < 1 || s.M < 1 || s.R < 1 || s.S < 1 || s.stride < 1 ||
      s.pad < 0 || s.dilation < 1 || s.P() < 1 || s.Q() < 1)
    throw std::invalid_argument("--shape: not a valid convolution: '" + text + "'");
  s.name = text.substr(0, text.find(",n"));  // the numbers; the layout is its own level
  return s;
}

}  // namespace kcnn_perf
