// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::Tiled beyond the conformance suite (test_conv2d_conformance.cpp): its GPU
// kernels with several row tiles per team forced (row groups), unfused and with the
// fused 2x2 pooling, against the double host convolution (and pooling) (host builds
// skip them: their Tiled kernels have no row groups); its host register-blocked NHWC
// kernel (tiled/host_simd_kernel.hpp) on the edges of its blocks.
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

/// Tiled's register-blocked NHWC host kernel on the edges of its blocking: 1, 2 and 4
/// filter vectors with partial last blocks (M = 1, lanes + 1, 2 lanes + 1, 67, 130),
/// register blocks that continue on the next output row (Q = 5, 7), work items of one
/// image split into several pixel tiles with a partial last one (P x Q = 65, 7x7 x 2),
/// several channel blocks with a partial last one (C = 67 at 3x3 and 5x5, 7x7 with one
/// channel per block), stride 2 and 3, dilation, padding beyond half the filter, 1x1,
/// batch 1 and 3, float and double, both host backends. Host builds only.
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
  };
  int i = 0;
  for (ConvCase c : shapes) {
    c.layout = Layout::NHWC;
    c.activation = activations[i % 4];
    c.bias = i % 2 == 0;
    ++i;
    SCOPED_TRACE(c.name);
    for (Backend b : backends())
      with_backend(b, [&](auto space) {
        SCOPED_TRACE(backend_name(b));
        auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                       const kcnn::Conv2dParams& params) {
          if (c.bias) {
            kcnn::conv2d_forward(space, x, w, bias, y, params);
          } else {
            kcnn::conv2d_forward(space, x, w, y, params);
          }
        };
        check_forward_with<float>(space, c, ConvAlgo::Tiled, run);
        check_forward_with<double>(space, c, ConvAlgo::Tiled, run);
      });
  }
}

}  // namespace
}  // namespace kcnn_test
