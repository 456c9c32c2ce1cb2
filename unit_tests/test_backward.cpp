// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The backward operations: conv2d_backward_data, conv2d_backward_weights,
// pool2d_backward and activation_backward against independent double-precision host
// gradients (outputs poisoned with NaN first), checked in double by central finite
// differences of host losses and by the adjoint identities
//   <conv(x, w), g> = <x, backward_data(g, w)> = <w, backward_weights(x, g)>,
// over the convolution and pooling shape families x layouts x backends, in float and
// double; then the invalid calls: kcnn::Error naming the problem, the output untouched.
#include "test_support.hpp"

#include <numeric>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::Layout;
using kcnn::PoolMode;

// The host gradients (host_backward_data, host_backward_weights, host_pool_backward)
// are in reference.hpp.

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

/// sum |a_i b_i|: the scale of a dot product's rounding error.
double abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += std::abs(a[i] * b[i]);
  return s;
}

/// A few spread-out indices of an array of n elements (first, last, and some between).
std::vector<std::size_t> probe_indices(std::size_t n, std::size_t count) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < count && i < n; ++i)
    idx.push_back(count == 1 ? 0 : (n - 1) * i / (count - 1));
  return idx;
}

/// Central finite difference of f at v[i] (v restored afterwards).
template <class F>
double central_difference(std::vector<double>& v, std::size_t i, double eps, F&& f) {
  const double saved = v[i];
  v[i] = saved + eps;
  const double up = f();
  v[i] = saved - eps;
  const double down = f();
  v[i] = saved;
  return (up - down) / (2 * eps);
}

template <class T>
std::vector<double> rounded(std::vector<double> v) {
  for (auto& e : v)
    e = static_cast<double>(static_cast<T>(e));
  return v;
}

// ---------------------------------------------------------------------------------
// Convolution backward
// ---------------------------------------------------------------------------------

struct ConvParam {
  ConvCase c;
  Backend backend;
};

void PrintTo(const ConvParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string conv_name(const ::testing::TestParamInfo<ConvParam>& info) {
  return info.param.c.name + "_" + kcnn::to_string(info.param.c.layout) + "_" +
         backend_name(info.param.backend);
}

std::vector<ConvParam> conv_params() {
  std::vector<ConvParam> list;
  auto cases = conv_shape_families();
  cases.push_back({"batch5_stride2x1", 5, 3, 8, 7, 2, 3, 2, 2, 1, 1, 0});
  for (const auto& base : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (Backend b : backends()) {
        ConvCase c = base;
        c.layout = layout;
        list.push_back({c, b});
      }
  return list;
}

class Conv2dBackward : public ::testing::TestWithParam<ConvParam> {};

/// Both backward convolutions of case c, with the default workspace and with a budget of
/// `one_image` bytes (about one image per chunk, so that the batch runs in several
/// chunks), each time on poisoned outputs; check(dx, dw, dbias) compares the host copies.
template <class Space, class X, class DX, class DW, class DB, class Check>
void run_backward_with_limits(const Space& space, const ConvCase& c, const X& x, const X& w,
                              const X& dy, const DX& dx, const DW& dw, const DB& db,
                              std::size_t one_image, Check&& check) {
  for (std::size_t limit : {std::size_t(0), one_image}) {
    SCOPED_TRACE("workspace limit " + std::to_string(limit));
    kcnn::Conv2dParams params = c.params();
    params.workspace_limit_bytes = limit;
    poison(dx);
    poison(dw);
    poison(db);
    kcnn::conv2d_backward_data(space, dy, w, dx, params);
    kcnn::conv2d_backward_weights(space, x, dy, dw, db, params);
    space.fence();
    check(to_host(dx), to_host(dw), to_host(db));
  }
}

/// Runs both backward convolutions of case c in T, with the default workspace and with
/// a budget of about one image (so that the batch is processed in several chunks), and
/// compares them with the host gradients.
template <class T, class Space>
void check_conv_backward(const Space& space, const ConvCase& c) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const auto xv = rounded<T>(random_values(product(c.x_extents()), 11));
  const auto wv = rounded<T>(random_values(product(c.w_extents()), 12));
  const auto dyv = rounded<T>(random_values(product(c.y_extents()), 13));
  const auto want_dx = host_backward_data(c, dyv, wv);
  std::vector<double> want_dw, want_db;
  host_backward_weights(c, xv, dyv, want_dw, want_db);

  auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
  auto w = make_tensor<T, Space>("w", c.w_extents(), wv);
  auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
  Tensor4<T, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                       c.x_extents()[3]);
  Tensor4<T, Space> dw("dw", c.w_extents()[0], c.w_extents()[1], c.w_extents()[2],
                       c.w_extents()[3]);
  Tensor1<T, Space> db("db", c.M);

  const std::size_t K = std::size_t(c.C) * c.R * c.S, PQ = std::size_t(c.P()) * c.Q();
  // Room for one image's unrolled matrix (plus alignment): one image per chunk.
  const std::size_t one_image = K * PQ * sizeof(T) + 1024;
  run_backward_with_limits(space, c, x, w, dy, dx, dw, db, one_image,
                           [&](const auto& got_dx, const auto& got_dw, const auto& got_db) {
                             EXPECT_LE(relative_error(got_dx, want_dx), tolerance<T>()) << "dx";
                             EXPECT_LE(relative_error(got_dw, want_dw), tolerance<T>()) << "dw";
                             EXPECT_LE(relative_error(got_db, want_db), tolerance<T>()) << "dbias";
                           });

  if constexpr (std::is_same_v<T, double>) {
    // Adjoint identities with kcnn's own forward: <conv(x, w), g> = <x, dx(g)> = <w, dw(x, g)>.
    Tensor4<T, Space> y("y", c.y_extents()[0], c.y_extents()[1], c.y_extents()[2],
                        c.y_extents()[3]);
    kcnn::Conv2dParams params = c.params();
    params.algo = kcnn::ConvAlgo::Reference;
    kcnn::conv2d_forward(space, x, w, y, params);
    space.fence();
    const auto yv = to_host(y);
    const double lhs = dot(yv, dyv), scale = abs_dot(yv, dyv) + 1e-300;
    EXPECT_LE(std::abs(lhs - dot(xv, to_host(dx))) / scale, 1e-12) << "<conv(x), g> != <x, dx>";
    EXPECT_LE(std::abs(lhs - dot(wv, to_host(dw))) / scale, 1e-12) << "<conv(x), g> != <w, dw>";

    // Finite differences of the host loss L = <conv(x, w) + bias, g> (independent of
    // kcnn's forward); L is linear, so the central difference is exact up to rounding.
    ConvCase cb = c;
    cb.bias = true;
    auto xs = xv, ws = wv;
    std::vector<double> bs(c.M, 0.25);
    auto loss = [&] { return dot(host_conv2d(cb, xs, ws, bs), dyv); };
    const auto got_dx = to_host(dx), got_dw = to_host(dw), got_db = to_host(db);
    auto fd_check = [&](const char* what, std::vector<double>& v, const std::vector<double>& got,
                        std::size_t probes) {
      double mag = 1;
      for (double g : got)
        mag = std::max(mag, std::abs(g));
      for (std::size_t i : probe_indices(v.size(), probes)) {
        const double fd = central_difference(v, i, 1e-3, loss);
        EXPECT_NEAR(got[i], fd, 1e-8 * mag) << what << "[" << i << "]";
      }
    };
    fd_check("dx", xs, got_dx, 5);
    fd_check("dw", ws, got_dw, 5);
    fd_check("dbias", bs, got_db, 3);
  }
}

TEST_P(Conv2dBackward, MatchesHostGradientsFiniteDifferencesAndAdjoints) {
  const auto& param = GetParam();
  with_backend(param.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_conv_backward<float, Space>(space, param.c);
    check_conv_backward<double, Space>(space, param.c);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dBackward, ::testing::ValuesIn(conv_params()), conv_name);

std::vector<double> magnitudes(std::vector<double> v) {
  for (double& e : v)
    e = std::abs(e);
  return v;
}

/// 16-bit tensors: both backward convolutions against the double gradients of the values
/// as rounded to T, within expect_within_16bit_bound (float sums rounded once; K = M*R*S
/// products per dx element, N*P*Q per dw element and per dbias; S from the magnitudes),
/// with the default workspace and with about one image per chunk (dw then sums chunks in
/// float before its one rounding).
template <class T, class Space>
void check_conv_backward_16bit(const Space& space, const ConvCase& c) {
  SCOPED_TRACE(type_name<T>());
  const auto x =
      make_tensor<T, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 11));
  const auto w =
      make_tensor<T, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 12));
  const auto dy =
      make_tensor<T, Space>("dy", c.y_extents(), random_values(product(c.y_extents()), 13));
  const auto xv = to_host(x), wv = to_host(w), dyv = to_host(dy);  // the rounded values
  const auto want_dx = host_backward_data(c, dyv, wv);
  const auto scale_dx = host_backward_data(c, magnitudes(dyv), magnitudes(wv));
  std::vector<double> want_dw, want_db, scale_dw, scale_db;
  host_backward_weights(c, xv, dyv, want_dw, want_db);
  host_backward_weights(c, magnitudes(xv), magnitudes(dyv), scale_dw, scale_db);

  Tensor4<T, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                       c.x_extents()[3]);
  Tensor4<T, Space> dw("dw", c.w_extents()[0], c.w_extents()[1], c.w_extents()[2],
                       c.w_extents()[3]);
  Tensor1<T, Space> db("db", c.M);
  const std::size_t K = std::size_t(c.C) * c.R * c.S, PQ = std::size_t(c.P()) * c.Q();
  // The float weights (gradient), one image's float and stored unrolled matrix and its
  // float dy: about one image per chunk.
  const std::size_t one_image = c.M * K * 4 + K * PQ * 6 + c.M * PQ * 4 + 4096;
  const double pixels = double(c.N) * c.P() * c.Q();
  run_backward_with_limits(space, c, x, w, dy, dx, dw, db, one_image,
                           [&](const auto& got_dx, const auto& got_dw, const auto& got_db) {
                             {
                               SCOPED_TRACE("dx");
                               expect_within_16bit_bound<T>(got_dx, want_dx, scale_dx,
                                                            double(c.M) * c.R * c.S);
                             }
                             {
                               SCOPED_TRACE("dw");
                               expect_within_16bit_bound<T>(got_dw, want_dw, scale_dw, pixels);
                             }
                             {
                               SCOPED_TRACE("dbias");
                               expect_within_16bit_bound<T>(got_db, want_db, scale_db, pixels);
                             }
                           });
}

TEST_P(Conv2dBackward, SixteenBitWithinTheRoundingBound) {
  const auto& param = GetParam();
  with_backend(param.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_conv_backward_16bit<kcnn::bfloat16, Space>(space, param.c);
    check_conv_backward_16bit<Kokkos::Experimental::half_t, Space>(space, param.c);
  });
}

/// LayoutLeft operands (not row-major: the packed GEMM paths) and an empty-bias call.
/// Calls f(c, space, scalar) with `base` in both layouts, on every backend, for float and
/// double scalars (a value of the type), each under a trace naming it: the loop of the
/// host direct-kernel tests below.
template <class F>
void for_layouts_backends_and_types(const ConvCase& base, F&& f) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ConvCase c = base;
    c.layout = layout;
    SCOPED_TRACE(c.name + std::string(" ") + kcnn::to_string(layout));
    for (Backend b : backends())
      with_backend(b, [&](auto space) {
        SCOPED_TRACE(backend_name(b));
        auto typed = [&](auto scalar) {
          SCOPED_TRACE((std::is_same_v<decltype(scalar), float> ? "float" : "double"));
          f(static_cast<const ConvCase&>(c), space, scalar);
        };
        typed(float{});
        typed(double{});
      });
  }
}

/// conv2d_backward_data on a CPU takes Tiled's register-blocked kernel (a forward
/// convolution of dy with the rotated, transposed filters,
/// impl/backward/conv2d_backward_data_direct.hpp; these shapes are too small for the
/// Winograd path, test_conv2d_winograd.cpp) at unit stride with padding at most
/// (R - 1) x dilation, where its packed weights fit the workspace limit, and the GEMM path
/// otherwise; both match the host gradient (dx poisoned first). The cases: the edges of
/// the direct path's padding (0 and (R - 1) x dilation, per dimension), dilation with a
/// non-square filter, 1x1, C = 1 and M = 1, batch 1, several channel blocks (C = 67 and
/// M = 130 at 3x3), a LeNet-like 7x7 layer; stride 2 and padding beyond the reach on
/// the GEMM path; and, where the GEMM path's one-image scratch fits below the packed
/// weights (more filters than pixels), a workspace limit one byte below the packed
/// weights: the GEMM path. Float and double, both layouts, both host backends. Host
/// builds only.
TEST(Conv2dBackwardDataDirect, RunsTheRegisterKernelAtUnitStride) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the register-blocked kernel runs on host backends";
  } else {
    struct Expect {
      ConvCase c;
      bool direct;
    };
    // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
    const std::vector<Expect> cases = {
        {{"resnet_like", 2, 16, 9, 10, 24, 3, 3, 1, 1, 1, 1}, true},
        {{"no_padding", 1, 5, 8, 7, 9, 3, 3}, true},
        {{"pad_at_reach_dilated_5x3", 2, 3, 13, 11, 10, 5, 3, 1, 1, 8, 4, 2, 2}, true},
        {{"pad_h_0_pad_w_at_reach", 1, 4, 6, 9, 33, 3, 5, 1, 1, 0, 8, 1, 2}, true},
        {{"pointwise", 3, 7, 5, 4, 17, 1, 1}, true},
        {{"one_channel", 2, 1, 12, 11, 6, 5, 5, 1, 1, 2, 2}, true},
        {{"one_filter", 2, 9, 7, 8, 1, 3, 3, 1, 1, 1, 1}, true},
        {{"channel_blocks", 1, 130, 6, 5, 67, 3, 3, 1, 1, 1, 1}, true},
        {{"lenet_c3_like", 3, 4, 16, 15, 16, 7, 7}, true},
        {{"stride2", 2, 5, 11, 9, 7, 3, 3, 2, 2, 1, 1}, false},
        {{"pad_beyond_reach", 1, 6, 5, 6, 8, 3, 3, 1, 1, 3, 1}, false},
    };
    int fallbacks = 0;
    for (const Expect& e : cases)
      for_layouts_backends_and_types(e.c, [&](const ConvCase& c, auto space, auto scalar) {
        using Space = decltype(space);
        using T = decltype(scalar);
        const auto wv = rounded<T>(random_values(product(c.w_extents()), 32));
        const auto dyv = rounded<T>(random_values(product(c.y_extents()), 33));
        const auto want = host_backward_data(c, dyv, wv);
        auto w = make_tensor<T, Space>("w", c.w_extents(), wv);
        auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
        const auto xe = c.x_extents();
        Tensor4<T, Space> dx("dx", xe[0], xe[1], xe[2], xe[3]);
        auto run = [&](std::size_t limit) {
          kcnn::Conv2dParams params = c.params();
          params.workspace_limit_bytes = limit;
          poison(dx);
          const LaunchedKernels launched;
          kcnn::conv2d_backward_data(space, dy, w, dx, params);
          space.fence();
          EXPECT_LE(relative_error(to_host(dx), want), tolerance<T>());
          return launched.saw("kcnn::conv2d::tiled::host_simd");
        };
        EXPECT_EQ(run(0), e.direct);
        if (e.direct) {
          // The packed weights one byte over the limit: the GEMM path, same result,
          // where its one image's unrolled matrix fits that limit.
          const auto pb = kcnn::Impl::make_conv2d_backward_problem(
              "test", dx, w, 0, dy, c.params(),
              kcnn::Impl::ConvTensorNames{"dx", "w", "bias", "dy"});
          const auto as = kcnn::Impl::backward_data_as_forward(pb);
          ASSERT_TRUE(as.ok);
          const std::size_t packed = kcnn::Impl::tiled_host_simd_workspace_bytes<T>(as.forward);
          const std::size_t one_image =
              std::size_t(c.C) * c.R * c.S * c.P() * c.Q() * sizeof(T) + 1024;
          if (packed - 1 >= one_image) {
            EXPECT_FALSE(run(packed - 1));
            ++fallbacks;
          }
        }
      });
    EXPECT_GT(fallbacks, 0) << "no case exercised the workspace limit's fallback";
  }
}

/// conv2d_backward_weights on a CPU takes the direct register-blocked kernel
/// (impl/backward/conv2d_backward_weights_direct.hpp) wherever its workspace fits, at any
/// stride, padding and dilation, and the GEMM path below that; both match the host
/// gradients (dw and dbias poisoned first). The cases: ResNet-like 3x3 with padding,
/// stride 2 and 3, dilation, padding beyond the filter (taps that never lie inside x),
/// 1x1, 7x7, C = 1, M = 1, partial filter blocks (M = 130) and channel groups (C = 67),
/// batch 1, with and without a bias gradient. Float and double, both layouts, both host
/// backends. Host builds only.
TEST(Conv2dBackwardWeightsDirect, RunsTheRegisterKernel) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the register-blocked kernel runs on host backends";
  } else {
    // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
    const std::vector<ConvCase> cases = {
        {"resnet_like", 2, 16, 9, 10, 24, 3, 3, 1, 1, 1, 1},
        {"stride2", 3, 5, 11, 9, 7, 3, 3, 2, 2, 1, 1},
        {"stride3_dilated_5x3", 2, 3, 17, 14, 10, 5, 3, 3, 2, 2, 3, 2, 3},
        {"pad_beyond_filter", 1, 6, 3, 4, 8, 5, 5, 1, 1, 4, 4},
        {"pointwise", 3, 7, 5, 4, 17, 1, 1},
        {"lenet_c3_like", 3, 4, 16, 15, 16, 7, 7},
        {"one_channel", 2, 1, 12, 11, 6, 5, 5, 1, 1, 2, 2},
        {"one_filter", 1, 9, 7, 8, 1, 3, 3, 1, 1, 1, 1},
        {"blocks_m130_c67", 1, 67, 6, 5, 130, 3, 3, 1, 1, 1, 1},
    };
    int fallbacks = 0, i = 0;
    for (ConvCase base : cases) {
      base.bias = i++ % 2 == 0;
      for_layouts_backends_and_types(base, [&](const ConvCase& c, auto space, auto scalar) {
        using Space = decltype(space);
        using T = decltype(scalar);
        const auto xv = rounded<T>(random_values(product(c.x_extents()), 41));
        const auto dyv = rounded<T>(random_values(product(c.y_extents()), 42));
        std::vector<double> want_dw, want_db;
        host_backward_weights(c, xv, dyv, want_dw, want_db);
        auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
        auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
        const auto we = c.w_extents();
        Tensor4<T, Space> dw("dw", we[0], we[1], we[2], we[3]);
        Tensor1<T, Space> db("db", c.M);
        auto run = [&](std::size_t limit) {
          kcnn::Conv2dParams params = c.params();
          params.workspace_limit_bytes = limit;
          poison(dw);
          poison(db);
          const LaunchedKernels launched;
          if (c.bias) {
            kcnn::conv2d_backward_weights(space, x, dy, dw, db, params);
          } else {
            kcnn::conv2d_backward_weights(space, x, dy, dw, params);
          }
          space.fence();
          EXPECT_LE(relative_error(to_host(dw), want_dw), tolerance<T>()) << "dw";
          if (c.bias) {
            EXPECT_LE(relative_error(to_host(db), want_db), tolerance<T>()) << "dbias";
          }
          return launched.saw("kcnn::conv2d_backward_weights::direct");
        };
        EXPECT_TRUE(run(0));
        // Below the direct kernel's workspace: the GEMM path, where one image's
        // unrolled matrix fits.
        const auto pb = kcnn::Impl::make_conv2d_backward_problem(
            "test", x, dw, c.bias ? c.M : 0, dy, c.params(),
            kcnn::Impl::ConvTensorNames{"x", "dw", "dbias", "dy"});
        const std::size_t direct =
            kcnn::Impl::BackwardWeightsPlan::make<T>(pb).template workspace_bytes<T>();
        const std::size_t one_image =
            std::size_t(c.C) * c.R * c.S * c.P() * c.Q() * sizeof(T) + 1024;
        if (direct - 1 >= one_image) {
          EXPECT_FALSE(run(direct - 1));
          ++fallbacks;
        }
      });
    }
    EXPECT_GT(fallbacks, 0) << "no case exercised the workspace limit's fallback";
  }
}

/// Both work splits of the direct backward-weights kernel, forced on the same problems,
/// match the host gradient (dw poisoned first): PerTap (an item per filter block x tap x
/// channel block) and AllTaps (an item per filter block x range of output rows, every tap;
/// the parts' sums added in part order). The cases give AllTaps several parts with a
/// shorter last one, taps in the padding, stride 2 and 3 with dilation, partial filter
/// blocks (M = 130: several blocks on every vector width) and channels that are not a
/// multiple of the register block. Float and double, both layouts, both host backends.
/// The AllTaps result must not depend on the thread count: rerun on one thread (Serial)
/// it is bitwise the same. Host builds only.
TEST(Conv2dBackwardWeightsDirect, BothWorkSplitsMatchTheReference) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the register-blocked kernel runs on host backends";
  } else {
    using kcnn::Impl::BackwardWeightsScheme;
    // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
    const std::vector<ConvCase> cases = {
        {"parts_uneven", 8, 5, 20, 19, 24, 3, 3, 1, 1, 1, 1},
        {"stride3_dilated_5x3", 6, 3, 29, 23, 10, 5, 3, 3, 2, 2, 3, 2, 3},
        {"pad_beyond_filter", 3, 6, 5, 4, 8, 5, 5, 1, 1, 4, 4},
        {"lenet_c3_like", 5, 4, 22, 21, 16, 7, 7},
        {"blocks_m130_c13", 2, 13, 11, 9, 130, 3, 3, 1, 1, 1, 1},
        {"batch1_c1", 1, 1, 37, 31, 3, 3, 3, 2, 2, 1, 1},
    };
    int multi_part = 0;
    for (const ConvCase& base : cases)
      for_layouts_backends_and_types(base, [&](const ConvCase& c, auto space, auto scalar) {
        using Space = decltype(space);
        using T = decltype(scalar);
        const auto xv = rounded<T>(random_values(product(c.x_extents()), 51));
        const auto dyv = rounded<T>(random_values(product(c.y_extents()), 52));
        std::vector<double> want_dw, want_db;
        host_backward_weights(c, xv, dyv, want_dw, want_db);
        auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
        auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
        const auto we = c.w_extents();
        Tensor4<T, Space> dw("dw", we[0], we[1], we[2], we[3]);
        const auto pb = kcnn::Impl::make_conv2d_backward_problem(
            "test", x, dw, 0, dy, c.params(),
            kcnn::Impl::ConvTensorNames{"x", "dw", "dbias", "dy"});
        auto run = [&](auto exec, BackwardWeightsScheme scheme) {
          using Exec = decltype(exec);
          poison(dw);
          const bool ran = kcnn::Impl::conv2d_backward_weights_direct(
              exec, kcnn::Impl::as_kernel_view<Exec, false>(x),
              kcnn::Impl::as_kernel_view<Exec, false>(dy),
              kcnn::Impl::as_kernel_view<Exec, true>(dw), pb, scheme);
          exec.fence();
          EXPECT_TRUE(ran);
          const auto got = to_host(dw);
          EXPECT_LE(relative_error(got, want_dw), tolerance<T>()) << "dw";
          return got;
        };
        run(space, BackwardWeightsScheme::PerTap);
        const auto all_taps = run(space, BackwardWeightsScheme::AllTaps);
        const auto plan =
            kcnn::Impl::BackwardWeightsPlan::make<T>(pb, BackwardWeightsScheme::AllTaps);
        multi_part += plan.parts > 1;
#if defined(KOKKOS_ENABLE_SERIAL)
        if constexpr (!std::is_same_v<Space, Kokkos::Serial>) {
          EXPECT_EQ(run(Kokkos::Serial(), BackwardWeightsScheme::AllTaps), all_taps)
              << "AllTaps depends on the thread count";
        }
#endif
      });
    EXPECT_GT(multi_part, 0) << "no case split its rows into several parts";
  }
}

TEST(Conv2dBackwardViews, LayoutLeftAndNoBias) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Left4 = Kokkos::View<double****, Kokkos::LayoutLeft, Space::memory_space>;
  // Stride 2 (the GEMM path) and stride 1 (on a CPU, NCHW: the register-blocked kernel
  // with LayoutLeft's strides; NHWC's channels are not contiguous there: the GEMM path).
  const ConvCase cases[] = {{"left", 3, 2, 9, 8, 3, 3, 2, 2, 1, 1, 0},
                            {"left_unit_stride", 3, 2, 9, 8, 5, 3, 3, 1, 1, 1, 1}};
  for (const ConvCase& base : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      SCOPED_TRACE(c.name + std::string(" ") + kcnn::to_string(layout));
      const auto xv = random_values(product(c.x_extents()), 21);
      const auto wv = random_values(product(c.w_extents()), 22);
      const auto dyv = random_values(product(c.y_extents()), 23);
      auto left = [](const std::string& label, const std::array<int, 4>& e,
                     const std::vector<double>& v) {
        Left4 out(label, e[0], e[1], e[2], e[3]);
        auto h = Kokkos::create_mirror_view(out);
        std::size_t i = 0;  // v is row-major in the index order
        for (int a = 0; a < e[0]; ++a)
          for (int b = 0; b < e[1]; ++b)
            for (int d = 0; d < e[2]; ++d)
              for (int f = 0; f < e[3]; ++f)
                h(a, b, d, f) = v.empty() ? 0.0 : v[i++];
        Kokkos::deep_copy(out, h);
        return out;
      };
      auto row_major = [](const Left4& v) {
        auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
        std::vector<double> out;
        for (std::size_t a = 0; a < h.extent(0); ++a)
          for (std::size_t b = 0; b < h.extent(1); ++b)
            for (std::size_t d = 0; d < h.extent(2); ++d)
              for (std::size_t f = 0; f < h.extent(3); ++f)
                out.push_back(h(a, b, d, f));
        return out;
      };
      auto x = left("x", c.x_extents(), xv), w = left("w", c.w_extents(), wv);
      auto dy = left("dy", c.y_extents(), dyv);
      auto dx = left("dx", c.x_extents(), {}), dw = left("dw", c.w_extents(), {});
      poison(dx);
      poison(dw);
      kcnn::conv2d_backward_data(Space(), dy, w, dx, c.params());
      kcnn::conv2d_backward_weights(Space(), x, dy, dw, c.params());
      Space().fence();
      std::vector<double> want_dw, want_db;
      host_backward_weights(c, xv, dyv, want_dw, want_db);
      EXPECT_LE(relative_error(row_major(dx), host_backward_data(c, dyv, wv)), 1e-12);
      EXPECT_LE(relative_error(row_major(dw), want_dw), 1e-12);
    }
}

TEST(Conv2dBackwardViews, EmptyBatchAndNoFilters) {
  using Space = Kokkos::DefaultExecutionSpace;
  using T4 = Tensor4<double, Space>;
  // N = 0: dw and dbias are zero gradients; dx has no elements.
  T4 x("x", 0, 2, 5, 5), dy("dy", 0, 3, 3, 3), w("w", 3, 2, 3, 3), dw("dw", 3, 2, 3, 3);
  Tensor1<double, Space> db("db", 3);
  poison(dw);
  poison(db);
  kcnn::conv2d_backward_data(Space(), dy, w, x, kcnn::Conv2dParams{});
  kcnn::conv2d_backward_weights(Space(), x, dy, dw, db, kcnn::Conv2dParams{});
  for (double v : to_host(dw))
    EXPECT_EQ(v, 0.0);
  for (double v : to_host(db))
    EXPECT_EQ(v, 0.0);
  // M = 0: y does not depend on x, dx = 0.
  T4 dy0("dy0", 2, 0, 3, 3), w0("w0", 0, 2, 3, 3), dx("dx", 2, 2, 5, 5);
  poison(dx);
  kcnn::conv2d_backward_data(Space(), dy0, w0, dx, kcnn::Conv2dParams{});
  for (double v : to_host(dx))
    EXPECT_EQ(v, 0.0);
}

// ---------------------------------------------------------------------------------
// Pooling backward
// ---------------------------------------------------------------------------------

struct PoolParam {
  PoolCase c;
  Backend backend;
  bool ties = false;  ///< x holds only -1, 0, 1: Max windows with equal maxima
};

void PrintTo(const PoolParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string pool_name(const ::testing::TestParamInfo<PoolParam>& info) {
  const auto& c = info.param.c;
  const std::string mode =
      c.mode == PoolMode::Max ? "Max" : (c.count_include_pad ? "AvgInclPad" : "AvgExclPad");
  return c.name + (info.param.ties ? "_ties_" : "_") + kcnn::to_string(c.layout) + "_" + mode +
         "_" + backend_name(info.param.backend);
}

std::vector<PoolParam> pool_params() {
  // name, N, C, H, W, window h/w, stride h/w, pad h/w
  const std::vector<PoolCase> shapes = {
      {"batch1_c1", 1, 1, 6, 6, 2, 2, 2, 2},
      {"lenet_s2", 2, 4, 16, 16, 2, 2, 2, 2},
      {"lenet_s4_nondividing", 2, 16, 34, 34, 4, 4, 4, 4},
      {"overlap_3s2_pad1", 2, 3, 12, 9, 3, 3, 2, 2, 1, 1},
      {"prime_nonsquare", 3, 7, 17, 13, 3, 2, 3, 2},
      {"stride1", 2, 3, 8, 7, 3, 3, 1, 1},
      {"stride_gt_window", 2, 3, 11, 10, 2, 2, 3, 3},
      {"pad_window_minus_1", 2, 2, 5, 6, 3, 3, 1, 1, 2, 2},
      {"window_beyond_input", 2, 3, 3, 1, 3, 3, 2, 2, 1, 1},
      {"global", 1, 4, 7, 7, 7, 7, 7, 7},
      // Disjoint windows (the scatter kernel) with padding, gaps and remainders.
      {"disjoint_pad1", 2, 3, 9, 8, 2, 2, 2, 2, 1, 1},
      {"disjoint_3s4_pad1", 2, 3, 14, 11, 3, 3, 4, 4, 1, 1},
      {"disjoint_1x3", 1, 2, 5, 10, 1, 3, 1, 3},
  };
  std::vector<PoolParam> list;
  for (const auto& base : shapes)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (int mode = 0; mode < 3; ++mode)
        for (Backend b : backends()) {
          PoolCase c = base;
          c.layout = layout;
          c.mode = mode == 0 ? PoolMode::Max : PoolMode::Average;
          c.count_include_pad = mode != 2;
          list.push_back({c, b, false});
          if (mode == 0 && base.name == "overlap_3s2_pad1") list.push_back({c, b, true});
        }
  return list;
}

class Pool2dBackward : public ::testing::TestWithParam<PoolParam> {};

template <class T, class Space>
void check_pool_backward(const Space& space, const PoolCase& c, bool ties) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  auto xv = random_values(product(c.x_extents()), 31);
  if (ties)
    for (auto& v : xv)
      v = std::round(v);
  xv = rounded<T>(xv);
  const auto dyv = rounded<T>(random_values(product(c.y_extents()), 32));
  auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
  auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
  Tensor4<T, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                       c.x_extents()[3]);
  poison(dx);
  kcnn::pool2d_backward(space, x, dy, dx, c.params());
  space.fence();
  const auto got = to_host(dx);
  EXPECT_LE(relative_error(got, host_pool_backward(c, xv, dyv)), tolerance<T>());

  if constexpr (std::is_same_v<T, double>) {
    if (ties) return;  // Max is not differentiable at ties
    // Finite differences of L = <pool(x), g> with the host pooling; random values keep
    // every window's maximum more than eps ahead of the rest.
    auto xs = xv;
    auto loss = [&] { return dot(host_pool2d(c, xs, {}), dyv); };
    for (std::size_t i : probe_indices(xs.size(), 7)) {
      const double fd = central_difference(xs, i, 1e-7, loss);
      EXPECT_NEAR(got[i], fd, 1e-6) << "dx[" << i << "]";
    }
  }
}

TEST_P(Pool2dBackward, MatchesHostGradientAndFiniteDifferences) {
  const auto& param = GetParam();
  with_backend(param.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_pool_backward<float, Space>(space, param.c, param.ties);
    check_pool_backward<double, Space>(space, param.c, param.ties);
  });
}

/// 16-bit tensors: dx sums the routed (Max) or divided (Average) gradients in float and
/// rounds once; within expect_within_16bit_bound of the double gradient of the rounded
/// values (K: the window's cells, S: the gradient of the magnitudes of dy).
template <class T, class Space>
void check_pool_backward_16bit(const Space& space, const PoolCase& c, bool ties) {
  SCOPED_TRACE(type_name<T>());
  auto xs = random_values(product(c.x_extents()), 31);
  if (ties)
    for (auto& v : xs)
      v = std::round(v);
  const auto x = make_tensor<T, Space>("x", c.x_extents(), xs);
  const auto dy =
      make_tensor<T, Space>("dy", c.y_extents(), random_values(product(c.y_extents()), 32));
  const auto xv = to_host(x), dyv = to_host(dy);  // the rounded values
  Tensor4<T, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                       c.x_extents()[3]);
  poison(dx);
  kcnn::pool2d_backward(space, x, dy, dx, c.params());
  space.fence();
  expect_within_16bit_bound<T>(to_host(dx), host_pool_backward(c, xv, dyv),
                               host_pool_backward(c, xv, magnitudes(dyv)),
                               double(c.window_h) * c.window_w);
}

TEST_P(Pool2dBackward, SixteenBitWithinTheRoundingBound) {
  const auto& param = GetParam();
  with_backend(param.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_pool_backward_16bit<kcnn::bfloat16, Space>(space, param.c, param.ties);
    check_pool_backward_16bit<Kokkos::Experimental::half_t, Space>(space, param.c, param.ties);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Pool2dBackward, ::testing::ValuesIn(pool_params()), pool_name);

// ---------------------------------------------------------------------------------
// Activation backward
// ---------------------------------------------------------------------------------

class ActivationBackward : public ::testing::TestWithParam<std::tuple<Activation, Backend>> {};

template <class T, class Space>
void check_activation_backward(const Space& space, Activation a) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const std::array<int, 4> e{3, 5, 7, 2};
  auto zv = random_values(product(e), 41);
  for (auto& z : zv)
    z *= 3;  // beyond sigmoid's and tanh's linear range
  std::vector<double> yv(zv.size());
  for (std::size_t i = 0; i < zv.size(); ++i)
    yv[i] = static_cast<double>(static_cast<T>(host_activation(a, zv[i])));
  const auto dyv = rounded<T>(random_values(zv.size(), 42));
  auto y = make_tensor<T, Space>("y", e, yv);
  auto dy = make_tensor<T, Space>("dy", e, dyv);
  Tensor4<T, Space> dx("dx", e[0], e[1], e[2], e[3]);
  poison(dx);
  kcnn::activation_backward(space, a, y, dy, dx);
  space.fence();
  const auto got = to_host(dx);
  // dy * act'(z) from the definitions of the derivatives
  std::vector<double> want(zv.size());
  for (std::size_t i = 0; i < zv.size(); ++i) {
    const double z = zv[i];
    double d = 1;
    if (a == Activation::ReLU) d = z > 0 ? 1 : 0;
    if (a == Activation::Sigmoid) d = std::exp(-z) / ((1 + std::exp(-z)) * (1 + std::exp(-z)));
    if (a == Activation::Tanh) d = 1 / (std::cosh(z) * std::cosh(z));
    want[i] = dyv[i] * d;
  }
  EXPECT_LE(relative_error(got, want), (std::is_same_v<T, float> ? 1e-4 : 1e-12));
  if constexpr (std::is_same_v<T, double>) {
    for (std::size_t i : probe_indices(zv.size(), 9)) {
      const double fd =
          (host_activation(a, zv[i] + 1e-6) - host_activation(a, zv[i] - 1e-6)) / 2e-6;
      EXPECT_NEAR(got[i], dyv[i] * fd, 1e-8) << "dx[" << i << "] at z=" << zv[i];
    }
    // In place: dx is dy.
    kcnn::activation_backward(space, a, y, dy, dy);
    space.fence();
    EXPECT_EQ(to_host(dy), got);
  }
}

TEST_P(ActivationBackward, MatchesDerivativeAndFiniteDifferences) {
  const auto [a, backend] = GetParam();
  with_backend(backend, [&, a = a](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    check_activation_backward<float, Space>(space, a);
    check_activation_backward<double, Space>(space, a);
  });
}

INSTANTIATE_TEST_SUITE_P(All, ActivationBackward,
                         ::testing::Combine(::testing::Values(Activation::Identity,
                                                              Activation::ReLU, Activation::Sigmoid,
                                                              Activation::Tanh),
                                            ::testing::ValuesIn(backends())),
                         [](const ::testing::TestParamInfo<std::tuple<Activation, Backend>>& info) {
                           return std::string(kcnn::to_string(std::get<0>(info.param))) + "_" +
                                  backend_name(std::get<1>(info.param));
                         });

// ---------------------------------------------------------------------------------
// Invalid calls: kcnn::Error with the named problem, the output untouched
// ---------------------------------------------------------------------------------

using Space = Kokkos::DefaultExecutionSpace;
using T4 = Tensor4<float, Space>;
using T1 = Tensor1<float, Space>;
constexpr float kSentinel = 42.5f;

T4 sentinel4(const std::string& label, int a, int b, int c, int d) {
  T4 v(label, a, b, c, d);
  Kokkos::deep_copy(v, kSentinel);
  return v;
}

template <class View>
bool untouched(const View& v) {
  for (double e : to_host(v))
    if (e != kSentinel) return false;
  return true;
}

template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no kcnn::Error; expected one containing: " << needle;
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

// The NCHW problem of the error tests: x (2, 3, 9, 8), w (4, 3, 3, 3), y (2, 4, 7, 6).
TEST(BackwardErrors, BackwardData) {
  T4 dy = sentinel4("dy", 2, 4, 7, 6), w = sentinel4("w", 4, 3, 3, 3);
  kcnn::Conv2dParams p;
  auto rejects = [&](T4 dx, const kcnn::Conv2dParams& params, const std::string& needle) {
    expect_error([&] { kcnn::conv2d_backward_data(Space(), dy, w, dx, params); }, needle);
    EXPECT_TRUE(untouched(dx)) << needle;
  };
  rejects(sentinel4("dx", 2, 3, 9, 9), p, "wrong dy extents (2, 4, 7, 6): expected NCHW");
  rejects(sentinel4("dx", 2, 2, 9, 8), p, "channel mismatch: dx has C=2");
  rejects(sentinel4("dx", 3, 3, 9, 8), p, "wrong dy extents");
  kcnn::Conv2dParams relu = p;
  relu.activation = Activation::ReLU;
  rejects(sentinel4("dx", 2, 3, 9, 8), relu, "params.activation is ReLU");
  kcnn::Conv2dParams pooled = p;
  pooled.pool = kcnn::Pool2dParams{};
  rejects(sentinel4("dx", 2, 3, 9, 8), pooled, "params.pool is set");
  kcnn::Conv2dParams stride0 = p;
  stride0.stride_h = 0;
  rejects(sentinel4("dx", 2, 3, 9, 8), stride0, "stride must be >= 1");
  kcnn::Conv2dParams tiny = p;
  tiny.workspace_limit_bytes = 64;
  rejects(sentinel4("dx", 2, 3, 9, 8), tiny, "workspace limit of 64 bytes is too small");
  // dx overlapping dy
  T4 big = sentinel4("big", 4, 4, 9, 8);
  Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      dy_alias(big.data(), 2, 4, 7, 6), dx_alias(big.data() + 10, 2, 3, 9, 8);
  expect_error([&] { kcnn::conv2d_backward_data(Space(), dy_alias, w, dx_alias, p); },
               "dx overlaps dy");
  EXPECT_TRUE(untouched(big));
}

TEST(BackwardErrors, BackwardWeights) {
  T4 x = sentinel4("x", 2, 3, 9, 8), dy = sentinel4("dy", 2, 4, 7, 6);
  kcnn::Conv2dParams p;
  auto rejects = [&](T4 dw, T1 db, const std::string& needle) {
    expect_error([&] { kcnn::conv2d_backward_weights(Space(), x, dy, dw, db, p); }, needle);
    EXPECT_TRUE(untouched(dw)) << needle;
    EXPECT_TRUE(untouched(db)) << needle;
  };
  auto sentinel1 = [](int n) {
    T1 v("db", n);
    Kokkos::deep_copy(v, kSentinel);
    return v;
  };
  rejects(sentinel4("dw", 4, 3, 3, 3), sentinel1(3),
          "dbias has extent 3; expected 0 (no bias) or M=4");
  rejects(sentinel4("dw", 4, 3, 5, 3), sentinel1(4), "wrong dy extents");
  rejects(sentinel4("dw", 4, 2, 3, 3), sentinel1(4), "channel mismatch: x has C=3");
  rejects(sentinel4("dw", 5, 3, 3, 3), sentinel1(5), "wrong dy extents");
  p.workspace_limit_bytes = 64;  // checked before the bias gradient is written
  rejects(sentinel4("dw", 4, 3, 3, 3), sentinel1(4), "workspace limit of 64 bytes is too small");
  p.workspace_limit_bytes = 0;
  // dbias inside dw
  T4 dw = sentinel4("dw", 4, 3, 3, 3);
  Kokkos::View<float*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> db_alias(
      dw.data() + 5, 4);
  expect_error([&] { kcnn::conv2d_backward_weights(Space(), x, dy, dw, db_alias, p); },
               "dbias overlaps dw");
  EXPECT_TRUE(untouched(dw));
}

TEST(BackwardErrors, PoolBackward) {
  T4 x = sentinel4("x", 2, 3, 9, 8), dy = sentinel4("dy", 2, 3, 4, 4);
  kcnn::Pool2dParams p;
  auto rejects = [&](T4 dyv, T4 dx, const kcnn::Pool2dParams& params, const std::string& needle) {
    expect_error([&] { kcnn::pool2d_backward(Space(), x, dyv, dx, params); }, needle);
    EXPECT_TRUE(untouched(dx)) << needle;
  };
  rejects(dy, sentinel4("dx", 2, 3, 9, 9), p, "wrong dx extents (2, 3, 9, 9)");
  rejects(sentinel4("dy5", 2, 3, 5, 4), sentinel4("dx", 2, 3, 9, 8), p, "wrong dy extents");
  kcnn::Pool2dParams tanh = p;
  tanh.activation = Activation::Tanh;
  rejects(dy, sentinel4("dx", 2, 3, 9, 8), tanh, "params.activation is Tanh");
  kcnn::Pool2dParams pad = p;
  pad.pad_h = 2;
  rejects(dy, sentinel4("dx", 2, 3, 9, 8), pad, "padding must be smaller than the window");
  expect_error([&] { kcnn::pool2d_backward(Space(), x, dy, x, p); }, "dx overlaps x");
  EXPECT_TRUE(untouched(x));
}

TEST(BackwardErrors, ActivationBackward) {
  T4 y = sentinel4("y", 2, 3, 4, 5), dy = sentinel4("dy", 2, 3, 4, 5);
  T4 dx = sentinel4("dx", 2, 3, 5, 4);
  expect_error([&] { kcnn::activation_backward(Space(), Activation::ReLU, y, dy, dx); },
               "dx has extents (2, 3, 5, 4)");
  EXPECT_TRUE(untouched(dx));
  Kokkos::View<float****, Kokkos::LayoutLeft, Space::memory_space> left("left", 2, 3, 4, 5);
  Kokkos::deep_copy(left, kSentinel);
  expect_error([&] { kcnn::activation_backward(Space(), Activation::ReLU, y, dy, left); },
               "strides unlike y");
  EXPECT_TRUE(untouched(left));
  expect_error([&] { kcnn::activation_backward(Space(), static_cast<Activation>(9), y, dy, dy); },
               "unknown activation value 9");
  EXPECT_TRUE(untouched(dy));
  T4 big = sentinel4("big", 3, 3, 4, 5);
  Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      in(big.data(), 2, 3, 4, 5), out(big.data() + 7, 2, 3, 4, 5);
  expect_error([&] { kcnn::activation_backward(Space(), Activation::Tanh, y, in, out); },
               "dx overlaps dy");
  EXPECT_TRUE(untouched(big));
}

}  // namespace
}  // namespace kcnn_test
