// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// LeNet-5 (the seed project's modified version) on Fashion-MNIST, trained and run with
// kcnn's forward and backward operations.
//
//   lenet5 train [--epochs E] [--batch B] [--lr LR] [--limit N] [--out FILE] [--data DIR]
//   lenet5 infer [--weights FILE] [--batch B] [--limit N] [--data DIR]
//                [--precision fp32|bf16|fp16] [--min-accuracy A] [--skip-missing-data]
//   lenet5 --help
//   mpirun -np R lenet5 train ...   (built with MPI: data-parallel, data_parallel.hpp)
//
// Bad arguments are reported with the usage and exit code 2, before anything runs;
// errors while running (files that cannot be read or written, a batch larger than the
// data) with "lenet5: error: ..." and exit code 1. Arguments starting with --kokkos- go
// to Kokkos.
//
// The 28x28 images are upsampled to 86x86 (bilinear, on the device), then
//   conv 1->4 (7x7) + ReLU -> 2x2 max pool -> conv 4->16 (7x7) + ReLU -> 4x4 max pool
//   -> dense 1024->32 + ReLU -> dense 32->10 -> softmax.
// Training: softmax cross-entropy, SGD with momentum; the dense layers are
// KokkosBlas::gemm calls. Inference runs each convolution with its fused ReLU and
// pooling (ConvAlgo::Auto) and reports its time ("Op Time", fenced).
//
// --precision bf16 | fp16 runs inference a second time in 16 bits (kcnn::bfloat16 or
// Kokkos' half_t) and prints both accuracies: the float weights are rounded to the type
// once, at load; the convolutions take 16-bit tensors (float sums, one rounding per
// output); the dense layers multiply the 16-bit features and rounded weights in float
// (what a 16-bit GEMM with float sums computes) and round their outputs to the type.
// --min-accuracy then applies to the 16-bit run. (Host-only Kokkos stores half_t as
// float: there fp16 computes in float.)
#include <zlib.h>
#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

#include <unistd.h>  // isatty

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "data_parallel.hpp"
#include "weights_file.hpp"

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;
using Tensor = Kokkos::View<float****, Kokkos::LayoutRight, Memory>;
using Vector = Kokkos::View<float*, Kokkos::LayoutRight, Memory>;
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Memory>;
/// GEMM operands: unmanaged LayoutRight rank-2 Views, the type Kokkos Kernels hands to
/// cuBLAS or the host BLAS.
using GemmMatrix = Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::Device<Space, Memory>,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstGemmMatrix =
    Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::Device<Space, Memory>,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using UnmanagedTensor =
    Kokkos::View<float****, Kokkos::LayoutRight, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using UnmanagedVector =
    Kokkos::View<float*, Kokkos::LayoutRight, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr int kImage = 28, kInput = 86, kClasses = 10;

// Kokkos moved its math functions out of Experimental in 3.6 (and removed the old names
// in 4.x); use whichever this Kokkos has.
// (In a namespace of their own: declared at file scope they make nvcc's own exp(double)
// ambiguous in CUDA's math headers.)
namespace device_math {
#if KOKKOS_VERSION >= 30600
using Kokkos::exp;
using Kokkos::log;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
#endif
}  // namespace device_math

// ---------------------------------------------------------------------------------
// Fashion-MNIST (gzip-compressed idx files)
// ---------------------------------------------------------------------------------

struct Dataset {
  int count = 0;
  std::vector<std::uint8_t> images;  ///< count x 28 x 28
  std::vector<std::uint8_t> labels;  ///< count
};

class DataMissing : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::uint8_t> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    throw DataMissing("cannot open " + path +
                      ": the Fashion-MNIST files are missing (install Debian's "
                      "dataset-fashion-mnist package, or pass --data DIR)");
  std::vector<std::uint8_t> data;
  std::uint8_t buffer[1 << 16];
  int got = 0;
  while ((got = gzread(file, buffer, sizeof(buffer))) > 0)
    data.insert(data.end(), buffer, buffer + got);
  const bool failed = got < 0;
  gzclose(file);
  if (failed) throw std::runtime_error(path + ": not a readable gzip file");
  return data;
}

std::uint32_t big_endian32(const std::vector<std::uint8_t>& d, std::size_t at) {
  return (std::uint32_t(d[at]) << 24) | (std::uint32_t(d[at + 1]) << 16) |
         (std::uint32_t(d[at + 2]) << 8) | std::uint32_t(d[at + 3]);
}

/// Reads `<dir>/<prefix>-images-idx3-ubyte.gz` and the matching labels, checking the
/// idx headers (magic 2051 for images, 2049 for labels, 28x28, equal counts).
Dataset load_fashion_mnist(const std::string& dir, const std::string& prefix) {
  const std::string image_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string label_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  auto images = read_gzip(image_path);
  auto labels = read_gzip(label_path);
  if (images.size() < 16 || big_endian32(images, 0) != 2051 || big_endian32(images, 8) != kImage ||
      big_endian32(images, 12) != kImage)
    throw std::runtime_error(image_path + ": not an idx3 file of 28x28 images");
  if (labels.size() < 8 || big_endian32(labels, 0) != 2049)
    throw std::runtime_error(label_path + ": not an idx1 label file");
  Dataset ds;
  ds.count = static_cast<int>(big_endian32(images, 4));
  if (big_endian32(labels, 4) != std::uint32_t(ds.count) ||
      images.size() != 16 + std::size_t(ds.count) * kImage * kImage ||
      labels.size() != 8 + std::size_t(ds.count))
    throw std::runtime_error(image_path + " and " + label_path + " do not match (counts/sizes)");
  ds.images.assign(images.begin() + 16, images.end());
  ds.labels.assign(labels.begin() + 8, labels.end());
  return ds;
}

// ---------------------------------------------------------------------------------
// Device kernels of the example (everything else is kcnn or KokkosBlas)
// ---------------------------------------------------------------------------------

/// Fashion-MNIST's pixel mean and standard deviation (of x/255 over the training set).
constexpr float kPixelMean = 0.2860f, kPixelStd = 0.3530f;

/// x(b, 0, :, :) = the normalized 86x86 bilinear upsampling of image order[first + b]
/// (half-pixel centres, edges clamped: the usual "align_corners = false" resampling).
void upsample_batch(const Kokkos::View<const std::uint8_t*, Memory>& images,
                    const Kokkos::View<const int*, Memory>& order, int first, const Tensor& x) {
  const int batch = static_cast<int>(x.extent(0));
  const float scale = float(kImage) / float(kInput);
  Kokkos::parallel_for(
      "lenet5::upsample_bilinear",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>({0, 0, 0}, {batch, kInput, kInput}),
      KOKKOS_LAMBDA(const int b, const int i, const int j) {
        const std::int64_t image = order(first + b);
        const std::uint8_t* src = images.data() + image * kImage * kImage;
        auto coordinate = [&](int out, int& lo, int& hi, float& frac) {
          float s = (float(out) + 0.5f) * scale - 0.5f;
          s = s < 0.f ? 0.f : s;
          lo = static_cast<int>(s);
          lo = lo > kImage - 1 ? kImage - 1 : lo;
          hi = lo + 1 > kImage - 1 ? kImage - 1 : lo + 1;
          frac = s - float(lo);
        };
        int r0, r1, c0, c1;
        float fr, fc;
        coordinate(i, r0, r1, fr);
        coordinate(j, c0, c1, fc);
        const float top = (1.f - fc) * src[r0 * kImage + c0] + fc * src[r0 * kImage + c1];
        const float bottom = (1.f - fc) * src[r1 * kImage + c0] + fc * src[r1 * kImage + c1];
        const float v = ((1.f - fr) * top + fr * bottom) / 255.f;
        x(b, 0, i, j) = (v - kPixelMean) / kPixelStd;
      });
}

/// out(b, j) = act(out(b, j) + bias(j)) in place, act = ReLU or identity.
void add_bias(const Matrix& out, const UnmanagedVector& bias, bool relu) {
  const int cols = static_cast<int>(out.extent(1));
  Kokkos::parallel_for(
      "lenet5::dense_bias",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>({0, 0},
                                                    {static_cast<int>(out.extent(0)), cols}),
      KOKKOS_LAMBDA(const int b, const int j) {
        const float v = out(b, j) + bias(j);
        out(b, j) = relu && v < 0.f ? 0.f : v;
      });
}

/// dbias(j) = sum over the batch of d(b, j).
void column_sums(const Matrix& d, const UnmanagedVector& dbias) {
  const int rows = static_cast<int>(d.extent(0));
  Kokkos::parallel_for(
      "lenet5::dense_bias_gradient", Kokkos::RangePolicy<Space>(0, d.extent(1)),
      KOKKOS_LAMBDA(const int j) {
        float s = 0;
        for (int b = 0; b < rows; ++b)
          s += d(b, j);
        dbias(j) = s;
      });
}

struct LossAndCorrect {
  double loss = 0;
  int correct = 0;
};

/// Softmax cross-entropy of the logits against the labels of images order[first + b]:
/// the summed loss and the number of correct argmax predictions (evaluation and
/// inference; training steps use softmax_cross_entropy_step).
/// One sample's softmax over its logits: the largest logit and its class, the sum of
/// exp(logit - largest), and the cross-entropy loss for `label`.
struct SampleSoftmax {
  float top, sum, loss;
  int best;
};
KOKKOS_INLINE_FUNCTION SampleSoftmax sample_softmax(const Matrix& logits, int b, int label) {
  SampleSoftmax s{logits(b, 0), 0.f, 0.f, 0};
  for (int k = 1; k < kClasses; ++k)
    if (logits(b, k) > s.top) s.top = logits(b, k), s.best = k;
  for (int k = 0; k < kClasses; ++k)
    s.sum += device_math::exp(logits(b, k) - s.top);
  s.loss = device_math::log(s.sum) + s.top - logits(b, label);
  return s;
}

LossAndCorrect softmax_cross_entropy(const Matrix& logits,
                                     const Kokkos::View<const std::uint8_t*, Memory>& labels,
                                     const Kokkos::View<const int*, Memory>& order, int first) {
  const int batch = static_cast<int>(logits.extent(0));
  LossAndCorrect r;
  Kokkos::parallel_reduce(
      "lenet5::softmax_cross_entropy", Kokkos::RangePolicy<Space>(0, batch),
      KOKKOS_LAMBDA(const int b, double& loss_sum, int& correct_sum) {
        const int label = labels(order(first + b));
        const SampleSoftmax s = sample_softmax(logits, b, label);
        loss_sum += double(s.loss);
        correct_sum += s.best == label ? 1 : 0;
      },
      r.loss, r.correct);
  return r;
}

/// Each training sample's loss and whether its argmax was right, kept on the device for
/// one epoch (indexed by the sample's place among this rank's images of the epoch) and
/// summed only when progress is reported: the training steps never wait for the GPU.
struct EpochRecord {
  Kokkos::View<float*, Memory> loss;
  Kokkos::View<int*, Memory> correct;
  explicit EpochRecord(int samples)
      : loss("sample_loss", samples), correct("sample_correct", samples) {}

  /// The sums over the first `count` samples (waits for the steps that wrote them).
  LossAndCorrect sums(int count) const {
    LossAndCorrect r;
    const auto l = loss;
    const auto c = correct;
    Kokkos::parallel_reduce(
        "lenet5::epoch_record_sums", Kokkos::RangePolicy<Space>(0, count),
        KOKKOS_LAMBDA(const int i, double& loss_sum, int& correct_sum) {
          loss_sum += double(l(i));
          correct_sum += c(i);
        },
        r.loss, r.correct);
    return r;
  }
};

/// The training step's softmax cross-entropy: the gradient of the batch's mean loss,
/// (softmax - onehot) / batch, into dlogits, and each sample's loss and correctness
/// into `record` at [at, at + batch). No reduction, so nothing waits for it.
void softmax_cross_entropy_step(const Matrix& logits,
                                const Kokkos::View<const std::uint8_t*, Memory>& labels,
                                const Kokkos::View<const int*, Memory>& order, int first,
                                const Matrix& dlogits, const EpochRecord& record, int at) {
  const int batch = static_cast<int>(logits.extent(0));
  const auto sample_loss = record.loss;
  const auto sample_correct = record.correct;
  Kokkos::parallel_for(
      "lenet5::softmax_cross_entropy_step", Kokkos::RangePolicy<Space>(0, batch),
      KOKKOS_LAMBDA(const int b) {
        const int label = labels(order(first + b));
        const SampleSoftmax s = sample_softmax(logits, b, label);
        sample_loss(at + b) = s.loss;
        sample_correct(at + b) = s.best == label ? 1 : 0;
        for (int k = 0; k < kClasses; ++k)
          dlogits(b, k) =
              (device_math::exp(logits(b, k) - s.top) / s.sum - (k == label ? 1.f : 0.f)) /
              float(batch);
      });
}

/// SGD with momentum and weight decay on the flat parameter buffer:
/// v = momentum*v - lr*(g + decay*w), w += v.
void sgd_step(const Vector& weights, const Vector& grads, const Vector& velocity, float lr,
              float momentum, float decay) {
  Kokkos::parallel_for(
      "lenet5::sgd_momentum", Kokkos::RangePolicy<Space>(0, weights.extent(0)),
      KOKKOS_LAMBDA(const int i) {
        const float v = momentum * velocity(i) - lr * (grads(i) + decay * weights(i));
        velocity(i) = v;
        weights(i) += v;
      });
}

// ---------------------------------------------------------------------------------
// The network: parameters in one flat buffer (the weights file's payload)
// ---------------------------------------------------------------------------------

/// Views into a flat parameter (or gradient) buffer, in the weights file's order.
struct Layers {
  UnmanagedTensor w1, w2;  ///< (4, 1, 7, 7), (16, 4, 7, 7)
  UnmanagedVector b1, b2, b3, b4;
  GemmMatrix w3, w4;  ///< (32, 1024), (10, 32): out x in, row-major

  explicit Layers(const Vector& flat) {
    float* p = flat.data();
    auto take = [&p](std::size_t n) {
      float* at = p;
      p += n;
      return at;
    };
    using namespace lenet5;
    w1 = UnmanagedTensor(take(kShapes[0].weights()), 4, 1, 7, 7);
    b1 = UnmanagedVector(take(4), 4);
    w2 = UnmanagedTensor(take(kShapes[1].weights()), 16, 4, 7, 7);
    b2 = UnmanagedVector(take(16), 16);
    w3 = GemmMatrix(take(kShapes[2].weights()), 32, 1024);
    b3 = UnmanagedVector(take(32), 32);
    w4 = GemmMatrix(take(kShapes[3].weights()), 10, 32);
    b4 = UnmanagedVector(take(10), 10);
  }
};

/// He-normal weights for the ReLU layers, Glorot-normal for the output layer, zero
/// biases, from a fixed seed.
std::vector<float> initial_weights(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> flat;
  for (int l = 0; l < 4; ++l) {
    const auto& s = lenet5::kShapes[l];
    const double fan_in = double(s.in) * s.kh * s.kw, fan_out = double(s.out) * s.kh * s.kw;
    const double stddev = l < 3 ? std::sqrt(2.0 / fan_in) : std::sqrt(2.0 / (fan_in + fan_out));
    std::normal_distribution<double> dist(0.0, stddev);
    for (std::size_t i = 0; i < s.weights(); ++i)
      flat.push_back(static_cast<float>(dist(rng)));
    flat.insert(flat.end(), s.out, 0.0f);
  }
  return flat;
}

kcnn::Conv2dParams conv_params() {
  kcnn::Conv2dParams p;  // NCHW, stride 1, no padding
  p.activation = kcnn::Activation::ReLU;
  return p;
}

kcnn::Pool2dParams max_pool(int size) {
  kcnn::Pool2dParams p;
  p.mode = kcnn::PoolMode::Max;
  p.window_h = p.window_w = p.stride_h = p.stride_w = size;
  return p;
}

/// The activations of one batch (training keeps every one for the backward pass).
struct Activations {
  Tensor x, a1, p1, a2, p2;  ///< input, conv1+ReLU, pooled, conv2+ReLU, pooled
  Matrix h, logits;          ///< dense1+ReLU, dense2
  explicit Activations(int batch)
      : x("x", batch, 1, kInput, kInput),
        a1("a1", batch, 4, 80, 80),
        p1("p1", batch, 4, 40, 40),
        a2("a2", batch, 16, 34, 34),
        p2("p2", batch, 16, 8, 8),
        h("h", batch, 32),
        logits("logits", batch, kClasses) {}
};

/// to[i] = from[i] converted (float -> 16 bits rounds to nearest even; 16 bits -> float is
/// exact), for n contiguous elements on the device.
template <class To, class From>
void convert(To* to, const From* from, std::size_t n) {
  Kokkos::parallel_for(
      "lenet5::convert", Kokkos::RangePolicy<Space>(0, n),
      KOKKOS_LAMBDA(const std::size_t i) { to[i] = To(static_cast<float>(from[i])); });
}

/// Rounds every element of a float matrix to T and back (the store of a 16-bit result).
template <class T>
void round_through(const Matrix& m) {
  float* const data = m.data();
  Kokkos::parallel_for(
      "lenet5::round_to_16bit", Kokkos::RangePolicy<Space>(0, m.span()),
      KOKKOS_LAMBDA(const std::size_t i) { data[i] = static_cast<float>(T(data[i])); });
}

/// The dense layers: h = relu(p2 * w3^T + b3), logits = h * w4^T + b4; with a 16-bit
/// T, h and logits rounded to T (a 16-bit GEMM with float sums and 16-bit outputs).
template <class T = float>
void dense_forward(const Layers& net, const Tensor& p2, const Matrix& h, const Matrix& logits) {
  const int batch = static_cast<int>(p2.extent(0));
  const ConstGemmMatrix features(p2.data(), batch, 1024);
  KokkosBlas::gemm("N", "T", 1.0f, features, ConstGemmMatrix(net.w3), 0.0f,
                   GemmMatrix(h.data(), batch, 32));
  add_bias(h, net.b3, true);
  if constexpr (!std::is_same_v<T, float>) round_through<T>(h);
  KokkosBlas::gemm("N", "T", 1.0f, ConstGemmMatrix(h.data(), batch, 32), ConstGemmMatrix(net.w4),
                   0.0f, GemmMatrix(logits.data(), batch, kClasses));
  add_bias(logits, net.b4, false);
  if constexpr (!std::is_same_v<T, float>) round_through<T>(logits);
}

/// The training forward pass: every intermediate kept, convolutions unfused.
void forward_train(const Layers& net, Activations& a) {
  kcnn::conv2d_forward(Space(), a.x, net.w1, net.b1, a.a1, conv_params());
  kcnn::pool2d_forward(Space(), a.a1, a.p1, max_pool(2));
  kcnn::conv2d_forward(Space(), a.p1, net.w2, net.b2, a.a2, conv_params());
  kcnn::pool2d_forward(Space(), a.a2, a.p2, max_pool(4));
  dense_forward(net, a.p2, a.h, a.logits);
}

/// Gradients of the batch's mean loss into `grad` (Views into the gradient buffer),
/// given dlogits; `g` holds the activation gradients (same shapes as `a`).
/// `layer_done(l)` runs as soon as layer l's weight and bias gradients are written
/// (l = 3, 2, 1, 0: the backward order), before the layers below it are computed.
template <class LayerDone>
void backward(const Layers& net, const Layers& grad, const Activations& a, Activations& g,
              LayerDone&& layer_done) {
  const int batch = static_cast<int>(a.x.extent(0));
  const kcnn::Conv2dParams linear;  // the backward ops take the linear convolution
  // dense2: dW4 = dlogits^T h, db4 = colsum dlogits, dh = dlogits W4
  KokkosBlas::gemm("T", "N", 1.0f, ConstGemmMatrix(g.logits.data(), batch, kClasses),
                   ConstGemmMatrix(a.h.data(), batch, 32), 0.0f, grad.w4);
  column_sums(g.logits, grad.b4);
  layer_done(3);
  KokkosBlas::gemm("N", "N", 1.0f, ConstGemmMatrix(g.logits.data(), batch, kClasses),
                   ConstGemmMatrix(net.w4), 0.0f, GemmMatrix(g.h.data(), batch, 32));
  kcnn::activation_backward(Space(), kcnn::Activation::ReLU, a.h, g.h, g.h);
  // dense1: dW3 = dh^T p2, db3 = colsum dh, dp2 = dh W3
  KokkosBlas::gemm("T", "N", 1.0f, ConstGemmMatrix(g.h.data(), batch, 32),
                   ConstGemmMatrix(a.p2.data(), batch, 1024), 0.0f, grad.w3);
  column_sums(g.h, grad.b3);
  layer_done(2);
  KokkosBlas::gemm("N", "N", 1.0f, ConstGemmMatrix(g.h.data(), batch, 32), ConstGemmMatrix(net.w3),
                   0.0f, GemmMatrix(g.p2.data(), batch, 1024));
  // pool2, ReLU, conv2
  kcnn::pool2d_backward(Space(), a.a2, g.p2, g.a2, max_pool(4));
  kcnn::activation_backward(Space(), kcnn::Activation::ReLU, a.a2, g.a2, g.a2);
  kcnn::conv2d_backward_weights(Space(), a.p1, g.a2, grad.w2, grad.b2, linear);
  layer_done(1);
  kcnn::conv2d_backward_data(Space(), g.a2, net.w2, g.p1, linear);
  // pool1, ReLU, conv1 (no input gradient needed)
  kcnn::pool2d_backward(Space(), a.a1, g.p1, g.a1, max_pool(2));
  kcnn::activation_backward(Space(), kcnn::Activation::ReLU, a.a1, g.a1, g.a1);
  kcnn::conv2d_backward_weights(Space(), a.x, g.a1, grad.w1, grad.b1, linear);
  layer_done(0);
}

// ---------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------

struct Options {
  std::string command;
  std::string precision = "fp32";  ///< infer: fp32, or bf16 / fp16 beside fp32
  int epochs = 5, batch = 0, limit = 0;
  float lr = 0.02f;
  double min_accuracy = -1;
  bool skip_missing_data = false;
  /// (The default --out differs from the committed lenet5_weights.bin, which a run from
  /// examples/lenet5 would otherwise overwrite.)
  std::string data = LENET5_DATA_DIR, weights = LENET5_DEFAULT_WEIGHTS, out = "lenet5_trained.bin";
};

/// This process's rank in MPI_COMM_WORLD (0 without MPI): rank 0 alone prints the usage.
int world_rank = 0;

#if defined(KCNN_ENABLE_MPI)
/// MPI lives for the whole program (initialized first thing in main).
void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}
#endif

void print_usage(std::FILE* to) {
  if (world_rank != 0) return;
  std::fprintf(
      to,
      "usage: lenet5 train [--epochs E] [--batch B] [--lr LR] [--limit N] [--out FILE]\n"
      "                    [--data DIR] [--skip-missing-data]\n"
      "       lenet5 infer [--weights FILE] [--batch B] [--limit N] [--data DIR]\n"
      "                    [--precision fp32|bf16|fp16] [--min-accuracy A] [--skip-missing-data]\n"
      "       lenet5 --help\n"
      "train: SGD with momentum on the first N training images (default all; the\n"
      "  accuracy after each epoch on the first N test images), batch B\n"
      "  (default 64), E epochs (default 5) at the rate LR (default 0.02) except the last\n"
      "  two of three or more epochs, at LR / 5 and LR / 25 (with two epochs the second at\n"
      "  LR / 25); writes the weights to FILE (default lenet5_trained.bin).\n"
      "infer: the first N test images (default all) in batches of B (default 10000), with\n"
      "  the weights of FILE; --precision bf16|fp16 also runs them in 16 bits;\n"
      "  --min-accuracy A (0 to 1) exits with 1 below A.\n"
      "--skip-missing-data: exit with 77 (CTest's skip) where the data set is missing.\n"
      "Data-parallel training (a build with MPI): mpirun -np R lenet5 train ...; each\n"
      "  rank takes B / R images of every batch of B, the gradients are averaged over the\n"
      "  ranks, rank 0 prints and writes the weights.\n"
      "defaults: --data %s, --weights %s\n"
      "Arguments starting with --kokkos- go to Kokkos (--kokkos-help lists them).\n",
      LENET5_DATA_DIR, LENET5_DEFAULT_WEIGHTS);
}

[[noreturn]] void usage(const std::string& why) {
  if (world_rank == 0) std::fprintf(stderr, "lenet5: %s\n", why.c_str());
  print_usage(stderr);
  std::exit(2);
}

/// The command line without the --kokkos-* arguments (those are Kokkos'): exits with 0
/// after the usage for --help, with 2 after it for anything it cannot take.
Options parse(const std::vector<std::string>& args) {
  Options o;
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      print_usage(stdout);
      std::exit(0);
    }
  if (args.empty()) usage("missing command (train or infer)");
  o.command = args[0];
  if (o.command != "train" && o.command != "infer") usage("unknown command '" + o.command + "'");
  const bool train = o.command == "train";
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) usage("missing value after " + arg);
      return args[++i];
    };
    auto only = [&](bool for_train) {
      if (for_train != train) usage(arg + " is not an option of lenet5 " + o.command);
    };
    auto positive = [&](const std::string& v) {
      char* end = nullptr;
      errno = 0;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || errno || n < 1 || n > (1 << 30))
        usage(arg + " needs a positive integer, not '" + v + "'");
      return static_cast<int>(n);
    };
    // A finite number in [low, high] (low excluded where `open_low`).
    auto number = [&](const std::string& v, double low, double high, bool open_low,
                      const char* what) {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !std::isfinite(d) || d < low || (open_low && d == low) || d > high)
        usage(arg + " needs " + what + ", not '" + v + "'");
      return d;
    };
    if (arg == "--epochs")
      only(true), o.epochs = positive(value());
    else if (arg == "--lr")
      only(true), o.lr = static_cast<float>(number(value(), 0, 100, true, "a rate above 0"));
    else if (arg == "--out")
      only(true), o.out = value();
    else if (arg == "--weights")
      only(false), o.weights = value();
    else if (arg == "--min-accuracy")
      only(false), o.min_accuracy = number(value(), 0, 1, false, "an accuracy from 0 to 1");
    else if (arg == "--precision") {
      only(false), o.precision = value();
      if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16")
        usage("--precision takes fp32, bf16 or fp16, not '" + o.precision + "'");
    } else if (arg == "--batch")
      o.batch = positive(value());
    else if (arg == "--limit")
      o.limit = positive(value());
    else if (arg == "--data")
      o.data = value();
    else if (arg == "--skip-missing-data")
      o.skip_missing_data = true;
    else
      usage("unknown option '" + arg + "' for lenet5 " + o.command);
  }
  return o;
}

/// Fails before training when `path` cannot be written (rather than after the epochs):
/// opens it for appending, and removes it again if it did not exist.
void check_writable(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw std::runtime_error("--out " + path + " is a directory");
  const bool existed = static_cast<bool>(std::ifstream(path));
  {
    std::ofstream probe(path, std::ios::binary | std::ios::app);
    if (!probe)
      throw std::runtime_error("cannot write --out " + path + ": " + std::strerror(errno));
  }
  if (!existed) std::remove(path.c_str());
}

/// An unmanaged host View of a std::vector's elements (for deep_copy).
template <class T>
Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host_view(
    const std::vector<T>& v) {
  return Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
      v.data(), v.size());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A dataset on the device, with the order in which its images are taken (the identity
/// until training shuffles it).
struct DeviceData {
  Kokkos::View<std::uint8_t*, Memory> images, labels;
  Kokkos::View<int*, Memory> order;
  explicit DeviceData(const Dataset& ds)
      : images("images", ds.images.size()),
        labels("labels", ds.labels.size()),
        order("order", ds.count) {
    Kokkos::deep_copy(images, host_view(ds.images));
    Kokkos::deep_copy(labels, host_view(ds.labels));
    std::vector<int> identity(ds.count);
    std::iota(identity.begin(), identity.end(), 0);
    set_order(identity);
  }
  void set_order(const std::vector<int>& host) const { Kokkos::deep_copy(order, host_view(host)); }
};

/// The number of images in [begin, end) of `data` that the network classifies right,
/// with the training forward pass (used between epochs, each rank on its share).
int count_correct(const Layers& net, const DeviceData& data, int begin, int end, int batch) {
  int correct = 0;
  Activations full(batch);
  for (int first = begin; first < end; first += batch) {
    const int n = std::min(batch, end - first);
    Activations partial(n == batch ? 0 : n);
    Activations& a = n == batch ? full : partial;
    upsample_batch(data.images, data.order, first, a.x);
    forward_train(net, a);
    correct += softmax_cross_entropy(a.logits, data.labels, data.order, first).correct;
  }
  return correct;
}

/// Where each layer's weights and biases start in the flat parameter buffer (the weights
/// file's order), and the buffer's size: layer l is [offsets[l], offsets[l + 1]).
std::array<std::size_t, 5> layer_offsets() {
  std::array<std::size_t, 5> offsets{};
  for (int l = 0; l < 4; ++l)
    offsets[l + 1] = offsets[l] + lenet5::kShapes[l].floats();
  return offsets;
}

int train(const Options& o, lenet5::Ranks& ranks) {
  const int R = ranks.size();
  const bool rank0 = ranks.rank() == 0;
  if (rank0) check_writable(o.out);
  Dataset train_set, test_set;
  try {
    train_set = load_fashion_mnist(o.data, "train");
    test_set = load_fashion_mnist(o.data, "t10k");
  } catch (const DataMissing& e) {
    if (!o.skip_missing_data) throw;
    if (rank0) std::printf("skipped: %s\n", e.what());
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  if (o.limit && o.limit < train_set.count) {  // the first N images
    train_set.count = o.limit;
    train_set.images.resize(std::size_t(o.limit) * kImage * kImage);
    train_set.labels.resize(o.limit);
  }
  const int batch = o.batch ? o.batch : 64;
  if (batch > train_set.count)
    throw std::runtime_error("--batch " + std::to_string(batch) + " exceeds the " +
                             std::to_string(train_set.count) +
                             " training images: no step could run");
  // Each rank takes batch / R images of every global batch.
  if (batch % R != 0)
    throw std::runtime_error("--batch " + std::to_string(batch) + " does not split evenly among " +
                             std::to_string(R) + " ranks (each takes an equal share)");
  const int local_batch = batch / R;
  const DeviceData train_data(train_set), test_data(test_set);
  // A run limited to N training images is a quick one: its per-epoch accuracy takes the
  // first N test images too.
  const int test_count = o.limit ? std::min(o.limit, test_set.count) : test_set.count;

  const std::vector<float> init = initial_weights(20261122);
  Vector weights("weights", init.size()), grads("grads", init.size()),
      velocity("velocity", init.size());
  Kokkos::deep_copy(weights, host_view(init));
  ranks.broadcast_from_rank0(Space(), weights);  // identical replicas
  const Layers net(weights), grad(grads);
  Activations a(local_batch), g(local_batch);
  const auto offsets = layer_offsets();
  // Layer l's gradient (weights and biases: one contiguous slice) averaged over the
  // ranks as soon as the backward pass has written it.
  auto layer_done = [&](int l) {
    ranks.start_layer_mean(Space(),
                           Kokkos::subview(grads, std::make_pair(offsets[l], offsets[l + 1])));
    ranks.progress();
  };
  std::mt19937 shuffle_rng(7);
  std::vector<int> order(train_set.count);
  std::iota(order.begin(), order.end(), 0);
  const int steps = train_set.count / batch;  // the last partial batch is dropped
  EpochRecord record(steps * local_batch);
  // Progress: a bar on rank 0's terminal every 2% of the steps, plain lines every 10%
  // otherwise (every rank reports at the same steps: a report sums over the ranks). A
  // report is the only time the host waits for the GPU within an epoch.
  const bool terminal = ranks.rank0_value(rank0 && isatty(fileno(stdout)));
  const int report_every = std::max(1, steps / (terminal ? 50 : 10));

  if (rank0) {
    std::printf("lenet5 train on %s: %d images, batch %d, %d epochs, SGD lr %g momentum 0.9",
                Space::name(), train_set.count, batch, o.epochs, double(o.lr));
    if (R > 1) std::printf(", %d ranks of %d images a step", R, local_batch);
    std::printf("\n");
  }
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    // Step schedule: the full rate, then a fifth for the second-to-last epoch and a
    // twenty-fifth for the last, to settle into a minimum; the first epoch always runs
    // at the rate given.
    const float lr = epoch == 0 || epoch < o.epochs - 2 ? o.lr
                     : epoch < o.epochs - 1             ? o.lr * 0.2f
                                                        : o.lr * 0.04f;
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    train_data.set_order(order);
    const auto t0 = std::chrono::steady_clock::now();
    LossAndCorrect totals;  // of the global batches so far (at the last report)
    for (int step = 0; step < steps; ++step) {
      // This rank's shard of the global batch; its gradient is the shard's mean.
      const int first = step * batch + ranks.rank() * local_batch;
      upsample_batch(train_data.images, train_data.order, first, a.x);
      forward_train(net, a);
      softmax_cross_entropy_step(a.logits, train_data.labels, train_data.order, first, g.logits,
                                 record, step * local_batch);
      backward(net, grad, a, g, layer_done);
      ranks.finish_gradients();  // the mean over the ranks: the global batch's gradient
      sgd_step(weights, grads, velocity, lr, 0.9f, 5e-4f);
      const bool last = step + 1 == steps;
      if ((step + 1) % report_every != 0 && !last) continue;
      const LossAndCorrect mine = record.sums((step + 1) * local_batch);
      totals = ranks.sum(mine);
      const int seen = (step + 1) * batch;
      const double t = seconds_since(t0);
      if (!rank0) continue;
      if (terminal) {
        const int width = 30, filled = int(double(width) * (step + 1) / steps);
        std::printf("\repoch %d/%d [%s%s] %5d/%d  %6.0f img/s  loss %.4f  train acc %.4f",
                    epoch + 1, o.epochs, std::string(filled, '#').c_str(),
                    std::string(width - filled, '.').c_str(), seen, steps * batch, seen / t,
                    totals.loss / seen, double(totals.correct) / seen);
      } else {
        std::printf("epoch %d/%d: %d/%d images, %.0f img/s, loss %.4f, train acc %.4f\n", epoch + 1,
                    o.epochs, seen, steps * batch, seen / t, totals.loss / seen,
                    double(totals.correct) / seen);
      }
      std::fflush(stdout);
    }
    Kokkos::fence();
    const double epoch_seconds = seconds_since(t0);
    const int seen = steps * batch;
    const double loss_sum = totals.loss;
    if (terminal && rank0) std::printf("\n");
    // The test images split among the ranks.
    const int test_begin = int(std::int64_t(test_count) * ranks.rank() / R),
              test_end = int(std::int64_t(test_count) * (ranks.rank() + 1) / R);
    const double test_accuracy =
        double(
            ranks.sum(LossAndCorrect{0, count_correct(net, test_data, test_begin, test_end, 500)})
                .correct) /
        test_count;
    if (rank0) {
      std::printf("epoch %d/%d: %.1f s (%.0f img/s), lr %g, mean loss %.6f, test accuracy %.4f\n",
                  epoch + 1, o.epochs, epoch_seconds, seen / epoch_seconds, double(lr),
                  loss_sum / seen, test_accuracy);
      std::fflush(stdout);
    }
  }
  if (!rank0) return 0;  // rank 0 writes the weights

  std::vector<float> host(init.size());
  Kokkos::deep_copy(
      Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(),
                                                                                       host.size()),
      weights);
  lenet5::save_weights(o.out, host);
  std::printf("weights written to %s (%zu floats)\n", o.out.c_str(), host.size());
  return 0;
}

/// The result of one pass over the test set.
struct InferResult {
  int correct = 0;
  double conv1_ms = 0, conv2_ms = 0, total_ms = 0;
};

/// One inference pass over the first `count` test images in batches of `batch`, the
/// convolutions in element type T (float, or a 16-bit type: see the file comment).
/// `weights`: the float parameters.
template <class T>
InferResult infer_pass(const DeviceData& data, const Vector& weights, int count, int batch) {
  using TTensor = Kokkos::View<T****, Kokkos::LayoutRight, Memory>;
  using TVector = Kokkos::View<T*, Kokkos::LayoutRight, Memory>;
  constexpr bool is_float = std::is_same_v<T, float>;
  // 16 bits: the parameters rounded once (dense ones kept as float copies of the rounded
  // values), the convolutions' in the type itself.
  Vector rounded("weights_rounded", weights.span());
  Kokkos::deep_copy(rounded, weights);
  if constexpr (!is_float) round_through<T>(Matrix(rounded.data(), rounded.span(), 1));
  const Layers net(rounded);
  auto to_type = [](const auto& v, const std::string& label, auto... extents) {
    using V = std::conditional_t<sizeof...(extents) == 4, TTensor, TVector>;
    V out(label, extents...);
    convert(out.data(), v.data(), out.span());
    return out;
  };
  const TTensor w1 = to_type(net.w1, "w1", 4, 1, 7, 7), w2 = to_type(net.w2, "w2", 16, 4, 7, 7);
  const TVector b1 = to_type(net.b1, "b1", 4), b2 = to_type(net.b2, "b2", 16);

  // The fused layers: conv + bias + ReLU + max pool in one call each, Auto algorithm.
  kcnn::Conv2dParams c1 = conv_params(), c3 = conv_params();
  c1.pool = max_pool(2);
  c3.pool = max_pool(4);
  InferResult r;
  Tensor x("x", batch, 1, kInput, kInput), p2("p2", batch, 16, 8, 8);
  TTensor xt, p1t("p1", batch, 4, 40, 40), p2t;  // float: x and p2 themselves
  if constexpr (is_float) {
    xt = x, p2t = p2;
  } else {
    xt = TTensor("x_16bit", batch, 1, kInput, kInput);
    p2t = TTensor("p2_16bit", batch, 16, 8, 8);
  }
  Matrix h("h", batch, 32), logits("logits", batch, kClasses);
  // The layers on the first n images of x; returns their logits.
  auto layers = [&](int n, double* conv1_ms, double* conv2_ms) {
    const auto first_n = std::make_pair(0, n);
    auto xs = Kokkos::subview(xt, first_n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
    auto p1s = Kokkos::subview(p1t, first_n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
    auto p2s = Kokkos::subview(p2t, first_n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
    if constexpr (!is_float) convert(xt.data(), x.data(), xs.span());
    Kokkos::fence();
    auto t0 = std::chrono::steady_clock::now();
    kcnn::conv2d_forward(Space(), xs, w1, b1, p1s, c1);
    Kokkos::fence();
    if (conv1_ms) *conv1_ms += 1e3 * seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    kcnn::conv2d_forward(Space(), p1s, w2, b2, p2s, c3);
    Kokkos::fence();
    if (conv2_ms) *conv2_ms += 1e3 * seconds_since(t0);
    if constexpr (!is_float) convert(p2.data(), p2t.data(), p2s.span());
    const auto ls = Kokkos::subview(logits, first_n, Kokkos::ALL);
    dense_forward<T>(net,
                     Tensor(Kokkos::subview(p2, first_n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL)),
                     Matrix(Kokkos::subview(h, first_n, Kokkos::ALL)), Matrix(ls));
    return Matrix(ls);
  };
  // One untimed pass over the first batch: first-call costs (kernel loading, the cached
  // scratch of the fused pooling, BLAS handles) are not part of a layer's Op Time.
  upsample_batch(data.images, data.order, 0, x);
  layers(batch, nullptr, nullptr);
  Kokkos::fence();
  for (int first = 0; first < count; first += batch) {
    const int n = std::min(batch, count - first);
    auto xs = Kokkos::subview(x, std::make_pair(0, n), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
    Kokkos::fence();
    const auto t_total = std::chrono::steady_clock::now();
    upsample_batch(data.images, data.order, first, Tensor(xs));
    const Matrix ls = layers(n, &r.conv1_ms, &r.conv2_ms);
    r.correct += softmax_cross_entropy(ls, data.labels, data.order, first).correct;
    r.total_ms += 1e3 * seconds_since(t_total);
  }
  return r;
}

int infer(const Options& o) {
  const std::vector<float> host = lenet5::load_weights(o.weights);
  Dataset test_set;
  try {
    test_set = load_fashion_mnist(o.data, "t10k");
  } catch (const DataMissing& e) {
    if (!o.skip_missing_data) throw;
    std::printf("skipped: %s\n", e.what());
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  const int count = o.limit ? std::min(o.limit, test_set.count) : test_set.count;
  const int batch = std::min(o.batch ? o.batch : 10000, count);
  const DeviceData data(test_set);
  Vector weights("weights", host.size());
  Kokkos::deep_copy(weights, host_view(host));

  std::printf("lenet5 infer on %s: %d test images, batch %d, weights %s\n", Space::name(), count,
              batch, o.weights.c_str());
  auto report = [&](const char* precision, const InferResult& r) {
    std::printf("[%s] conv1 1->4 7x7 86x86 +ReLU +2x2 max pool: Op Time %9.3f ms\n", precision,
                r.conv1_ms);
    std::printf("[%s] conv2 4->16 7x7 40x40 +ReLU +4x4 max pool: Op Time %9.3f ms\n", precision,
                r.conv2_ms);
    std::printf("[%s] whole network (upsampling to softmax):     %9.3f ms\n", precision,
                r.total_ms);
    const double accuracy = double(r.correct) / count;
    std::printf("[%s] accuracy %.4f (%d/%d)\n", precision, accuracy, r.correct, count);
    return accuracy;
  };
  const double fp32_accuracy = report("fp32", infer_pass<float>(data, weights, count, batch));
  double accuracy = fp32_accuracy;
  if (o.precision != "fp32") {
    const InferResult r =
        o.precision == "bf16"
            ? infer_pass<kcnn::bfloat16>(data, weights, count, batch)
            : infer_pass<Kokkos::Experimental::half_t>(data, weights, count, batch);
    accuracy = report(o.precision.c_str(), r);
    std::printf("%s accuracy - fp32 accuracy: %+.2f points\n", o.precision.c_str(),
                100.0 * (accuracy - fp32_accuracy));
  }
  if (o.min_accuracy >= 0 && accuracy < o.min_accuracy) {
    std::fprintf(stderr, "accuracy %.4f is below the required %.4f\n", accuracy, o.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
#if defined(KCNN_ENABLE_MPI)
  // MPI first: every rank reads the same arguments; rank 0 alone prints the usage.
  MPI_Init(&argc, &argv);
  std::atexit(finalize_mpi);  // also after a usage error's exit
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
#endif
  // The arguments are read before Kokkos starts (so that --help is ours); Kokkos gets
  // the --kokkos-* ones.
  std::vector<std::string> args;
  std::vector<char*> kokkos_args = {argv[0]};
  bool device_chosen = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kokkos-", 9) == 0) {
      kokkos_args.push_back(argv[i]);
      device_chosen |= std::strncmp(argv[i], "--kokkos-device", 15) == 0 ||
                       std::strncmp(argv[i], "--kokkos-map-device-id-by", 25) == 0 ||
                       std::strncmp(argv[i], "--kokkos-num-devices", 20) == 0;
    } else {
      args.push_back(argv[i]);
    }
  }
  const Options o = parse(args);
  // libgomp read OMP_PROC_BIND when the program loaded: unset, it binds no threads, and
  // Kokkos would print a warning about it on every run. Set it to what holds.
  setenv("OMP_PROC_BIND", "false", 0);
  lenet5::Ranks ranks;
#if defined(KCNN_ENABLE_MPI) && defined(KOKKOS_ENABLE_CUDA)
  // One GPU per rank of a node (local rank modulo the GPUs), unless the command line
  // chose.
  std::string device_argument = ranks.kokkos_device_argument();
  if (!device_chosen) kokkos_args.push_back(device_argument.data());
#endif
  (void)device_chosen;
  int kokkos_argc = static_cast<int>(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::ScopeGuard kokkos(kokkos_argc, kokkos_args.data());
  try {
    if (o.command == "infer" && ranks.size() > 1) {
      if (ranks.rank() == 0)
        std::fprintf(stderr, "lenet5: error: lenet5 infer runs on one rank, not %d\n",
                     ranks.size());
      return 1;
    }
    return o.command == "train" ? train(o, ranks) : infer(o);
  } catch (const std::exception& e) {
    if (ranks.size() == 1) {
      std::fprintf(stderr, "lenet5: error: %s\n", e.what());
      return 1;
    }
    // The other ranks may be waiting in a collective: stop them all.
    std::fprintf(stderr, "lenet5: error (rank %d of %d): %s\n", ranks.rank(), ranks.size(),
                 e.what());
#if defined(KCNN_ENABLE_MPI)
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    return 1;
  }
}
