// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// conv2d_forward with a fused pooling (Conv2dParams::pool) against the double host
// convolution followed by the double host pooling, for every algorithm under test, both
// layouts and backends, float and double; and the errors of the fused form.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;
using kcnn::PoolMode;

struct FusedParam {
  FusedCase f;
  ConvAlgo algo;
  Backend backend;
};

void PrintTo(const FusedParam& p, std::ostream* os) {
  *os << p.f.conv.name;
}

std::string param_name(const ::testing::TestParamInfo<FusedParam>& info) {
  const auto& p = info.param;
  return p.f.conv.name + "_" + kcnn::to_string(p.f.conv.layout) + "_" + kcnn::to_string(p.algo) +
         "_" + backend_name(p.backend);
}

/// Conv/pool combinations: the LeNet layers (7x7 conv, ReLU, 2x2 and 4x4 max pooling,
/// the latter on a non-dividing 34x34), overlapping 3/2 windows, average pooling with
/// padding (counted and not) and a pooling activation, a strided convolution, batch 1
/// and C = M = 1 with a non-square pool, a pool window as large as the conv output, and
/// stride-1 pooling. Then shapes for the fused kernels' tiling: several pooled tiles in
/// every direction with channel counts that leave partial channel tiles (37 filters),
/// non-overlapping windows that do not divide the conv output (5x5), a padded
/// non-overlapping window (3x3 stride 3 pad 1) with windows crossing image boundaries
/// in an implicit GEMM's column tiles (batch 3), a window of 81 cells (more than the
/// implicit GEMM fuses), and overlapping windows after a dilated strided convolution.
std::vector<FusedCase> fused_cases() {
  const ConvCase c1{"lenet_c1_relu_max2", 2, 1, 86, 86, 4, 7, 7};
  const ConvCase c3{"lenet_c3_relu_max4", 2, 4, 40, 40, 16, 7, 7};
  const ConvCase ov{"tanh_overlap_max3s2", 2, 3, 13, 11, 5, 3, 3, 1, 1, 1, 1};
  const ConvCase ai{"avg3s2_pad1_inclpad_sigmoid", 2, 3, 10, 9, 4, 3, 3};
  const ConvCase ae{"avg3s2_pad1_exclpad_tanh", 2, 3, 10, 9, 4, 3, 3};
  const ConvCase st{"conv_stride2_max2_relu", 1, 2, 17, 19, 3, 3, 3, 2, 2};
  const ConvCase b1{"batch1_c1_max2x3_nondividing", 1, 1, 12, 11, 1, 3, 3};
  const ConvCase gl{"avg_global", 2, 2, 6, 6, 3, 3, 3};
  const ConvCase s1{"max2_stride1_pad", 1, 3, 8, 8, 2, 3, 3, 1, 1, 1, 1};
  const ConvCase tl{"tiles_crossed_m37_max2", 2, 3, 75, 71, 37, 3, 3, 1, 1, 1, 1};
  const ConvCase p5{"max5s5_nondividing", 3, 2, 29, 31, 6, 5, 5};
  const ConvCase p3{"avg3s3_pad1_batch3", 3, 2, 11, 10, 5, 3, 3};
  const ConvCase p9{"avg9_81cells", 1, 2, 30, 26, 3, 3, 3};
  const ConvCase dl{"dilated_strided_max3s2", 2, 3, 23, 21, 7, 3, 3, 2, 2, 2, 1, 2, 2};
  // 4x4 windows at stride 4 (GPU register pooling, a window's halves in two threads):
  // 13 filters (a partial channel group); several row tiles of 16 column threads; 3
  // filters with 9 column threads (pairs would cross warps: pooled through scratch).
  const ConvCase a4{"avg4s4_m13_sigmoid", 2, 3, 35, 35, 13, 3, 3};
  const ConvCase t4{"max4s4_rowtiles_m9", 1, 2, 102, 66, 9, 3, 3};
  const ConvCase s4{"max4s4_m3_5x5", 2, 2, 45, 41, 3, 5, 5};
  return {
      {conv(c1, Activation::ReLU, true), pool(2, 2, 2, 2, 0, 0, PoolMode::Max)},
      {conv(c3, Activation::ReLU, true), pool(4, 4, 4, 4, 0, 0, PoolMode::Max)},
      {conv(ov, Activation::Tanh, true), pool(3, 3, 2, 2, 0, 0, PoolMode::Max)},
      {conv(ai, Activation::Identity, true),
       pool(3, 3, 2, 2, 1, 1, PoolMode::Average, true, Activation::Sigmoid)},
      {conv(ae, Activation::ReLU, false),
       pool(3, 3, 2, 2, 1, 1, PoolMode::Average, false, Activation::Tanh)},
      {conv(st, Activation::Sigmoid, false),
       pool(2, 2, 2, 2, 0, 0, PoolMode::Max, true, Activation::ReLU)},
      {conv(b1, Activation::Identity, true), pool(2, 3, 2, 3, 0, 0, PoolMode::Max)},
      {conv(gl, Activation::Tanh, true), pool(4, 4, 1, 1, 0, 0, PoolMode::Average)},
      {conv(s1, Activation::ReLU, true), pool(2, 2, 1, 1, 1, 1, PoolMode::Max)},
      {conv(tl, Activation::ReLU, true), pool(2, 2, 2, 2, 0, 0, PoolMode::Max)},
      {conv(p5, Activation::Tanh, true), pool(5, 5, 5, 5, 0, 0, PoolMode::Max)},
      {conv(p3, Activation::ReLU, true),
       pool(3, 3, 3, 3, 1, 1, PoolMode::Average, false, Activation::Sigmoid)},
      {conv(p9, Activation::Identity, true), pool(9, 9, 9, 9, 0, 0, PoolMode::Average)},
      {conv(dl, Activation::ReLU, false), pool(3, 3, 2, 2, 1, 1, PoolMode::Max)},
      {conv(a4, Activation::Tanh, true),
       pool(4, 4, 4, 4, 0, 0, PoolMode::Average, true, Activation::Sigmoid)},
      {conv(t4, Activation::ReLU, true), pool(4, 4, 4, 4, 0, 0, PoolMode::Max)},
      {conv(s4, Activation::Identity, false), pool(4, 4, 4, 4, 0, 0, PoolMode::Max)},
  };
}

std::vector<FusedParam> fused_params() {
  std::vector<FusedParam> list;
  for (const auto& base : fused_cases())
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      FusedCase f = base;
      f.conv.layout = f.pool.layout = layout;
      for (ConvAlgo algo : conv2d_test_algorithms())
        for (Backend b : backends())
          list.push_back({f, algo, b});
    }
  return list;
}

template <class T, class Space>
void check_fused(const Space& space, const FusedCase& f, ConvAlgo algo) {
  check_fused_with<T>(space, f, algo,
                      [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                          const kcnn::Conv2dParams& params) {
                        if (f.conv.bias) {
                          kcnn::conv2d_forward(space, x, w, bias, y, params);
                        } else {
                          kcnn::conv2d_forward(space, x, w, y, params);
                        }
                      });
}

class Conv2dPool : public ::testing::TestWithParam<FusedParam> {};

TEST_P(Conv2dPool, MatchesConvThenPoolReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_fused<float, Space>(space, p.f, p.algo);
    check_fused<double, Space>(space, p.f, p.algo);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dPool, ::testing::ValuesIn(fused_params()), param_name);

// ---------------------------------------------------------------------------------------
// Errors of the fused form
// ---------------------------------------------------------------------------------------

using Space = Kokkos::DefaultExecutionSpace;
using T4 = Tensor4<float, Space>;
using T1 = Tensor1<float, Space>;
constexpr float kSentinel = -3.25f;

/// A valid problem: NCHW x (2, 3, 9, 8), 4 filters 3x3, pad 1 -> conv output 9x8 ->
/// 2x2 max pool stride 2 -> y (2, 4, 4, 4).
struct Fixture {
  ConvCase c{"valid", 2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1};
  T4 x = make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 1));
  T4 w = make_tensor<float, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 2));
  T1 bias = make_vector<float, Space>("bias", random_values(c.M, 3));
  kcnn::Conv2dParams params = [this] {
    auto p = c.params();
    p.pool = kcnn::Pool2dParams{};
    return p;
  }();
};

/// Breaks one thing, runs conv2d_forward, expects kcnn::Error naming conv2d_forward and
/// `needle`, and y untouched.
void expect_rejected(const std::string& needle,
                     const std::function<void(kcnn::Conv2dParams&)>& breaker,
                     std::array<int, 4> y_extents = {2, 4, 4, 4}) {
  Fixture f;
  T4 y("y", y_extents[0], y_extents[1], y_extents[2], y_extents[3]);
  Kokkos::deep_copy(y, kSentinel);
  auto params = f.params;
  breaker(params);
  try {
    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, params);
    ADD_FAILURE() << "no exception; expected kcnn::Error mentioning '" << needle << "'";
  } catch (const kcnn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kcnn::conv2d_forward"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
  Kokkos::fence();
  for (double v : to_host(y))
    ASSERT_EQ(v, kSentinel) << "y was written";
}

TEST(Conv2dPoolErrors, ValidFixtureRuns) {
  Fixture f;
  T4 y("y", 2, 4, 4, 4);
  EXPECT_NO_THROW(kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, f.params));
}

TEST(Conv2dPoolErrors, PoolLayoutMismatch) {
  expect_rejected("pool layout NHWC differs from the convolution's layout NCHW",
                  [](kcnn::Conv2dParams& p) { p.pool->layout = Layout::NHWC; });
  // NHWC convolution with an NCHW pool (y in NHWC order).
  expect_rejected("pool layout NCHW differs from the convolution's layout NHWC",
                  [](kcnn::Conv2dParams& p) { p.layout = Layout::NHWC; }, {2, 4, 4, 4});
}

TEST(Conv2dPoolErrors, UnpooledOutputExtents) {
  expect_rejected(
      "wrong y extents (2, 4, 9, 8): expected NCHW (N, M, P, Q) = (2, 4, 4, 4), the "
      "pooled extents of the 9x8 convolution output",
      [](kcnn::Conv2dParams&) {}, {2, 4, 9, 8});
}

TEST(Conv2dPoolErrors, WrongPooledExtents) {
  for (auto e : {std::array{2, 4, 5, 4}, std::array{2, 4, 4, 3}, std::array{2, 3, 4, 4},
                 std::array{1, 4, 4, 4}}) {
    expect_rejected(
        "wrong y extents", [](kcnn::Conv2dParams&) {}, e);
  }
}

TEST(Conv2dPoolErrors, PoolWindowLargerThanConvOutput) {
  expect_rejected(
      "empty output: the 10x3 pool window is larger than the padded 9x8 convolution "
      "output",
      [](kcnn::Conv2dParams& p) { p.pool->window_h = 10, p.pool->window_w = 3; }, {2, 4, 1, 3});
}

TEST(Conv2dPoolErrors, InvalidPoolParams) {
  expect_rejected("pool: window must be >= 1", [](kcnn::Conv2dParams& p) { p.pool->window_w = 0; });
  expect_rejected("pool: stride must be >= 1", [](kcnn::Conv2dParams& p) { p.pool->stride_h = 0; });
  expect_rejected("pool: padding must be >= 0", [](kcnn::Conv2dParams& p) { p.pool->pad_w = -1; });
  expect_rejected("pool: padding must be smaller than the window",
                  [](kcnn::Conv2dParams& p) { p.pool->pad_h = 2; });
  expect_rejected("pool: unknown PoolMode value 3",
                  [](kcnn::Conv2dParams& p) { p.pool->mode = static_cast<PoolMode>(3); });
  expect_rejected("pool: unknown activation value 8",
                  [](kcnn::Conv2dParams& p) { p.pool->activation = static_cast<Activation>(8); });
}

TEST(Conv2dPoolErrors, UnregisteredAlgorithmsStillRejected) {
  // A ConvAlgo value no descriptor has (a cast integer) is rejected before anything runs,
  // pooled or not.
  const auto unregistered = static_cast<ConvAlgo>(99);
  expect_rejected("not implemented yet",
                  [unregistered](kcnn::Conv2dParams& p) { p.algo = unregistered; });
}

TEST(Conv2dPoolErrors, EmptyBatchIsNoOp) {
  Fixture f;
  T4 x0("x0", 0, 3, 9, 8), y0("y0", 0, 4, 4, 4), y_unpooled("y_unpooled", 0, 4, 9, 8);
  EXPECT_NO_THROW(kcnn::conv2d_forward(Space(), x0, f.w, f.bias, y0, f.params));
  // ... but still validated against the pooled extents.
  EXPECT_THROW(kcnn::conv2d_forward(Space(), x0, f.w, f.bias, y_unpooled, f.params), kcnn::Error);
}

// ---------------------------------------------------------------------------------------
// Fusion: which kernels run (Kokkos Tools' begin-parallel_for callback sees each label)
// ---------------------------------------------------------------------------------------

std::vector<std::string>& launched_labels() {
  static std::vector<std::string> labels;
  return labels;
}

void record_label(const char* name, std::uint32_t, std::uint64_t* kernel_id) {
  launched_labels().emplace_back(name);
  *kernel_id = 0;
}

/// The kcnn kernel labels one conv2d_forward call with `pool` launches.
std::vector<std::string> kcnn_kernels_of(ConvAlgo algo, const kcnn::Pool2dParams& pool) {
  Fixture f;
  auto params = f.params;
  params.algo = algo;
  params.pool = pool;
  const FusedCase fused{f.c, PoolCase{"pool", 0, 0, 0, 0, pool.window_h, pool.window_w,
                                      pool.stride_h, pool.stride_w, pool.pad_h, pool.pad_w}};
  const auto y_extents = pool_of(fused).y_extents();
  T4 y("y", y_extents[0], y_extents[1], y_extents[2], y_extents[3]);
  Kokkos::fence();
  launched_labels().clear();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(record_label);
  kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, params);
  Kokkos::fence();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  std::vector<std::string> kcnn_labels;
  for (const auto& label : launched_labels())
    if (label.rfind("kcnn::", 0) == 0) kcnn_labels.push_back(label);
  return kcnn_labels;
}

TEST(Conv2dPoolFusion, FusedAlgorithmsPoolInsideTheConvolutionKernel) {
  kcnn::Pool2dParams max2;  // 2x2 stride 2: fused by both
  kcnn::Pool2dParams overlap = max2;
  overlap.window_h = overlap.window_w = 3;  // 3x3 stride 2: Tiled only
  using Labels = std::vector<std::string>;
  EXPECT_EQ(kcnn_kernels_of(ConvAlgo::Tiled, max2), Labels{"kcnn::conv2d::tiled_pool"});
  EXPECT_EQ(kcnn_kernels_of(ConvAlgo::Tiled, overlap), Labels{"kcnn::conv2d::tiled_pool"});
  EXPECT_EQ(kcnn_kernels_of(ConvAlgo::ImplicitGemm, max2),
            Labels{"kcnn::conv2d::implicit_gemm_pool"});
  // Documented: overlapping windows run the unfused kernel and a pooling pass.
  EXPECT_EQ(kcnn_kernels_of(ConvAlgo::ImplicitGemm, overlap),
            (Labels{"kcnn::conv2d::implicit_gemm", "kcnn::pool2d::forward"}));
}

}  // namespace
}  // namespace kcnn_test
