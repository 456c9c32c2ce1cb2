// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// cuDNN convolution forward with bias and ReLU, as kcnn_perf's GPU baseline (legacy API,
// still in cuDNN 9). float: "cuDNN", TF32 forbidden (CUDNN_FMA_MATH), the reference of
// vs_baseline, and "cuDNN-TF32", tensor-core TF32 allowed (PyTorch's default). half and
// bfloat16: "cuDNN", tensors of the type, float compute type (float sums, as kcnn's and
// PyTorch's), tensor-core math; the reference. Tensors in the shape's layout (NCHW or
// NHWC), in Kokkos Views; the algorithm is the fastest that
// cudnnFindConvolutionForwardAlgorithmEx measures on these very buffers, and that the
// fused conv + bias + ReLU call accepts (where it accepts none, as for some 16-bit
// configurations, the convolution alone: less work than kcnn's call, said in the label);
// its workspace is allocated before timing; every call runs on the CUDA stream of Kokkos'
// default execution space instance.
#include <cudnn.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "baselines.hpp"

namespace kcnn_perf {
namespace {

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cudnnGetErrorString(status));
}
#define KCNN_CUDNN_CHECK(call) check((call), #call)

using Space = Kokkos::DefaultExecutionSpace;
using Bytes = Kokkos::View<char*, Space::memory_space>;

/// The process's cuDNN handle, bound to Kokkos' stream; created on first use (slow: it
/// loads cuDNN's kernels), destroyed by cudnn_shutdown() before Kokkos finalizes.
cudnnHandle_t& handle_slot() {
  static cudnnHandle_t handle = nullptr;
  return handle;
}

cudnnHandle_t handle() {
  cudnnHandle_t& h = handle_slot();
  if (!h) {
    KCNN_CUDNN_CHECK(cudnnCreate(&h));
    KCNN_CUDNN_CHECK(cudnnSetStream(h, Space().cuda_stream()));
  }
  return h;
}

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "unknown";
  }
}

/// The descriptors of one convolution; destroyed even if the constructor of their owner
/// throws half-way.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;

  Descriptors() {
    KCNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    KCNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    KCNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&bias));
    KCNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    KCNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    KCNN_CUDNN_CHECK(cudnnCreateActivationDescriptor(&act));
  }
  ~Descriptors() {
    // Destroying a null descriptor is a no-op; failures are not worth reporting here.
    cudnnDestroyActivationDescriptor(act);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

/// cuDNN's data type for kcnn_perf's element type Scalar.
template <class Scalar>
cudnnDataType_t cudnn_data_type() {
  if constexpr (std::is_same_v<Scalar, Kokkos::Experimental::half_t>) {
    return CUDNN_DATA_HALF;
  } else if constexpr (std::is_same_v<Scalar, kcnn::bfloat16>) {
    return CUDNN_DATA_BFLOAT16;
  } else {
    return CUDNN_DATA_FLOAT;
  }
}

template <class Scalar>
class CudnnConv final : public BaselineRun {
 public:
  /// tensor_ops: cuDNN may pick tensor-core kernels (float: TF32, PyTorch's default for
  /// convolutions, allow_tf32); else plain fp32 FMA only.
  CudnnConv(const Shape& sh, bool tensor_ops) : data_(sh, 17) {
    // cuDNN's NHWC activations are kcnn's (N, H, W, C); its NHWC filters (KRSC) are
    // kcnn's (M, R, S, C).
    const cudnnTensorFormat_t format = sh.nhwc() ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = cudnn_data_type<Scalar>();
    KCNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_.x, format, type, sh.N, sh.C, sh.H, sh.W));
    KCNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_.y, format, type, sh.N, sh.M, sh.P(), sh.Q()));
    KCNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_.bias, CUDNN_TENSOR_NCHW, type, 1, sh.M, 1, 1));
    KCNN_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(d_.w, type, format, sh.M, sh.C / sh.groups, sh.R, sh.S));
    KCNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d_.conv, sh.pad, sh.pad, sh.stride, sh.stride,
                                                     sh.dilation, sh.dilation,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    KCNN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_.conv, sh.groups));
    // FMA_MATH: plain fp32 arithmetic; no tensor-core TF32 (which DEFAULT_MATH allows
    // in cuDNN 9 unless NVIDIA_TF32_OVERRIDE=0).
    KCNN_CUDNN_CHECK(
        cudnnSetConvolutionMathType(d_.conv, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    KCNN_CUDNN_CHECK(
        cudnnSetActivationDescriptor(d_.act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    int p = 0, q = 0, n = 0, m = 0;
    KCNN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d_.conv, d_.x, d_.w, &n, &m, &p, &q));
    if (n != sh.N || m != sh.M || p != sh.P() || q != sh.Q())
      throw std::runtime_error("cuDNN's output extents differ from kcnn's");

    cudnnHandle_t h = handle();
    // Workspace for the search: the most any algorithm asks for, within 4 GiB.
    std::size_t search_bytes = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(h, d_.x, d_.w, d_.conv, d_.y,
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS &&
          bytes <= (std::size_t(4) << 30))
        search_bytes = std::max(search_bytes, bytes);
    }
    Bytes search_ws(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cudnn_search_ws"),
                    std::max<std::size_t>(search_bytes, 1));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    KCNN_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        h, d_.x, data_.x.data(), d_.w, data_.w.data(), d_.conv, d_.y, data_.y.data(),
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, search_ws.data(), search_bytes));
    search_ws = Bytes();

    // The fastest (results come sorted) that ran, in fp32, and that the fused
    // conv + bias + ReLU call accepts; else (16-bit) the fastest convolution alone.
    std::string tried;
    for (int pass = 0; pass < 2 && !chosen_; ++pass) {
      conv_only_ = pass == 1;
      if (conv_only_ && std::is_same_v<Scalar, float>) break;
      choose(perf, found, tensor_ops, tried);
    }
    if (!chosen_)
      throw std::runtime_error("cuDNN: no algorithm runs conv + bias + ReLU here;" + tried);
    Kokkos::fence();
  }

  void run() override { KCNN_CUDNN_CHECK(launch()); }

  std::string describe() const override {
    return std::string("cuDNN ") + algo_name(algo_) +
           " ws=" + std::to_string(workspace_bytes_ >> 20) +
           "MiB find=" + std::to_string(find_ms_) + "ms" +
           (conv_only_ ? " (convolution only: cuDNN fuses no bias + ReLU here)" : "");
  }

 private:
  /// The first of the measured algorithms `perf` (fastest first) that runs.
  void choose(const cudnnConvolutionFwdAlgoPerf_t* perf, int found, bool tensor_ops,
              std::string& tried) {
    for (int i = 0; i < found && !chosen_; ++i) {
      const auto& r = perf[i];
      if (r.status != CUDNN_STATUS_SUCCESS ||
          (!tensor_ops && (r.mathType == CUDNN_TENSOR_OP_MATH ||
                           r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
        continue;
      KCNN_CUDNN_CHECK(cudnnSetConvolutionMathType(d_.conv, r.mathType));
      workspace_ = Bytes(Kokkos::view_alloc(Kokkos::WithoutInitializing, "cudnn_ws"),
                         std::max<std::size_t>(r.memory, 1));
      workspace_bytes_ = r.memory;
      algo_ = r.algo;
      const cudnnStatus_t status = launch();
      if (status == CUDNN_STATUS_SUCCESS) {
        chosen_ = true;
        find_ms_ = r.time;
      } else {
        tried += std::string(" ") + algo_name(r.algo) + (conv_only_ ? " (alone)" : "") + ": " +
                 cudnnGetErrorString(status);
      }
    }
  }

  /// y = ReLU(conv(x, w) + bias): alpha2 = 0, so z (= y) is not read. conv_only_: y =
  /// conv(x, w).
  cudnnStatus_t launch() {
    const float one = 1.0f, zero = 0.0f;
    if (conv_only_)
      return cudnnConvolutionForward(handle(), &one, d_.x, data_.x.data(), d_.w, data_.w.data(),
                                     d_.conv, algo_, workspace_.data(), workspace_bytes_, &zero,
                                     d_.y, data_.y.data());
    return cudnnConvolutionBiasActivationForward(
        handle(), &one, d_.x, data_.x.data(), d_.w, data_.w.data(), d_.conv, algo_,
        workspace_.data(), workspace_bytes_, &zero, d_.y, data_.y.data(), d_.bias,
        data_.bias.data(), d_.act, d_.y, data_.y.data());
  }

  ShapeData<Space, Scalar> data_;
  Bytes workspace_;
  std::size_t workspace_bytes_ = 0;
  Descriptors d_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  bool chosen_ = false;
  bool conv_only_ = false;
  float find_ms_ = 0;
};

}  // namespace

std::vector<Baseline> cudnn_baselines(ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::Float:
      return {{"cuDNN", true,
               [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
                 return std::make_unique<CudnnConv<float>>(sh, false);
               }},
              {"cuDNN-TF32", false, [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
                 return std::make_unique<CudnnConv<float>>(sh, true);
               }}};
    case ScalarKind::Half:
      return {{"cuDNN", true, [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
                 return std::make_unique<CudnnConv<Kokkos::Experimental::half_t>>(sh, true);
               }}};
    case ScalarKind::BFloat16:
      return {{"cuDNN", true, [](const Shape& sh) -> std::unique_ptr<BaselineRun> {
                 return std::make_unique<CudnnConv<kcnn::bfloat16>>(sh, true);
               }}};
    default:
      return {};
  }
}

BaselineLibrary cudnn_library() {
  const std::size_t v = cudnnGetVersion();
  return {"cuDNN", std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                       std::to_string(v % 100) + " (headers " + std::to_string(CUDNN_MAJOR) + "." +
                       std::to_string(CUDNN_MINOR) + ")"};
}

void cudnn_shutdown() {
  cudnnHandle_t& h = handle_slot();
  if (h) cudnnDestroy(h);
  h = nullptr;
}

}  // namespace kcnn_perf
