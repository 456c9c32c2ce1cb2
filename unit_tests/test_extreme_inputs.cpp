// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Inputs at the edges of the integer types, each one a failure the fuzz target
// (unit_tests/fuzz) found: Views whose extents multiply past 2^63, strides, padding and
// dilations near INT_MAX, pooling windows of 2^31 cells or more, pooling over an input
// without rows, the weight gradient of an empty batch with a huge output, and the data
// gradient of images without columns. Every call either throws kcnn::Error with its
// output untouched or matches the double reference.
#include "test_support.hpp"

#include <climits>

namespace kcnn_test {
namespace {

using kcnn::ConvAlgo;
using kcnn::Layout;
using kcnn::PoolMode;
using Space = Kokkos::DefaultExecutionSpace;
using T4 = Tensor4<float, Space>;
using T1 = Tensor1<float, Space>;
template <class T>
using Unmanaged4 = Kokkos::View<T****, Kokkos::LayoutRight, Space::memory_space,
                                Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Runs `call`, expects kcnn::Error whose message contains `needle`, and `out` (poisoned
/// before) still all NaN.
template <class Out, class F>
void expect_refused_with(const Out& out, F&& call, const std::string& needle) {
  poison(out);
  try {
    call();
    ADD_FAILURE() << "no exception; expected kcnn::Error mentioning '" << needle << "'";
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  Space().fence();
  EXPECT_TRUE(all_nan(to_host(out))) << "a refused call wrote its output";
}

// Kokkos keeps a View's extents as size_t and does not check their product: an unmanaged
// View can claim 2^64 elements (its span wraps to 0). kcnn computes sizes in int64 and
// refuses such Views before reading a byte (the fuzzer's first finding: they were taken
// as empty, or indexed with wrapped sizes).
TEST(ExtremeInputs, ViewsWhoseExtentsMultiplyPast2To63AreRefused) {
  const std::size_t e = std::size_t(1) << 16;  // e^4 = 2^64 (rank-4 extents are 32-bit)
  T4 backing("backing", 1, 1, 1, 16);
  const Unmanaged4<float> huge(backing.data(), e, e, e, e);
  const std::string needle = "2^63 or more";
  T4 y("y", 1, 1, 2, 2), w("w", 1, 1, 1, 1);
  T1 none("none", 0);
  kcnn::Conv2dParams conv;
  expect_refused_with(
      y, [&] { kcnn::conv2d_forward(Space(), huge, w, y, conv); }, needle);
  expect_refused_with(
      y, [&] { kcnn::conv2d_forward(Space(), w, huge, y, conv); }, needle);
  kcnn::Pool2dParams pool;
  expect_refused_with(
      y, [&] { kcnn::pool2d_forward(Space(), huge, y, pool); }, needle);
  expect_refused_with(
      y, [&] { kcnn::pool2d_backward(Space(), huge, y, y, pool); }, needle);
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> cols("cols", 1, 4);
  expect_refused_with(
      cols, [&] { kcnn::im2col(Space(), huge, 1, 1, conv, cols); }, needle);
  expect_refused_with(
      y, [&] { kcnn::conv2d_backward_data(Space(), huge, w, y, conv); }, needle);
  expect_refused_with(
      w, [&] { kcnn::conv2d_backward_weights(Space(), huge, y, w, conv); }, needle);
  expect_refused_with(
      y, [&] { kcnn::activation_backward(Space(), kcnn::Activation::ReLU, huge, huge, y); },
      needle);
  // An extent past 2^63 with another one 0 holds no element, but no size may be formed
  // from it either (rank 1 keeps 64-bit extents).
  const Kokkos::View<float*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      long_bias(backing.data(), (std::size_t(1) << 63) + 1);
  T4 x("x", 1, 1, 2, 2);
  expect_refused_with(
      y, [&] { kcnn::conv2d_forward(Space(), x, w, long_bias, y, conv); }, needle);
}

// Pooling an input without rows (or columns) with padding gave windows of padding only:
// -inf for Max, a zero divisor for Average without count_include_pad.
TEST(ExtremeInputs, PoolingAnInputWithoutRowsIsRefused) {
  kcnn::Pool2dParams pool;
  pool.window_h = pool.window_w = 2, pool.pad_h = pool.pad_w = 1, pool.stride_h = 1;
  for (const auto& xe : {std::array{1, 2, 0, 3}, std::array{1, 2, 3, 0}}) {
    T4 x("x", xe[0], xe[1], xe[2], xe[3]);
    T4 y("y", 1, 2, xe[2] + 1, (xe[3] + 2 - 2) / 2 + 1);
    expect_refused_with(
        y, [&] { kcnn::pool2d_forward(Space(), x, y, pool); }, "no rows or no columns");
  }
}

// A window of 2^31 cells or more overflowed the Average divisor (an int).
TEST(ExtremeInputs, PoolWindowsOf2To31CellsAreRefused) {
  kcnn::Pool2dParams pool;
  pool.window_h = 1 << 16, pool.window_w = 1 << 15, pool.pad_h = pool.pad_w = 1 << 14;
  T4 backing("backing", 1, 1, 1, 16), y("y", 1, 1, 1, 1);
  const Unmanaged4<float> x(backing.data(), 1, 1, 1 << 15, 1 << 15);  // refused unread
  expect_refused_with(
      y, [&] { kcnn::pool2d_forward(Space(), x, y, pool); }, "must be below 2^31");
  kcnn::Conv2dParams conv;
  conv.pool = pool;
  T4 w("w", 1, 1, 1, 1);
  expect_refused_with(
      y, [&] { kcnn::conv2d_forward(Space(), x, w, y, conv); }, "must be below 2^31");
}

/// Runs `c` with every algorithm, T elements, y poisoned first: each computes it like the
/// double reference or refuses it with kcnn::Error and y untouched; Reference and Auto
/// must compute it, and with `tiled_host_computes` so must Tiled on host backends in NHWC
/// (float and double take the register-blocked kernel there: no tile to outgrow).
template <class T>
void expect_computed_or_refused(const ConvCase& c, bool tiled_host_computes) {
  const RandomConvInputs<T, Space> in(c);
  const auto want = host_conv2d(c, in.xv, in.wv, in.bv);
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  constexpr bool host = std::is_same_v<Space::memory_space, Kokkos::HostSpace>;
  for (ConvAlgo algo : conv2d_test_algorithms()) {
    SCOPED_TRACE(kcnn::to_string(algo));
    poison(y);
    auto params = c.params();
    params.algo = algo;
    try {
      if (c.bias) {
        kcnn::conv2d_forward(Space(), in.x, in.w, in.bias, y, params);
      } else {
        kcnn::conv2d_forward(Space(), in.x, in.w, y, params);
      }
    } catch (const kcnn::Error& e) {
      EXPECT_NE(algo, ConvAlgo::Reference) << e.what();
      EXPECT_NE(algo, ConvAlgo::Auto) << e.what();
      EXPECT_FALSE(tiled_host_computes && host && algo == ConvAlgo::Tiled && c.nhwc()) << e.what();
      Space().fence();
      EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";
      continue;
    }
    Space().fence();
    EXPECT_LE(relative_error(to_host(y), want), tolerance<T>());
  }
}

/// Convolutions whose stride, padding or dilation is near INT_MAX and whose output is
/// small: every algorithm computes them like the reference or refuses them with
/// kcnn::Error (Tiled's halo tile, ImplicitGemm's 2^29 padded extents, TensorCoreGemm on
/// hosts); Reference and Auto must compute them. Before, Tiled's tile sizes and
/// ImplicitGemm's limit check overflowed int.
TEST(ExtremeInputs, HugeStridesPaddingAndDilationsComputeOrRefuse) {
  const std::vector<ConvCase> cases = {
      // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
      {"stride_int_max", 1, 2, 5, 5, 3, 2, 2, INT_MAX - 1, INT_MAX - 1, 3, 3},
      {"padding_int_max", 1, 1, 1, 1, 2, 1, 1, INT_MAX, INT_MAX, INT_MAX, INT_MAX},
      {"padding_2to29", 2, 1, 5, 4, 2, 2, 2, 1 << 30, 1 << 30, 1 << 29, 1 << 29},
      {"dilation_int_max", 1, 2, 6, 6, 2, 2, 2, 1, 1, 1 << 30, 1 << 30, INT_MAX, INT_MAX},
      {"stride_2to27_wide", 1, 1, 3, 300, 1, 1, 3, 1, 1 << 27, 0, 0},
  };
  for (const ConvCase& base : cases) {
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout, c.bias = true, c.activation = kcnn::Activation::Tanh;
      SCOPED_TRACE(c.name + std::string(" ") + kcnn::to_string(layout));
      expect_computed_or_refused<float>(c, false);
    }
  }
}

/// The fuzzer's find in Tiled's register-blocked host kernel (NHWC, double, Auto picking
/// Tiled): stride 2^29 with padding 2^31 - 1 and 8 output columns, whose window origins
/// w * stride_w - pad_w fit int but whose products w * stride_w (w >= 4) did not; the
/// same in the rows, and a dilation of 2^31 - 1 whose third tap r * dilation_h
/// overflowed. The overflow itself shows under UBSan (the asan and fuzz presets); every
/// build checks the results.
TEST(ExtremeInputs, TiledHostKernelWindowOriginsPastInt) {
  const std::vector<ConvCase> cases = {
      // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
      {"fuzz_stride_w_2to29_pad_w_int_max", 3, 2, 4, 4, 1, 2, 2, 1, 1 << 29, 3, INT_MAX, 1, 3},
      {"stride_h_2to29_pad_h_int_max", 2, 3, 4, 5, 9, 2, 2, 1 << 29, 1, INT_MAX, 1, 3, 1},
      {"dilation_h_int_max_three_taps", 2, 3, 1, 6, 20, 3, 2, 1, 1, INT_MAX, 1, INT_MAX, 1},
  };
  for (ConvCase c : cases) {
    c.layout = Layout::NHWC, c.activation = kcnn::Activation::Tanh;
    for (bool bias : {false, true}) {
      c.bias = bias;
      SCOPED_TRACE(c.name + (bias ? " bias" : ""));
      expect_computed_or_refused<float>(c, true);
      expect_computed_or_refused<double>(c, true);
    }
  }
}

// Pooling with padding and stride near INT_MAX: the host kernel's first inner column
// (pad + stride - 1) overflowed int.
TEST(ExtremeInputs, PoolingWithHugePaddingAndStrides) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (int mode = 0; mode < 3; ++mode) {
      PoolCase c{"huge_pad_w", 2, 3, 3, 4, 1, (1 << 30) + 1, 1, (1 << 30) + 5, 0, 1 << 30};
      c.layout = layout;
      c.mode = mode == 0 ? PoolMode::Max : PoolMode::Average;
      c.count_include_pad = mode == 1;
      SCOPED_TRACE(std::string(kcnn::to_string(layout)) + " mode " + std::to_string(mode));
      const auto xv = random_values(product(c.x_extents()), 5);
      const auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
      const auto ye = c.y_extents();
      T4 y("y", ye[0], ye[1], ye[2], ye[3]);
      poison(y);
      kcnn::pool2d_forward(Space(), x, y, c.params());
      Space().fence();
      EXPECT_LE(relative_error(to_host(y), host_pool2d(c, xv, {})), tolerance<float>());
    }
}

// The weight gradient of an empty batch is zero, however large P*Q is: it was refused
// for exceeding BLAS' 32-bit extents, which no GEMM of an empty batch needs.
TEST(ExtremeInputs, WeightGradientOfAnEmptyBatchWithAHugeOutput) {
  kcnn::Conv2dParams params;
  params.pad_h = params.pad_w = 1 << 29;  // P = Q = 2^30 + 1
  T4 x("x", 0, 2, 1, 1), dy("dy", 0, 3, (1 << 30) + 1, (1 << 30) + 1), dw("dw", 3, 2, 1, 1);
  T1 db("db", 3);
  poison(dw), poison(db);
  kcnn::conv2d_backward_weights(Space(), x, dy, dw, db, params);
  Space().fence();
  for (double v : to_host(dw))
    EXPECT_EQ(v, 0.0);
  for (double v : to_host(db))
    EXPECT_EQ(v, 0.0);
}

// The data gradient and col2im of images without columns (W = 0) but with 2^31 - 1
// rows: nothing to write, yet the host col2im walked its N*H rows (the fuzzer's timeout:
// minutes for one call). A stride of INT_MAX and pad_w = 1 keep the output at 1 x 1.
TEST(ExtremeInputs, GradientsOfImagesWithoutColumnsReturnAtOnce) {
  kcnn::Conv2dParams params;
  params.stride_h = params.stride_w = INT_MAX;
  params.pad_w = 1;
  constexpr int H = INT_MAX;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(layout));
    params.layout = layout;
    const bool nchw = layout == Layout::NCHW;
    T4 dx = nchw ? T4("dx", 2, 3, H, 0) : T4("dx", 2, H, 0, 3);
    const T4 w = make_tensor<float, Space>(
        "w", nchw ? std::array{4, 3, 1, 1} : std::array{4, 1, 1, 3}, random_values(12, 1));
    const T4 dy = make_tensor<float, Space>(
        "dy", nchw ? std::array{2, 4, 1, 1} : std::array{2, 1, 1, 4}, random_values(8, 2));
    kcnn::conv2d_backward_data(Space(), dy, w, dx, params);
    // The unrolled matrix of a 1 x 1 window over the two images' 1 x 1 outputs.
    const Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> cols("cols", nchw ? 3 : 2,
                                                                               nchw ? 2 : 3);
    kcnn::col2im(Space(), cols, 1, 1, params, dx);
    Space().fence();
  }
}

}  // namespace
}  // namespace kcnn_test
