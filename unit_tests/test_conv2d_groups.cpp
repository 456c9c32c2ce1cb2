// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Grouped convolutions (Conv2dParams::groups): conv2d_forward with every registered
// algorithm and Auto, the fused pooling, both backward operations and find_best_algo
// against the independent double-precision references (reference.hpp, whose filters
// read their group's channels), on random data with the outputs poisoned first, both
// layouts, both backends, float and double; groups of 2 and 3, depthwise (groups = C =
// M) and channel multipliers (M = k C); the refusals of bad groups values.
#include "test_support.hpp"

#include <kcnn/impl/arch/tma.hpp>

#include <initializer_list>
#include <set>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;

ConvCase grouped(ConvCase c, int groups, Activation activation = Activation::Identity,
                 bool bias = false) {
  c.groups = groups;
  c.activation = activation;
  c.bias = bias;
  c.name += "_g" + std::to_string(groups);
  return c;
}

/// Grouped shapes: groups 2 and 3, depthwise, channel multipliers, with the shape
/// families' strides, paddings, dilations, 1x1, 7x7 and odd extents.
std::vector<ConvCase> grouped_cases() {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
  return {
      grouped({"c4_m6", 2, 4, 9, 8, 6, 3, 3, 1, 1, 1, 1}, 2, Activation::ReLU, true),
      grouped({"c6_m9_prime", 3, 6, 13, 11, 9, 3, 3}, 3),
      grouped({"c6_m6_stride2", 2, 6, 17, 19, 6, 3, 3, 2, 2, 1, 1}, 3, Activation::Tanh, true),
      grouped({"depthwise_c5", 2, 5, 12, 10, 5, 3, 3, 1, 1, 1, 1}, 5, Activation::Identity, true),
      grouped({"depthwise_c8_stride2", 1, 8, 15, 14, 8, 3, 3, 2, 2, 1, 1}, 8),
      grouped({"depthwise_c4_dilation2", 2, 4, 19, 17, 4, 3, 3, 1, 1, 2, 2, 2, 2}, 4,
              Activation::Sigmoid),
      grouped({"multiplier3_c4", 2, 4, 11, 9, 12, 3, 3, 1, 1, 1, 1}, 4, Activation::ReLU, true),
      grouped({"depthwise_c3_k7", 1, 3, 20, 18, 3, 7, 7, 1, 1, 3, 3}, 3),
      grouped({"depthwise_c6_k5_stride3", 2, 6, 23, 20, 6, 5, 5, 3, 3, 2, 2}, 6),
      grouped({"c8_m4_k1x1", 2, 8, 7, 5, 4, 1, 1}, 2, Activation::Identity, true),
      grouped({"c16_m16_winograd", 2, 16, 10, 9, 16, 3, 3, 1, 1, 1, 1}, 2),
      grouped({"c9_m3_batch1", 1, 9, 6, 7, 3, 3, 3}, 3),
      // ConvAlgo::Depthwise's vector accesses: NHWC channels (C a multiple of 4), NCHW
      // output columns (Q a multiple of 4); run-time taps (1x3).
      grouped({"depthwise_c12_q16", 2, 12, 9, 16, 12, 3, 3, 1, 1, 1, 1}, 12, Activation::ReLU,
              true),
      grouped({"depthwise_k1x3", 1, 6, 8, 9, 6, 1, 3, 1, 1, 0, 1}, 6),
      // Its CPU register blocks (NHWC: 16 float or 8 double channels x 4 columns, spans
      // of 8 such blocks, 8 rows an item): several blocks, both edges, more rows than an
      // item, a partial span and a partial channel block, 7x7 at stride 2, run-time
      // taps, a multiplier with whole channel blocks.
      grouped({"depthwise_c32_rows11", 2, 32, 11, 13, 32, 3, 3, 1, 1, 1, 1}, 32, Activation::ReLU,
              true),
      grouped({"depthwise_c136_k5", 1, 136, 6, 11, 136, 5, 5, 1, 1, 2, 2}, 136, Activation::Tanh,
              true),
      grouped({"depthwise_c16_k7_stride2", 1, 16, 13, 15, 16, 7, 7, 2, 2, 3, 3}, 16),
      grouped({"multiplier2_c16", 1, 16, 7, 10, 32, 3, 3, 1, 1, 1, 1}, 16, Activation::Identity,
              true),
      grouped({"depthwise_c16_k3x5", 2, 16, 6, 12, 16, 3, 5, 1, 1, 1, 2}, 16),
      // The depthwise backward kernels: padding beyond (R - 1) dilation and a multiplier
      // at stride 2 (the data walk kernel), several chunks of partial sums and two GPU
      // channel blocks of 32 (the second partial), run-time taps beyond one pass of 16
      // (5x4 = 20).
      grouped({"depthwise_c7_pad3", 2, 7, 9, 8, 7, 3, 3, 1, 1, 3, 3}, 7),
      grouped({"multiplier2_c6_stride2", 2, 6, 11, 13, 12, 3, 3, 2, 2, 1, 1}, 6,
              Activation::Identity, true),
      grouped({"depthwise_c40_n3", 3, 40, 30, 29, 40, 3, 3, 1, 1, 1, 1}, 40, Activation::Identity,
              true),
      grouped({"depthwise_c5_k5x4", 2, 5, 12, 11, 5, 5, 4, 1, 1, 2, 1}, 5),
      // ConvAlgo::Grouped: 12 filters a group (a full and a partial slot of 8), 8
      // channels a group (NHWC 16-byte loads), 6 filters a group at stride 2 with partial
      // items, slots of 4 filters with run-time taps and dilation over 4-channel vectors
      // (the other groups of at most 4 filters above: slots of 4 too).
      grouped({"grouped_c16_m24_q13", 2, 16, 9, 13, 24, 3, 3, 1, 1, 1, 1}, 2, Activation::ReLU,
              true),
      grouped({"grouped_c32_m32_q16", 1, 32, 10, 16, 32, 3, 3, 1, 1, 1, 1}, 4, Activation::Identity,
              true),
      grouped({"grouped_c24_m18_stride2", 2, 24, 15, 13, 18, 3, 3, 2, 2, 1, 1}, 3),
      grouped({"grouped_c12_m12_k5_dilation2", 1, 12, 14, 13, 12, 5, 5, 1, 1, 2, 2, 2, 2}, 3,
              Activation::Sigmoid, true),
  };
}

struct GroupParam {
  ConvCase c;
  ConvAlgo algo;
  Backend backend;
};

void PrintTo(const GroupParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string param_name(const ::testing::TestParamInfo<GroupParam>& info) {
  const auto& p = info.param;
  return p.c.name + "_" + kcnn::to_string(p.c.layout) + "_" + kcnn::to_string(p.algo) + "_" +
         backend_name(p.backend);
}

std::vector<GroupParam> forward_params() {
  std::vector<GroupParam> list;
  for (const ConvCase& base : grouped_cases())
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      for (ConvAlgo algo : conv2d_test_algorithms())
        for (Backend b : backends())
          list.push_back({c, algo, b});
    }
  return list;
}

class Conv2dGroupsForward : public ::testing::TestWithParam<GroupParam> {};

TEST_P(Conv2dGroupsForward, MatchesDoubleReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                   const kcnn::Conv2dParams& params) {
      if (p.c.bias) {
        kcnn::conv2d_forward(space, x, w, bias, y, params);
      } else {
        kcnn::conv2d_forward(space, x, w, y, params);
      }
    };
    check_forward_with<float, Space>(space, p.c, p.algo, run);
    check_forward_with<double, Space>(space, p.c, p.algo, run);
  });
}

INSTANTIATE_TEST_SUITE_P(Groups, Conv2dGroupsForward, ::testing::ValuesIn(forward_params()),
                         param_name);

// The fused pooling pools each group's channels (Tiled, ImplicitGemm: in the kernel;
// the others: a second pass over all of them).
TEST(Conv2dGroupsPool, FusedPoolingMatchesReference) {
  const FusedCase cases[] = {
      {grouped({"pool_c6_m9", 2, 6, 12, 11, 9, 3, 3, 1, 1, 1, 1}, 3, Activation::ReLU, true),
       pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Max)},
      {grouped({"pool_depthwise_c4", 1, 4, 13, 14, 4, 3, 3, 1, 1, 1, 1}, 4),
       pool(3, 3, 2, 2, 1, 1, kcnn::PoolMode::Average, false)},
  };
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (FusedCase f : cases)
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
          for (ConvAlgo algo : conv2d_test_algorithms()) {
            f.conv.layout = layout;
            SCOPED_TRACE(f.conv.name + " " + kcnn::to_string(layout) + " " + kcnn::to_string(algo) +
                         " " + backend_name(b));
            auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                           const kcnn::Conv2dParams& params) {
              if (f.conv.bias) {
                kcnn::conv2d_forward(space, x, w, bias, y, params);
              } else {
                kcnn::conv2d_forward(space, x, w, y, params);
              }
            };
            check_fused_with<float, Space>(space, f, algo, run);
            check_fused_with<double, Space>(space, f, algo, run);
          }
    });
}

/// Backward data and weights (with dbias) of case c against the references.
template <class T, class Space>
void check_backward(const Space& space, const ConvCase& c) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const auto dyv = random_values(product(c.y_extents()), 44);
  const auto wv = random_values(product(c.w_extents()), 55);
  const auto xv = random_values(product(c.x_extents()), 66);
  const auto dy = make_tensor<T, Space>("dy", c.y_extents(), dyv);
  const auto w = make_tensor<T, Space>("w", c.w_extents(), wv);
  const auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
  ConvCase linear = c;
  linear.activation = Activation::Identity;
  const auto xe = c.x_extents(), we = c.w_extents();
  Tensor4<T, Space> dx("dx", xe[0], xe[1], xe[2], xe[3]);
  Tensor4<T, Space> dw("dw", we[0], we[1], we[2], we[3]);
  Tensor1<T, Space> db("db", c.M);
  poison(dx);
  poison(dw);
  poison(db);
  kcnn::conv2d_backward_data(space, dy, w, dx, linear.params());
  kcnn::conv2d_backward_weights(space, x, dy, dw, db, linear.params());
  space.fence();
  std::vector<double> want_dw, want_db;
  host_backward_weights(linear, xv, dyv, want_dw, want_db);
  const double tol = tolerance<T>();
  EXPECT_LE(relative_error(to_host(dx), host_backward_data(linear, dyv, wv)), tol) << "dx";
  EXPECT_LE(relative_error(to_host(dw), want_dw), tol) << "dw";
  EXPECT_LE(relative_error(to_host(db), want_db), tol) << "dbias";
}

TEST(Conv2dGroupsBackward, DataAndWeightsMatchReference) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (ConvCase c : grouped_cases())
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
          c.layout = layout;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          check_backward<float, Space>(space, c);
          check_backward<double, Space>(space, c);
        }
    });
}

// The depthwise backward kernels with no workspace (the weight gradient's teams then
// write dw themselves, one chunk) give the same gradients within the tolerance.
TEST(Conv2dGroupsBackward, DepthwiseWithoutWorkspace) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (ConvCase c : {grouped({"depthwise_c40_n3", 3, 40, 30, 29, 40, 3, 3, 1, 1, 1, 1}, 40,
                                 Activation::Identity, true),
                         grouped({"depthwise_c5_k5x4", 2, 5, 12, 11, 5, 5, 4, 1, 1, 2, 1}, 5)})
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
          c.layout = layout;
          c.workspace_limit_bytes = 1;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          check_backward<float, Space>(space, c);
          check_backward<double, Space>(space, c);
        }
    });
}

/// ConvAlgo::Depthwise on each case in each of `layouts`, on every backend: forward
/// (with the case's bias and activation) and both backward operations, float and double.
void check_depthwise_cases(const std::vector<ConvCase>& cases,
                           std::initializer_list<Layout> layouts) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (ConvCase c : cases)
        for (Layout layout : layouts) {
          c.layout = layout;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                         const kcnn::Conv2dParams& params) {
            if (c.bias) {
              kcnn::conv2d_forward(space, x, w, bias, y, params);
            } else {
              kcnn::conv2d_forward(space, x, w, y, params);
            }
          };
          check_forward_with<float, Space>(space, c, kcnn::ConvAlgo::Depthwise, run);
          check_forward_with<double, Space>(space, c, kcnn::ConvAlgo::Depthwise, run);
          check_backward<float, Space>(space, c);
          check_backward<double, Space>(space, c);
        }
    });
}

// ConvAlgo::Depthwise's GPU strip kernel (and the unit-stride data gradient, which runs
// it on the rotated filters): NCHW items of 2 columns where Q >= 28 (odd Q: a partial
// column block), rows not a multiple of its 7, stride 2, 5x5 and 7x7, a multiplier;
// NHWC 4-channel vectors (C a multiple of 4) and single channels.
TEST(Conv2dGroupsForward, DepthwiseStripShapes) {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w
  const std::vector<ConvCase> cases = {
      grouped({"strip_k3_q29", 2, 8, 11, 29, 8, 3, 3, 1, 1, 1, 1}, 8, Activation::ReLU, true),
      grouped({"strip_k3_stride2_q29", 1, 4, 13, 57, 4, 3, 3, 2, 2, 1, 1}, 4),
      grouped({"strip_k5_q31", 1, 5, 9, 31, 5, 5, 5, 1, 1, 2, 2}, 5, Activation::Identity, true),
      grouped({"strip_k7_stride2_q31", 1, 12, 16, 61, 12, 7, 7, 2, 2, 3, 3}, 12),
      grouped({"strip_multiplier2_q28", 1, 4, 8, 28, 8, 3, 3, 1, 1, 1, 1}, 4, Activation::Identity,
              true),
  };
  check_depthwise_cases(cases, {Layout::NCHW, Layout::NHWC});
}

// The CPU's NHWC windowed blocks (2 rows x 8 columns of one vector of channels on
// AVX-512, 2 x 4 on AVX2; float and double, 3x3, 5x5, 7x7, row stride 1 or 2): fewer
// columns than a block, a one-column last block, an odd last row, windows crossing both
// edges or lying wholly in the padding, a channel tail past the last whole 16 (float) or
// 8 (double), stride 2 along the row with unit row stride (two rows a block) and the
// one-row blocks of a row stride or row dilation; backward data at unit stride runs them
// on the rotated filters.
TEST(Conv2dGroupsForward, DepthwiseHostWindowShapes) {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
  const std::vector<ConvCase> cases = {
      grouped({"window_q7_p5", 2, 48, 5, 7, 48, 3, 3, 1, 1, 1, 1}, 48, Activation::ReLU, true),
      grouped({"window_c36_q17", 1, 36, 6, 17, 36, 3, 3, 1, 1, 1, 1}, 36, Activation::Tanh, true),
      grouped({"window_w2_pad3", 1, 32, 4, 2, 32, 3, 3, 1, 1, 3, 3}, 32, Activation::Identity,
              true),
      grouped({"window_stride_w2", 2, 16, 9, 23, 16, 3, 3, 1, 2, 1, 1}, 16, Activation::ReLU),
      grouped({"window_stride_h2", 1, 16, 11, 20, 16, 3, 3, 2, 1, 1, 1}, 16),
      grouped({"window_dilation_h2", 1, 32, 12, 19, 32, 3, 3, 1, 1, 2, 1, 2, 1}, 32,
              Activation::Sigmoid, true),
      grouped({"window_k5_q21", 2, 16, 9, 21, 16, 5, 5, 1, 1, 2, 2}, 16, Activation::ReLU, true),
      grouped({"window_k7_q26", 1, 32, 10, 26, 32, 7, 7, 1, 1, 3, 3}, 32),
      grouped({"window_k7_stride2", 1, 16, 17, 30, 16, 7, 7, 2, 2, 3, 3}, 16, Activation::Identity,
              true),
  };
  check_depthwise_cases(cases, {Layout::NHWC});
}

// The Hopper kernel of float 3x3 layers at unit stride (depthwise_tma_kernel.hpp: bands of
// at most 14 output rows, input rows staged by TMA, which reads zeros outside x). NHWC (32
// channels a team, column tiles of at most 16 split evenly): channel tails past the last 32
// (36, 68, 100) and a layer of 4 channels, column tiles with a short last one (57 columns:
// 15, 15, 15, 12), bands of unequal height (15 rows: 8 and 7), padding 0 and R - 1, a 1x1
// image, three bands of 10. NCHW (rows of a multiple of 4 floats; 4 columns a thread,
// planes a team = 128 / column groups): a last column group of 2 with scalar stores (58 and
// 30 columns), two column tiles of 200 (400 columns), a plane tail, a one-row image,
// padding beyond the filter with the box one column left of the window and vector stores
// over two bands (pad 3, 36 columns, 24 rows), two column tiles of 150 (300 columns: the
// second's dy box starts 2 columns left of it). NCHW layers whose rows the map cannot
// describe but whose planes it can run the plane kernel (depthwise_tma_plane_kernel.hpp:
// whole planes staged, the padding read as zeros by the threads): 14x14 with a channel tail
// past the stage's 9 planes and 2 stages a team, padding 0 and 2, 5 and 2 columns, a plane
// of 252 floats. Backward data at unit stride runs it on the rotated filters. The weight
// gradient's TMA kernel (depthwise_weights_tma_kernel.hpp: the same teams, dy staged beside
// x, images split among 396 teams in NHWC, 792 in NCHW) takes the same layers where dy's
// rows are a multiple of 4 floats too; 1100 images of 4 channels: teams of one to three
// images. Elsewhere (other builds, double, the host, layers the maps cannot describe) the
// other depthwise kernels take these shapes. On a Hopper build's GPU the forward and
// weight-gradient launches must be the TMA kernels' where they fit.
TEST(Conv2dGroupsForward, DepthwiseTmaShapes) {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w
  const std::vector<ConvCase> cases = {
      grouped({"tma_q57_c36", 2, 36, 15, 57, 36, 3, 3, 1, 1, 1, 1}, 36, Activation::ReLU, true),
      grouped({"tma_c4_pad0", 1, 4, 5, 33, 4, 3, 3, 1, 1, 0, 0}, 4, Activation::Identity, true),
      grouped({"tma_c68_pad2", 3, 68, 29, 16, 68, 3, 3, 1, 1, 2, 2}, 68, Activation::Tanh, true),
      grouped({"tma_1x1_image", 2, 8, 1, 1, 8, 3, 3, 1, 1, 1, 1}, 8, Activation::ReLU, true),
      grouped({"tma_c100_bands", 1, 100, 30, 9, 100, 3, 3, 1, 1, 1, 1}, 100, Activation::Sigmoid),
      grouped({"tma_w60_pad0", 2, 3, 7, 60, 3, 3, 3, 1, 1, 0, 0}, 3, Activation::ReLU, true),
      grouped({"tma_w400", 1, 2, 5, 400, 2, 3, 3, 1, 1, 1, 1}, 2, Activation::Identity, true),
      grouped({"tma_c9_w28_pad2", 3, 9, 17, 28, 9, 3, 3, 1, 1, 2, 2}, 9, Activation::Tanh, true),
      grouped({"tma_w8_h1", 2, 5, 1, 8, 5, 3, 3, 1, 1, 1, 1}, 5, Activation::ReLU, true),
      grouped({"tma_w32_pad3", 2, 3, 20, 32, 3, 3, 3, 1, 1, 3, 3}, 3, Activation::Sigmoid, true),
      grouped({"tma_w300", 1, 3, 4, 300, 3, 3, 3, 1, 1, 1, 1}, 3, Activation::ReLU, true),
      grouped({"tma_many_images", 1100, 4, 3, 4, 4, 3, 3, 1, 1, 1, 1}, 4),
      grouped({"tma_plane_14", 2, 21, 14, 14, 21, 3, 3, 1, 1, 1, 1}, 21, Activation::ReLU, true),
      grouped({"tma_plane_pad0", 1, 7, 6, 10, 7, 3, 3, 1, 1, 0, 0}, 7, Activation::Tanh, true),
      grouped({"tma_plane_pad2", 3, 20, 10, 10, 20, 3, 3, 1, 1, 2, 2}, 20, Activation::Sigmoid),
      grouped({"tma_plane_w5", 4, 9, 4, 5, 9, 3, 3, 1, 1, 1, 1}, 9, Activation::ReLU, true),
      grouped({"tma_plane_2x2", 3, 5, 2, 2, 5, 3, 3, 1, 1, 1, 1}, 5, Activation::Identity, true),
      grouped({"tma_plane_252", 1, 3, 18, 14, 3, 3, 3, 1, 1, 1, 1}, 3),
  };
  check_depthwise_cases(cases, {Layout::NCHW, Layout::NHWC});
#if defined(KOKKOS_ENABLE_CUDA)
  using Space = Kokkos::DefaultExecutionSpace;
  if constexpr (std::is_same_v<Space, Kokkos::Cuda> && kcnn::Impl::kBuildHasTma) {
    if (!kcnn::Impl::tma_available()) GTEST_SKIP() << "the CUDA driver encodes no tensor maps";
    for (ConvCase c : cases)
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        c.layout = layout;
        SCOPED_TRACE(c.name + " " + kcnn::to_string(layout));
        const RandomConvInputs<float, Space> in(c);
        const auto ye = c.y_extents();
        Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
        kcnn::Conv2dParams params = c.params();
        params.algo = ConvAlgo::Depthwise;
        LaunchedKernels launched;
        kcnn::conv2d_forward(Space(), in.x, in.w, y, params);
        Space().fence();
        const bool fits = layout == Layout::NHWC ? c.C % 4 == 0 : c.W % 4 == 0;
        EXPECT_EQ(launched.saw("kcnn::conv2d::depthwise::tma"), fits);
        // NCHW rows the map cannot describe, whole planes it can (H W <= 256, a multiple
        // of 4; Q <= 128).
        const bool plane_fits = layout == Layout::NCHW && !fits && c.H * c.W <= 256 &&
                                c.H * c.W % 4 == 0 && c.Q() <= 128;
        EXPECT_EQ(launched.saw("kcnn::conv2d::depthwise::tma_plane"), plane_fits);
        // The weight gradient's maps describe dy too: NCHW rows of Q floats.
        const bool weights_fit = fits && (layout == Layout::NHWC || c.Q() % 4 == 0);
        const auto we = c.w_extents();
        Tensor4<float, Space> dw("dw", we[0], we[1], we[2], we[3]);
        kcnn::Conv2dParams linear = c.params();
        linear.activation = Activation::Identity;
        LaunchedKernels weights;
        kcnn::conv2d_backward_weights(Space(), in.x, y, dw, linear);
        Space().fence();
        EXPECT_EQ(weights.saw("kcnn::conv2d_backward_weights::depthwise_tma"), weights_fit);
      }
  }
#endif
}

// The walk kernels of the weight gradient (3x3, 5x5, 7x7 at square stride 1 or 2; on
// CPUs where the vector kernel does not take the layer: NCHW at stride 2, NHWC
// multipliers) and of the data gradient (stride 2, multipliers, wide padding):
// partial blocks of cross positions (GPUs: 2 columns in NCHW, 7 rows in NHWC; 13 rows,
// 15 columns), a multiplier at stride 2, 5x5 without padding, 7x7 at stride 2, padding
// beyond the filter, and few channels on a tall image (the walks split into segments).
TEST(Conv2dGroupsBackward, WalkKernelShapes) {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w
  const std::vector<ConvCase> cases = {
      grouped({"walk_k3_rows13", 2, 9, 13, 15, 9, 3, 3, 1, 1, 1, 1}, 9, Activation::Identity, true),
      grouped({"walk_k3_stride2_multiplier2", 3, 12, 17, 16, 24, 3, 3, 2, 2, 1, 1}, 12),
      grouped({"walk_k5_pad0", 1, 5, 11, 12, 5, 5, 5, 1, 1, 0, 0}, 5, Activation::Identity, true),
      grouped({"walk_k7_stride2", 2, 4, 19, 9, 4, 7, 7, 2, 2, 3, 3}, 4),
      grouped({"walk_k3_pad2", 2, 6, 7, 8, 6, 3, 3, 1, 1, 2, 2}, 6, Activation::Identity, true),
      grouped({"walk_segments", 1, 3, 48, 40, 3, 3, 3, 1, 1, 1, 1}, 3),
  };
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (ConvCase c : cases)
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
          c.layout = layout;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          check_backward<float, Space>(space, c);
          check_backward<double, Space>(space, c);
        }
    });
}

// The backward operations of depthwise layers run the depthwise kernels (at unit stride,
// multiplier 1, the forward one on the rotated filters; at stride 2 or with a multiplier
// the data walk kernel; else the gather kernel); other grouped layers, and ungrouped ones
// with C = 1, none of them.
TEST(Conv2dGroupsBackward, DepthwiseLayersRunTheDepthwiseKernels) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  struct Expect {
    ConvCase c;
    const char* data_kernel;  ///< nullptr: no depthwise kernel
    bool weights_kernel;
  };
  const std::vector<Expect> cases = {
      {grouped({"depthwise", 2, 8, 9, 10, 8, 3, 3, 1, 1, 1, 1}, 8), "kcnn::conv2d::depthwise",
       true},
      {grouped({"depthwise_stride2", 2, 8, 9, 10, 8, 3, 3, 2, 2, 1, 1}, 8),
       "kcnn::conv2d_backward_data::depthwise_walk", true},
      {grouped({"multiplier2", 2, 4, 9, 10, 8, 3, 3, 1, 1, 1, 1}, 4),
       "kcnn::conv2d_backward_data::depthwise_walk", true},
      {grouped({"depthwise_stride3", 2, 8, 10, 11, 8, 3, 3, 3, 3, 1, 1}, 8),
       "kcnn::conv2d_backward_data::depthwise", true},
      {grouped({"grouped", 2, 8, 9, 10, 8, 3, 3, 1, 1, 1, 1}, 4), nullptr, false},
      {grouped({"ungrouped_c1", 2, 1, 9, 10, 8, 3, 3, 1, 1, 1, 1}, 1), nullptr, false},
  };
  for (const Expect& e : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvCase c = e.c;
      c.layout = layout;
      SCOPED_TRACE(c.name + " " + kcnn::to_string(layout));
      const RandomConvInputs<float, Space> in(c);
      const auto xe = c.x_extents(), ye = c.y_extents(), we = c.w_extents();
      Tensor4<float, Space> dy("dy", ye[0], ye[1], ye[2], ye[3]);
      Tensor4<float, Space> dx("dx", xe[0], xe[1], xe[2], xe[3]);
      Tensor4<float, Space> dw("dw", we[0], we[1], we[2], we[3]);
      {
        LaunchedKernels launched;
        kcnn::conv2d_backward_data(space, dy, in.w, dx, c.params());
        space.fence();
        // (Hopper builds run float 3x3 unit-stride layers whose dy a tensor map describes
        // on the forward kernel's TMA variants.)
        const bool forward_kernel = launched.saw("kcnn::conv2d::depthwise") ||
                                    launched.saw("kcnn::conv2d::depthwise::tma") ||
                                    launched.saw("kcnn::conv2d::depthwise::tma_plane");
        EXPECT_EQ(forward_kernel || launched.saw("kcnn::conv2d_backward_data::depthwise") ||
                      launched.saw("kcnn::conv2d_backward_data::depthwise_walk"),
                  e.data_kernel != nullptr);
        if (e.data_kernel) {
          const bool forward = std::string(e.data_kernel) == "kcnn::conv2d::depthwise";
          EXPECT_TRUE(forward ? forward_kernel : launched.saw(e.data_kernel)) << e.data_kernel;
        }
      }
      {
        LaunchedKernels launched;
        kcnn::conv2d_backward_weights(space, in.x, dy, dw, c.params());
        space.fence();
        EXPECT_EQ(launched.saw("kcnn::conv2d_backward_weights::depthwise") ||
                      launched.saw("kcnn::conv2d_backward_weights::depthwise_walk") ||
                      launched.saw("kcnn::conv2d_backward_weights::depthwise_tma"),
                  e.weights_kernel);
      }
    }
}

std::vector<double> magnitudes(std::vector<double> v) {
  for (double& e : v)
    e = std::abs(e);
  return v;
}

/// 16-bit tensors: the depthwise backward kernels against the double gradients of the
/// rounded values, within expect_within_16bit_bound (float sums rounded once: k R S
/// products per dx element, N P Q per dw element and per dbias).
template <class T, class Space>
void check_depthwise_backward_16bit(const Space& space, const ConvCase& c) {
  SCOPED_TRACE(type_name<T>());
  const auto x =
      make_tensor<T, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 21));
  const auto w =
      make_tensor<T, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 22));
  const auto dy =
      make_tensor<T, Space>("dy", c.y_extents(), random_values(product(c.y_extents()), 23));
  const auto xv = to_host(x), wv = to_host(w), dyv = to_host(dy);  // the rounded values
  const auto xe = c.x_extents(), we = c.w_extents();
  Tensor4<T, Space> dx("dx", xe[0], xe[1], xe[2], xe[3]);
  Tensor4<T, Space> dw("dw", we[0], we[1], we[2], we[3]);
  Tensor1<T, Space> db("db", c.M);
  poison(dx);
  poison(dw);
  poison(db);
  kcnn::conv2d_backward_data(space, dy, w, dx, c.params());
  kcnn::conv2d_backward_weights(space, x, dy, dw, db, c.params());
  space.fence();
  std::vector<double> want_dw, want_db, scale_dw, scale_db;
  host_backward_weights(c, xv, dyv, want_dw, want_db);
  host_backward_weights(c, magnitudes(xv), magnitudes(dyv), scale_dw, scale_db);
  const double pixels = double(c.N) * c.P() * c.Q();
  {
    SCOPED_TRACE("dx");
    expect_within_16bit_bound<T>(to_host(dx), host_backward_data(c, dyv, wv),
                                 host_backward_data(c, magnitudes(dyv), magnitudes(wv)),
                                 double(c.M / c.C) * c.R * c.S);
  }
  {
    SCOPED_TRACE("dw");
    expect_within_16bit_bound<T>(to_host(dw), want_dw, scale_dw, pixels);
  }
  {
    SCOPED_TRACE("dbias");
    expect_within_16bit_bound<T>(to_host(db), want_db, scale_db, pixels);
  }
}

TEST(Conv2dGroupsBackward, SixteenBitDepthwiseWithinTheRoundingBound) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      for (ConvCase c : grouped_cases()) {
        if (c.groups != c.C) continue;  // depthwise layers
        c.bias = true;
        c.activation = Activation::Identity;  // the gradients of the linear convolution
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
          c.layout = layout;
          SCOPED_TRACE(c.name + " " + kcnn::to_string(layout) + " " + backend_name(b));
          check_depthwise_backward_16bit<kcnn::bfloat16, Space>(space, c);
          check_depthwise_backward_16bit<Kokkos::Experimental::half_t, Space>(space, c);
        }
      }
    });
}

// A grouped layer on an empty batch: nothing to compute or write, and no memory to take
// group slices of (x's and y's data pointers are null). (The fuzzer found group slices'
// offsets applied to a null pointer, UBSan, session 38: the fused pooling's Check pass.)
TEST(Conv2dGroupsEdges, EmptyBatchWithoutMemoryIsANoOp) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Unmanaged = Kokkos::View<float****, Kokkos::LayoutRight, Kokkos::HostSpace,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (ConvAlgo algo : {ConvAlgo::Auto, ConvAlgo::Reference, ConvAlgo::Depthwise})
      for (int groups : {2, 4}) {
        SCOPED_TRACE(std::string(kcnn::to_string(layout)) + " " + kcnn::to_string(algo) +
                     " groups " + std::to_string(groups));
        if (algo == ConvAlgo::Depthwise && groups != 4) continue;
        ConvCase c{"empty_batch", 0, 4, 6, 5, 8, 3, 3, 1, 1, 1, 1};
        c.groups = groups, c.layout = layout;
        const auto xe = c.x_extents(), ye = c.y_extents();
        const Unmanaged x(nullptr, xe[0], xe[1], xe[2], xe[3]);
        const Unmanaged y(nullptr, ye[0], ye[1], ye[2], ye[3]);
        const RandomConvInputs<float, Space> in(c);  // w
        kcnn::Conv2dParams p = c.params();
        p.algo = algo;
        EXPECT_NO_THROW(kcnn::conv2d_forward(Space(), x, in.w, y, p));
      }
}

// Auto runs ConvAlgo::Depthwise's kernel on depthwise layers; on the other grouped ones,
// ConvAlgo::Grouped's kernel on GPUs and the group-by-group path on CPUs.
TEST(Conv2dGroupsAuto, DepthwiseLayersRunTheDepthwiseKernel) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  kcnn::clear_algo_cache();
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (int groups : {8, 4}) {
      SCOPED_TRACE(std::string(kcnn::to_string(layout)) + " groups " + std::to_string(groups));
      ConvCase c{"auto", 2, 8, 10, 12, 16, 3, 3, 1, 1, 1, 1};
      c.groups = groups, c.layout = layout;
      const RandomConvInputs<float, Space> in(c);
      const auto ye = c.y_extents();
      Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      poison(y);
      const auto algo = kcnn::resolve_conv2d_algo(space, in.x, in.w, y, c.params());
      const bool gpu = !kcnn::Impl::runs_on_host_v<Space>;
      EXPECT_EQ(algo == ConvAlgo::Depthwise, groups == 8) << kcnn::to_string(algo);
      EXPECT_EQ(algo == ConvAlgo::Grouped, gpu && groups == 4) << kcnn::to_string(algo);
      LaunchedKernels launched;
      kcnn::conv2d_forward(space, in.x, in.w, y, c.params());
      space.fence();
      EXPECT_EQ(launched.saw("kcnn::conv2d::depthwise"), groups == 8);
      EXPECT_EQ(launched.saw("kcnn::conv2d::grouped"), gpu && groups == 4);
      EXPECT_LE(relative_error(to_host(y), host_conv2d(c, in.xv, in.wv, {})), tolerance<float>());
    }
}

// Auto gives ConvAlgo::Grouped groups of at most 32 channels and 32 filters (the
// measured ones); wider groups go group by group.
TEST(Conv2dGroupsAuto, WideGroupsGoGroupByGroup) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  kcnn::clear_algo_cache();
  const bool gpu = !kcnn::Impl::runs_on_host_v<Space>;
  struct Wide {
    int C, M, groups;
    bool grouped_on_gpu;
  };
  for (const Wide& g : {Wide{64, 64, 2, true}, Wide{66, 64, 2, false}, Wide{64, 66, 2, false},
                        Wide{8, 80, 2, false}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      SCOPED_TRACE(std::to_string(g.C) + " " + std::to_string(g.M) + " " + kcnn::to_string(layout));
      ConvCase c{"wide", 1, g.C, 6, 7, g.M, 3, 3, 1, 1, 1, 1};
      c.groups = g.groups, c.layout = layout;
      const RandomConvInputs<float, Space> in(c);
      const auto ye = c.y_extents();
      Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      const auto algo = kcnn::resolve_conv2d_algo(space, in.x, in.w, y, c.params());
      EXPECT_EQ(algo == ConvAlgo::Grouped, gpu && g.grouped_on_gpu) << kcnn::to_string(algo);
    }
}

// ConvAlgo::Grouped packs the filters into the workspace: a budget below them is refused
// with the sizes named and nothing written; Auto then runs another algorithm.
TEST(Conv2dGroupsErrors, GroupedRefusesABudgetBelowItsPackedFilters) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(layout));
    // 2 groups of 12 filters: 2 x 16 packed filters x 4 channels x 9 taps x 4 bytes + 16.
    ConvCase c = grouped({"budget", 2, 8, 9, 10, 24, 3, 3, 1, 1, 1, 1}, 2);
    c.layout = layout;
    c.workspace_limit_bytes = 4623;
    const RandomConvInputs<float, Space> in(c);
    const auto ye = c.y_extents();
    Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
    poison(y);
    kcnn::Conv2dParams params = c.params();
    params.algo = ConvAlgo::Grouped;
    try {
      kcnn::conv2d_forward(space, in.x, in.w, y, params);
      ADD_FAILURE() << "a budget of 4623 bytes was accepted";
    } catch (const kcnn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("packed filters take 4624 bytes"), std::string::npos)
          << e.what();
    }
    space.fence();
    EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";
    params.workspace_limit_bytes = 4624;
    kcnn::conv2d_forward(space, in.x, in.w, y, params);
    space.fence();
    EXPECT_LE(relative_error(to_host(y), host_conv2d(c, in.xv, in.wv, {})), tolerance<float>());
    params.algo = ConvAlgo::Auto;
    params.workspace_limit_bytes = 4623;
    poison(y);
    EXPECT_NE(kcnn::resolve_conv2d_algo(space, in.x, in.w, y, params), ConvAlgo::Grouped);
    kcnn::conv2d_forward(space, in.x, in.w, y, params);
    space.fence();
    EXPECT_LE(relative_error(to_host(y), host_conv2d(c, in.xv, in.wv, {})), tolerance<float>());
  }
}

// Every refusal names the values and writes nothing.
TEST(Conv2dGroupsErrors, BadGroupsAreRefusedBeforeAnythingIsWritten) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  struct Bad {
    const char* name;
    int C, M, w_channels, groups;
    const char* says;
    const char* says_too;  ///< also in the message (the filters' name differs per call)
  };
  const Bad bad[] = {
      {"zero", 4, 4, 4, 0, "params.groups must be >= 1, got 0", ""},
      {"negative", 4, 4, 4, -2, "params.groups must be >= 1, got -2", ""},
      {"c_not_divisible", 6, 4, 3, 4, "params.groups=4 does not divide the 6 input channels", ""},
      {"m_not_divisible", 6, 4, 2, 3, "params.groups=3 does not divide the 4 filters", ""},
      {"w_has_all_channels", 6, 6, 6, 3, "has 6 channels (extents",
       "in 3 groups of 2 channels, but "},
      {"w_channels_wrong", 6, 6, 3, 3, "has 3 channels (extents",
       "in 3 groups of 2 channels, but "},
  };
  for (const Bad& b : bad)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      SCOPED_TRACE(std::string(b.name) + " " + kcnn::to_string(layout));
      ConvCase c{"bad", 2, b.C, 6, 6, b.M, 3, 3, 1, 1, 1, 1};
      c.layout = layout;
      const bool nhwc = layout == Layout::NHWC;
      const auto x =
          make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 1));
      const std::array<int, 4> we =
          nhwc ? std::array{b.M, 3, 3, b.w_channels} : std::array{b.M, b.w_channels, 3, 3};
      const auto w = make_tensor<float, Space>("w", we, random_values(product(we), 2));
      const auto ye = c.y_extents();
      Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      Tensor4<float, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                               c.x_extents()[3]);
      Tensor4<float, Space> dw("dw", we[0], we[1], we[2], we[3]);
      poison(y);
      poison(dx);
      poison(dw);
      kcnn::Conv2dParams params = c.params();
      params.groups = b.groups;
      auto expect_message = [&](auto&& call) {
        try {
          call();
          ADD_FAILURE() << "not refused";
        } catch (const kcnn::Error& e) {
          EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find(b.says_too), std::string::npos) << e.what();
        }
      };
      for (ConvAlgo algo : conv2d_test_algorithms()) {
        params.algo = algo;
        expect_message([&] { kcnn::conv2d_forward(space, x, w, y, params); });
      }
      expect_message([&] { kcnn::conv2d_backward_data(space, y, w, dx, params); });
      expect_message([&] { kcnn::conv2d_backward_weights(space, x, y, dw, params); });
      space.fence();
      EXPECT_TRUE(all_nan(to_host(y)));
      EXPECT_TRUE(all_nan(to_host(dx)));
      EXPECT_TRUE(all_nan(to_host(dw)));
    }
}

// The grouped problem is its own find_best_algo entry: same extents, other groups.
TEST(Conv2dGroupsFindBest, GroupsArePartOfTheCacheKey) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  kcnn::clear_algo_cache();
  for (int groups : {1, 2, 4}) {
    ConvCase c{"find", 2, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1};
    c.groups = groups;
    const RandomConvInputs<float, Space> in(c);
    const auto ye = c.y_extents();
    Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
    poison(y);
    kcnn::FindAlgoOptions options;
    options.repetitions = 1;
    kcnn::find_best_algo(space, in.x, in.w, y, c.params(), options);
    space.fence();
    EXPECT_LE(relative_error(to_host(y), host_conv2d(c, in.xv, in.wv, {})), tolerance<float>());
  }
  EXPECT_EQ(kcnn::algo_cache_size(), 3u);
  std::set<std::int64_t> groups;
  for (const auto& [key, entry] : kcnn::Impl::algo_cache().snapshot())
    groups.insert(key.groups);
  EXPECT_EQ(groups, (std::set<std::int64_t>{1, 2, 4}));
  kcnn::clear_algo_cache();
}

// Groups do not change the unrolled matrix; they are checked against C all the same.
TEST(Conv2dGroupsIm2col, SameMatrixAndBadGroupsRefused) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  ConvCase c{"im2col", 2, 6, 7, 8, 1, 3, 3, 1, 1, 1, 1};
  const auto x =
      make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 3));
  const auto rows = std::size_t(c.C) * c.R * c.S, cols = std::size_t(c.N) * c.P() * c.Q();
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> ungrouped("u", rows, cols),
      grouped_cols("g", rows, cols);
  kcnn::im2col(space, x, c.R, c.S, c.params(), ungrouped);
  kcnn::Conv2dParams params = c.params();
  params.groups = 3;
  kcnn::im2col(space, x, c.R, c.S, params, grouped_cols);
  space.fence();
  EXPECT_EQ(to_host(ungrouped), to_host(grouped_cols));
  params.groups = 4;
  EXPECT_THROW(kcnn::im2col(space, x, c.R, c.S, params, grouped_cols), kcnn::Error);
}

// Transformed filters belong to ungrouped layers.
TEST(Conv2dGroupsWinogradFilters, GroupedParamsAreRefused) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  ConvCase c{"winograd", 1, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1};
  const RandomConvInputs<float, Space> in(c);
  kcnn::Conv2dParams params = c.params();
  params.groups = 2;
  EXPECT_THROW(kcnn::WinogradFilters<float>(space, in.w, params), kcnn::Error);
  kcnn::WinogradFilters<float> filters(space, in.w, c.params());
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  expect_refused(space, y, [&] { kcnn::conv2d_forward(space, in.x, filters, y, params); });
}

}  // namespace
}  // namespace kcnn_test
