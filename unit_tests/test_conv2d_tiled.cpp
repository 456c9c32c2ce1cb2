// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::Tiled beyond the conformance suite (test_conv2d_conformance.cpp): its GPU
// kernels with several row tiles per team forced (row groups), unfused and with the
// fused 2x2 pooling, against the double host convolution (and pooling). Host builds
// skip them: their Tiled kernels have no row groups.
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

}  // namespace
}  // namespace kcnn_test
