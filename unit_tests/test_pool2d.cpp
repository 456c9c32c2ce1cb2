// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// pool2d_forward against the independent double-precision host pooling, on random data
// with the output poisoned first, over shapes x layouts x modes x backends, in float and
// double; then every invalid call: kcnn::Error naming the problem, y untouched.
#include "test_support.hpp"

#include <typeinfo>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::Layout;
using kcnn::PoolMode;

struct PoolParam {
  PoolCase c;
  Backend backend;
};

void PrintTo(const PoolParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string mode_name(const PoolCase& c) {
  if (c.mode == PoolMode::Max) return "Max";
  return c.count_include_pad ? "AvgInclPad" : "AvgExclPad";
}

std::string param_name(const ::testing::TestParamInfo<PoolParam>& info) {
  const auto& c = info.param.c;
  return c.name + "_" + kcnn::to_string(c.layout) + "_" + mode_name(c) + "_" +
         kcnn::to_string(c.activation) + (c.bias ? "_bias_" : "_nobias_") +
         backend_name(info.param.backend);
}

/// Shape families: batch 1, C = 1, prime extents, the LeNet subsampling layers (2x2 on
/// an even extent, 4x4 on a non-dividing one), overlapping windows (3/2) with and
/// without padding, stride 1, stride larger than the window, padding = window - 1,
/// non-square windows/strides/padding, a window as large as the (padded) input, windows
/// some of whose columns lie in the padding for every output, and
/// extents larger than the host kernels' blocks of 128 (columns in NCHW, channels in
/// NHWC).
std::vector<PoolCase> shape_families() {
  // name, N, C, H, W, window h/w, stride h/w, pad h/w
  return {
      {"batch1_c1", 1, 1, 6, 6, 2, 2, 2, 2},
      {"lenet_s2", 2, 4, 16, 16, 2, 2, 2, 2},
      {"lenet_s4_nondividing", 2, 16, 34, 34, 4, 4, 4, 4},
      {"nondividing", 3, 5, 7, 9, 2, 2, 2, 2},
      {"overlap_3s2", 2, 3, 13, 11, 3, 3, 2, 2},
      {"overlap_3s2_pad1", 2, 3, 12, 9, 3, 3, 2, 2, 1, 1},
      {"prime_nonsquare", 3, 7, 17, 13, 3, 2, 3, 2},
      {"stride1", 2, 3, 8, 7, 3, 3, 1, 1},
      {"stride_gt_window", 2, 3, 11, 10, 2, 2, 3, 3},
      {"pad_window_minus_1", 2, 2, 5, 6, 3, 3, 1, 1, 2, 2},
      {"pad_h_only_stride2", 2, 3, 9, 8, 3, 2, 2, 2, 1, 0},
      {"pad_w_only_mixed_stride", 1, 2, 10, 11, 2, 3, 1, 2, 0, 1},
      {"window_fills_input", 2, 3, 5, 5, 5, 5, 1, 1},
      {"global", 1, 4, 7, 7, 7, 7, 7, 7},
      {"tall_window", 2, 3, 12, 5, 4, 1, 4, 1},
      {"tiny_input_padded", 1, 2, 1, 2, 2, 2, 1, 1, 1, 1},
      {"window_beyond_input", 2, 3, 3, 1, 3, 3, 2, 2, 1, 1},  // columns in padding only
      {"wide_window_padded", 1, 2, 4, 2, 2, 5, 1, 2, 0, 2},
      {"prime_channels", 2, 37, 5, 5, 2, 2, 1, 1},
      {"wide_rows", 1, 2, 3, 301, 2, 3, 1, 2, 0, 1},
      {"many_channels", 1, 300, 4, 5, 2, 2, 2, 2, 1, 0},
  };
}

std::vector<PoolParam> pool_params() {
  const Activation activations[] = {Activation::Identity, Activation::ReLU, Activation::Sigmoid,
                                    Activation::Tanh};
  std::vector<PoolParam> list;
  int i = 0;
  for (const auto& base : shape_families())
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (int mode = 0; mode < 3; ++mode) {
        PoolCase c = base;
        c.layout = layout;
        c.mode = mode == 0 ? PoolMode::Max : PoolMode::Average;
        c.count_include_pad = mode != 2;
        // Activations and bias rotate across the cases.
        c.activation = activations[i % 4];
        c.bias = (i / 4) % 2 == 0;
        ++i;
        for (Backend b : backends())
          list.push_back({c, b});
      }
  return list;
}

/// The classic subsampling layer (average + per-channel bias + sigmoid), and every
/// activation with and without bias after both modes.
std::vector<PoolParam> subsampling_params() {
  std::vector<PoolParam> list;
  for (Activation a :
       {Activation::Sigmoid, Activation::Identity, Activation::ReLU, Activation::Tanh})
    for (bool bias : {true, false})
      for (PoolMode mode : {PoolMode::Average, PoolMode::Max})
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
          for (Backend b : backends()) {
            PoolCase c{"subsampling", 3, 6, 28, 28};  // LeNet-5's S2: 6 maps, 28x28 -> 14x14
            c.mode = mode, c.activation = a, c.bias = bias, c.layout = layout;
            list.push_back({c, b});
          }
  return list;
}

template <class T, class Space>
void check_pool(const Space& space, const PoolCase& c) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const auto xv = random_values(product(c.x_extents()), 44);
  const auto bv = random_values(c.C, 55);
  const auto want = host_pool2d(c, xv, bv);

  auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
  auto bias = make_vector<T, Space>("bias", bv);
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  if (c.bias) {
    kcnn::pool2d_forward(space, x, bias, y, c.params());
  } else {
    kcnn::pool2d_forward(space, x, y, c.params());
  }
  space.fence();
  const double err = relative_error(to_host(y), want);
  EXPECT_LE(err, tolerance<T>()) << "relative error " << err;
}

class Pool2dForward : public ::testing::TestWithParam<PoolParam> {};

TEST_P(Pool2dForward, MatchesDoubleReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_pool<float, Space>(space, p.c);
    check_pool<double, Space>(space, p.c);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Pool2dForward, ::testing::ValuesIn(pool_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Subsampling, Pool2dForward, ::testing::ValuesIn(subsampling_params()),
                         param_name);

// Max pooling propagates NaN to exactly the windows that contain it.
TEST(Pool2dForwardValues, MaxPropagatesNaN) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        PoolCase c{"nan", 1, 2, 7, 7, 3, 3, 2, 2};  // overlapping: a cell in up to 4 windows
        c.layout = layout;
        auto xv = random_values(product(c.x_extents()), 66);
        // Channel 1, row 2, column 4: inside the windows (p, q) in {0, 1} x {1, 2}.
        const std::size_t cell = c.nhwc() ? (2 * 7 + 4) * 2 + 1 : (1 * 7 + 2) * 7 + 4;
        xv[cell] = std::numeric_limits<double>::quiet_NaN();
        const auto want = host_pool2d(c, xv, {});
        auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
        const auto ye = c.y_extents();
        Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
        Kokkos::deep_copy(y, 7.0f);
        kcnn::pool2d_forward(space, x, y, c.params());
        space.fence();
        const auto got = to_host(y);
        int nans = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "element " << i;
          if (!std::isnan(want[i])) {
            EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
          }
          nans += std::isnan(want[i]) ? 1 : 0;
        }
        EXPECT_EQ(nans, 4);
      }
    });
}

// Max over windows whose every value is -infinity is -infinity (no finite sentinel).
TEST(Pool2dForwardValues, MaxOfNegativeInfinity) {
  using Space = Kokkos::DefaultExecutionSpace;
  PoolCase c{"neg_inf", 1, 1, 4, 4, 2, 2, 2, 2, 1, 1};
  std::vector<double> xv(16, -std::numeric_limits<double>::infinity());
  auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  kcnn::pool2d_forward(Space(), x, y, c.params());
  for (double v : to_host(y))
    EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
}

// Views of other contiguous layouts are read through their own index mapping.
TEST(Pool2dForwardViews, LayoutLeftViewsMatchReference) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Left4 = Kokkos::View<double****, Kokkos::LayoutLeft, Space::memory_space>;
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (PoolMode mode : {PoolMode::Max, PoolMode::Average}) {
      PoolCase c{"layout_left", 2, 3, 9, 7, 3, 3, 2, 2, 1, 1};
      c.layout = layout, c.mode = mode, c.count_include_pad = false, c.bias = true;
      const auto xv = random_values(product(c.x_extents()), 7);
      const auto bv = random_values(c.C, 8);
      const auto want = host_pool2d(c, xv, bv);
      auto x_right = make_tensor<double, Space>("x", c.x_extents(), xv);
      Left4 x("x_left", x_right.extent(0), x_right.extent(1), x_right.extent(2), x_right.extent(3));
      Kokkos::deep_copy(x, x_right);
      const auto ye = c.y_extents();
      Left4 y("y", ye[0], ye[1], ye[2], ye[3]);
      poison(y);
      kcnn::pool2d_forward(Space(), x, make_vector<double, Space>("bias", bv), y, c.params());
      Tensor4<double, Space> y_right("y_right", ye[0], ye[1], ye[2], ye[3]);
      Kokkos::deep_copy(y_right, y);
      EXPECT_LE(relative_error(to_host(y_right), want), tolerance<double>())
          << kcnn::to_string(layout) << " " << kcnn::to_string(mode);
    }
}

// Inputs may be const Views, and unmanaged Views over user memory work too.
TEST(Pool2dForwardViews, ConstAndUnmanagedInputs) {
  using Space = Kokkos::DefaultExecutionSpace;
  PoolCase c{"const_inputs", 2, 3, 8, 8};
  c.mode = PoolMode::Average, c.bias = true, c.activation = Activation::Sigmoid;
  const auto xv = random_values(product(c.x_extents()), 9);
  const auto bv = random_values(c.C, 10);
  const auto want = host_pool2d(c, xv, bv);
  auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
  Kokkos::View<const float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      xc(x.data(), x.extent(0), x.extent(1), x.extent(2), x.extent(3));
  Tensor1<const float, Space> bc = make_vector<float, Space>("bias", bv);
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  kcnn::pool2d_forward(Space(), xc, bc, y, c.params());
  EXPECT_LE(relative_error(to_host(y), want), tolerance<float>());
}

// ---------------------------------------------------------------------------------------
// The device kernel, run on the host: host builds check what GPUs run.
// ---------------------------------------------------------------------------------------

TEST(Pool2dKernels, FastDivmod32IsExact) {
  std::mt19937 rng(12);
  std::vector<std::int64_t> divisors;
  for (std::int64_t d = 1; d <= 4100; ++d)
    divisors.push_back(d);
  for (std::int64_t d :
       {65535LL, 65536LL, 65537LL, 1000003LL, (1LL << 30) + 1, (1LL << 31) - 1, 1LL << 31})
    divisors.push_back(d);
  for (std::int64_t d : divisors) {
    const kcnn::Impl::FastDivmod32 div(d);
    std::vector<std::int64_t> values{0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, (1LL << 31) - 1};
    for (int i = 0; i < 64; ++i)
      values.push_back(std::uniform_int_distribution<std::int64_t>(0, (1LL << 31) - 1)(rng));
    for (std::int64_t n : values) {
      if (n < 0 || n > (1LL << 31) - 1) continue;
      int quotient = -1, remainder = -1;
      div(static_cast<int>(n), quotient, remainder);
      ASSERT_EQ(quotient, n / d) << n << " / " << d;
      ASSERT_EQ(remainder, n % d) << n << " % " << d;
    }
  }
}

template <class XView, class YView>
void check_flat_kernel(const PoolCase& c, kcnn::Impl::Pool2dKernel kernel) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using T = typename YView::non_const_value_type;
  const auto xv = random_values(product(c.x_extents()), 77);
  const auto bv = random_values(c.C, 88);
  const auto want = host_pool2d(c, xv, bv);
  const auto xe = c.x_extents(), ye = c.y_extents();
  auto x_right = make_tensor<T, Host>("x", xe, xv);
  XView x("x_any", xe[0], xe[1], xe[2], xe[3]);
  Kokkos::deep_copy(x, x_right);
  YView y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  auto bias = make_vector<T, Host>("bias", c.bias ? bv : std::vector<double>{});
  const auto pb = kcnn::Impl::make_pool2d_problem("test", x, bias, y, c.params());
  kcnn::Impl::pool2d_launch(Host(), x, bias, y, pb, kernel);
  Host().fence();
  Tensor4<T, Host> y_right("y_right", ye[0], ye[1], ye[2], ye[3]);
  Kokkos::deep_copy(y_right, y);
  EXPECT_LE(relative_error(to_host(y_right), want), tolerance<T>())
      << c.name << " " << kcnn::to_string(c.layout) << " " << mode_name(c) << " kernel "
      << static_cast<int>(kernel) << " x/y " << typeid(typename XView::array_layout).name();
}

TEST(Pool2dKernels, FlatKernelOnHostMatchesReference) {
  using Right = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using Left = Kokkos::View<float****, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  using RightD = Kokkos::View<double****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  int i = 0;
  for (const auto& base : shape_families())
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (int mode = 0; mode < 3; ++mode) {
        PoolCase c = base;
        c.layout = layout;
        c.mode = mode == 0 ? PoolMode::Max : PoolMode::Average;
        c.count_include_pad = mode != 2;
        c.activation = static_cast<Activation>(i % 4);
        c.bias = i % 3 != 0;
        ++i;
        for (auto kernel : {kcnn::Impl::Pool2dKernel::Flat32, kcnn::Impl::Pool2dKernel::Flat64}) {
          check_flat_kernel<Right, Right>(c, kernel);  // raw pointers
          check_flat_kernel<Left, Left>(c, kernel);    // through the Views
        }
        check_flat_kernel<RightD, RightD>(c, kcnn::Impl::Pool2dKernel::Flat32);
      }
}

// The GPU's 2x2 window kernel, run on the host: 2x2 windows at stride 2 in both layouts
// (NCHW with W a multiple of 4, NHWC with C a multiple of 4), odd extents, both modes,
// activations, with and without bias, float and double; a problem it does not apply to
// is refused, not computed.
TEST(Pool2dKernels, Window2x2KernelOnHostMatchesReference) {
  using Right = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using RightD = Kokkos::View<double****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  constexpr auto kernel = kcnn::Impl::Pool2dKernel::Window2x2;
  struct Family {
    Layout layout;
    std::vector<PoolCase> shapes;
    PoolCase refused;
  };
  const Family families[] = {
      {Layout::NCHW,
       {{"w4", 1, 1, 4, 4},
        {"odd_h", 2, 3, 7, 12},
        {"lenet_like", 3, 4, 20, 80},
        {"wide", 1, 5, 2, 132}},
       {"w10", 1, 2, 6, 10}},
      {Layout::NHWC,
       {{"c4", 1, 4, 4, 4},
        {"odd_hw", 2, 8, 7, 9},
        {"lenet_like", 3, 16, 34, 34},
        {"c12", 1, 12, 2, 2}},
       {"c6", 1, 6, 4, 4}},
  };
  int i = 0;
  for (const Family& f : families) {
    for (PoolCase c : f.shapes)
      for (PoolMode mode : {PoolMode::Max, PoolMode::Average}) {
        c.layout = f.layout;
        c.mode = mode;
        c.activation = static_cast<Activation>(i % 4);
        c.bias = i % 2 == 0;
        ++i;
        check_flat_kernel<Right, Right>(c, kernel);
        check_flat_kernel<RightD, RightD>(c, kernel);
      }
    PoolCase refused = f.refused;
    refused.layout = f.layout;
    EXPECT_THROW((check_flat_kernel<Right, Right>(refused, kernel)), kcnn::Error);
  }
}

// The epilogue API as a fused convolution kernel uses it: a tile of pooled outputs, the
// convolution outputs pool_input_span names copied into tile-local storage (scratch),
// pool_window in convolution-output coordinates, pool_reduce reading the tile.
TEST(Pool2dKernels, TiledUseOfThePoolEpilogue) {
  namespace I = kcnn::Impl;
  for (const auto& base : shape_families())
    for (int mode = 0; mode < 3; ++mode) {
      PoolCase c = base;
      c.N = 1, c.C = 1;
      c.mode = mode == 0 ? PoolMode::Max : PoolMode::Average;
      c.count_include_pad = mode != 2;
      const auto conv_out = random_values(static_cast<std::size_t>(c.H) * c.W, 99);
      const auto want = host_pool2d(c, conv_out, {});
      const kcnn::Pool2dParams g = c.params();
      const std::int64_t P = c.P(), Q = c.Q();
      std::vector<double> got(static_cast<std::size_t>(P * Q), std::nan(""));
      for (std::int64_t tp : {1, 2, 3})  // pooled tile extents, edges included
        for (std::int64_t tq : {1, 4}) {
          for (std::int64_t p0 = 0; p0 < P; p0 += tp)
            for (std::int64_t q0 = 0; q0 < Q; q0 += tq) {
              const std::int64_t p1 = std::min(p0 + tp, P), q1 = std::min(q0 + tq, Q);
              std::int64_t h0, h1, w0, w1;
              I::pool_input_span(p0, p1, g.window_h, g.stride_h, g.pad_h, std::int64_t(c.H), h0,
                                 h1);
              I::pool_input_span(q0, q1, g.window_w, g.stride_w, g.pad_w, std::int64_t(c.W), w0,
                                 w1);
              std::vector<double> tile(static_cast<std::size_t>((h1 - h0) * (w1 - w0)));
              for (std::int64_t h = h0; h < h1; ++h)
                for (std::int64_t w = w0; w < w1; ++w)
                  tile[(h - h0) * (w1 - w0) + (w - w0)] = conv_out[h * c.W + w];
              for (std::int64_t pp = p0; pp < p1; ++pp)
                for (std::int64_t pq = q0; pq < q1; ++pq) {
                  const auto win = I::pool_window(g, std::int64_t(c.H), std::int64_t(c.W), pp, pq);
                  ASSERT_TRUE(win.h_begin >= h0 && win.h_end <= h1 && win.w_begin >= w0 &&
                              win.w_end <= w1)
                      << c.name << ": window outside the span";
                  const auto reduce = [&](auto m) {
                    return I::pool_reduce<decltype(m)::value, double>(
                        win, [&](std::int64_t h, std::int64_t w) {
                          return tile[(h - h0) * (w1 - w0) + (w - w0)];
                        });
                  };
                  got[pp * Q + pq] = I::with_pool_mode(g.mode, reduce);
                }
            }
          EXPECT_LE(relative_error(got, want), 1e-14) << c.name << " " << mode_name(c);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

using Space = Kokkos::DefaultExecutionSpace;
using T4 = Tensor4<float, Space>;
using T1 = Tensor1<float, Space>;
constexpr float kSentinel = 12.5f;

/// A valid NCHW problem (N=2, C=3, 9x8 input, 3x3 window, stride 2, pad 1: y 2x3x5x4)
/// whose pieces each error test breaks one at a time.
struct Fixture {
  PoolCase c{"valid", 2, 3, 9, 8, 3, 3, 2, 2, 1, 1};
  T4 x = make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 1));
  T1 bias = make_vector<float, Space>("bias", random_values(c.C, 3));
  kcnn::Pool2dParams params = c.params();
};

bool untouched(const T4& y) {
  Kokkos::fence();
  for (double v : to_host(y))
    if (v != kSentinel) return false;
  return true;
}

/// Runs `call`, expects kcnn::Error whose message names pool2d_forward and `needle`.
template <class F>
void expect_error(F&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected kcnn::Error mentioning '" << needle << "'";
  } catch (const kcnn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kcnn::pool2d_forward"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what;
    const std::invalid_argument& base = e;
    EXPECT_EQ(std::string(base.what()), what);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// Breaks one thing about a valid call, runs it (with and without bias), checks the
/// error and that y survived.
void expect_rejected(const std::string& needle,
                     const std::function<void(Fixture&, kcnn::Pool2dParams&)>& breaker,
                     std::array<int, 4> y_extents = {2, 3, 5, 4}) {
  for (bool with_bias : {true, false}) {
    Fixture f;
    T4 y("y", y_extents[0], y_extents[1], y_extents[2], y_extents[3]);
    Kokkos::deep_copy(y, kSentinel);
    auto params = f.params;
    breaker(f, params);
    expect_error(
        [&] {
          if (with_bias) {
            kcnn::pool2d_forward(Space(), f.x, f.bias, y, params);
          } else {
            kcnn::pool2d_forward(Space(), f.x, y, params);
          }
        },
        needle);
    EXPECT_TRUE(untouched(y)) << (with_bias ? "with bias" : "without bias");
  }
}

TEST(Pool2dErrors, WindowBelowOne) {
  for (auto [wh, ww] : {std::pair{0, 3}, std::pair{3, 0}, std::pair{-1, 3}}) {
    expect_rejected("window must be >= 1, got window_h=" + std::to_string(wh),
                    [wh = wh, ww = ww](Fixture&, kcnn::Pool2dParams& p) {
                      p.window_h = wh, p.window_w = ww, p.pad_h = p.pad_w = 0;
                    });
  }
}

TEST(Pool2dErrors, StrideBelowOne) {
  for (auto [sh, sw] : {std::pair{0, 2}, std::pair{2, 0}, std::pair{-2, 2}}) {
    expect_rejected("stride must be >= 1", [sh = sh, sw = sw](Fixture&, kcnn::Pool2dParams& p) {
      p.stride_h = sh, p.stride_w = sw;
    });
  }
}

TEST(Pool2dErrors, NegativePadding) {
  for (auto [ph, pw] : {std::pair{-1, 0}, std::pair{0, -1}}) {
    expect_rejected("padding must be >= 0", [ph = ph, pw = pw](Fixture&, kcnn::Pool2dParams& p) {
      p.pad_h = ph, p.pad_w = pw;
    });
  }
}

TEST(Pool2dErrors, PaddingNotSmallerThanWindow) {
  for (auto [ph, pw] : {std::pair{3, 1}, std::pair{1, 3}, std::pair{4, 4}}) {
    expect_rejected(
        "padding must be smaller than the window",
        [ph = ph, pw = pw](Fixture&, kcnn::Pool2dParams& p) { p.pad_h = ph, p.pad_w = pw; });
  }
}

TEST(Pool2dErrors, UnknownEnumValues) {
  expect_rejected("unknown PoolMode value 7",
                  [](Fixture&, kcnn::Pool2dParams& p) { p.mode = static_cast<PoolMode>(7); });
  expect_rejected("unknown layout value 5",
                  [](Fixture&, kcnn::Pool2dParams& p) { p.layout = static_cast<Layout>(5); });
  expect_rejected("unknown activation value 9", [](Fixture&, kcnn::Pool2dParams& p) {
    p.activation = static_cast<Activation>(9);
  });
}

TEST(Pool2dErrors, WindowLargerThanPaddedInput) {
  // 9x8 input, padding 1: a 9x11 window does not fit in the 11x10 padded width.
  expect_rejected("empty output: the 9x11 window is larger than the padded 9x8 input",
                  [](Fixture&, kcnn::Pool2dParams& p) { p.window_h = 9, p.window_w = 11; },
                  {2, 3, 2, 1});
}

TEST(Pool2dErrors, WrongOutputExtents) {
  // batch, channels, height, width, and NHWC order for an NCHW problem
  for (auto e : {std::array{3, 3, 5, 4}, std::array{2, 4, 5, 4}, std::array{2, 3, 4, 4},
                 std::array{2, 3, 5, 5}, std::array{2, 5, 4, 3}}) {
    expect_rejected(
        "wrong y extents", [](Fixture&, kcnn::Pool2dParams&) {}, e);
  }
  // The message names the expected extents.
  expect_rejected("expected NCHW (N, C, P, Q) = (2, 3, 5, 4)", [](Fixture&, kcnn::Pool2dParams&) {},
                  {2, 3, 4, 4});
}

TEST(Pool2dErrors, NhwcOutputExtents) {
  // NHWC: y is (N, P, Q, C); NCHW-ordered extents are rejected with the order named.
  expect_rejected("in the order (N, P, Q, C)",
                  [](Fixture& f, kcnn::Pool2dParams& p) {
                    p.layout = Layout::NHWC;
                    f.x = T4("x_nhwc", 2, 9, 8, 3);
                  },
                  {2, 3, 5, 4});
}

TEST(Pool2dErrors, ChannelMismatchWithBias) {
  Fixture f;
  T4 y("y", 2, 3, 5, 4);
  Kokkos::deep_copy(y, kSentinel);
  T1 bias2("bias2", 2);
  expect_error([&] { kcnn::pool2d_forward(Space(), f.x, bias2, y, f.params); },
               "bias has extent 2; expected 0 (no bias) or C=3");
  EXPECT_TRUE(untouched(y));
}

TEST(Pool2dErrors, OutputOverlapsInput) {
  Fixture f;
  T4 big("big", 2, 3, 9, 8);
  Kokkos::deep_copy(big, kSentinel);
  Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      y_alias(big.data() + 100, 2, 3, 5, 4);
  expect_error([&] { kcnn::pool2d_forward(Space(), big, f.bias, y_alias, f.params); },
               "y overlaps x");
  EXPECT_TRUE(untouched(big));
}

TEST(Pool2dErrors, OutputOverlapsBias) {
  Fixture f;
  T4 y("y", 2, 3, 5, 4);
  Kokkos::deep_copy(y, kSentinel);
  Kokkos::View<float*, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      bias_alias(y.data() + 10, 3);
  expect_error([&] { kcnn::pool2d_forward(Space(), f.x, bias_alias, y, f.params); },
               "y overlaps bias");
  EXPECT_TRUE(untouched(y));
}

TEST(Pool2dErrors, NonContiguousViews) {
  Fixture f;
  T4 big("big", 2, 3, 5, 6);
  Kokkos::deep_copy(big, kSentinel);
  auto y =
      Kokkos::subview(big, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::pair<int, int>(0, 4));
  expect_error([&] { kcnn::pool2d_forward(Space(), f.x, f.bias, y, f.params); },
               "y must be contiguous");
  EXPECT_TRUE(untouched(big));

  T4 x_big("x_big", 2, 3, 9, 10);
  auto x =
      Kokkos::subview(x_big, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::pair<int, int>(0, 8));
  T4 y_ok("y_ok", 2, 3, 5, 4);
  Kokkos::deep_copy(y_ok, kSentinel);
  expect_error([&] { kcnn::pool2d_forward(Space(), x, f.bias, y_ok, f.params); },
               "x must be contiguous");
  EXPECT_TRUE(untouched(y_ok));
}

TEST(Pool2dErrors, EmptyBatchAndNoChannelsAreNoOps) {
  Fixture f;
  T4 x0("x0", 0, 3, 9, 8), y0("y0", 0, 3, 5, 4);
  EXPECT_NO_THROW(kcnn::pool2d_forward(Space(), x0, f.bias, y0, f.params));
  T4 xc0("xc0", 2, 0, 9, 8), yc0("yc0", 2, 0, 5, 4);
  EXPECT_NO_THROW(kcnn::pool2d_forward(Space(), xc0, yc0, f.params));
  // ... but they are still validated.
  T4 y_bad("y_bad", 0, 3, 4, 4);
  expect_error([&] { kcnn::pool2d_forward(Space(), x0, f.bias, y_bad, f.params); },
               "wrong y extents");
  expect_error([&] { kcnn::pool2d_forward(Space(), xc0, f.bias, yc0, f.params); },
               "bias has extent 3; expected 0 (no bias) or C=0");
}

}  // namespace
}  // namespace kcnn_test
