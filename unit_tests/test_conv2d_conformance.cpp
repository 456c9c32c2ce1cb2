// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The conformance suite: conv2d_forward with every registered algorithm
// (kcnn::implemented_conv_algos()) and Auto against the independent double-precision
// host convolution, on random data with the output poisoned first, over shape families
// x layouts x algorithms x backends, in float and double; tile edges for every
// registered algorithm but Reference; LayoutLeft, const and unmanaged Views. A new
// algorithm joins by its registry line; its own tests (forced variants, tiles) live in
// test_conv2d_<name>.cpp.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;

struct ForwardParam {
  ConvCase c;
  ConvAlgo algo;
  Backend backend;
};

// Short names in test listings instead of gtest's byte dump.
void PrintTo(const ForwardParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string param_name(const ::testing::TestParamInfo<ForwardParam>& info) {
  const auto& p = info.param;
  return p.c.name + "_" + kcnn::to_string(p.c.layout) + "_" + kcnn::to_string(p.c.activation) +
         (p.c.bias ? "_bias_" : "_nobias_") + kcnn::to_string(p.algo) + "_" +
         backend_name(p.backend);
}

/// Algorithms under test: every registered one (a new algorithm joins by its registry
/// line), then Auto.
std::vector<ConvAlgo> algorithms() {
  auto list = kcnn::implemented_conv_algos();
  list.push_back(ConvAlgo::Auto);
  return list;
}

std::vector<ForwardParam> forward_params() {
  const Activation activations[] = {Activation::Identity, Activation::ReLU, Activation::Sigmoid,
                                    Activation::Tanh};
  std::vector<ForwardParam> list;
  int i = 0;
  for (const auto& base : conv_shape_families()) {
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      // Every shape sees both layouts; activations and bias rotate across shapes.
      c.activation = activations[i % 4];
      c.bias = (i / 2) % 2 == 0;
      ++i;
      for (ConvAlgo algo : algorithms())
        for (Backend b : backends())
          list.push_back({c, algo, b});
    }
  }
  return list;
}

/// Every activation, with and without bias, on one shape whose outputs straddle zero.
std::vector<ForwardParam> activation_params() {
  std::vector<ForwardParam> list;
  for (Activation a :
       {Activation::Identity, Activation::ReLU, Activation::Sigmoid, Activation::Tanh})
    for (bool bias : {false, true})
      for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (ConvAlgo algo : algorithms())
          for (Backend b : backends()) {
            ConvCase c{"activation", 2, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1};
            c.layout = layout, c.activation = a, c.bias = bias;
            list.push_back({c, algo, b});
          }
  return list;
}

/// Shapes around the tile sizes of the tiled algorithms on either backend: output
/// extents one below, at and one above a multiple of the tile (GPU tiles: columns in
/// multiples of 4 up to 128, rows of 2; CPU: columns of 16 up to 64, rows up to 8),
/// channel counts that leave partial channel groups (BM = 4 or 8), input channels that
/// need several scratch stages with a partial last one, halos widened by stride,
/// dilation and large filters, and ImplicitGemm's partial GEMM tiles and split K.
std::vector<ForwardParam> tile_edge_params() {
  const std::vector<ConvCase> shapes = {
      {"cols63", 1, 3, 9, 65, 5, 3, 3},
      {"cols64", 1, 3, 9, 66, 5, 3, 3},
      {"cols65", 1, 3, 9, 67, 5, 3, 3},
      {"cols129_rows3", 1, 2, 5, 131, 3, 3, 3},
      {"rows17", 2, 2, 19, 10, 3, 3, 3},
      {"rows33_pad", 1, 2, 33, 12, 3, 3, 3, 1, 1, 1, 1},
      {"filters9", 1, 3, 6, 7, 9, 3, 3},
      {"filters17", 1, 3, 6, 7, 17, 3, 3},
      {"filters33", 1, 2, 5, 5, 33, 1, 1},
      {"filters5", 2, 3, 8, 8, 5, 5, 5, 1, 1, 2, 2},
      {"channels67_chunked", 1, 67, 20, 20, 6, 5, 5},
      {"channels301_chunked", 1, 301, 9, 9, 10, 3, 3, 1, 1, 1, 1},
      {"filter11_stride4_dilation2", 1, 2, 40, 40, 3, 11, 11, 4, 4, 5, 5, 2, 2},
      {"filter3x5_runtime", 2, 3, 12, 14, 4, 3, 5, 1, 1, 1, 2},
      {"filter9_runtime", 1, 2, 20, 18, 3, 9, 9},
      {"stride2_filter7", 2, 3, 31, 29, 6, 7, 7, 2, 2, 3, 3},
      {"stride3_filter3", 1, 4, 26, 25, 9, 3, 3, 3, 3},
      {"large_tile_64x80", 1, 1, 86, 86, 4, 7, 7},
      // ImplicitGemm's GEMM tiles (GPU: BM = 16, 32, 64 channels, BN = 128 or 256
      // pixels, BK = 8 taps; host: 8 x 32 register blocks): partial M, pixel and K tiles,
      // K shorter than one step.
      {"igemm_m15_j255", 1, 3, 17, 19, 15, 3, 3},
      {"igemm_m17_j257_k2", 1, 2, 257, 1, 17, 1, 1},
      {"igemm_m33_j129", 3, 5, 45, 3, 33, 3, 3, 1, 1, 0, 1},
      {"igemm_m65_k9", 2, 1, 10, 10, 65, 3, 3},
      {"igemm_m64_k17_strided", 1, 17, 21, 21, 64, 1, 1, 2, 2},
      {"igemm_m130_pad_dilation", 2, 6, 15, 13, 130, 3, 3, 1, 1, 2, 2, 2, 2},
      // ImplicitGemm's split K on GPUs (few 128 x 128 tiles, long K): 9 slices of a
      // 2,304-tap K with a partial channel tile; 2 uneven slices with a partial last K
      // step, padding and output rows of odd length.
      {"igemm_splitk_m200_k2304", 1, 256, 9, 9, 200, 3, 3},
      {"igemm_splitk_m129_k603_pad", 3, 67, 5, 6, 129, 3, 3, 1, 1, 1, 1},
  };
  std::vector<ForwardParam> list;
  int i = 0;
  for (const auto& base : shapes)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      c.activation = i % 2 ? Activation::ReLU : Activation::Identity;
      c.bias = i % 3 != 0;
      ++i;
      for (ConvAlgo algo : algorithms())
        if (algo != ConvAlgo::Reference && algo != ConvAlgo::Auto)
          for (Backend b : backends())
            list.push_back({c, algo, b});
    }
  return list;
}

template <class T, class Space>
void check_forward(const Space& space, const ConvCase& c, ConvAlgo algo) {
  check_forward_with<T>(space, c, algo,
                        [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                            const kcnn::Conv2dParams& params) {
                          if (c.bias) {
                            kcnn::conv2d_forward(space, x, w, bias, y, params);
                          } else {
                            kcnn::conv2d_forward(space, x, w, y, params);
                          }
                        });
}

class Conv2dForward : public ::testing::TestWithParam<ForwardParam> {};

TEST_P(Conv2dForward, MatchesDoubleReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_forward<float, Space>(space, p.c, p.algo);
    check_forward<double, Space>(space, p.c, p.algo);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dForward, ::testing::ValuesIn(forward_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Activations, Conv2dForward, ::testing::ValuesIn(activation_params()),
                         param_name);
INSTANTIATE_TEST_SUITE_P(TileEdges, Conv2dForward, ::testing::ValuesIn(tile_edge_params()),
                         param_name);

// Views of other contiguous layouts are read through their own index mapping.
TEST(Conv2dForwardViews, LayoutLeftViewsMatchReference) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Left4 = Kokkos::View<double****, Kokkos::LayoutLeft, Space::memory_space>;
  ConvCase c{"layout_left", 2, 3, 9, 7, 4, 3, 3, 2, 1, 1, 0};
  c.bias = true;
  const auto xv = random_values(product(c.x_extents()), 1);
  const auto wv = random_values(product(c.w_extents()), 2);
  const auto bv = random_values(c.M, 3);
  const auto want = host_conv2d(c, xv, wv, bv);  // flat arrays in LayoutRight order

  auto copy_to_left = [](const Tensor4<double, Space>& right) {
    Left4 left("left", right.extent(0), right.extent(1), right.extent(2), right.extent(3));
    Kokkos::deep_copy(left, right);  // element-wise copy across layouts
    return left;
  };
  auto x = copy_to_left(make_tensor<double, Space>("x", c.x_extents(), xv));
  auto w = copy_to_left(make_tensor<double, Space>("w", c.w_extents(), wv));
  auto bias = make_vector<double, Space>("bias", bv);
  const auto ye = c.y_extents();
  for (ConvAlgo algo : algorithms()) {
    SCOPED_TRACE(kcnn::to_string(algo));
    Left4 y("y", ye[0], ye[1], ye[2], ye[3]);
    poison(y);
    auto params = c.params();
    params.algo = algo;
    if (!algo_serves<double, Space>(algo, c, params.math)) {  // TensorCoreGemm on the host
      expect_refused(Space(), y, [&] { kcnn::conv2d_forward(Space(), x, w, bias, y, params); });
      continue;
    }
    kcnn::conv2d_forward(Space(), x, w, bias, y, params);
    Tensor4<double, Space> y_right("y_right", ye[0], ye[1], ye[2], ye[3]);
    Kokkos::deep_copy(y_right, y);
    EXPECT_LE(relative_error(to_host(y_right), want), tolerance<double>());
  }
}

// Inputs may be const Views, and unmanaged Views over user memory work too.
TEST(Conv2dForwardViews, ConstAndUnmanagedInputs) {
  using Space = Kokkos::DefaultExecutionSpace;
  ConvCase c{"const_inputs", 1, 2, 6, 6, 3, 3, 3};
  const auto xv = random_values(product(c.x_extents()), 4);
  const auto wv = random_values(product(c.w_extents()), 5);
  const auto want = host_conv2d(c, xv, wv, {});
  auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
  auto w = make_tensor<float, Space>("w", c.w_extents(), wv);
  Kokkos::View<const float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      xc(x.data(), x.extent(0), x.extent(1), x.extent(2), x.extent(3));
  Tensor4<const float, Space> wc = w;
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  kcnn::conv2d_forward(Space(), xc, wc, y, c.params());
  EXPECT_LE(relative_error(to_host(y), want), tolerance<float>());
}

}  // namespace

std::vector<ConvAlgo> conv2d_test_algorithms() {
  return algorithms();
}

}  // namespace kcnn_test
