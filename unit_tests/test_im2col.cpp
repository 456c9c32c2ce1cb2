// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kcnn::im2col against an independent host unrolling (exact: it is a copy), and
// kcnn::col2im against an independent host fold and by the adjoint identity
// <im2col(x), c> = <x, col2im(c)>, over the convolution shape families x layouts x
// backends x batch slices, in float and double; plus every invalid call.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::Layout;

// host_im2col and host_col2im are in reference.hpp.

template <class T>
std::vector<double> rounded(std::vector<double> v) {
  for (auto& e : v)
    e = static_cast<double>(static_cast<T>(e));
  return v;
}

template <class T, class Space>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space>;

template <class T, class Space>
Matrix<T, Space> make_cols(const ConvCase& c, int n) {
  const std::size_t K = std::size_t(c.C) * c.R * c.S, pixels = std::size_t(n) * c.P() * c.Q();
  return c.nhwc() ? Matrix<T, Space>("cols", pixels, K) : Matrix<T, Space>("cols", K, pixels);
}

/// The batch slices a case is tested on: the whole batch, and a proper slice.
std::vector<std::pair<int, int>> slices(const ConvCase& c) {
  std::vector<std::pair<int, int>> list{{0, c.N}};
  if (c.N > 1) list.push_back({1, c.N - 1});
  if (c.N > 2) list.push_back({c.N - 1, 1});
  return list;
}

struct UnrollParam {
  ConvCase c;
  Backend backend;
};

void PrintTo(const UnrollParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string unroll_name(const ::testing::TestParamInfo<UnrollParam>& info) {
  return info.param.c.name + "_" + kcnn::to_string(info.param.c.layout) + "_" +
         backend_name(info.param.backend);
}

std::vector<UnrollParam> unroll_params() {
  std::vector<UnrollParam> list;
  auto cases = conv_shape_families();
  cases.push_back({"batch5", 5, 3, 8, 7, 1, 3, 2, 2, 1, 1, 0});
  cases.push_back({"k1x1_pad1", 2, 3, 4, 5, 1, 1, 1, 1, 1, 1, 1});
  for (const auto& base : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (Backend b : backends()) {
        ConvCase c = base;
        c.layout = layout;
        list.push_back({c, b});
      }
  return list;
}

template <class T, class Space>
void check_im2col(const Space& space, const ConvCase& c, kcnn::Impl::KernelVariant variant) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const auto xv = rounded<T>(random_values(product(c.x_extents()), 5));
  auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
  for (auto [b0, n] : slices(c)) {
    SCOPED_TRACE("batch slice [" + std::to_string(b0) + ", " + std::to_string(b0 + n) + ")");
    auto cols = make_cols<T, Space>(c, n);
    poison(cols);
    kcnn::Impl::im2col(space, x, c.R, c.S, c.params(), cols, b0, variant);
    space.fence();
    const auto got = to_host(cols);
    const auto want = host_im2col(c, xv, b0, n);
    ASSERT_EQ(got.size(), want.size());
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == want[i]) && wrong++ == 0) first = i;
    EXPECT_EQ(wrong, 0u) << "first wrong entry " << first << ": got " << got[first] << ", want "
                         << want[first];
  }
}

template <class T, class Space>
void check_col2im(const Space& space, const ConvCase& c, kcnn::Impl::KernelVariant variant) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  constexpr double sentinel = 3.25;
  for (auto [b0, n] : slices(c)) {
    SCOPED_TRACE("batch slice [" + std::to_string(b0) + ", " + std::to_string(b0 + n) + ")");
    const std::size_t entries = std::size_t(c.C) * c.R * c.S * n * c.P() * c.Q();
    const auto cv = rounded<T>(random_values(entries, 6));
    auto cols = make_cols<T, Space>(c, n);
    {
      auto h = Kokkos::create_mirror_view(cols);
      for (std::size_t i = 0; i < entries; ++i)
        h.data()[i] = static_cast<T>(cv[i]);
      Kokkos::deep_copy(cols, h);
    }
    // x holds a sentinel outside the slice and NaN inside: col2im must overwrite all of
    // the slice and nothing else.
    std::vector<double> x0(product(c.x_extents()), sentinel);
    auto x = make_tensor<T, Space>("x", c.x_extents(), x0);
    poison(
        Kokkos::subview(x, Kokkos::make_pair(b0, b0 + n), Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
    kcnn::Impl::col2im(space, cols, c.R, c.S, c.params(), x, b0, variant);
    space.fence();
    const auto got = to_host(x);
    const auto want = host_col2im(c, cv, x0, b0, n);
    EXPECT_LE(relative_error(got, want), tolerance<T>());
  }
}

class Im2col : public ::testing::TestWithParam<UnrollParam> {};

TEST_P(Im2col, MatchesHostUnrolling) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    using kcnn::Impl::KernelVariant;
    check_im2col<float, Space>(space, p.c, KernelVariant::Auto);
    check_im2col<double, Space>(space, p.c, KernelVariant::Auto);
    // The GPU-shaped kernels, also where the backend is a host one, in both index widths.
    check_im2col<float, Space>(space, p.c, KernelVariant::Device32);
    check_im2col<double, Space>(space, p.c, KernelVariant::Device64);
  });
}

TEST_P(Im2col, Col2imMatchesHostFold) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    using kcnn::Impl::KernelVariant;
    check_col2im<float, Space>(space, p.c, KernelVariant::Auto);
    check_col2im<double, Space>(space, p.c, KernelVariant::Auto);
    check_col2im<float, Space>(space, p.c, KernelVariant::Device32);
    check_col2im<double, Space>(space, p.c, KernelVariant::Device64);
  });
}

// <im2col(x), c> = <x, col2im(c)> on random data, in double, through the public API.
TEST_P(Im2col, Col2imIsTheAdjoint) {
  const auto& p = GetParam();
  const ConvCase& c = p.c;
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    for (auto [b0, n] : slices(c)) {
      const auto xv = random_values(product(c.x_extents()), 7);
      const std::size_t entries = std::size_t(c.C) * c.R * c.S * n * c.P() * c.Q();
      const auto cv = random_values(entries, 8);
      auto x = make_tensor<double, Space>("x", c.x_extents(), xv);
      auto cols_in = make_cols<double, Space>(c, n);
      {
        auto h = Kokkos::create_mirror_view(cols_in);
        for (std::size_t i = 0; i < entries; ++i)
          h.data()[i] = cv[i];
        Kokkos::deep_copy(cols_in, h);
      }
      auto unrolled = make_cols<double, Space>(c, n);
      auto folded = make_tensor<double, Space>("folded", c.x_extents(), xv);
      kcnn::im2col(space, x, c.R, c.S, c.params(), unrolled, b0);
      kcnn::col2im(space, cols_in, c.R, c.S, c.params(), folded, b0);
      space.fence();
      const auto u = to_host(unrolled), f = to_host(folded);
      double lhs = 0, rhs = 0, scale = 0;
      for (std::size_t i = 0; i < entries; ++i)
        lhs += u[i] * cv[i], scale += std::abs(u[i] * cv[i]);
      const std::size_t begin = product(c.x_extents()) / c.N * b0;
      const std::size_t end = product(c.x_extents()) / c.N * (b0 + n);
      for (std::size_t i = begin; i < end; ++i)
        rhs += xv[i] * f[i];
      EXPECT_NEAR(lhs, rhs, 1e-12 * std::max(1.0, scale))
          << "slice [" << b0 << ", " << b0 + n << ")";
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Im2col, ::testing::ValuesIn(unroll_params()), unroll_name);

// LayoutLeft inputs are read through their strides; cols must be LayoutRight.
TEST(Im2colViews, LayoutLeftImage) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Left4 = Kokkos::View<double****, Kokkos::LayoutLeft, Space::memory_space>;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ConvCase c{"layout_left", 3, 4, 9, 7, 1, 3, 2, 2, 1, 1, 0, 1, 2};
    c.layout = layout;
    const auto xv = random_values(product(c.x_extents()), 9);
    auto right = make_tensor<double, Space>("x", c.x_extents(), xv);
    Left4 x("x_left", right.extent(0), right.extent(1), right.extent(2), right.extent(3));
    Kokkos::deep_copy(x, right);
    auto cols = make_cols<double, Space>(c, 2);
    poison(cols);
    kcnn::im2col(Space(), x, c.R, c.S, c.params(), cols, 1);
    Space().fence();
    EXPECT_EQ(relative_error(to_host(cols), host_im2col(c, xv, 1, 2)), 0.0);

    // col2im into the LayoutLeft image, compared in LayoutRight order.
    Left4 folded("folded", x.extent(0), x.extent(1), x.extent(2), x.extent(3));
    Kokkos::deep_copy(folded, 0.0);
    kcnn::col2im(Space(), cols, c.R, c.S, c.params(), folded, 1);
    auto folded_right = make_tensor<double, Space>("fr", c.x_extents(), xv);
    Kokkos::deep_copy(folded_right, folded);
    std::vector<double> x0(xv.size(), 0.0);
    EXPECT_LE(relative_error(to_host(folded_right), host_col2im(c, to_host(cols), x0, 1, 2)),
              1e-12);
  }
}

// ---------------------------------------------------------------------------------
// Invalid calls: kcnn::Error naming the problem, nothing written.
// ---------------------------------------------------------------------------------

using Space = Kokkos::DefaultExecutionSpace;
using F4 = Tensor4<float, Space>;
using F2 = Matrix<float, Space>;
constexpr float kSentinel = 12.5f;

template <class View>
bool all_sentinel(const View& v) {
  Kokkos::fence();
  for (double e : to_host(v))
    if (e != kSentinel) return false;
  return true;
}

template <class F>
void expect_error(const char* op, F&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected kcnn::Error mentioning '" << needle << "'";
  } catch (const kcnn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(op), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// NCHW x (3, 2, 6, 5), 3x3 window, pad 1: P = 6, Q = 5, K = 18, 30 pixels per image.
struct ErrorFixture {
  F4 x{"x", 3, 2, 6, 5};
  kcnn::Conv2dParams params;
  ErrorFixture() {
    params.pad_h = params.pad_w = 1;
    Kokkos::deep_copy(x, kSentinel);
  }
};

/// Runs im2col(cols) expecting an error, then checks cols and x were not written.
void expect_im2col_rejected(const std::string& needle, F2 cols,
                            const std::function<void(ErrorFixture&, F2&)>& call) {
  ErrorFixture f;
  Kokkos::deep_copy(cols, kSentinel);
  expect_error(
      "kcnn::im2col", [&] { call(f, cols); }, needle);
  EXPECT_TRUE(all_sentinel(cols));
  EXPECT_TRUE(all_sentinel(f.x));
}

TEST(Im2colErrors, WrongTapExtent) {
  expect_im2col_rejected("wrong cols extents", F2("cols", 17, 30), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 3, 3, f.params, cols);
  });
}

TEST(Im2colErrors, PixelsNotWholeImages) {
  expect_im2col_rejected("wrong cols extents", F2("cols", 18, 45), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 3, 3, f.params, cols);
  });
}

TEST(Im2colErrors, NhwcExtentsInNchwOrder) {
  expect_im2col_rejected("wrong cols extents", F2("cols", 18, 30), [](ErrorFixture& f, F2& cols) {
    F4 x("x", 1, 6, 5, 2);  // NHWC, C = 2
    auto p = f.params;
    p.layout = Layout::NHWC;
    kcnn::im2col(Space(), x, 3, 3, p, cols);  // NHWC wants (30, 18)
  });
}

TEST(Im2colErrors, SliceBeyondBatch) {
  expect_im2col_rejected("outside x's batch", F2("cols", 18, 60), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 3, 3, f.params, cols, 2);  // images 2, 3 of 3
  });
  expect_im2col_rejected("outside x's batch", F2("cols", 18, 120), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 3, 3, f.params, cols);  // 4 images of 3
  });
}

TEST(Im2colErrors, NegativeBatchBegin) {
  expect_im2col_rejected("batch_begin=-1", F2("cols", 18, 30), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 3, 3, f.params, cols, -1);
  });
}

TEST(Im2colErrors, BadWindow) {
  expect_im2col_rejected(
      "filter extents must be >= 1", F2("cols", 0, 30),
      [](ErrorFixture& f, F2& cols) { kcnn::im2col(Space(), f.x, 0, 3, f.params, cols); });
  expect_im2col_rejected("empty output", F2("cols", 2 * 9 * 9, 1), [](ErrorFixture& f, F2& cols) {
    kcnn::im2col(Space(), f.x, 9, 9, f.params, cols);  // 9x9 window, padded 8x7 input
  });
  expect_im2col_rejected("stride must be >= 1", F2("cols", 18, 30), [](ErrorFixture& f, F2& cols) {
    auto p = f.params;
    p.stride_w = 0;
    kcnn::im2col(Space(), f.x, 3, 3, p, cols);
  });
  expect_im2col_rejected("dilation must be >= 1", F2("cols", 18, 30),
                         [](ErrorFixture& f, F2& cols) {
                           auto p = f.params;
                           p.dilation_h = -1;
                           kcnn::im2col(Space(), f.x, 3, 3, p, cols);
                         });
}

/// x (3, 2, 6, 5) and a (18, 30) cols matrix carved out of one buffer, overlapping.
struct Aliased {
  Kokkos::View<float*, Space::memory_space> buffer{"buffer", 1000};
  using U4 = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
                          Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using U2 = Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space,
                          Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  U4 x{buffer.data(), 3, 2, 6, 5};
  U2 cols{buffer.data() + 100, 18, 30};
  Aliased() { Kokkos::deep_copy(buffer, kSentinel); }
};

TEST(Im2colErrors, ColsOverlapsImage) {
  Aliased a;
  ErrorFixture f;
  expect_error(
      "kcnn::im2col", [&] { kcnn::im2col(Space(), a.x, 3, 3, f.params, a.cols); }, "overlaps");
  EXPECT_TRUE(all_sentinel(a.buffer));
}

TEST(Im2colErrors, NonContiguousImage) {
  ErrorFixture f;
  F4 big("big", 3, 2, 6, 8);
  auto x = Kokkos::subview(big, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::make_pair(0, 5));
  F2 cols("cols", 18, 30);
  Kokkos::deep_copy(cols, kSentinel);
  expect_error(
      "kcnn::im2col", [&] { kcnn::im2col(Space(), x, 3, 3, f.params, cols); }, "contiguous");
  EXPECT_TRUE(all_sentinel(cols));
}

TEST(Im2colErrors, EmptySliceIsANoOp) {
  ErrorFixture f;
  F2 cols("cols", 18, 0);
  EXPECT_NO_THROW(kcnn::im2col(Space(), f.x, 3, 3, f.params, cols, 3));
  EXPECT_NO_THROW(kcnn::col2im(Space(), cols, 3, 3, f.params, f.x, 3));
  EXPECT_TRUE(all_sentinel(f.x));
}

TEST(Col2imErrors, RejectsLikeIm2colAndWritesNothing) {
  auto run = [](const std::string& needle, F2 cols, std::int64_t batch_begin, int kh) {
    ErrorFixture f;
    Kokkos::deep_copy(cols, 1.0f);
    expect_error(
        "kcnn::col2im", [&] { kcnn::col2im(Space(), cols, kh, 3, f.params, f.x, batch_begin); },
        needle);
    EXPECT_TRUE(all_sentinel(f.x));
  };
  run("wrong cols extents", F2("cols", 17, 30), 0, 3);
  run("wrong cols extents", F2("cols", 18, 31), 0, 3);
  run("outside x's batch", F2("cols", 18, 60), 2, 3);
  run("filter extents must be >= 1", F2("cols", 18, 30), 0, 0);

  Aliased a;
  ErrorFixture f;
  expect_error(
      "kcnn::col2im", [&] { kcnn::col2im(Space(), a.cols, 3, 3, f.params, a.x); }, "overlaps");
  EXPECT_TRUE(all_sentinel(a.buffer));
}

}  // namespace
}  // namespace kcnn_test
