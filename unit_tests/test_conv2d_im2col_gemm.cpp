// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::Im2colGemm beyond the shared forward tests: every formulation forced on
// every shape family (per-image GEMMs, chunk GEMMs with the fix-up pass, budgets so
// small that chunks split images), the per-call and global workspace limits, the
// workspace cache, LayoutLeft Views, the BLAS path, and a problem whose unrolled matrix
// has more than 2^31 entries.
#include "test_support.hpp"

#include <limits>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;
namespace Impl = kcnn::Impl;

/// How a test steers the plan.
enum class Mode { PerImage, Chunked, TinyBudget, TwoImages, Concurrent };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::PerImage:
      return "per_image";
    case Mode::Chunked:
      return "chunked";
    case Mode::TinyBudget:
      return "tiny_budget";
    case Mode::TwoImages:
      return "two_images";
    case Mode::Concurrent:
      return "concurrent";
  }
  return "?";
}

/// Tuning and budget (bytes) that force `mode` on case c with scalars of `bytes`.
std::pair<Impl::Im2colGemmTuning, std::size_t> steer(Mode mode, const ConvCase& c,
                                                     std::size_t bytes) {
  Impl::Im2colGemmTuning t;
  const std::size_t K = std::size_t(c.C) * c.R * c.S, PQ = std::size_t(c.P()) * c.Q();
  const std::size_t slack = 2 * Impl::kScratchAlign;  // the plan's alignment allowance
  const double never = std::numeric_limits<double>::infinity();
  switch (mode) {
    case Mode::PerImage:
      t.per_image_min_flops_host = t.per_image_min_flops_device = 0;
      return {t, kcnn::default_workspace_limit};
    case Mode::Chunked:
      t.per_image_min_flops_host = t.per_image_min_flops_device = never;
      return {t, kcnn::default_workspace_limit};
    case Mode::TinyBudget:  // 3 pixels a chunk, one chunk after the other
      t.per_image_min_flops_host = t.per_image_min_flops_device = never;
      t.host_concurrent = false;
      return {t, slack + 3 * (K + (c.nhwc() ? 0 : c.M)) * bytes};  // NHWC: GEMM into y
    case Mode::TwoImages:  // per-image GEMMs, two images a chunk, one chunk after the other
      t.per_image_min_flops_host = t.per_image_min_flops_device = 0;
      t.host_concurrent = false;
      return {t, slack + 2 * PQ * K * bytes};
    case Mode::Concurrent:  // two slots of 5 pixels: on a multi-threaded host backend, the
                            // chunks run concurrently (elsewhere one 10-pixel chunk at a time)
      t.per_image_min_flops_host = t.per_image_min_flops_device = never;
      return {t, 2 * slack + 10 * (K + (c.nhwc() ? 0 : c.M)) * bytes};
  }
  return {t, 0};
}

template <class T, class Space>
struct Problem {
  ConvCase c;
  std::vector<double> xv, wv, bv;
  Tensor4<T, Space> x, w, y;
  Tensor1<T, Space> bias;

  explicit Problem(const ConvCase& cc)
      : c(cc),
        xv(random_values(product(cc.x_extents()), 41)),
        wv(random_values(product(cc.w_extents()), 42)),
        bv(random_values(cc.M, 43)),
        x(make_tensor<T, Space>("x", cc.x_extents(), xv)),
        w(make_tensor<T, Space>("w", cc.w_extents(), wv)),
        bias(make_vector<T, Space>("bias", cc.bias ? bv : std::vector<double>{})) {
    const auto e = cc.y_extents();
    y = Tensor4<T, Space>("y", e[0], e[1], e[2], e[3]);
    poison(y);
  }
  std::vector<double> want() const { return host_conv2d(c, xv, wv, bv); }
};

/// Im2colGemm through its implementation entry point, with a steered plan.
template <class T, class Space>
Impl::Im2colGemmPlan run_steered(const Space& space, Problem<T, Space>& pr, Mode mode,
                                 Impl::KernelVariant kernels) {
  auto [tuning, limit] = steer(mode, pr.c, sizeof(T));
  tuning.kernels = kernels;
  auto params = pr.c.params();
  params.algo = ConvAlgo::Im2colGemm;
  const auto pb = Impl::make_conv2d_problem("test", pr.x, pr.w, pr.bias, pr.y, params);
  const auto plan = Impl::plan_im2col_gemm(space, pr.x, pr.w, pr.bias, pr.y, pb, limit, tuning);
  Impl::conv2d_im2col_gemm(space, pr.x, pr.w, pr.bias, pr.y, pb, limit, tuning);
  space.fence();
  return plan;
}

struct SteerParam {
  ConvCase c;
  Mode mode;
  Backend backend;
};

void PrintTo(const SteerParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string steer_name(const ::testing::TestParamInfo<SteerParam>& info) {
  const auto& p = info.param;
  return p.c.name + "_" + kcnn::to_string(p.c.layout) + "_" + mode_name(p.mode) + "_" +
         backend_name(p.backend);
}

std::vector<SteerParam> steer_params() {
  const Activation acts[] = {Activation::ReLU, Activation::Identity, Activation::Tanh,
                             Activation::Sigmoid};
  std::vector<SteerParam> list;
  int i = 0;
  for (const auto& base : conv_shape_families())
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (Mode mode :
           {Mode::PerImage, Mode::Chunked, Mode::TinyBudget, Mode::TwoImages, Mode::Concurrent}) {
        // NHWC has a single formulation; budgets still shape its chunks.
        if (layout == Layout::NHWC && mode == Mode::PerImage) continue;
        ConvCase c = base;
        c.layout = layout;
        c.activation = acts[i % 4];
        c.bias = (i / 4) % 2 == 0;  // also Identity without bias: no epilogue at all
        ++i;
        for (Backend b : backends())
          list.push_back({c, mode, b});
      }
  return list;
}

class Im2colGemmSteered : public ::testing::TestWithParam<SteerParam> {};

TEST_P(Im2colGemmSteered, MatchesDoubleReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    auto check = [&](auto scalar, Impl::KernelVariant kernels) {
      using T = decltype(scalar);
      SCOPED_TRACE(std::string(std::is_same_v<T, float> ? "float" : "double") + " kernels " +
                   std::to_string(int(kernels)));
      Problem<T, Space> pr(p.c);
      const auto plan = run_steered(space, pr, p.mode, kernels);
      const std::int64_t NPQ = std::int64_t(p.c.N) * p.c.P() * p.c.Q();
      if (p.mode == Mode::PerImage || p.mode == Mode::TwoImages) {
        EXPECT_EQ(plan.per_image, p.c.layout == Layout::NCHW);
      } else {
        EXPECT_FALSE(plan.per_image);
      }
      if (p.mode == Mode::TinyBudget && plan.workspace_bytes() > 0) {
        EXPECT_LE(plan.chunk_pixels, 3);
        EXPECT_EQ(plan.chunks, (NPQ + plan.chunk_pixels - 1) / plan.chunk_pixels);
      }
      const bool threads = Impl::host_pipeline_threads(space) > 1;
      if (p.mode == Mode::Concurrent && plan.workspace_bytes() > 0) {
        // (the pipeline's threads call the host BLAS directly: only with a BLAS TPL)
        EXPECT_EQ(plan.concurrent,
                  Impl::host_blas_available && threads && kernels == Impl::KernelVariant::Auto);
        if (plan.concurrent) {
          EXPECT_LE(plan.chunk_pixels, 5);
        }
      }
      if (p.mode == Mode::TwoImages && p.c.layout == Layout::NCHW) {
        // (1x1 filters with stride 1 and no padding need no scratch: one chunk)
        EXPECT_EQ(plan.chunk_pixels,
                  (plan.unroll ? std::min(2, p.c.N) : p.c.N) * p.c.P() * p.c.Q());
      }
      const double err = relative_error(to_host(pr.y), pr.want());
      EXPECT_LE(err, tolerance<T>()) << "relative error " << err << ", " << plan.chunks
                                     << " chunks of " << plan.chunk_pixels << " pixels";
    };
    check(float(), Impl::KernelVariant::Auto);
    check(double(), Impl::KernelVariant::Auto);
    // The GPU-shaped im2col and epilogue kernels, on whatever backend this is.
    check(float(), Impl::KernelVariant::Device32);
    check(double(), Impl::KernelVariant::Device64);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Im2colGemmSteered, ::testing::ValuesIn(steer_params()),
                         steer_name);

using Space = Kokkos::DefaultExecutionSpace;

/// Stride, padding and dilation in both directions, three images.
ConvCase limit_case(Layout layout) {
  ConvCase c{"limit", 3, 5, 17, 19, 6, 3, 3, 2, 1, 1, 2, 2, 1};
  c.layout = layout, c.activation = Activation::ReLU, c.bias = true;
  return c;
}

// A per-call budget of 4 KiB: dozens of chunks, still the right answer.
TEST(Im2colGemmWorkspace, PerCallLimitForcesManyChunks) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(layout));
    Problem<float, Space> pr(limit_case(layout));
    auto params = pr.c.params();
    params.algo = ConvAlgo::Im2colGemm;
    params.workspace_limit_bytes = 4096;
    const auto pb = Impl::make_conv2d_problem("test", pr.x, pr.w, pr.bias, pr.y, params);
    const auto plan = Impl::plan_im2col_gemm(Space(), pr.x, pr.w, pr.bias, pr.y, pb, 4096);
    EXPECT_GE(plan.chunks, 20);
    EXPECT_LE(plan.workspace_bytes(), 4096u);
    kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
    Space().fence();
    EXPECT_LE(relative_error(to_host(pr.y), pr.want()), tolerance<float>());
  }
}

TEST(Im2colGemmWorkspace, GlobalLimit) {
  EXPECT_EQ(kcnn::workspace_limit(), kcnn::default_workspace_limit);
  kcnn::set_workspace_limit(4096);
  EXPECT_EQ(kcnn::workspace_limit(), 4096u);
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    Problem<float, Space> pr(limit_case(layout));
    auto params = pr.c.params();
    params.algo = ConvAlgo::Im2colGemm;  // workspace_limit_bytes = 0: the global limit
    kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
    Space().fence();
    EXPECT_LE(relative_error(to_host(pr.y), pr.want()), tolerance<float>());
  }
  // Too small for one pixel: rejected before anything is written.
  kcnn::set_workspace_limit(64);
  Problem<float, Space> pr(limit_case(Layout::NCHW));
  Kokkos::deep_copy(pr.y, 12.5f);
  auto params = pr.c.params();
  params.algo = ConvAlgo::Im2colGemm;
  try {
    kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
    ADD_FAILURE() << "no kcnn::Error for a 64-byte workspace limit";
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("workspace limit of 64 bytes is too small"),
              std::string::npos)
        << e.what();
  }
  kcnn::set_workspace_limit(0);  // back to the default
  EXPECT_EQ(kcnn::workspace_limit(), kcnn::default_workspace_limit);
  for (double v : to_host(pr.y))
    ASSERT_EQ(v, 12.5);
}

// The scratch is cached: the same call again allocates nothing; release frees it.
TEST(Im2colGemmWorkspace, CachedAndReleased) {
  using Cache = Impl::WorkspaceCache<Space>;
  kcnn::release_workspaces();
  EXPECT_EQ(Cache::bytes_held(), 0u);
  Problem<float, Space> pr(limit_case(Layout::NCHW));
  auto params = pr.c.params();
  params.algo = ConvAlgo::Im2colGemm;
  kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
  const std::size_t held = Cache::bytes_held();
  EXPECT_GT(held, 0u);
  kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
  EXPECT_EQ(Cache::bytes_held(), held);
  params.workspace_limit_bytes = 4096;  // a smaller need reuses the larger buffer
  kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
  EXPECT_EQ(Cache::bytes_held(), held);
  Space().fence();
  EXPECT_LE(relative_error(to_host(pr.y), pr.want()), tolerance<float>());
  kcnn::release_workspaces();
  EXPECT_EQ(Cache::bytes_held(), 0u);
}

// LayoutLeft x, w and y: strided im2col reads, packed weights, GEMM into scratch.
TEST(Im2colGemmViews, LayoutLeftViews) {
  using Left4 = Kokkos::View<double****, Kokkos::LayoutLeft, Space::memory_space>;
  auto to_left = [](const Tensor4<double, Space>& right) {
    Left4 left("left", right.extent(0), right.extent(1), right.extent(2), right.extent(3));
    Kokkos::deep_copy(left, right);
    return left;
  };
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (bool one_by_one : {false, true}) {
      SCOPED_TRACE(std::string(kcnn::to_string(layout)) + (one_by_one ? " 1x1" : " 3x3"));
      ConvCase c = one_by_one ? ConvCase{"left_1x1", 2, 3, 5, 6, 4, 1, 1}
                              : ConvCase{"left", 2, 3, 9, 7, 4, 3, 3, 2, 1, 1, 0};
      c.layout = layout, c.bias = true, c.activation = Activation::Tanh;
      Problem<double, Space> pr(c);
      auto x = to_left(pr.x), w = to_left(pr.w);
      const auto e = c.y_extents();
      Left4 y("y", e[0], e[1], e[2], e[3]);
      poison(y);
      auto params = c.params();
      params.algo = ConvAlgo::Im2colGemm;
      const auto pb = Impl::make_conv2d_problem("test", x, w, pr.bias, y, params);
      const auto plan =
          Impl::plan_im2col_gemm(Space(), x, w, pr.bias, y, pb, kcnn::default_workspace_limit);
      EXPECT_TRUE(plan.pack_w);
      EXPECT_TRUE(plan.unroll);
      EXPECT_FALSE(plan.gemm_into_y);
      kcnn::conv2d_forward(Space(), x, w, pr.bias, y, params);
      Tensor4<double, Space> y_right("y_right", e[0], e[1], e[2], e[3]);
      Kokkos::deep_copy(y_right, y);
      EXPECT_LE(relative_error(to_host(y_right), pr.want()), tolerance<double>());
    }
}

// 1x1 filters with stride 1 and no padding skip im2col: x is the unrolled matrix.
TEST(Im2colGemmViews, OneByOneSkipsUnrolling) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ConvCase c{"one_by_one", 3, 16, 7, 5, 8, 1, 1};
    c.layout = layout, c.bias = true;
    Problem<float, Space> pr(c);
    auto [tuning, limit] = steer(Mode::PerImage, c, sizeof(float));
    auto params = c.params();
    const auto pb = Impl::make_conv2d_problem("test", pr.x, pr.w, pr.bias, pr.y, params);
    const auto plan = Impl::plan_im2col_gemm(Space(), pr.x, pr.w, pr.bias, pr.y, pb, limit, tuning);
    EXPECT_FALSE(plan.unroll);
    EXPECT_EQ(plan.cols_bytes, 0u);
    Impl::conv2d_im2col_gemm(Space(), pr.x, pr.w, pr.bias, pr.y, pb, limit, tuning);
    Space().fence();
    EXPECT_LE(relative_error(to_host(pr.y), pr.want()), tolerance<float>());
  }
}

// An NCHW layer large enough for the default plan to take per-image GEMMs on the host.
TEST(Im2colGemmViews, DefaultPlanOnResNetLikeLayer) {
  ConvCase c{"resnet_like", 2, 32, 48, 48, 64, 3, 3, 1, 1, 1, 1};
  c.bias = true, c.activation = Activation::ReLU;
  Problem<float, Space> pr(c);
  auto params = c.params();
  params.algo = ConvAlgo::Im2colGemm;
  kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.bias, pr.y, params);
  Space().fence();
  EXPECT_LE(relative_error(to_host(pr.y), pr.want()), tolerance<float>());
}

// The GEMMs go to the vendor BLAS (OpenBLAS / cuBLAS), not Kokkos Kernels' fallback.
TEST(Im2colGemmViews, GemmReachesTheBlasLibrary) {
  constexpr bool host = Impl::runs_on_host_v<Space>;
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  if (host) {
    EXPECT_TRUE((Impl::gemm_uses_tpl_v<Space, float>));
    EXPECT_TRUE((Impl::gemm_uses_tpl_v<Space, double>));
  }
#endif
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  if (!host) {
    EXPECT_TRUE((Impl::gemm_uses_tpl_v<Space, float>));
    EXPECT_TRUE((Impl::gemm_uses_tpl_v<Space, double>));
  }
#endif
  (void)host;
}

/// y(n, m, p, q) of the case in double, from flat arrays in the case's layout.
double conv_at(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
               const std::vector<double>& bias, int n, int m, int p, int q) {
  double acc = c.bias ? bias[m] : 0.0;
  for (int ch = 0; ch < c.C; ++ch)
    for (int r = 0; r < c.R; ++r)
      for (int s = 0; s < c.S; ++s) {
        const int h = p * c.stride_h - c.pad_h + r * c.dilation_h;
        const int wc = q * c.stride_w - c.pad_w + s * c.dilation_w;
        if (h < 0 || h >= c.H || wc < 0 || wc >= c.W) continue;
        const std::size_t xi = c.nhwc() ? ((std::size_t(n) * c.H + h) * c.W + wc) * c.C + ch
                                        : ((std::size_t(n) * c.C + ch) * c.H + h) * c.W + wc;
        const std::size_t wi = c.nhwc() ? ((std::size_t(m) * c.R + r) * c.S + s) * c.C + ch
                                        : ((std::size_t(m) * c.C + ch) * c.R + r) * c.S + s;
        acc += x[xi] * w[wi];
      }
  return acc > 0 ? acc : 0.0;  // ReLU
}

// The full unrolled matrix would have more than 2^31 entries (2.25e9 floats, 9 GB);
// chunked under a 16 MiB budget it runs in bounded memory. Sampled outputs against
// double. (The cost is the 2^31 entries themselves: a few seconds per layout.)
TEST(Im2colGemmLarge, UnrolledMatrixBeyond2To31Entries) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(layout));
    ConvCase c{"beyond_2_31", 4, 2, 1060, 1060, 2, 16, 16, 1, 1, 1, 2};
    c.layout = layout, c.bias = true, c.activation = Activation::ReLU;
    const std::int64_t K = std::int64_t(c.C) * c.R * c.S;
    const std::int64_t NPQ = std::int64_t(c.N) * c.P() * c.Q();
    ASSERT_GT(K * NPQ, std::int64_t(1) << 31);

    const auto xv = random_values(product(c.x_extents()), 51);
    const auto wv = random_values(product(c.w_extents()), 52);
    const auto bv = random_values(c.M, 53);
    auto x = make_tensor<float, Space>("x", c.x_extents(), xv);
    auto w = make_tensor<float, Space>("w", c.w_extents(), wv);
    auto bias = make_vector<float, Space>("bias", bv);
    const auto e = c.y_extents();
    Tensor4<float, Space> y("y", e[0], e[1], e[2], e[3]);
    poison(y);
    auto params = c.params();
    params.algo = ConvAlgo::Im2colGemm;
    params.workspace_limit_bytes = std::size_t(16) << 20;
    kcnn::conv2d_forward(Space(), x, w, bias, y, params);
    Space().fence();
    const auto got = to_host(y);

    std::mt19937 rng(54);
    std::vector<double> got_s, want_s;
    auto sample = [&](int n, int m, int p, int q) {
      const std::size_t yi = c.nhwc() ? ((std::size_t(n) * c.P() + p) * c.Q() + q) * c.M + m
                                      : ((std::size_t(n) * c.M + m) * c.P() + p) * c.Q() + q;
      got_s.push_back(got[yi]);
      want_s.push_back(conv_at(c, xv, wv, bv, n, m, p, q));
    };
    for (int i = 0; i < 3000; ++i)
      sample(int(rng() % c.N), int(rng() % c.M), int(rng() % c.P()), int(rng() % c.Q()));
    sample(c.N - 1, c.M - 1, c.P() - 1, c.Q() - 1);  // the very last output
    EXPECT_LE(relative_error(got_s, want_s), tolerance<float>());
    // And no output was left unwritten.
    std::size_t nan = 0;
    for (double v : got)
      nan += std::isnan(v) ? 1 : 0;
    EXPECT_EQ(nan, 0u);
  }
}

}  // namespace
}  // namespace kcnn_test
