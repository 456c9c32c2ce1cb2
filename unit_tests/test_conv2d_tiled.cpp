// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::Tiled beyond the conformance suite (test_conv2d_conformance.cpp): its GPU
// kernels with several row tiles per team forced (row groups), unfused and with the
// fused 2x2 pooling, against the double host convolution (and pooling) (host builds
// skip them: their Tiled kernels have no row groups); its host register-blocked kernel
// (tiled/host_simd_kernel.hpp, NHWC and NCHW) on the edges of its blocks and within the
// workspace limit.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;
using kcnn::PoolMode;

/// Tiled's GPU kernels with several row tiles per team (Conv2dTiledKernel::kMultiTile):
/// LeNet C1's shape (5 row tiles of 16 rows) in groups of 2 (a partial last group), 3
/// and all 5, with 3 filters (a partial channel group), both layouts. (With a fused 2x2
/// pooling: Conv2dPoolTiledRowGroups below.)
TEST(Conv2dTiledRowGroups, MatchesDoubleReference) {
  for_tiled_row_groups([](auto space, Layout layout, int per_team) {
    ConvCase c{"c1_row_groups", 2, 1, 86, 86, 3, 7, 7};
    c.layout = layout;
    c.activation = Activation::ReLU;
    c.bias = true;
    check_forward_with<float>(space, c, ConvAlgo::Tiled,
                              [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                                  const kcnn::Conv2dParams& params) {
                                run_tiled_row_groups<kcnn::Impl::TiledPooling::None>(
                                    space, x, w, bias, y, params, per_team);
                              });
  });
}

/// The fused 2x2 pooling in Tiled's GPU kernels with several row tiles per team
/// (Conv2dTiledKernel::kMultiTile): LeNet C1's shape, 5 row tiles of 8 pooled rows, in
/// groups of 2, 3 and all 5, max and average, both layouts.
TEST(Conv2dPoolTiledRowGroups, MatchesConvThenPoolReference) {
  for_tiled_row_groups([](auto space, Layout layout, int per_team) {
    for (PoolMode mode : {PoolMode::Max, PoolMode::Average}) {
      FusedCase f{conv({"c1_row_groups_pool", 2, 1, 86, 86, 4, 7, 7}, Activation::ReLU, true),
                  pool(2, 2, 2, 2, 0, 0, mode)};
      f.conv.layout = f.pool.layout = layout;
      check_fused_with<float>(space, f, ConvAlgo::Tiled,
                              [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                                  const kcnn::Conv2dParams& params) {
                                run_tiled_row_groups<kcnn::Impl::TiledPooling::Registers2x2>(
                                    space, x, w, bias, y, params, per_team);
                              });
    }
  });
}

/// Tiled's register-blocked host kernel on the edges of its blocking: 1, 2 and 4
/// filter vectors with partial last blocks (M = 1, lanes + 1, 2 lanes + 1, 67, 130),
/// register blocks that continue on the next output row (Q = 5, 7) and on the next
/// image (P x Q = 35, 20), pixel tiles with a partial last one (P x Q = 65, 7x7 x 2),
/// several channel blocks with a partial last one (C = 67 at 3x3 and 5x5, 7x7 with one
/// channel per block, 256 at 3x3), filters whose packed weights pass wide_weights_bytes
/// (256 channels x 9 taps, 70 filters: the larger pixel tiles), stride 2 and 3,
/// dilation, padding beyond half the filter, 1x1, batch 1 and 3, the pixel classes'
/// edges (below), float and double, both layouts (NCHW: each pixel's channels a plane
/// apart, and border taps stepping through no plane), both host backends; each call must
/// have run the register-blocked kernel. Host builds only.
TEST(Conv2dTiledHostSimd, MatchesDoubleReference) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the register-blocked kernel runs on host backends";
  }
  const Activation activations[] = {Activation::Identity, Activation::ReLU, Activation::Sigmoid,
                                    Activation::Tanh};
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
  const std::vector<ConvCase> shapes = {
      {"m1_q5", 3, 3, 7, 5, 1, 3, 3, 1, 1, 1, 1},
      {"m9_q7", 1, 5, 9, 7, 9, 3, 3, 1, 1, 1, 1},
      {"m17_q13_stride2", 2, 4, 27, 27, 17, 3, 3, 2, 2, 1, 1},
      {"m67_c67_pad1", 1, 67, 9, 10, 67, 3, 3, 1, 1, 1, 1},
      {"m130_c67_5x5", 1, 67, 8, 9, 130, 5, 5, 1, 1, 2, 2},
      {"m33_c19_7x7", 2, 19, 13, 12, 33, 7, 7, 1, 1, 3, 3},
      {"m40_pq65", 1, 8, 13, 5, 40, 1, 1},
      {"m64_c64_7x7_images", 2, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1},
      {"m20_stride3_dilation2", 1, 11, 30, 31, 20, 3, 3, 3, 3, 2, 2, 2, 2},
      {"m24_pad_beyond_half", 1, 6, 4, 5, 24, 3, 3, 1, 1, 2, 2},
      {"m48_mixed", 3, 10, 15, 17, 48, 3, 5, 2, 1, 0, 2, 1, 2},
      {"m70_c256_wide_weights_images", 3, 256, 4, 5, 70, 3, 3, 1, 1, 1, 1},
      // Pixel classes (TiledHostSimdPlan): border segments of several windows (7x7,
      // padding 3), no window inside the input (5x5 on 3x4, padding 2), stride 2 with
      // classes of fewer pixels than a register block (5 corner pixels), dilation 3 with
      // padding 3, and 1x1 filters with padding (border pixels read no input at all).
      {"m16_7x7_pad3_classes", 3, 5, 9, 8, 16, 7, 7, 1, 1, 3, 3},
      {"m20_no_interior_window", 2, 3, 3, 4, 20, 5, 5, 1, 1, 2, 2},
      {"m32_stride2_corner_classes", 5, 16, 9, 11, 32, 3, 3, 2, 2, 1, 1},
      {"m17_dilation3_pad3", 2, 7, 11, 10, 17, 3, 3, 1, 1, 3, 3, 3, 3},
      {"m8_1x1_pad1", 2, 4, 5, 3, 8, 1, 1, 1, 1, 1, 1},
      // One-vector blocks kept within a row (kRowBlocks, AVX-512 float): rows wider than
      // a block, split evenly (31 columns: 11, 10, 10), at unit stride and at stride 2.
      {"m12_q31_row_blocks", 2, 3, 5, 31, 12, 3, 3, 1, 1, 1, 1},
      {"m10_q31_stride2_row_blocks", 2, 5, 7, 61, 10, 3, 3, 2, 2, 1, 1},
      // Their tiles (TiledHostSimdPlan::row_tiles): whole rows of each class (34-pixel
      // rows, 3 per tile, a partial last tile of the batch) and even parts of rows longer
      // than a tile (302 columns in 3 parts of 101, 101, 100; 2 images x 3 rows of
      // interior 300-column rows and 1-column border classes between them; 2,752
      // channels of 1x3 filters: the wide tiles of 384 pixels, 400 columns in 2 parts,
      // 4 channel blocks).
      {"m16_q34_row_tiles", 3, 4, 40, 40, 16, 7, 7},
      {"m9_q302_row_parts", 2, 3, 3, 302, 9, 3, 3, 1, 1, 1, 1},
      {"m16_c2752_q400_wide_row_parts", 1, 2752, 1, 400, 16, 1, 3, 1, 1, 0, 1},
      // NCHW output planes a multiple of 4 KB apart (32x32 and 16x64 outputs: float 4 KB,
      // double 8 KB), stored filter by filter where a block has more filters than an L1
      // set has ways (host_l1_streams_collide), pixel by pixel in a block of fewer.
      {"m40_p32_q32_planes_share_sets", 2, 3, 34, 34, 40, 3, 3},
      {"m24_p16_q64_planes_share_sets", 1, 5, 16, 64, 24, 3, 3, 1, 1, 1, 1},
  };
  int i = 0;
  for (ConvCase c : shapes) {
    c.activation = activations[i % 4];
    c.bias = i % 2 == 0;
    ++i;
    for (Layout layout : {Layout::NHWC, Layout::NCHW}) {
      c.layout = layout;
      SCOPED_TRACE(c.name + std::string(" ") + kcnn::to_string(layout));
      for (Backend b : backends())
        with_backend(b, [&](auto space) {
          SCOPED_TRACE(backend_name(b));
          const LaunchedKernels launched;
          auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                         const kcnn::Conv2dParams& params) {
            if (c.bias) {
              kcnn::conv2d_forward(space, x, w, bias, y, params);
            } else {
              kcnn::conv2d_forward(space, x, w, y, params);
            }
          };
          check_forward_with<double>(space, c, ConvAlgo::Tiled, run);
          // (float's 1-filter shape takes the staged kernel: FewFiltersTakeTheStagedKernel.)
          EXPECT_TRUE(launched.saw("kcnn::conv2d::tiled::host_simd"));
          check_forward_with<float>(space, c, ConvAlgo::Tiled, run);
        });
    }
  }
}

/// Runs check_tiled_workspace_limit's calls: `algo` with workspace budget `limit` (0: the
/// default), y poisoned first; true when the register-blocked host kernel ran.
template <class T, class Space>
bool run_with_limit(const Space& space, const RandomConvInputs<T, Space>& in,
                    const Tensor4<T, Space>& y, kcnn::Conv2dParams params, ConvAlgo algo,
                    std::size_t limit) {
  poison(y);
  params.algo = algo;
  params.workspace_limit_bytes = limit;
  const LaunchedKernels launched;
  kcnn::conv2d_forward(space, in.x, in.w, in.bias, y, params);
  space.fence();
  return launched.saw("kcnn::conv2d::tiled::host_simd");
}

template <class T, class Space>
void check_tiled_workspace_limit(const Space& space) {
  SCOPED_TRACE((std::is_same_v<T, float> ? "float" : "double"));
  // 50 taps at unit stride: Auto picks Tiled (host_short_reduction for float,
  // host_double_tiny_reduction for double).
  ConvCase c{"c2_5x5_m16", 2, 2, 12, 11, 16, 5, 5, 1, 1, 1, 1};
  c.layout = Layout::NHWC, c.activation = Activation::ReLU, c.bias = true;
  const RandomConvInputs<T, Space> in(c);
  const auto want = host_conv2d(c, in.xv, in.wv, in.bv);
  const auto ye = c.y_extents();
  const Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  const kcnn::Conv2dParams params = c.params();
  const auto pb = kcnn::Impl::make_conv2d_problem("test", in.x, in.w, in.bias, y, params);
  const std::size_t need = kcnn::Impl::TiledHostSimdPlan::make<T>(pb).template workspace_bytes<T>();

  // One byte short: refused before anything is written, the message naming the limit.
  try {
    run_with_limit(space, in, y, params, ConvAlgo::Tiled, need - 1);
    ADD_FAILURE() << "no kcnn::Error for a workspace limit of " << need - 1 << " bytes";
  } catch (const kcnn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("more than the limit of " + std::to_string(need - 1)), std::string::npos)
        << what;
  }
  space.fence();
  EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";

  // Exactly enough: the register-blocked kernel computes it.
  EXPECT_TRUE(run_with_limit(space, in, y, params, ConvAlgo::Tiled, need));
  EXPECT_LE(relative_error(to_host(y), want), tolerance<T>());

  // Auto: the register-blocked kernel within the default budget; within the small one
  // another algorithm, never a refusal.
  EXPECT_TRUE(run_with_limit(space, in, y, params, ConvAlgo::Auto, 0));
  EXPECT_LE(relative_error(to_host(y), want), tolerance<T>());
  EXPECT_FALSE(run_with_limit(space, in, y, params, ConvAlgo::Auto, need - 1));
  EXPECT_LE(relative_error(to_host(y), want), tolerance<T>());
}

/// The register-blocked host kernel's packed weights are workspace, bound by
/// Conv2dParams::workspace_limit_bytes like TensorCoreGemm's packed weights: it used to
/// take them whatever the budget. Tiled refuses a budget one byte short of them with
/// kcnn::Error and y untouched, computes with exactly them, and Auto, which picks Tiled
/// for this layer, passes it over for the small budget and still computes the call.
/// Float and double, both host backends. Host builds only.
TEST(Conv2dTiledHostSimd, PackedWeightsStayWithinTheWorkspaceLimit) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the register-blocked kernel runs on host backends";
  } else {  // (an else: nvcc warns of an unreachable loop after the skip's return)
    for (Backend b : backends())
      with_backend(b, [&](auto space) {
        SCOPED_TRACE(backend_name(b));
        check_tiled_workspace_limit<float>(space);
        check_tiled_workspace_limit<double>(space);
      });
  }
}

/// The register-blocked kernel's pixel tiles (TiledHostSimdPlan::tile_range) cover the
/// batch's pixels once, in order, none longer than the plan's buffer (tile_pixels);
/// with row blocks (one filter vector on AVX-512) each tile lies in one pixel class and
/// holds whole rows of it or a part of one row. Shapes with border classes, rows longer
/// than a tile (302, 400 columns with wide weights), a partial last tile, batch 1, one
/// output column; float (row blocks where the ISA has them) and double. Runs on every
/// build (the plan is host code).
template <class T>
void check_tile_ranges(const ConvCase& c) {
  namespace I = kcnn::Impl;
  using View4 = Kokkos::View<T****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  const View4 x("x", c.N, c.C, c.H, c.W), w("w", c.M, c.C, c.R, c.S),
      y("y", c.N, c.M, c.P(), c.Q());
  const Kokkos::View<const T*, Kokkos::HostSpace> no_bias;
  const auto pb = I::make_conv2d_problem("test", x, w, no_bias, y, c.params());
  const I::TiledHostSimdPlan plan = I::TiledHostSimdPlan::make<T>(pb);
  EXPECT_EQ(plan.row_tiles, I::TiledHostSimdBlocking<T>::row_blocks(plan.nv));
  const std::int64_t total = std::int64_t(c.N) * c.P() * c.Q();
  std::int64_t next = 0;
  for (std::int64_t t = 0; t < plan.tiles; ++t) {
    std::int64_t j0 = -1, j1 = -1;
    plan.tile_range(t, j0, j1);
    ASSERT_EQ(j0, next) << "tile " << t;
    ASSERT_GT(j1, j0) << "tile " << t;
    ASSERT_LE(j1 - j0, plan.tile_pixels) << "tile " << t;
    next = j1;
    if (!plan.row_tiles) continue;
    const I::TiledHostSimdPixel first = plan.pixel_at(j0), last = plan.pixel_at(j1 - 1);
    ASSERT_EQ(first.cls, last.cls) << "tile " << t << " spans two classes";
    const std::int64_t width = plan.cols.size(first.cls % 3);
    const std::int64_t row_begin = plan.class_begin[first.cls];
    const bool whole_rows = (j0 - row_begin) % width == 0 &&
                            ((j1 - row_begin) % width == 0 || j1 == plan.class_end(first));
    const bool one_row = (j0 - row_begin) / width == (j1 - 1 - row_begin) / width;
    EXPECT_TRUE(whole_rows || one_row) << "tile " << t << ": pixels " << j0 << " .. " << j1;
  }
  EXPECT_EQ(next, total);
}

TEST(Conv2dTiledHostSimd, PixelTilesCoverTheBatchOnce) {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
  const std::vector<ConvCase> shapes = {
      {"lenet_c3", 3, 4, 40, 40, 16, 7, 7},
      {"q302_classes", 2, 3, 3, 302, 9, 3, 3, 1, 1, 1, 1},
      {"q400_wide_weights", 1, 2752, 1, 400, 16, 1, 3, 1, 1, 0, 1},
      {"pad3_7x7_classes", 3, 5, 9, 8, 16, 7, 7, 1, 1, 3, 3},
      {"one_column", 1, 2, 9, 1, 16, 3, 1},
      {"m64_rows_across_images", 2, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1},
  };
  for (const ConvCase& c : shapes) {
    SCOPED_TRACE(c.name);
    check_tile_ranges<float>(c);
    check_tile_ranges<double>(c);
  }
}

/// Which host kernel Tiled runs for float in both layouts: the staged kernel for at most 4 filters
/// at unit stride and dilation (tiled_host_prefers_staged: the register-blocked kernel's filter
/// vector would be a quarter full), the register-blocked kernel from 5 filters and for strided
/// problems; both match the double reference. Host builds only.
TEST(Conv2dTiledHostSimd, FewFiltersTakeTheStagedKernel) {
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    GTEST_SKIP() << "the host kernels run on host backends";
  } else {
    struct Expect {
      ConvCase c;
      bool register_blocked;
    };
    // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
    const std::vector<Expect> cases = {
        {{"m4_7x7", 2, 1, 13, 17, 4, 7, 7}, false},
        {{"m1_3x3_pad1", 3, 3, 7, 5, 1, 3, 3, 1, 1, 1, 1}, false},
        {{"m5_3x3_pad1", 2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1}, true},
        {{"m4_stride2", 2, 3, 11, 9, 4, 3, 3, 2, 2, 1, 1}, true},
    };
    for (const Expect& e : cases)
      for (Layout layout : {Layout::NHWC, Layout::NCHW}) {
        ConvCase c = e.c;
        c.layout = layout, c.activation = Activation::ReLU, c.bias = true;
        SCOPED_TRACE(c.name + std::string(" ") + kcnn::to_string(layout));
        for (Backend b : backends())
          with_backend(b, [&](auto space) {
            SCOPED_TRACE(backend_name(b));
            const LaunchedKernels launched;
            auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                           const kcnn::Conv2dParams& params) {
              kcnn::conv2d_forward(space, x, w, bias, y, params);
            };
            check_forward_with<float>(space, c, ConvAlgo::Tiled, run);
            EXPECT_EQ(launched.saw("kcnn::conv2d::tiled::host_simd"), e.register_blocked);
            EXPECT_EQ(launched.saw("kcnn::conv2d::tiled"), !e.register_blocked);
          });
      }
  }
}

}  // namespace
}  // namespace kcnn_test
