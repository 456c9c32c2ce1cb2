// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file types.hpp
/// \brief The vocabulary of kcnn: tensor layouts, activations, algorithms, convolution
///        and pooling parameters and the exception every operation throws on invalid input.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace kcnn {

/// Memory order of a 4-D activation tensor (and of the matching weight tensor).
///  - NCHW: x is (N, C, H, W), w is (M, C, R, S), y is (N, M, P, Q).
///  - NHWC: x is (N, H, W, C), w is (M, R, S, C), y is (N, P, Q, M).
enum class Layout { NCHW, NHWC };

/// Element-wise function applied to the convolution result (after the bias).
enum class Activation { Identity, ReLU, Sigmoid, Tanh };

/// Convolution algorithm. `Auto` runs find_best_algo's cached winner for the problem, or
/// else a heuristic's choice from its shape, layout, backend and math mode
/// (impl/conv2d/select/auto_rules.hpp). `TensorCoreGemm` is the implicit GEMM on NVIDIA
/// tensor cores (CUDA builds for sm_80 or newer): float tensors under MathMode::TF32 or
/// ::TF32x3, double tensors with IEEE fp64 products; elsewhere it throws kcnn::Error.
/// `Winograd` is Winograd's minimal filtering F(4x4, 3x3) (F(2x2, 3x3) past 4,096
/// channels) for 3x3 filters at stride 1 without dilation, any padding; other geometries
/// throw kcnn::Error naming the reason (see conv2d.hpp for its accuracy). `Depthwise`
/// computes depthwise layers (groups = C, M a multiple of C) and `Grouped` grouped layers
/// with narrow groups, each in one kernel (conv2d.hpp says which layers each takes).
enum class ConvAlgo {
  Auto,
  Reference,
  Tiled,
  Im2colGemm,
  ImplicitGemm,
  TensorCoreGemm,
  Winograd,
  Depthwise,
  Grouped
};

/// How much floating-point precision a convolution may give up for speed (model: oneDNN's
/// fpmath_mode, cuDNN's math type, PyTorch's allow_tf32).
///  - Strict: ordinary IEEE products and sums in the tensors' type (float or double;
///    16-bit tensors: exact products, float sums).
///  - TF32 (float tensors only): products on the GPU's tensor cores with both factors
///    rounded to TF32 (10 explicit mantissa bits, round to nearest), float sums. The
///    relative error of an output grows like sqrt(C*R*S) * 2^-11 of its magnitude scale.
///  - TF32x3 (float tensors only): each float factor split into a TF32 "big" and a TF32
///    "small" part, three tensor-core products (big*big + big*small + small*big), float
///    sums: float-level accuracy at tensor-core speed.
/// Double tensors take Strict only: on GPUs with fp64 tensor cores (sm_80 on) the
/// tensor-core algorithm computes them with IEEE fp64 products. Where no tensor core
/// serves a call (host backends, GPUs before sm_80, algorithms without a tensor-core
/// kernel) a non-strict mode computes strictly: more accurate than asked, never less.
enum class MathMode { Strict, TF32, TF32x3 };

/// Reduction of a pooling (subsampling) window.
enum class PoolMode { Max, Average };

/// Geometry and options of a 2-D pooling. The output extents follow
///   P = (H + 2*pad_h - window_h) / stride_h + 1   (and Q likewise; floor, never ceil).
/// Padded cells never win a Max; for Average they count in the divisor when
/// `count_include_pad` (divisor window_h*window_w) and not otherwise (divisor = number of
/// real input cells in the window). pad < window, so every window holds a real cell.
/// The result is activation(pool(x) + bias[c]) where bias is optional.
struct Pool2dParams {
  PoolMode mode = PoolMode::Max;
  int window_h = 2, window_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  ///< Average only
  Layout layout = Layout::NCHW;
  Activation activation = Activation::Identity;  ///< applied after pooling (+ bias)
};

/// Geometry and options of a 2-D convolution. The output extents follow
///   P = (H + 2*pad_h - dilation_h*(R-1) - 1) / stride_h + 1   (and Q likewise).
struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;  ///< zero padding on both sides
  int dilation_h = 1, dilation_w = 1;
  /// Grouped convolution: C and M are split into `groups` equal parts, and output
  /// channel m reads only the input channels of its group, m / (M / groups): w is
  /// (M, C / groups, R, S) in NCHW and (M, R, S, C / groups) in NHWC. 1: every filter
  /// reads every channel; groups = C = M: depthwise. C and M must be multiples of it.
  int groups = 1;
  Layout layout = Layout::NCHW;
  Activation activation = Activation::Identity;
  ConvAlgo algo = ConvAlgo::Auto;
  /// Precision the convolution may give up (MathMode); non-strict modes need float tensors.
  MathMode math = MathMode::Strict;
  /// When set, conv2d_forward writes pool(activation(conv(x, w) + bias)) followed by the
  /// pool's own activation: y has the pooled extents. pool->layout must equal layout.
  std::optional<Pool2dParams> pool;
  /// Scratch budget in bytes of algorithms that need scratch (Im2colGemm processes the
  /// batch in chunks that fit it; TensorCoreGemm's and, on host backends, Tiled's packed
  /// weights must fit it, see workspace.hpp); 0: the process-wide kcnn::workspace_limit().
  std::size_t workspace_limit_bytes = 0;
};

/// Thrown by every kcnn operation on invalid arguments, before any output is written.
/// The message names the operation and the offending values.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

inline const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::NCHW:
      return "NCHW";
    case Layout::NHWC:
      return "NHWC";
  }
  return "unknown-layout";
}

inline const char* to_string(Activation activation) {
  switch (activation) {
    case Activation::Identity:
      return "Identity";
    case Activation::ReLU:
      return "ReLU";
    case Activation::Sigmoid:
      return "Sigmoid";
    case Activation::Tanh:
      return "Tanh";
  }
  return "unknown-activation";
}

inline const char* to_string(MathMode math) {
  switch (math) {
    case MathMode::Strict:
      return "Strict";
    case MathMode::TF32:
      return "TF32";
    case MathMode::TF32x3:
      return "TF32x3";
  }
  return "unknown-math-mode";
}

inline const char* to_string(PoolMode mode) {
  switch (mode) {
    case PoolMode::Max:
      return "Max";
    case PoolMode::Average:
      return "Average";
  }
  return "unknown-pool-mode";
}

inline const char* to_string(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::Auto:
      return "Auto";
    case ConvAlgo::Reference:
      return "Reference";
    case ConvAlgo::Tiled:
      return "Tiled";
    case ConvAlgo::Im2colGemm:
      return "Im2colGemm";
    case ConvAlgo::ImplicitGemm:
      return "ImplicitGemm";
    case ConvAlgo::TensorCoreGemm:
      return "TensorCoreGemm";
    case ConvAlgo::Winograd:
      return "Winograd";
    case ConvAlgo::Depthwise:
      return "Depthwise";
    case ConvAlgo::Grouped:
      return "Grouped";
  }
  return "unknown-algo";
}

}  // namespace kcnn
