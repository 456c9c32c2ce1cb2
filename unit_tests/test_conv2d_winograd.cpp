// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::Winograd beyond the shared forward tests: both tiles (F(2x2,3x3),
// F(4x4,3x3)) forced on every pipeline (the host's blocked one with blocks of one tile up
// to all of them, the staged one, the GPUs' fused F(2x2) kernel), on shapes at every
// tile, vector and team-block edge; the error bound against the magnitude of the
// products; the tile the planner picks; refusals with their reasons, nothing written.
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;
namespace Impl = kcnn::Impl;

template <class T, class Space>
struct Problem {
  ConvCase c;
  std::vector<double> xv, wv, bv;
  Tensor4<T, Space> x, w, y;
  Tensor1<T, Space> bias;

  explicit Problem(const ConvCase& cc)
      : c(cc),
        xv(random_values(product(cc.x_extents()), 71)),
        wv(random_values(product(cc.w_extents()), 72)),
        bv(random_values(cc.M, 73)),
        x(make_tensor<T, Space>("x", cc.x_extents(), xv)),
        w(make_tensor<T, Space>("w", cc.w_extents(), wv)),
        bias(make_vector<T, Space>("bias", cc.bias ? bv : std::vector<double>{})) {
    const auto e = cc.y_extents();
    y = Tensor4<T, Space>("y", e[0], e[1], e[2], e[3]);
    poison(y);
  }
  kcnn::Impl::Conv2dProblem problem(std::size_t limit = kcnn::default_workspace_limit) const {
    auto params = c.params();
    params.algo = ConvAlgo::Winograd;
    params.workspace_limit_bytes = limit;
    return Impl::make_conv2d_problem("test", x, w, bias, y, params);
  }
  /// Runs the Winograd pipeline with `tuning`; returns the plan it followed.
  Impl::WinogradPlan run(const Space& space, const Impl::WinogradTuning& tuning,
                         std::size_t limit = kcnn::default_workspace_limit) {
    const auto pb = problem(limit);
    Impl::conv2d_winograd(space, x, w, bias, y, pb, tuning);
    space.fence();
    int threads = 1;
    if constexpr (Impl::runs_on_host_v<Space>)
      threads = Kokkos::Experimental::UniqueToken<Space>(space).size();
    return Impl::plan_winograd("test", pb, sizeof(kcnn::Impl::compute_t<T>), limit,
                               Impl::runs_on_host_v<Space>,
                               Impl::HostVector<kcnn::Impl::compute_t<T>>::lanes, threads, tuning,
                               Impl::winograd_fusable<Space, T>);
  }
};

/// Shapes at the edges of the tiles (output extents 1 to 4 past a multiple of 2 and 4),
/// of the host vectors (channel and filter counts 1, 7, 8, 9, 17, 33 around 8 and 16
/// lanes), of the tile blocks (tile counts that leave a partial block), batch 1 and
/// several, padding 0, 1 and 2 (wider than the filter's half: whole tiles of zeros).
std::vector<ConvCase> winograd_shapes() {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w
  return {
      {"c1_m1_tiny", 1, 1, 3, 3, 1, 3, 3},
      {"p1_q1_pad1", 1, 2, 1, 1, 3, 3, 3, 1, 1, 1, 1},
      {"p5_q6", 2, 3, 7, 8, 5, 3, 3},
      {"p7_q9_pad1", 1, 7, 7, 9, 9, 3, 3, 1, 1, 1, 1},
      {"p13_q11_pad2", 3, 9, 11, 9, 8, 3, 3, 1, 1, 2, 2},
      {"c8_m17", 2, 8, 10, 14, 17, 3, 3, 1, 1, 1, 1},
      {"c17_m8", 1, 17, 12, 12, 8, 3, 3, 1, 1, 0, 1},
      {"c33_m33", 2, 33, 9, 10, 33, 3, 3, 1, 1, 1, 1},
      {"many_tiles", 4, 5, 30, 26, 6, 3, 3, 1, 1, 1, 1},
      // The fused GPU kernel's team blocks: 64 filters x 32 tiles, 2 channels a step.
      {"m65_c3_tiles33", 1, 3, 12, 22, 65, 3, 3, 1, 1, 1, 1},
      {"m129_c5_tiles70", 2, 5, 14, 20, 129, 3, 3, 1, 1, 0, 0},
      // 12 channels: NHWC's 16-byte channel runs, the last step's second run past C.
      {"c12_m70", 2, 12, 11, 13, 70, 3, 3, 1, 1, 1, 1},
  };
}

struct ForcedParam {
  ConvCase c;
  int tile;
  Backend backend;
};

void PrintTo(const ForcedParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string forced_name(const ::testing::TestParamInfo<ForcedParam>& info) {
  const auto& p = info.param;
  return p.c.name + "_" + kcnn::to_string(p.c.layout) + "_F" + std::to_string(p.tile) + "_" +
         backend_name(p.backend);
}

std::vector<ForcedParam> forced_params() {
  const Activation acts[] = {Activation::ReLU, Activation::Identity, Activation::Tanh,
                             Activation::Sigmoid};
  std::vector<ForcedParam> list;
  int i = 0;
  for (const auto& base : winograd_shapes())
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (int tile : {2, 4}) {
        ConvCase c = base;
        c.layout = layout;
        c.activation = acts[i % 4];
        c.bias = (i / 4) % 2 == 0;
        ++i;
        for (Backend b : backends())
          list.push_back({c, tile, b});
      }
  return list;
}

class WinogradForced : public ::testing::TestWithParam<ForcedParam> {};

// Each case on the staged pipeline and on the host's blocked one with blocks of the
// fewest tiles (one vector of them) and of the default size, each also with the threads
// sharing a block's filters in parts of one vector (the shared-block pipeline where the
// parts transform their own filters), or on GPUs the fused kernel (float, F(2x2)); one
// test per case, so that CTest starts a third as many processes.
TEST_P(WinogradForced, MatchesDoubleReference) {
  const auto& p = GetParam();
  struct Pipeline {
    bool not_staged;
    std::size_t block_bytes;
    std::int64_t part_filters;
    bool fused_filters;
  };
  const std::size_t default_block = Impl::WinogradTuning{}.host_block_bytes;
  const Pipeline pipelines[] = {{false, 0, 0, false},
                                {true, 1, 0, false},
                                {true, default_block, 0, false},
                                {true, 1, 1, false},
                                {true, default_block, 1, false},
                                {true, default_block, 1, true}};
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    constexpr bool host = Impl::runs_on_host_v<Space>;
    for (const Pipeline& pipe : pipelines) {
      // GPUs: the runs after the first are the fused kernel's, once.
      if (!host && pipe.not_staged && (pipe.block_bytes == 1 || pipe.part_filters > 0)) continue;
      SCOPED_TRACE(!pipe.not_staged ? std::string("staged")
                   : host ? "blocked, " + std::to_string(pipe.block_bytes) + " bytes, parts of " +
                                std::to_string(pipe.part_filters) +
                                (pipe.fused_filters ? ", filters in the parts" : "")
                          : std::string("fused"));
      Impl::WinogradTuning tuning;
      tuning.tile = p.tile;
      tuning.host_blocked = pipe.not_staged;
      tuning.host_block_bytes = pipe.block_bytes;
      tuning.host_part_filters = pipe.part_filters;
      tuning.host_fused_filters = pipe.fused_filters;
      tuning.device_fused = pipe.not_staged;
      auto check = [&](auto type_tag) {
        using T = decltype(type_tag);
        SCOPED_TRACE((std::is_same_v<T, float> ? "float" : "double"));
        Problem<T, Space> pr(p.c);
        const auto plan = pr.run(space, tuning);
        EXPECT_EQ(plan.tile, p.tile);
        EXPECT_EQ(plan.host_blocked, pipe.not_staged && host);
        EXPECT_EQ(plan.device_fused,
                  (pipe.not_staged && !host && p.tile == 2 && Impl::winograd_fusable<Space, T>));
        if (host && pipe.part_filters > 0) {
          const std::int64_t lanes = Impl::HostVector<T>::lanes;
          EXPECT_EQ(plan.part_filters, lanes);
          EXPECT_EQ(plan.parts, (p.c.M + lanes - 1) / lanes);
          EXPECT_EQ(plan.host_fused_filters,
                    pipe.fused_filters && plan.parts > 1 && plan.chunks == 1);
        }
        const double err =
            relative_error(to_host(pr.y), pr.c.bias ? host_conv2d(p.c, pr.xv, pr.wv, pr.bv)
                                                    : host_conv2d(p.c, pr.xv, pr.wv, {}));
        EXPECT_LE(err, tolerance<T>()) << "relative error " << err;
      };
      check(float{});
      check(double{});
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradForced, ::testing::ValuesIn(forced_params()), forced_name);

// Float LayoutLeft Views, both layouts: on CUDA the fused kernel's general paths (NCHW x
// without adjacent columns, NHWC x without adjacent channels: element copies).
TEST(WinogradViews, LayoutLeftFloatMatchesReference) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Left4 = Kokkos::View<float****, Kokkos::LayoutLeft, Space::memory_space>;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(layout));
    ConvCase c{"layout_left", 3, 13, 11, 17, 67, 3, 3, 1, 1, 1, 1};
    c.layout = layout;
    c.bias = true;
    Problem<float, Space> pr(c);
    auto left = [](const auto& right) {
      Left4 l("left", right.extent(0), right.extent(1), right.extent(2), right.extent(3));
      Kokkos::deep_copy(l, right);
      return l;
    };
    const Left4 x = left(pr.x), w = left(pr.w);
    Left4 y = left(pr.y);  // poisoned
    auto params = c.params();
    params.algo = ConvAlgo::Winograd;
    kcnn::conv2d_forward(Space(), x, w, pr.bias, y, params);
    Kokkos::deep_copy(pr.y, y);
    EXPECT_LE(relative_error(to_host(pr.y), host_conv2d(c, pr.xv, pr.wv, pr.bv)),
              tolerance<float>());
  }
}

/// The error bound the tile choice rests on (winograd.hpp): every output within
/// bound x sum_k |w_k x_k| of the exact convolution of the same float inputs, F(4x4)
/// 2^-16 and F(2x2) 2^-19, up to 1,024 channels (measured: at most 1.4e-5 and 6.6e-7,
/// the largest at C = 1, where a sum has 9 terms; 1.4e-6 and 1e-7 from 4 channels on).
TEST(WinogradAccuracy, ErrorWithinTheBoundOfItsTile) {
  using Space = Kokkos::DefaultExecutionSpace;
  for (int C : {1, 16, 256, 1024})
    for (int tile : {2, 4}) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", F" + std::to_string(tile));
      ConvCase c{"bound", 1, C, 9, 10, 4, 3, 3, 1, 1, 1, 1};
      c.layout = Layout::NHWC;
      Problem<float, Space> pr(c);
      Impl::WinogradTuning tuning;
      tuning.tile = tile;
      pr.run(Space(), tuning);
      // The reference from the float-rounded inputs, and the magnitude sum_k |w_k x_k|.
      std::vector<double> xf(pr.xv.size()), wf(pr.wv.size()), xa(pr.xv.size()), wa(pr.wv.size());
      for (std::size_t i = 0; i < xf.size(); ++i)
        xf[i] = double(float(pr.xv[i])), xa[i] = std::abs(xf[i]);
      for (std::size_t i = 0; i < wf.size(); ++i)
        wf[i] = double(float(pr.wv[i])), wa[i] = std::abs(wf[i]);
      const auto want = host_conv2d(c, xf, wf, {});
      const auto scale = host_conv2d(c, xa, wa, {});
      const auto got = to_host(pr.y);
      const double bound = std::ldexp(1.0, tile == 4 ? -16 : -19);
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i]));
        worst = std::max(worst, std::abs(got[i] - want[i]) / scale[i]);
      }
      EXPECT_LE(worst, bound);
    }
}

// F(4x4) wherever its error is within the Strict tolerance (measured to 4,096 channels:
// at most 4e-5 of the output's magnitude), F(2x2) beyond.
TEST(WinogradPlan, TileFollowsTheReductionLength) {
  Impl::Conv2dProblem pb;
  pb.R = pb.S = 3;
  for (std::int64_t C : {1, 64, 4096}) {
    pb.C = C;
    EXPECT_EQ(Impl::winograd_tile(pb), 4) << C;
  }
  pb.C = 4097;
  EXPECT_EQ(Impl::winograd_tile(pb), 2);
}

/// conv2d_forward with ConvAlgo::Winograd on case c must throw kcnn::Error naming
/// `reason` and leave y as it was.
template <class T>
void expect_refusal(const ConvCase& c, const std::string& reason, std::size_t limit = 0) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<T, Space> pr(c);
  auto params = c.params();
  params.algo = ConvAlgo::Winograd;
  params.workspace_limit_bytes = limit;
  try {
    kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.y, params);
    ADD_FAILURE() << c.name << ": no kcnn::Error";
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  Space().fence();
  EXPECT_TRUE(all_nan(to_host(pr.y))) << "a refused call wrote y";
}

TEST(WinogradRefuses, OtherGeometriesWithTheirReason) {
  expect_refusal<float>({"k5", 1, 2, 9, 9, 3, 5, 5}, "3x3 filters only (this filter is 5x5)");
  expect_refusal<float>({"k1x3", 1, 2, 9, 9, 3, 1, 3}, "3x3 filters only (this filter is 1x3)");
  expect_refusal<double>({"stride2", 1, 2, 9, 9, 3, 3, 3, 2, 2}, "stride 1 only (stride 2x2)");
  expect_refusal<float>({"stride1x3", 1, 2, 9, 9, 3, 3, 3, 1, 3}, "stride 1 only (stride 1x3)");
  expect_refusal<float>({"dilation2", 1, 2, 9, 9, 3, 3, 3, 1, 1, 0, 0, 2, 2},
                        "undilated filters only (dilation 2x2)");
}

TEST(WinogradRefuses, AWorkspaceLimitBelowTheTransformedFilters) {
  // 64 x 64 filters transform to 36 x 64 x 64 floats (590 KB) with F(4x4).
  expect_refusal<float>({"budget", 1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1}, "workspace limit", 4096);
}

// The plan's blocks: whole vectors of tiles, every tile in one block, the slots the
// threads need; the staged pipeline (GPUs) one chunk within the budget.
TEST(WinogradPlan, BlocksCoverEveryTile) {
  Impl::Conv2dProblem pb;
  pb.N = 3, pb.C = 20, pb.H = pb.W = 30, pb.M = 24, pb.R = pb.S = 3, pb.P = pb.Q = 28;
  pb.layout = Layout::NCHW;
  for (bool host : {true, false})
    for (std::size_t block : {std::size_t(1), std::size_t(1) << 16, std::size_t(1) << 20}) {
      Impl::WinogradTuning tuning;
      tuning.host_block_bytes = block;
      const auto plan =
          Impl::plan_winograd("test", pb, sizeof(float), std::size_t(1) << 30, host, 8, 2, tuning);
      EXPECT_EQ(plan.tiles, 3 * 7 * 7);
      EXPECT_GE(plan.chunk_tiles * plan.chunks, plan.tiles);
      EXPECT_LT(plan.chunk_tiles * (plan.chunks - 1), plan.tiles);
      if (host) {
        EXPECT_EQ(plan.slots, 2);
        EXPECT_TRUE(plan.chunk_tiles % 8 == 0 || plan.chunks == 1 ||
                    plan.chunk_tiles * plan.slots >= plan.tiles);
      } else {
        EXPECT_EQ(plan.chunks, 1);
      }
    }
}

// Winograd has no TF32 arithmetic: under TF32 and TF32x3 its float GEMMs are the strict
// ones (cuBLAS without tensor-core math on GPUs), so the results are the Strict call's,
// bit for bit.
TEST(WinogradMathModes, Tf32ComputesStrictly) {
  using Space = Kokkos::DefaultExecutionSpace;
  ConvCase c{"math", 2, 24, 11, 13, 20, 3, 3, 1, 1, 1, 1};
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    c.layout = layout;
    std::vector<std::vector<double>> results;
    for (kcnn::MathMode math :
         {kcnn::MathMode::Strict, kcnn::MathMode::TF32, kcnn::MathMode::TF32x3}) {
      Problem<float, Space> pr(c);
      auto params = c.params();
      params.algo = ConvAlgo::Winograd;
      params.math = math;
      kcnn::conv2d_forward(Space(), pr.x, pr.w, pr.y, params);
      Space().fence();
      results.push_back(to_host(pr.y));
      EXPECT_LE(relative_error(results.back(), host_conv2d(c, pr.xv, pr.wv, {})),
                tolerance<float>());
    }
    EXPECT_EQ(results[0], results[1]) << kcnn::to_string(layout);
    EXPECT_EQ(results[0], results[2]) << kcnn::to_string(layout);
  }
}

/// Backward data's operands for case c: w and dy from fixed seeds, dx poisoned, the
/// validated problem.
template <class T, class Space>
struct BackwardDataProblem {
  ConvCase c;
  std::vector<double> wv, dyv;
  Tensor4<T, Space> w, dy, dx;
  Impl::Conv2dProblem pb;
  BackwardDataProblem(const ConvCase& cc, unsigned seed)
      : c(cc),
        wv(random_values(product(cc.w_extents()), seed)),
        dyv(random_values(product(cc.y_extents()), seed + 1)),
        w(make_tensor<T, Space>("w", cc.w_extents(), wv)),
        dy(make_tensor<T, Space>("dy", cc.y_extents(), dyv)) {
    const auto xe = cc.x_extents();
    dx = Tensor4<T, Space>("dx", xe[0], xe[1], xe[2], xe[3]);
    poison(dx);
    pb = Impl::make_conv2d_backward_problem("test", dx, w, 0, dy, cc.params(),
                                            Impl::ConvTensorNames{"dx", "w", "bias", "dy"});
  }
  std::vector<double> want() const { return host_backward_data(c, dyv, wv); }
};

/// The input gradient of case c by conv2d_backward_data's Winograd path
/// (impl/backward/conv2d_backward_data_winograd.hpp), forced (`always`) with `tuning`.
/// Returns whether the path ran, and the gradient's relative error against the host's in
/// `error`.
template <class T, class Space>
bool backward_data_through_winograd(const Space& space, const ConvCase& c,
                                    const Impl::WinogradTuning& tuning, double& error) {
  BackwardDataProblem<T, Space> bd(c, 81);
  const bool ran = Impl::conv2d_backward_data_winograd(
      space, Impl::as_kernel_view<Space, false>(bd.dy), Impl::as_kernel_view<Space, false>(bd.w),
      Impl::as_kernel_view<Space, true>(bd.dx), bd.pb, true, tuning);
  space.fence();
  const auto got = to_host(bd.dx);
  error = ran ? relative_error(got, bd.want()) : 0;
  if (!ran) {
    EXPECT_TRUE(all_nan(got)) << "a refused backward data call wrote dx";
  }
  return ran;
}

// conv2d_backward_data's Winograd path, forced on the shapes above (padding 0, 1 and 2:
// the forward convolution of dy with the rotated filters pads 2, 1 and 0), both tiles
// (GPUs: float F(2x2) on the fused kernel), float and double, both layouts, both backends,
// against the host gradient; on hosts also with the threads sharing the filters in parts
// of one vector (the rotated filters read through negative strides by each part).
// Padding 3 has no such forward convolution: refused, dx untouched.
TEST(WinogradBackwardData, ForcedMatchesTheHostGradient) {
  for (const auto& base : winograd_shapes())
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (Backend b : backends())
        with_backend(b, [&](const auto& space) {
          ConvCase c = base;
          c.layout = layout;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          for (int tile : {2, 4})
            for (std::int64_t parts_of : {0, 1}) {
              if (parts_of > 0 && !Impl::runs_on_host_v<std::decay_t<decltype(space)>>) continue;
              Impl::WinogradTuning tuning;
              tuning.tile = tile;
              tuning.host_part_filters = parts_of;
              double err = 0;
              EXPECT_TRUE(backward_data_through_winograd<float>(space, c, tuning, err));
              EXPECT_LE(err, tolerance<float>()) << "float, F" << tile << ", parts " << parts_of;
              EXPECT_TRUE(backward_data_through_winograd<double>(space, c, tuning, err));
              EXPECT_LE(err, tolerance<double>()) << "double, F" << tile << ", parts " << parts_of;
            }
        });
  double err = 0;
  EXPECT_FALSE(backward_data_through_winograd<float>(
      Kokkos::DefaultExecutionSpace(), {"pad3", 1, 4, 6, 7, 5, 3, 3, 1, 1, 3, 3}, {}, err));
}

// The public conv2d_backward_data takes Winograd exactly where Auto would pick it for the
// forward convolution with the rotated filters (backward_data_prefers_winograd: on GPUs,
// AVX2 and AVX-512 CPUs without AMX, float, enough channels and tiles), and its result
// matches the host gradient either way; padding 3 never takes it.
TEST(WinogradBackwardData, PublicCallTakesItWhereAutoPicksWinograd) {
  using Space = Kokkos::DefaultExecutionSpace;
  const ConvCase cases[] = {{"resnet_like", 2, 64, 32, 32, 64, 3, 3, 1, 1, 1, 1},
                            {"pad3", 1, 64, 20, 20, 64, 3, 3, 1, 1, 3, 3}};
  for (const ConvCase& base : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      SCOPED_TRACE(c.name + " " + kcnn::to_string(layout));
      BackwardDataProblem<float, Space> bd(c, 83);
      const bool prefers =
          Impl::backward_data_prefers_winograd<Space, float>(Impl::backward_data_as_forward(bd.pb));
      if (c.pad_h == 3) {
        EXPECT_FALSE(prefers);
      } else if (!Impl::runs_on_host_v<Space> || Impl::build_host_isa() == Impl::HostIsa::Avx2 ||
                 Impl::has_avx512(Impl::build_host_isa())) {
        EXPECT_TRUE(prefers);  // the rules measured for GPUs and these CPUs take this layer
      }
      const LaunchedKernels launched;
      kcnn::conv2d_backward_data(Space(), bd.dy, bd.w, bd.dx, c.params());
      Space().fence();
      EXPECT_EQ(launched.saw("kcnn::conv2d::winograd::filter_transform"), prefers);
      EXPECT_LE(relative_error(to_host(bd.dx), bd.want()), tolerance<float>());
    }
}

// kcnn::WinogradFilters: conv2d_forward with the filters transformed beforehand gives
// the same bits as with w (same U, same kernels), pooled or not, float and double, both
// layouts, both backends; after update() with other weights, the new weights' result.
TEST(WinogradFilters, SameResultAsTheFiltersViewAndFollowUpdates) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      SCOPED_TRACE(backend_name(b));
      auto check = [&](auto type_tag, Layout layout, bool pooled) {
        using T = decltype(type_tag);
        ConvCase c{"prepared", 2, 19, 13, 11, 70, 3, 3, 1, 1, 1, 1};
        c.layout = layout;
        c.bias = true;
        c.activation = Activation::ReLU;
        SCOPED_TRACE(std::string(kcnn::to_string(layout)) + (pooled ? " pooled " : " ") +
                     (std::is_same_v<T, float> ? "float" : "double"));
        Problem<T, Space> pr(c);
        auto params = c.params();
        params.algo = ConvAlgo::Winograd;
        if (pooled) params.pool = kcnn::Pool2dParams{kcnn::PoolMode::Max, 2, 2, 2, 2};
        if (pooled) params.pool->layout = layout;
        const int P = pooled ? c.P() / 2 : c.P(), Q = pooled ? c.Q() / 2 : c.Q();
        const bool nhwc = layout == Layout::NHWC;
        Tensor4<T, Space> want("want", c.N, nhwc ? P : c.M, nhwc ? Q : P, nhwc ? c.M : Q);
        Tensor4<T, Space> got("got", want.extent(0), want.extent(1), want.extent(2),
                              want.extent(3));
        poison(want);
        poison(got);
        kcnn::conv2d_forward(space, pr.x, pr.w, pr.bias, want, params);
        const kcnn::WinogradFilters<T, Space> filters(space, pr.w, params);
        EXPECT_EQ(filters.filters(), c.M);
        EXPECT_EQ(filters.channels(), c.C);
        EXPECT_EQ(filters.layout(), layout);
        EXPECT_GT(filters.bytes(), std::size_t(16) * c.M * c.C * sizeof(T) - 1);
        params.algo = ConvAlgo::Auto;  // Auto with transformed filters is Winograd
        kcnn::conv2d_forward(space, pr.x, filters, pr.bias, got, params);
        space.fence();
        const auto want_host = to_host(want);
        EXPECT_FALSE(std::any_of(want_host.begin(), want_host.end(),
                                 [](double v) { return std::isnan(v); }));
        EXPECT_EQ(to_host(got), want_host);
        if (!pooled) {
          EXPECT_LE(relative_error(want_host, host_conv2d(c, pr.xv, pr.wv, pr.bv)), tolerance<T>());
          // Other weights: update() transforms them; the call follows.
          kcnn::WinogradFilters<T, Space> updated(space, pr.w, params);
          const auto wv2 = random_values(product(c.w_extents()), 91);
          auto w2 = make_tensor<T, Space>("w2", c.w_extents(), wv2);
          updated.update(space, w2, params);
          poison(got);
          kcnn::conv2d_forward(space, pr.x, updated, pr.bias, got, params);
          space.fence();
          EXPECT_LE(relative_error(to_host(got), host_conv2d(c, pr.xv, wv2, pr.bv)),
                    tolerance<T>());
          // Other filter counts: update() reallocates U.
          ConvCase fewer = c;
          fewer.M = 5;
          Problem<T, Space> pf(fewer);
          updated.update(space, pf.w, params);
          EXPECT_EQ(updated.filters(), 5);
          kcnn::conv2d_forward(space, pf.x, updated, pf.bias, pf.y, params);
          space.fence();
          EXPECT_LE(relative_error(to_host(pf.y), host_conv2d(fewer, pf.xv, pf.wv, pf.bv)),
                    tolerance<T>());
        }
      };
      for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (bool pooled : {false, true}) {
          check(float{}, layout, pooled);
          check(double{}, layout, pooled);
        }
    });
}

// What WinogradFilters refuse, with their reasons; a refused call writes nothing.
TEST(WinogradFilters, RefusalsNameTheirReason) {
  using Space = Kokkos::DefaultExecutionSpace;
  ConvCase c{"refusals", 1, 5, 9, 9, 6, 3, 3, 1, 1, 1, 1};
  Problem<float, Space> pr(c);
  auto params = c.params();
  auto refuses_into = [&](const Tensor4<float, Space>& y, auto call, const std::string& reason) {
    poison(y);
    try {
      call();
      ADD_FAILURE() << "no kcnn::Error for: " << reason;
    } catch (const kcnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
    Space().fence();
    EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";
  };
  auto refuses = [&](auto call, const std::string& reason) { refuses_into(pr.y, call, reason); };
  const kcnn::WinogradFilters<float, Space> empty;
  refuses([&] { kcnn::conv2d_forward(Space(), pr.x, empty, pr.y, params); }, "hold no filters");
  Problem<float, Space> k5({"k5", 1, 5, 9, 9, 6, 5, 5});
  refuses([&] { kcnn::WinogradFilters<float, Space>(Space(), k5.w, params); },
          "3x3 filters only (this filter is 5x5)");
  auto strided = params;
  strided.stride_h = 2;
  refuses([&] { kcnn::WinogradFilters<float, Space>(Space(), pr.w, strided); },
          "stride 1 only (stride 2x1)");
  const kcnn::WinogradFilters<float, Space> filters(Space(), pr.w, params);
  Problem<float, Space> s2({"stride2x1", 1, 5, 9, 9, 6, 3, 3, 2, 1, 1, 1});
  refuses_into(
      s2.y, [&] { kcnn::conv2d_forward(Space(), s2.x, filters, s2.y, s2.c.params()); },
      "stride 1 only (stride 2x1)");
  auto tiled = params;
  tiled.algo = ConvAlgo::Tiled;
  refuses([&] { kcnn::conv2d_forward(Space(), pr.x, filters, pr.y, tiled); },
          "WinogradFilters run ConvAlgo::Winograd; params.algo is ConvAlgo::Tiled");
  auto nhwc = params;
  nhwc.layout = Layout::NHWC;
  refuses([&] { kcnn::conv2d_forward(Space(), pr.x, filters, pr.y, nhwc); },
          "transformed for NCHW; params.layout is NHWC");
  Problem<float, Space> other_c({"c4", 1, 4, 9, 9, 6, 3, 3, 1, 1, 1, 1});
  refuses([&] { kcnn::conv2d_forward(Space(), other_c.x, filters, pr.y, params); },
          "channel mismatch");
  // A refused update() leaves the filters as they were; a moved-from object holds nothing.
  kcnn::WinogradFilters<float, Space> kept(Space(), pr.w, params);
  refuses([&] { kept.update(Space(), k5.w, params); }, "3x3 filters only (this filter is 5x5)");
  kcnn::conv2d_forward(Space(), pr.x, kept, pr.y, params);
  Space().fence();
  EXPECT_LE(relative_error(to_host(pr.y), host_conv2d(c, pr.xv, pr.wv, {})), tolerance<float>());
  const kcnn::WinogradFilters<float, Space> taken(std::move(kept));
  refuses([&] { kcnn::conv2d_forward(Space(), pr.x, kept, pr.y, params); }, "hold no filters");
  auto tight = params;
  tight.workspace_limit_bytes = 1;  // U is not in the workspace; a tile still is (host)
  if constexpr (Impl::runs_on_host_v<Space>) {
    refuses([&] { kcnn::conv2d_forward(Space(), pr.x, filters, pr.y, tight); }, "per tile of");
  }
}

}  // namespace
}  // namespace kcnn_test
