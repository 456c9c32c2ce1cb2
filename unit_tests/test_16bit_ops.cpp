// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file test_16bit_ops.cpp
/// \brief Views of Kokkos' half_t and kcnn::bfloat16 through the operations that take them
///        so far: conv2d_forward (every algorithm; TensorCoreGemm where there are tensor
///        cores, elsewhere it must refuse before writing), its fused pooling, pool2d_forward,
///        im2col, col2im and activation_backward, over the shape families x layouts x
///        backends.
///
/// The reference is the double computation on the inputs as rounded to the 16-bit type
/// (read back from the Views); the bound is expect_within_16bit_bound's (test_support.hpp:
/// one rounding of float sums).

#include "test_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace kcnn_test;

/// S per output of a convolution: sum |x| |w| + |bias|, the conv of the magnitudes.
std::vector<double> conv_scale(const ConvCase& c, const std::vector<double>& x,
                               const std::vector<double>& w, const std::vector<double>& b) {
  ConvCase magnitude = c;
  magnitude.activation = kcnn::Activation::Identity;
  auto abs_all = [](std::vector<double> v) {
    for (double& e : v)
      e = std::abs(e);
    return v;
  };
  return host_conv2d(magnitude, abs_all(x), abs_all(w), abs_all(b));
}

std::vector<ConvCase> cases_in_both_layouts() {
  std::vector<ConvCase> out;
  std::vector<ConvCase> shapes = conv_shape_families();
  // More input channels than one staged chunk holds (Tiled: partial sums across chunks).
  shapes.push_back({"many_channels", 2, 96, 20, 18, 9, 3, 3, 1, 1, 1, 1});
  // Grouped layers (every algorithm group by group) and depthwise ones (ConvAlgo::
  // Depthwise's GPU kernels: 16-byte NHWC channel runs, one channel a thread with a
  // multiplier, stride 2, run-time taps under dilation).
  auto grouped = [](ConvCase c, int groups) {
    c.groups = groups;
    return c;
  };
  shapes.push_back(grouped({"grouped_g2", 2, 8, 7, 9, 6, 3, 3, 1, 1, 1, 1}, 2));
  // ConvAlgo::Grouped's 16-byte NHWC loads (8 channels a group) and stores (8 filters),
  // at stride 1 and 2; slots of 4 filters (8-byte stores).
  shapes.push_back(grouped({"grouped_g3_c24", 2, 24, 9, 12, 24, 3, 3, 1, 1, 1, 1}, 3));
  shapes.push_back(grouped({"grouped_g4_c16_m16", 1, 16, 7, 9, 16, 3, 3, 1, 1, 1, 1}, 4));
  shapes.push_back(grouped({"grouped_g2_c16_s2", 1, 16, 11, 13, 32, 3, 3, 2, 2, 1, 1}, 2));
  shapes.push_back(grouped({"depthwise_c12", 2, 12, 9, 16, 12, 3, 3, 1, 1, 1, 1}, 12));
  shapes.push_back(grouped({"depthwise_k5_s2_x2", 1, 6, 13, 11, 12, 5, 5, 2, 2, 2, 2}, 6));
  shapes.push_back(grouped({"depthwise_dilated", 1, 4, 12, 12, 4, 3, 3, 1, 1, 2, 2, 2, 2}, 4));
  for (const auto& base : shapes)
    for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
      ConvCase c = base;
      c.layout = layout;
      c.bias = true;
      c.activation = out.size() % 3 == 0   ? kcnn::Activation::ReLU
                     : out.size() % 3 == 1 ? kcnn::Activation::Tanh
                                           : kcnn::Activation::Identity;
      out.push_back(c);
    }
  return out;
}

/// Whether conv2d_forward's `algo` takes case c's 16-bit tensors on Space: every algorithm
/// for the geometries it takes (algo_takes_geometry), TensorCoreGemm where the backend has
/// tensor cores, Grouped where its packed filters fit the workspace budget.
template <class T, class Space>
bool takes_16bit(kcnn::ConvAlgo algo, const ConvCase& c, kcnn::MathMode math) {
  if (!algo_takes_geometry(algo, c)) return false;
  const bool limited = algo == kcnn::ConvAlgo::TensorCoreGemm || algo == kcnn::ConvAlgo::Grouped;
  return !limited || algo_serves<T, Space>(algo, c, math);
}

/// conv2d_forward with algorithm `algo` on T Views of case c: the algorithms that take
/// 16-bit tensors (takes_16bit) compute it within the bound; every other algorithm throws
/// kcnn::Error and writes nothing.
template <class T, class Space>
void check_conv(const Space& space, const ConvCase& c, kcnn::ConvAlgo algo) {
  SCOPED_TRACE(type_name<T>() + " " + c.name + " " + kcnn::to_string(c.layout) + " " +
               kcnn::to_string(algo));
  const RandomConvInputs<T, Space> in(c);  // the values as rounded to T: to_host
  const auto &x = in.x, &w = in.w;
  const auto& bias = in.bias;
  const auto xv = to_host(x), wv = to_host(w), bv = to_host(bias);
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  auto params = c.params();
  params.algo = algo;
  const bool takes = takes_16bit<T, Space>(algo, c, params.math);
  if (!takes && std::is_same_v<T, float>) return;  // float: the float tests' work
  auto forward = [&] {  // the reference adds the bias only where the case has one
    if (c.bias) {
      kcnn::conv2d_forward(space, x, w, bias, y, params);
    } else {
      kcnn::conv2d_forward(space, x, w, y, params);
    }
  };
  if (!takes) {
    EXPECT_THROW(forward(), kcnn::Error);
    space.fence();
    EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";
    return;
  }
  forward();
  space.fence();
  expect_within_16bit_bound<T>(to_host(y), host_conv2d(c, xv, wv, bv), conv_scale(c, xv, wv, bv),
                               double(c.C / c.groups) * c.R * c.S);
}

template <class T>
void run_conv_cases() {
  for (auto b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      SCOPED_TRACE(backend_name(b));
      for (const auto& c : cases_in_both_layouts())
        for (auto algo :
             {kcnn::ConvAlgo::Reference, kcnn::ConvAlgo::Auto, kcnn::ConvAlgo::Tiled,
              kcnn::ConvAlgo::Im2colGemm, kcnn::ConvAlgo::ImplicitGemm,
              kcnn::ConvAlgo::TensorCoreGemm, kcnn::ConvAlgo::Depthwise, kcnn::ConvAlgo::Grouped})
          check_conv<T, Space>(space, c, algo);
    });
}

/// Im2colGemm on 16-bit tensors in many chunks (workspace limits of a few KB): on hosts
/// the concurrent pipeline (a chunk per thread, each with its float copy) or chunk by
/// chunk, on GPUs cublasGemmEx per chunk; both layouts, 1x1 (whose x would otherwise be
/// the GEMM's operand itself).
template <class T>
void run_im2col_gemm_chunk_cases() {
  for (auto b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      SCOPED_TRACE(backend_name(b));
      for (int family : {1, 7, 18})  // prime, k1x1, lenet_c1
        for (std::size_t limit : {std::size_t(6000), std::size_t(40000)})
          for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
            ConvCase c = conv_shape_families()[family];
            c.layout = layout;
            c.bias = true;
            c.activation = kcnn::Activation::ReLU;
            c.workspace_limit_bytes = limit;
            SCOPED_TRACE("workspace limit " + std::to_string(limit));
            check_conv<T, Space>(space, c, kcnn::ConvAlgo::Im2colGemm);
          }
    });
}

TEST(Conv2d16Bit, BfloatIm2colGemmInChunks) {
  run_im2col_gemm_chunk_cases<kcnn::bfloat16>();
}
TEST(Conv2d16Bit, HalfIm2colGemmInChunks) {
  run_im2col_gemm_chunk_cases<Kokkos::Experimental::half_t>();
}

TEST(Conv2d16Bit, BfloatWithinTheRoundingBoundWhereTakenOthersRefuse) {
  run_conv_cases<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfWithinTheRoundingBoundWhereTakenOthersRefuse) {
  run_conv_cases<Kokkos::Experimental::half_t>();
}

/// Case c as the library's validated problem (no pooling), for its planning predicates.
kcnn::Impl::Conv2dProblem problem_of(const ConvCase& c) {
  kcnn::Impl::Conv2dProblem pb;
  pb.N = c.N, pb.C = c.C, pb.H = c.H, pb.W = c.W, pb.M = c.M, pb.R = c.R, pb.S = c.S;
  pb.stride_h = c.stride_h, pb.stride_w = c.stride_w, pb.pad_h = c.pad_h, pb.pad_w = c.pad_w;
  pb.dilation_h = c.dilation_h, pb.dilation_w = c.dilation_w;
  pb.P = c.P(), pb.Q = c.Q();
  pb.layout = c.layout;
  return pb;
}

/// problem_of(c) with a fused window x window pooling at its stride (0: none).
[[maybe_unused]] kcnn::Impl::Conv2dProblem problem_of(const ConvCase& c, int window,
                                                      kcnn::PoolMode mode) {
  kcnn::Impl::Conv2dProblem pb = problem_of(c);
  if (window == 0) return pb;
  pb.has_pool = true;
  pb.pool.window_h = pb.pool.window_w = pb.pool.stride_h = pb.pool.stride_w = window;
  pb.pool.mode = mode;
  pb.pool.layout = c.layout;
  pb.P_pooled = pb.P / window, pb.Q_pooled = pb.Q / window;
  return pb;
}

/// Shapes at the 16-bit tensor-core tiles' edges (64 x 128 or 128 x 64 filters x pixels,
/// 32 taps a stage, m16n8k16): partial M, pixel and K tiles, K below one stage and not a
/// multiple of the MMA's 16, channel counts that break the 16-byte (8-channel) gathers,
/// K split into slices, 1x1 and strided, dilated layers.
std::vector<ConvCase> tensor_core_16bit_edges() {
  return {
      {"tc16_m63_j127_k27", 1, 3, 9, 15, 63, 3, 3, 1, 1, 1, 1},
      {"tc16_m65_k72_vec", 1, 8, 13, 11, 65, 3, 3},
      {"tc16_m129_k576_vec", 2, 64, 9, 9, 129, 3, 3, 1, 1, 1, 1},
      {"tc16_m128_j256_k16_1x1", 1, 16, 16, 16, 128, 1, 1},
      {"tc16_m200_k18_odd_channels", 2, 2, 11, 13, 200, 3, 3, 2, 2, 1, 1},
      {"tc16_m17_k1", 1, 1, 6, 5, 17, 1, 1},
      {"tc16_dilated_strided", 2, 8, 23, 19, 40, 3, 3, 2, 3, 2, 2, 2, 2},
      {"tc16_k2304", 1, 256, 6, 6, 70, 3, 3, 1, 1, 1, 1},
      {"tc16_split_k_uneven", 2, 130, 5, 7, 33, 3, 3, 1, 1, 1, 1},
      {"tc16_split_k_vec", 1, 128, 4, 5, 40, 3, 3, 1, 1, 1, 1},
      {"tc16_c24_k216_vec", 3, 24, 10, 7, 96, 3, 3, 1, 1, 1, 1},
      // Channel runs (C a multiple of 32; of 64: the 128-byte rows of Hopper builds): odd
      // pixel and filter counts, strides, dilation, 1x1, 5x5 with K split unevenly, 7x7
      // stride 3 with one filter tile of 8.
      {"tc16_runs_c32_m40", 3, 32, 13, 13, 40, 3, 3, 1, 1, 1, 1},
      {"tc16_runs_strided_dilated", 2, 64, 17, 11, 24, 3, 3, 2, 3, 2, 2, 2, 2},
      {"tc16_runs_1x1_m130", 3, 64, 7, 5, 130, 1, 1},
      {"tc16_runs_5x5_split_k", 1, 160, 6, 7, 66, 5, 5, 1, 1, 2, 2},
      {"tc16_runs_wide_5x5_split_k", 1, 192, 6, 7, 66, 5, 5, 1, 1, 2, 2},
      {"tc16_runs_7x7_stride3_m8", 2, 32, 19, 23, 8, 7, 7, 3, 3, 3, 3},
  };
}

/// Whether the library's 16-bit tensor-core units have an sm_90a pass (unit_tests/
/// CMakeLists.txt): then conv2d_forward's NHWC channel runs may take the TMA kernel.
constexpr bool kTestHasSm90aPass =
#if defined(KCNN_TEST_HAS_SM90A_PASS)
    true;
#else
    false;
#endif

/// TensorCoreGemm on 16-bit tensors (m16n8k16, float sums) on the shape families and the
/// tile edges, both layouts; NCHW with and without room in the workspace for the
/// channels-last copy of x (staged where R*S > 1 and C is a multiple of 8, else its own
/// NCHW kernel). Needs tensor cores (elsewhere run_conv_cases checks the refusal).
template <class T>
void run_tensor_core_cases() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
    const Kokkos::DefaultExecutionSpace space;
    std::vector<ConvCase> shapes = conv_shape_families();
    for (const auto& e : tensor_core_16bit_edges())
      shapes.push_back(e);
    int i = 0;
    for (ConvCase c : shapes)
      for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
        c.layout = layout;
        c.bias = i % 2 == 0;
        c.activation = i % 3 == 0 ? kcnn::Activation::ReLU : kcnn::Activation::Identity;
        ++i;
        const std::int64_t K = std::int64_t(c.C) * c.R * c.S;
        // Channel runs read w packed (M, R, S, C): NCHW stages w too, and nothing is packed.
        const bool runs = c.C % 32 == 0;
        I::ChannelsLastStaging<T> staging;
        staging.N = c.N, staging.C = c.C, staging.H = c.H, staging.W = c.W;
        staging.M = c.M, staging.R = c.R, staging.S = c.S;
        staging.copy_w = runs;
        const std::size_t pack =
            runs ? 0 : I::with_tensor_core_tile<T, kcnn::Layout::NHWC>(c.M, [&](auto tile) {
              return I::tensor_core_pack_bytes<decltype(tile), I::tensor_core_16bit_math_v<T>>(c.M,
                                                                                               K);
            });
        const bool stages = layout == kcnn::Layout::NCHW && c.R * c.S > 1 && c.C % 8 == 0;
        // Without room for the copies the NCHW kernel runs, which packs its weights: a
        // limit below the copies must leave room for that packing.
        const std::size_t nchw_pack =
            I::with_tensor_core_tile<T, kcnn::Layout::NCHW>(c.M, [&](auto tile) {
              return I::tensor_core_pack_bytes<decltype(tile), I::tensor_core_16bit_math_v<T>>(c.M,
                                                                                               K);
            });
        for (bool room : {true, false}) {
          if (!room && (!stages || nchw_pack >= staging.bytes() + pack)) continue;
          SCOPED_TRACE(room ? "room for the channels-last copy" : "no room for the copy");
          c.workspace_limit_bytes = room ? 0 : staging.bytes() + pack - 1;
          const LaunchedKernels launched;
          check_conv<T>(space, c, kcnn::ConvAlgo::TensorCoreGemm);
          const bool staged = room && stages;
          // (16-bit x with channels a multiple of 8 moves by ChannelsLastTranspose16)
          EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core::x_channels_last") ||
                        launched.saw("kcnn::conv2d::channels_last"),
                    staged);
          // Channel runs: the TMA kernel where it fits (NHWC or staged NCHW, builds with
          // the sm_90a pass), else the channel-run kernel.
          const bool tma = launched.saw("kcnn::conv2d::tensor_core_tma");
          EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_channel_runs") || tma,
                    runs && (layout == kcnn::Layout::NHWC || staged));
          EXPECT_TRUE(!tma || (kTestHasSm90aPass && runs && c.M % 8 == 0 &&
                               (layout == kcnn::Layout::NHWC || staged)));
          // NCHW through the TMA kernel: y from its packed copy.
          EXPECT_EQ(launched.saw("kcnn::conv2d::channels_first"),
                    tma && layout == kcnn::Layout::NCHW);
          const bool single = I::tensor_core_single_channel_fit<T>(problem_of(c));
          EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_single_channel"), single);
          EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_few_channels"),
                    I::tensor_core_few_channels_fit<T>(problem_of(c)) && !single);
        }
      }
  }
}

TEST(Conv2d16Bit, BfloatTensorCoreGemmOnTheTileEdges) {
  run_tensor_core_cases<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfTensorCoreGemmOnTheTileEdges) {
  run_tensor_core_cases<Kokkos::Experimental::half_t>();
}

/// NHWC case c through `launch(space, operands, problem)`, a kernel launched directly
/// (not through conv2d_forward), into a poisoned y: within the bound of check_conv.
template <class T, class Launch>
void check_direct_nhwc_launch(const ConvCase& c, const Launch& launch) {
  namespace I = kcnn::Impl;
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  const RandomConvInputs<T, Space> in(c);
  const auto xv = to_host(in.x), wv = to_host(in.w), bv = to_host(in.bias);
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  const auto pb = I::make_conv2d_problem("test", in.x, in.w, in.bias, y, c.params());
  const auto o = I::implicit_gemm_operands<kcnn::Layout::NHWC>(
      I::as_kernel_view<Space, false>(in.x), I::as_kernel_view<Space, false>(in.w),
      c.bias ? I::as_kernel_view<Space, false>(in.bias)
             : decltype(I::as_kernel_view<Space, false>(in.bias)){},
      I::as_kernel_view<Space, true>(y), pb);
  launch(space, o, pb);
  space.fence();
  expect_within_16bit_bound<T>(to_host(y), host_conv2d(c, xv, wv, bv), conv_scale(c, xv, wv, bv),
                               double(c.C) * c.R * c.S);
}

/// The channel-run kernel on tile `Tile`, launched directly, on NHWC case c (C a multiple
/// of 32).
template <class T, class Tile>
void check_channel_run_tile(const ConvCase& c) {
  namespace I = kcnn::Impl;
  SCOPED_TRACE(type_name<T>() + " " + c.name);
  check_direct_nhwc_launch<T>(c, [](const auto& space, const auto& o, const auto& pb) {
    I::tensor_core_launch_channel_runs_tile<Tile, I::tensor_core_16bit_math_v<T>>(
        space, o, pb.workspace_limit_bytes, I::LaunchMode::Run,
        static_cast<const I::ChannelsLastStaging<T>*>(nullptr));
  });
}

/// The channel-run kernel's tiles that conv2d_forward does not reach in this build: the
/// 2 x 2 warp tiles of mma.sync (Hopper builds with the wgmma pass take the warpgroup
/// tiles), and the warpgroup tiles (64- and 128-byte rows) multiplying with mma.sync, which
/// a Hopper GPU runs where the driver loads a pass compiled without sm_90a. (The warpgroup
/// tiles with wgmma run through conv2d_forward in the tile-edge tests above, where the
/// build has an sm_90a pass.) Partial pixel and filter tiles, strides, dilation, 1x1, 5x5,
/// K split into slices.
template <class T>
void run_channel_run_tiles() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
    std::vector<ConvCase> cases = {
        {"runs_c32_m40_j507", 3, 32, 13, 13, 40, 3, 3, 1, 1, 1, 1},
        {"runs_c64_m70_strided_dilated", 2, 64, 17, 11, 70, 3, 3, 2, 3, 2, 2, 2, 2},
        {"runs_1x1_m130", 3, 64, 7, 5, 130, 1, 1},
        {"runs_5x5_c160_m66", 1, 160, 6, 7, 66, 5, 5, 1, 1, 2, 2},
        {"runs_c96_m8_j1", 1, 96, 3, 3, 8, 3, 3},
        {"runs_c128_m72_j126", 2, 128, 9, 7, 72, 3, 3, 1, 1, 1, 1},
        {"runs_5x5_c192_m66", 1, 192, 6, 7, 66, 5, 5, 1, 1, 2, 2},
    };
    int i = 0;
    for (ConvCase c : cases) {
      c.layout = kcnn::Layout::NHWC;
      c.bias = true;
      c.activation = i++ % 2 == 0 ? kcnn::Activation::ReLU : kcnn::Activation::Identity;
      check_channel_run_tile<T, I::TensorCoreTiles::RunsMmaSync<T>>(c);
      check_channel_run_tile<T, I::TensorCoreRunTile<T, 128, 64, 4, 1, 3, 4, true, false>>(c);
      if (c.C % 64 == 0)  // 128-byte rows of 64 taps
        check_channel_run_tile<T, I::TensorCoreRunTile<T, 64, 64, 4, 1, 2, 4, true, false, 128>>(c);
    }
  }
}

TEST(Conv2d16Bit, BfloatChannelRunTilesMatchTheReference) {
  run_channel_run_tiles<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfChannelRunTilesMatchTheReference) {
  run_channel_run_tiles<Kokkos::Experimental::half_t>();
}

/// The TMA kernel on tile `Tile`, launched directly, on NHWC case c (C a multiple of the
/// tile's stage, M a multiple of 8).
template <class T, class Tile>
void check_tma_tile(const ConvCase& c) {
  namespace I = kcnn::Impl;
  SCOPED_TRACE(type_name<T>() + " " + c.name + " BP " + std::to_string(Tile::BP) + " BF " +
               std::to_string(Tile::BF) + " rows " + std::to_string(Tile::row_bytes));
  check_direct_nhwc_launch<T>(c, [](const auto& space, const auto& o, const auto& pb) {
    ASSERT_TRUE(I::tensor_core_tma_problem_fits(o, pb));
    I::tensor_core_launch_tma_tile<Tile, I::tensor_core_16bit_math_v<T>>(
        space, o, pb, pb.workspace_limit_bytes, I::LaunchMode::Run,
        static_cast<const I::ChannelsLastStaging<T>*>(nullptr));
  });
}

/// The TMA kernel's three tiles (tma_kernel.hpp) on odd shapes: batch 1, prime extents,
/// pixel tiles that cross rows and images and end past the last pixel, filter tiles past
/// M, strides 2 and 3, dilation, no and wide padding, 1x1, 5x5, 7x7, every activation, with
/// and without a bias, K split into 2 and 3 slices (small grids of long reductions), and
/// a grid whose teams walk several tiles each.
/// Launched from this unit, which has no sm_90a pass, they multiply with mma.sync (the
/// path a Hopper GPU runs where the driver loads the plain sm_90 pass); through
/// conv2d_forward, in builds with the sm_90a pass (KCNN_TEST_HAS_SM90A_PASS), with wgmma:
/// the cases run both ways there.
template <class T>
void run_tma_tiles() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
#if !defined(KOKKOS_ARCH_HOPPER90)
    GTEST_SKIP() << "the TMA kernel needs Hopper (sm_90)";
#else
    using Tiles = I::TensorCoreTiles;
    std::vector<ConvCase> cases = {
        {"tma_c32_m40_j507", 3, 32, 13, 13, 40, 3, 3, 1, 1, 1, 1},
        {"tma_c64_m72_stride2_dilated", 2, 64, 17, 11, 72, 3, 3, 2, 2, 2, 2, 2, 2},
        {"tma_c64_m64_j1", 1, 64, 1, 1, 64, 3, 3, 1, 1, 1, 1},
        {"tma_1x1_c64_m136", 3, 64, 7, 5, 136, 1, 1},
        {"tma_5x5_c128_m24_pad2", 1, 128, 11, 7, 24, 5, 5, 1, 1, 2, 2},
        {"tma_7x7_c32_m8_stride3", 2, 32, 19, 23, 8, 7, 7, 3, 3, 3, 3},
        {"tma_c128_m256_unpadded", 2, 128, 9, 13, 256, 3, 3},
        {"tma_c512_m64_split", 1, 512, 5, 3, 64, 3, 3, 1, 1, 1, 1},
        {"tma_c256_m16_split", 1, 256, 7, 7, 16, 3, 3, 1, 1, 1, 1},
        {"tma_c64_m64_resnet_like", 2, 64, 12, 12, 64, 3, 3, 1, 1, 1, 1},
        // More tiles than the teams resident on a 132-multiprocessor GPU at every tile's
        // launch bounds (the league then walks several tiles per team); stride 2, so that
        // conv2d_forward takes this kernel rather than the halo kernel (run_halo_tiles).
        {"tma_many_tiles_c64_m8_stride2", 1, 64, 540, 540, 8, 3, 3, 2, 2, 1, 1},
    };
    const kcnn::Activation acts[] = {kcnn::Activation::ReLU, kcnn::Activation::Identity,
                                     kcnn::Activation::Sigmoid, kcnn::Activation::Tanh};
    int i = 0;
    for (ConvCase c : cases) {
      c.layout = kcnn::Layout::NHWC;
      c.bias = i % 2 == 0;
      c.activation = acts[i++ % 4];
      check_tma_tile<T, Tiles::TmaTallTile<T>>(c);
      check_tma_tile<T, Tiles::TmaSquareTile<T>>(c);
      if (c.C % 64 == 0) check_tma_tile<T, Tiles::TmaWideRows<T>>(c);
#if defined(KCNN_TEST_HAS_SM90A_PASS)
      {
        const LaunchedKernels launched;
        check_conv<T>(Kokkos::DefaultExecutionSpace{}, c, kcnn::ConvAlgo::TensorCoreGemm);
        EXPECT_TRUE(launched.saw("kcnn::conv2d::tensor_core_tma"));
      }
      // NCHW: staged channels-last where the filter has taps to share (R*S > 1), x
      // copied in, the result copied out of the packed NHWC copy the kernel writes; with
      // no room for the copy of y, the channel-run kernel on the staged x.
      ConvCase nchw = c;
      nchw.layout = kcnn::Layout::NCHW;
      const bool staged = c.R * c.S > 1;
      I::ChannelsLastStaging<T> staging;
      staging.N = c.N, staging.C = c.C, staging.H = c.H, staging.W = c.W;
      staging.M = c.M, staging.R = c.R, staging.S = c.S;
      staging.copy_w = true;
      for (bool y_room : {true, false}) {
        if (!y_room && !staged) continue;
        SCOPED_TRACE(y_room ? "NCHW" : "NCHW, no room for y's copy");
        nchw.workspace_limit_bytes = y_room ? 0 : staging.bytes();
        const LaunchedKernels launched;
        check_conv<T>(Kokkos::DefaultExecutionSpace{}, nchw, kcnn::ConvAlgo::TensorCoreGemm);
        EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_tma"), staged && y_room);
        EXPECT_EQ(launched.saw("kcnn::conv2d::channels_first"), staged && y_room);
        EXPECT_EQ(launched.saw("kcnn::conv2d::channels_last"), staged);
      }
#endif
    }
#endif
  }
}

TEST(Conv2d16Bit, BfloatTmaTilesMatchTheReference) {
  run_tma_tiles<kcnn::bfloat16>();
}

/// The split TMA kernel's tile counters (split_counters.hpp) are zero between calls, and a
/// new buffer is zeroed before its first use: after kcnn::release_workspaces(), a buffer
/// filled with garbage behind the counters' back (the same cache purpose, a new
/// generation) still gives the reference result, twice (the second call finds the
/// counters its predecessor's last teams set back to zero).
TEST(Conv2d16Bit, TmaSplitCountersAreZeroedWhereTheirBufferIsNew) {
  namespace I = kcnn::Impl;
  using T = kcnn::bfloat16;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
#if !defined(KOKKOS_ARCH_HOPPER90)
    GTEST_SKIP() << "the TMA kernel needs Hopper (sm_90)";
#else
    using Space = Kokkos::DefaultExecutionSpace;
    ConvCase c{"tma_split_after_release", 1, 512, 5, 3, 64, 3, 3, 1, 1, 1, 1};
    c.layout = kcnn::Layout::NHWC;
    c.bias = true;
    c.activation = kcnn::Activation::ReLU;
    check_tma_tile<T, I::TensorCoreTiles::TmaWideRows<T>>(c);  // K in 3 slices
    kcnn::release_workspaces();
    {
      auto lease = I::WorkspaceCache<Space, I::ScratchForSplitCounters>::acquire(
          Space{}, sizeof(int) * I::kTmaMostSplitTeams);
      Kokkos::View<unsigned char*, Space::memory_space, Kokkos::MemoryUnmanaged> bytes(
          lease.data(), lease.size());
      Kokkos::deep_copy(bytes, static_cast<unsigned char>(0x5a));
      Kokkos::fence();
    }
    check_tma_tile<T, I::TensorCoreTiles::TmaWideRows<T>>(c);
    check_tma_tile<T, I::TensorCoreTiles::TmaWideRows<T>>(c);
#endif
  }
}

TEST(Conv2d16Bit, HalfTmaTilesMatchTheReference) {
  run_tma_tiles<Kokkos::Experimental::half_t>();
}

/// The halo kernel (halo_kernel.hpp) on tile TmaHalo, launched directly, on NHWC case c
/// (stride 1, no dilation, C a multiple of 64, a filter of up to 3x3).
template <class T>
void check_halo_tile(const ConvCase& c) {
  namespace I = kcnn::Impl;
  using Tile = I::TensorCoreTiles::TmaHalo<T>;
  SCOPED_TRACE(type_name<T>() + " " + c.name + " halo");
  check_direct_nhwc_launch<T>(c, [](const auto& space, const auto& o, const auto& pb) {
    ASSERT_TRUE(I::tensor_core_halo_problem_fits<Tile>(o, pb));
    I::tensor_core_launch_halo_tile<Tile, I::tensor_core_16bit_math_v<T>>(
        space, o, pb, pb.workspace_limit_bytes, I::LaunchMode::Run,
        static_cast<const I::ChannelsLastStaging<T>*>(nullptr));
  });
}

/// The halo kernel on odd shapes: blocks that end past the output's rows and columns,
/// filter blocks past M, no padding and padding wider than the filter, 1x1 and 2x3
/// filters, several channel blocks (the halo replaced between them), a one-pixel image,
/// every activation, with and without a bias, and more tiles than teams resident at once.
/// Launched from this unit (no sm_90a pass) they multiply with mma.sync; through
/// conv2d_forward in builds with the sm_90a pass, with wgmma, where Auto's rule
/// (tensor_core_tma_tile) takes the halo tile for the last two cases only: the others
/// have too few tiles or too many pixels past the output's edges. Both layouts there.
template <class T>
void run_halo_tiles() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
#if !defined(KOKKOS_ARCH_HOPPER90)
    GTEST_SKIP() << "the halo kernel needs Hopper (sm_90)";
#else
    std::vector<ConvCase> cases = {
        {"halo_c64_m64_p20_q17", 2, 64, 20, 17, 64, 3, 3, 1, 1, 1, 1},
        {"halo_c128_m72_unpadded", 1, 128, 19, 23, 72, 3, 3},
        {"halo_c64_m8_pad2", 3, 64, 9, 13, 8, 3, 3, 1, 1, 2, 2},
        {"halo_1x1_c192_m64", 2, 192, 16, 8, 64, 1, 1},
        {"halo_2x3_c64_m136", 1, 64, 31, 9, 136, 2, 3, 1, 1, 1, 1},
        {"halo_c64_m64_j1", 1, 64, 1, 1, 64, 3, 3, 1, 1, 1, 1},
        {"halo_c512_m64_eight_blocks", 1, 512, 9, 11, 64, 3, 3, 1, 1, 1, 1},
        // More tiles than multiprocessors, every block's pixels in the output (Auto takes
        // the halo tile), and more tiles than the teams resident at once on a
        // 132-multiprocessor GPU (blocks run several teams in turn).
        {"halo_many_tiles_c64_m8", 5, 64, 64, 64, 8, 3, 3, 1, 1, 1, 1},
        {"halo_many_rounds_c64_m8", 1, 64, 272, 272, 8, 3, 3, 1, 1, 1, 1},
    };
    const kcnn::Activation acts[] = {kcnn::Activation::ReLU, kcnn::Activation::Identity,
                                     kcnn::Activation::Sigmoid, kcnn::Activation::Tanh};
    int i = 0;
    for (ConvCase c : cases) {
      c.layout = kcnn::Layout::NHWC;
      c.bias = i % 2 == 0;
      c.activation = acts[i++ % 4];
      check_halo_tile<T>(c);
#if defined(KCNN_TEST_HAS_SM90A_PASS)
      const bool auto_takes_it = c.name.rfind("halo_many", 0) == 0;
      for (kcnn::Layout layout : {kcnn::Layout::NHWC, kcnn::Layout::NCHW}) {
        c.layout = layout;
        SCOPED_TRACE(layout == kcnn::Layout::NHWC ? "conv2d_forward NHWC" : "conv2d_forward NCHW");
        const LaunchedKernels launched;
        check_conv<T>(Kokkos::DefaultExecutionSpace{}, c, kcnn::ConvAlgo::TensorCoreGemm);
        EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_halo"), auto_takes_it);
      }
#endif
    }
#endif
  }
}

TEST(Conv2d16Bit, BfloatHaloTileMatchesTheReference) {
  run_halo_tiles<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfHaloTileMatchesTheReference) {
  run_halo_tiles<Kokkos::Experimental::half_t>();
}

/// ChannelsLastTranspose16 both ways moves every element to its place and writes
/// nothing else: images whose pixel counts take 8, 4, 2 and 1 pixels per access, channel
/// and pixel counts past the 64 x 64 tiles, an NCHW side with the strides of a LayoutLeft
/// View (pixels not contiguous) and one starting 2 bytes past an aligned address.
template <class T>
void run_channels_last_transposes() {
  namespace I = kcnn::Impl;
  using Space = Kokkos::DefaultExecutionSpace;
  if constexpr (!I::has_tensor_cores_v<Space>) {
    GTEST_SKIP() << "a GPU copy (teams of 256 threads)";
  } else {
    struct Shape {
      std::int64_t N, C, H, W;
    };
    const Shape shapes[] = {{2, 64, 8, 8}, {3, 136, 14, 14}, {1, 8, 1, 2},
                            {2, 72, 7, 9}, {1, 200, 9, 13},  {2, 16, 3, 10}};
    auto bits = [](T v) {
      std::uint16_t b;
      std::memcpy(&b, &v, sizeof b);
      return b;
    };
    auto value = [](std::int64_t i) {  // distinct bit patterns, none a NaN
      const std::uint16_t b = static_cast<std::uint16_t>(0x1000 + i % 0x5000);
      T v;
      std::memcpy(static_cast<void*>(&v), &b, sizeof v);
      return v;
    };
    const Space space;
    for (const Shape& sh : shapes)
      for (int strides = 0; strides < 3; ++strides) {  // packed, LayoutLeft, offset by one
        SCOPED_TRACE(type_name<T>() + " " + std::to_string(sh.N) + "x" + std::to_string(sh.C) +
                     "x" + std::to_string(sh.H) + "x" + std::to_string(sh.W) + " strides " +
                     std::to_string(strides));
        const std::int64_t size = sh.N * sh.C * sh.H * sh.W, HW = sh.H * sh.W;
        I::LogicalStrides s{sh.C * HW, HW, sh.W, 1};
        if (strides == 1) s = {1, sh.N, sh.N * sh.C, sh.N * sh.C * sh.H};
        const std::int64_t shift = strides == 2 ? 1 : 0;
        Kokkos::View<T*, Space> nchw("nchw", size + shift), nhwc("nhwc", size);
        auto nchw_h = Kokkos::create_mirror_view(nchw);
        auto nhwc_h = Kokkos::create_mirror_view(nhwc);
        // to channels-last: NCHW values in, NHWC poisoned
        for (std::int64_t i = 0; i < size + shift; ++i)
          nchw_h(i) = value(i);
        for (std::int64_t i = 0; i < size; ++i)
          nhwc_h(i) = value(0x4fff);
        Kokkos::deep_copy(nchw, nchw_h);
        Kokkos::deep_copy(nhwc, nhwc_h);
        I::channels_last_transpose16<true>(space, nchw.data() + shift, nhwc.data(), s, sh.N, sh.C,
                                           sh.H, sh.W);
        Kokkos::deep_copy(nhwc_h, nhwc);
        std::int64_t wrong = 0;
        for (std::int64_t n = 0; n < sh.N; ++n)
          for (std::int64_t c = 0; c < sh.C; ++c)
            for (std::int64_t p = 0; p < HW; ++p) {
              const std::int64_t from = shift + s.offset(n, c, p / sh.W, p % sh.W);
              wrong += bits(nhwc_h((n * HW + p) * sh.C + c)) != bits(value(from));
            }
        EXPECT_EQ(wrong, 0) << "to channels-last";
        // back: NHWC values in, NCHW poisoned (the element before an offset one kept)
        for (std::int64_t i = 0; i < size; ++i)
          nhwc_h(i) = value(3 * i + 7);
        for (std::int64_t i = 0; i < size + shift; ++i)
          nchw_h(i) = value(0x4fff);
        Kokkos::deep_copy(nchw, nchw_h);
        Kokkos::deep_copy(nhwc, nhwc_h);
        I::channels_last_transpose16<false>(space, nhwc.data(), nchw.data() + shift, s, sh.N, sh.C,
                                            sh.H, sh.W);
        Kokkos::deep_copy(nchw_h, nchw);
        wrong = 0;
        for (std::int64_t n = 0; n < sh.N; ++n)
          for (std::int64_t c = 0; c < sh.C; ++c)
            for (std::int64_t p = 0; p < HW; ++p) {
              const std::int64_t to = shift + s.offset(n, c, p / sh.W, p % sh.W);
              wrong += bits(nchw_h(to)) != bits(value(3 * ((n * HW + p) * sh.C + c) + 7));
            }
        if (shift) wrong += bits(nchw_h(0)) != bits(value(0x4fff));
        EXPECT_EQ(wrong, 0) << "to channels-first";
      }
  }
}

TEST(Conv2d16Bit, BfloatChannelsLastTransposesMoveEveryElement) {
  run_channels_last_transposes<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfChannelsLastTransposesMoveEveryElement) {
  run_channels_last_transposes<Kokkos::Experimental::half_t>();
}

/// conv2d_forward of case c fused with pooling pc (pool_of) by each of `algos` on T
/// Views: conv -> pool in float, rounded once, within the bound (S of a pooled output:
/// the largest S of its window; an average is no larger).
template <class T, class Space>
void check_fused_conv(const Space& space, const ConvCase& c, const PoolCase& pc,
                      std::initializer_list<kcnn::ConvAlgo> algos) {
  SCOPED_TRACE(type_name<T>() + " " + c.name + " " + kcnn::to_string(c.layout));
  const RandomConvInputs<T, Space> in(c);  // the values as rounded to T: to_host
  const auto &x = in.x, &w = in.w;
  const auto& bias = in.bias;
  const auto xv = to_host(x), wv = to_host(w), bv = to_host(bias);
  const auto ye = pc.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  PoolCase max_of_scale = pc;
  max_of_scale.mode = kcnn::PoolMode::Max;
  max_of_scale.activation = kcnn::Activation::Identity;
  const auto scale = host_pool2d(max_of_scale, conv_scale(c, xv, wv, bv), {});
  const auto expected = host_pool2d(pc, host_conv2d(c, xv, wv, bv), {});
  for (auto algo : algos) {
    SCOPED_TRACE(kcnn::to_string(algo));
    poison(y);
    auto params = c.params();
    params.algo = algo;
    params.pool = pc.params();
    if (c.bias) {
      kcnn::conv2d_forward(space, x, w, bias, y, params);
    } else {
      kcnn::conv2d_forward(space, x, w, y, params);
    }
    space.fence();
    expect_within_16bit_bound<T>(to_host(y), expected, scale,
                                 double(c.C) * c.R * c.S + pc.window_h * pc.window_w);
  }
}

/// A case of TensorCoreGemm's direct kernels for few channels: the convolution and its
/// fused window x window pooling at its stride (window 0: none).
struct FewChannelCase {
  ConvCase conv;
  int window;
  kcnn::PoolMode mode;
};

/// TensorCoreGemm on each case in both layouts (bias on every other run; ReLU, Identity
/// and Tanh in turn) against the double reference, y poisoned first;
/// `check_launch(f, launched)` then asserts which kernel ran.
template <class T, class CheckLaunch>
void run_few_channel_cases(const std::vector<FewChannelCase>& cases, CheckLaunch&& check_launch) {
  const Kokkos::DefaultExecutionSpace space;
  const kcnn::Activation activations[] = {kcnn::Activation::ReLU, kcnn::Activation::Identity,
                                          kcnn::Activation::Tanh};
  int i = 0;
  for (FewChannelCase f : cases)
    for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
      ConvCase& c = f.conv;
      c.layout = layout;
      c.bias = i % 2 == 0;
      c.activation = activations[i % 3];
      ++i;
      const LaunchedKernels launched;
      if (f.window == 0) {
        check_conv<T>(space, c, kcnn::ConvAlgo::TensorCoreGemm);
      } else {
        check_fused_conv<T>(
            space, c, pool_of({c, pool(f.window, f.window, f.window, f.window, 0, 0, f.mode)}),
            {kcnn::ConvAlgo::TensorCoreGemm});
      }
      check_launch(f, launched);
    }
}

/// TensorCoreGemm's few-channel kernel (at most 4 channels and 16 filters at unit stride
/// and dilation; few_channels_kernel.hpp): 1-4 channels (3: padded to 4 in scratch), 1-16
/// filters (one or two n8 tiles), 1x1 to 7x7 and rectangular filters (one 16-byte chunk
/// per filter row (C = 1), several with masked taps (C = 4, S = 7), an odd chunk count
/// (C = 4, 3x5)), padding, blocks split along rows and columns (W = 200; a 2x31 filter's
/// window row narrowing the block), batch 1, with no
/// pooling and with 2x2 / 4x4 max and average pooling fused, both layouts, against the
/// double reference; the launched kernel is asserted (one channel with filters at most 9
/// wide: the single-channel kernel, tested on its own below).
template <class T>
void run_tensor_core_few_channel_cases() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
    using kcnn::PoolMode;
    const std::vector<FewChannelCase> cases = {
        {{"few_c3_m5_3x3_pad1", 3, 3, 13, 17, 5, 3, 3, 1, 1, 1, 1}, 0, PoolMode::Max},
        {{"few_c2_m12_5x5_pad2", 2, 2, 11, 29, 12, 5, 5, 1, 1, 2, 2}, 2, PoolMode::Max},
        {{"few_c1_m16_7x7_w200", 1, 1, 37, 200, 16, 7, 7, 1, 1, 3, 3}, 4, PoolMode::Max},
        {{"few_c4_m9_7x7_pad3", 2, 4, 9, 9, 9, 7, 7, 1, 1, 3, 3}, 0, PoolMode::Max},
        {{"few_c1_m1_1x1", 2, 1, 5, 5, 1, 1, 1}, 0, PoolMode::Max},
        {{"few_c3_m8_3x3_avg2", 3, 3, 19, 23, 8, 3, 3}, 2, PoolMode::Average},
        {{"few_c4_m16_5x5_avg4", 2, 4, 21, 22, 16, 5, 5, 1, 1, 1, 1}, 4, PoolMode::Average},
        {{"few_c2_m3_7x7", 2, 2, 12, 12, 3, 7, 7}, 0, PoolMode::Max},
        {{"few_c4_m7_3x5_odd_chunks", 2, 4, 10, 13, 7, 3, 5, 1, 1, 1, 2}, 0, PoolMode::Max},
        {{"few_c1_m6_5x3", 2, 1, 17, 9, 6, 5, 3, 1, 1, 0, 1}, 2, PoolMode::Max},
        // one channel, 11 wide: past the single-channel kernel, 8 shifted window copies
        {{"few_c1_m5_3x11_pad5", 2, 1, 15, 40, 5, 3, 11, 1, 1, 1, 5}, 2, PoolMode::Max},
        // 2x31: a window row of 162 positions at 128 columns, narrowed to 124 (two blocks)
        {{"few_c4_m2_2x31_narrowed", 1, 4, 5, 128, 2, 2, 31, 1, 1, 0, 15}, 0, PoolMode::Max},
        {{"lenet_c1_few", 2, 1, 86, 86, 4, 7, 7}, 2, PoolMode::Max},
        {{"lenet_c3_few", 3, 4, 40, 40, 16, 7, 7}, 4, PoolMode::Max},
    };
    run_few_channel_cases<T>(cases, [](const FewChannelCase& f, const LaunchedKernels& launched) {
      const ConvCase& c = f.conv;
      const bool single = I::single_channel_kernel_fits(problem_of(c, f.window, f.mode));
      EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_few_channels"), !single) << c.name;
      EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core_single_channel"), single) << c.name;
      EXPECT_FALSE(launched.saw("kcnn::conv2d::tensor_core")) << c.name;
    });
  }
}

TEST(Conv2d16Bit, BfloatTensorCoreGemmFewChannels) {
  run_tensor_core_few_channel_cases<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfTensorCoreGemmFewChannels) {
  run_tensor_core_few_channel_cases<Kokkos::Experimental::half_t>();
}

/// TensorCoreGemm's single-channel kernel (one input channel, filters at most 9 wide, unit
/// stride and dilation; single_channel_kernel.hpp): 1x1 to 9x9 and rectangular filters,
/// 1-16 filters (one to four groups of 4, the last partial), padding (odd W and padding:
/// inputs at addresses not 4-byte aligned), odd extents, output rows in several blocks
/// (tall image, 9x9 with 13 filters), columns in two blocks (W = 200), batch 1, with no
/// pooling (NCHW column pairs and NHWC filter quads stored whole where aligned) and with
/// 2x2 / 4x4 max and average pooling fused, both layouts, against the double reference;
/// the launched kernel is asserted.
template <class T>
void run_tensor_core_single_channel_cases() {
  namespace I = kcnn::Impl;
  if constexpr (!I::has_tensor_cores_v<Kokkos::DefaultExecutionSpace> || sizeof(T) != 2) {
    GTEST_SKIP() << "no tensor cores or no 16-bit type in this build";
  } else {
    using kcnn::PoolMode;
    const std::vector<FewChannelCase> cases = {
        {{"one_m1_1x1", 1, 1, 5, 7, 1, 1, 1}, 0, PoolMode::Max},
        {{"one_m5_3x3_pad1", 3, 1, 13, 17, 5, 3, 3, 1, 1, 1, 1}, 0, PoolMode::Max},
        {{"one_m8_3x3_pad1_even_w", 2, 1, 20, 30, 8, 3, 3, 1, 1, 1, 1}, 0, PoolMode::Max},
        {{"one_m12_5x5_pad2_max2", 2, 1, 11, 29, 12, 5, 5, 1, 1, 2, 2}, 2, PoolMode::Max},
        {{"one_m16_7x7_w200_max4", 1, 1, 37, 200, 16, 7, 7, 1, 1, 3, 3}, 4, PoolMode::Max},
        {{"one_m9_7x7_pad3", 2, 1, 9, 9, 9, 7, 7, 1, 1, 3, 3}, 0, PoolMode::Max},
        {{"one_m8_3x3_avg2", 3, 1, 19, 23, 8, 3, 3}, 2, PoolMode::Average},
        {{"one_m16_5x5_avg4", 2, 1, 21, 22, 16, 5, 5, 1, 1, 1, 1}, 4, PoolMode::Average},
        {{"one_m7_2x9", 2, 1, 31, 45, 7, 2, 9}, 0, PoolMode::Max},
        {{"one_m13_9x9_tall", 1, 1, 300, 33, 13, 9, 9, 1, 1, 4, 4}, 0, PoolMode::Max},
        {{"one_m2_3x8_max2", 1, 1, 17, 130, 2, 3, 8, 1, 1, 1, 1}, 2, PoolMode::Max},
        {{"one_m4_5x5_pad2_odd", 3, 1, 19, 21, 4, 5, 5, 1, 1, 2, 2}, 0, PoolMode::Max},
        {{"lenet_c1_single", 2, 1, 86, 86, 4, 7, 7}, 2, PoolMode::Max},
        {{"lenet5_c1_6x5x5", 2, 1, 32, 32, 6, 5, 5}, 2, PoolMode::Max},
    };
    run_few_channel_cases<T>(cases, [](const FewChannelCase& f, const LaunchedKernels& launched) {
      const ConvCase& c = f.conv;
      EXPECT_TRUE(I::single_channel_kernel_fits(problem_of(c, f.window, f.mode))) << c.name;
      EXPECT_TRUE(launched.saw("kcnn::conv2d::tensor_core_single_channel")) << c.name;
      EXPECT_FALSE(launched.saw("kcnn::conv2d::tensor_core_few_channels")) << c.name;
      EXPECT_FALSE(launched.saw("kcnn::conv2d::tensor_core")) << c.name;
    });
  }
}

TEST(Conv2d16Bit, BfloatTensorCoreGemmSingleChannel) {
  run_tensor_core_single_channel_cases<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfTensorCoreGemmSingleChannel) {
  run_tensor_core_single_channel_cases<Kokkos::Experimental::half_t>();
}

/// Infinite and NaN inputs reach exactly the outputs whose windows hold them, in the
/// kernels whose MMAs also multiply inputs outside an output's window by zero weights
/// (the single-channel kernel's banded filter rows, the few-channel kernel's padded
/// chunks) and in Auto's pick: NaN where the reference is NaN, the same infinity where it
/// is infinite, the others within the bound. Identity activation (ReLU would hide NaN).
template <class T>
void run_non_finite_input_cases() {
  namespace I = kcnn::Impl;
  using Space = Kokkos::DefaultExecutionSpace;
  const Space space;
  struct NonFiniteCase {
    ConvCase conv;
    int window;
  };
  const std::vector<NonFiniteCase> cases = {
      {{"inf_one_7x7_max2", 2, 1, 30, 30, 4, 7, 7}, 2},
      {{"inf_one_5x5_pad2", 2, 1, 30, 31, 5, 5, 5, 1, 1, 2, 2}, 0},
      {{"inf_four_7x7_max4", 2, 4, 24, 24, 16, 7, 7}, 4},
      {{"inf_three_3x3", 1, 3, 17, 19, 6, 3, 3, 1, 1, 1, 1}, 0},
  };
  std::vector<kcnn::ConvAlgo> algos = {kcnn::ConvAlgo::Auto, kcnn::ConvAlgo::Tiled};
  if (I::has_tensor_cores_v<Space> && sizeof(T) == 2)
    algos.push_back(kcnn::ConvAlgo::TensorCoreGemm);
  for (NonFiniteCase f : cases)
    for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
      ConvCase& c = f.conv;
      c.layout = layout;
      c.bias = true;
      SCOPED_TRACE(type_name<T>() + " " + c.name + " " + kcnn::to_string(layout));
      std::vector<double> xv = random_values(product(c.x_extents()), 11);
      for (double& v : xv)
        v = static_cast<double>(static_cast<T>(v));  // as stored
      const double inf = std::numeric_limits<double>::infinity();
      xv[xv.size() / 3 + 7] = inf;
      xv[xv.size() / 2 + 3] = -inf;
      xv[xv.size() - 40] = std::numeric_limits<double>::quiet_NaN();
      const std::vector<double> wv = random_values(product(c.w_extents()), 22);
      const std::vector<double> bv = random_values(c.M, 33);
      const auto x = make_tensor<T, Space>("x", c.x_extents(), xv);
      const auto w = make_tensor<T, Space>("w", c.w_extents(), wv);
      const auto bias = make_vector<T, Space>("bias", bv);
      const auto wr = to_host(w), br = to_host(bias);
      const PoolCase pc =
          pool_of({c, pool(f.window, f.window, f.window, f.window, 0, 0, kcnn::PoolMode::Max)});
      auto maybe_pool = [&](const std::vector<double>& v) {
        return f.window ? host_pool2d(pc, v, {}) : v;
      };
      const auto want = maybe_pool(host_conv2d(c, xv, wr, br));
      const auto scale = maybe_pool(conv_scale(c, xv, wr, br));
      const auto ye = f.window ? pc.y_extents() : c.y_extents();
      Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      for (auto algo : algos) {
        SCOPED_TRACE(kcnn::to_string(algo));
        poison(y);
        auto params = c.params();
        params.algo = algo;
        if (f.window) params.pool = pc.params();
        kcnn::conv2d_forward(space, x, w, bias, y, params);
        space.fence();
        const auto got = to_host(y);
        std::vector<double> got_finite = got, want_finite = want, scale_finite = scale;
        std::size_t non_finite = 0, wrong = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (std::isfinite(want[i])) continue;
          ++non_finite;
          const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
          if (!same && wrong++ == 0)
            ADD_FAILURE() << "output " << i << ": got " << got[i] << ", want " << want[i];
          got_finite[i] = want_finite[i] = scale_finite[i] = 0;
        }
        EXPECT_GT(non_finite, 0u);
        EXPECT_EQ(wrong, 0u);
        expect_within_16bit_bound<T>(got_finite, want_finite, scale_finite,
                                     double(c.C) * c.R * c.S + f.window * f.window);
      }
    }
}

TEST(Conv2d16Bit, BfloatNonFiniteInputsReachOnlyTheirWindows) {
  run_non_finite_input_cases<kcnn::bfloat16>();
}

TEST(Conv2d16Bit, HalfNonFiniteInputsReachOnlyTheirWindows) {
  run_non_finite_input_cases<Kokkos::Experimental::half_t>();
}

/// find_best_algo on a 16-bit problem: every algorithm that refuses the type (or, for
/// TensorCoreGemm, the backend) is reported with its reason, the winner is one that runs
/// it (takes_16bit), and y holds its result.
template <class T>
void run_find_best_algo_case() {
  using Space = Kokkos::DefaultExecutionSpace;
  Space space;
  ConvCase c = conv_shape_families()[1];  // "prime"
  c.layout = kcnn::Layout::NHWC;
  c.bias = true;
  SCOPED_TRACE(type_name<T>());
  const RandomConvInputs<T, Space> in(c);  // the values as rounded to T: to_host
  const auto &x = in.x, &w = in.w;
  const auto& bias = in.bias;
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  kcnn::FindAlgoOptions options;
  options.repetitions = 1;
  options.reuse_cached = false;
  const kcnn::FindAlgoResult found =
      kcnn::find_best_algo(space, x, w, bias, y, c.params(), options);
  space.fence();
  if constexpr (!std::is_same_v<T, float>) {
    using kcnn::ConvAlgo;
    auto runs = [&](ConvAlgo a) { return takes_16bit<T, Space>(a, c, c.math); };
    EXPECT_TRUE(runs(found.algo)) << kcnn::to_string(found.algo);
    for (const auto& t : found.timings) {
      EXPECT_EQ(t.ok(), runs(t.algo)) << kcnn::to_string(t.algo) << ": " << t.error;
      if (!runs(t.algo) && t.algo != ConvAlgo::TensorCoreGemm) {
        // A geometry refusal (Winograd, Depthwise) names the algorithm and what it takes.
        EXPECT_NE(t.error.find(std::string("ConvAlgo::") + kcnn::to_string(t.algo) + " computes"),
                  std::string::npos)
            << t.error;
      }
    }
  }
  const auto xv = to_host(x), wv = to_host(w), bv = to_host(bias);
  expect_within_16bit_bound<T>(to_host(y), host_conv2d(c, xv, wv, bv), conv_scale(c, xv, wv, bv),
                               double(c.C) * c.R * c.S);
}

TEST(Conv2d16Bit, FindBestAlgoPicksWhatCanRunIt) {
  run_find_best_algo_case<kcnn::bfloat16>();
  run_find_best_algo_case<Kokkos::Experimental::half_t>();
  kcnn::clear_algo_cache();  // leave no winner behind for other tests
}

/// The fused pooling: conv -> pool in float, rounded once (max and average, overlapping
/// and padded windows; Tiled's register paths: 2x2 and 4x4 windows at their stride; its
/// input in several channel chunks: the partial sums stay in float).
template <class T>
void run_fused_cases() {
  const ConvCase many_channels{"many_channels", 2, 96, 20, 18, 9, 3, 3, 1, 1, 1, 1};
  const std::vector<FusedCase> fused = {
      {conv(conv_shape_families()[1], kcnn::Activation::ReLU, true),
       pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Max)},
      {conv(conv_shape_families()[19], kcnn::Activation::ReLU, true),
       pool(4, 4, 4, 4, 0, 0, kcnn::PoolMode::Average)},
      {conv(many_channels, kcnn::Activation::Identity, true),
       pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Average)},
      {conv(conv_shape_families()[4], kcnn::Activation::Tanh, true),
       pool(3, 3, 2, 2, 1, 1, kcnn::PoolMode::Average, false)},
      {conv(conv_shape_families()[18], kcnn::Activation::Identity, true),
       pool(3, 2, 1, 2, 1, 0, kcnn::PoolMode::Average, true, kcnn::Activation::Sigmoid)},
  };
  for (auto b : backends())
    with_backend(b, [&](const auto& space) {
      SCOPED_TRACE(backend_name(b));
      for (auto f : fused)
        for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
          f.conv.layout = layout;
          check_fused_conv<T>(
              space, f.conv, pool_of(f),
              {kcnn::ConvAlgo::Reference, kcnn::ConvAlgo::Auto, kcnn::ConvAlgo::Tiled,
               kcnn::ConvAlgo::ImplicitGemm, kcnn::ConvAlgo::Im2colGemm});
        }
    });
}

TEST(Conv2d16Bit, BfloatFusedPoolingRoundsOnce) {
  run_fused_cases<kcnn::bfloat16>();
}
TEST(Conv2d16Bit, HalfFusedPoolingRoundsOnce) {
  run_fused_cases<Kokkos::Experimental::half_t>();
}

/// pool2d_forward: Max of 16-bit values is exact (with no bias and no activation the
/// result equals the reference bit for bit); Average and the epilogue within the bound.
template <class T>
void run_pool_cases() {
  std::vector<PoolCase> cases;
  auto add = [&](PoolCase p, int N, int C, int H, int W, bool bias) {
    p.N = N, p.C = C, p.H = H, p.W = W, p.bias = bias;
    for (auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
      p.layout = layout;
      cases.push_back(p);
    }
  };
  add(pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Max), 2, 4, 28, 28, false);  // LeNet's, 2x2 kernel
  add(pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Max), 1, 3, 9, 7, false);
  add(pool(3, 3, 2, 2, 1, 1, kcnn::PoolMode::Max, true, kcnn::Activation::ReLU), 2, 5, 13, 11,
      true);
  add(pool(3, 2, 3, 1, 1, 0, kcnn::PoolMode::Average, false), 1, 7, 17, 10, false);
  add(pool(4, 4, 4, 4, 0, 0, kcnn::PoolMode::Average, true, kcnn::Activation::Tanh), 3, 16, 8, 8,
      true);
  for (auto b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      SCOPED_TRACE(backend_name(b));
      for (const auto& pc : cases) {
        SCOPED_TRACE(type_name<T>() + " pool " + std::to_string(pc.window_h) + "x" +
                     std::to_string(pc.window_w) + " " + kcnn::to_string(pc.layout));
        const auto x =
            make_tensor<T, Space>("x", pc.x_extents(), random_values(product(pc.x_extents()), 4));
        const auto bias = make_vector<T, Space>("bias", random_values(pc.bias ? pc.C : 0, 5));
        const auto xv = to_host(x), bv = to_host(bias);
        const auto ye = pc.y_extents();
        Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
        poison(y);
        auto params = pc.params();
        kcnn::pool2d_forward(space, x, bias, y, params);
        space.fence();
        const auto got = to_host(y), want = host_pool2d(pc, xv, bv);
        if (pc.mode == kcnn::PoolMode::Max && !pc.bias &&
            pc.activation == kcnn::Activation::Identity) {
          EXPECT_EQ(got, want) << "Max of 16-bit values must be exact";
          continue;
        }
        PoolCase magnitude = pc;
        magnitude.mode = kcnn::PoolMode::Max;
        magnitude.activation = kcnn::Activation::Identity;
        std::vector<double> xa = xv, ba = bv;
        for (double& e : xa)
          e = std::abs(e);
        for (double& e : ba)
          e = std::abs(e);
        expect_within_16bit_bound<T>(got, want, host_pool2d(magnitude, xa, ba),
                                     double(pc.window_h) * pc.window_w);
      }
    });
}

TEST(Pool2d16Bit, BfloatMaxExactAverageWithinTheRoundingBound) {
  run_pool_cases<kcnn::bfloat16>();
}
TEST(Pool2d16Bit, HalfMaxExactAverageWithinTheRoundingBound) {
  run_pool_cases<Kokkos::Experimental::half_t>();
}

/// im2col moves values: a T View unrolls to exactly the float unrolling of its values.
template <class T>
void run_im2col_cases() {
  using Matrix = Kokkos::View<T**, Kokkos::LayoutRight>;
  using FloatMatrix = Kokkos::View<float**, Kokkos::LayoutRight>;
  Kokkos::DefaultExecutionSpace space;
  using Space = Kokkos::DefaultExecutionSpace;
  for (const auto& c : cases_in_both_layouts()) {
    SCOPED_TRACE(type_name<T>() + " im2col " + c.name + " " + kcnn::to_string(c.layout));
    const auto x =
        make_tensor<T, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 7));
    const auto x_float = make_tensor<float, Space>("x_float", c.x_extents(), to_host(x));
    const std::int64_t K = std::int64_t(c.C) * c.R * c.S, J = std::int64_t(c.N) * c.P() * c.Q();
    const bool nhwc = c.nhwc();
    Matrix cols("cols", nhwc ? J : K, nhwc ? K : J);
    FloatMatrix cols_float("cols_float", nhwc ? J : K, nhwc ? K : J);
    poison(cols);
    kcnn::im2col(space, x, c.R, c.S, c.params(), cols);
    kcnn::im2col(space, x_float, c.R, c.S, c.params(), cols_float);
    space.fence();
    EXPECT_EQ(to_host(cols), to_host(cols_float));
  }
}

TEST(Im2col16Bit, BfloatUnrollsExactly) {
  run_im2col_cases<kcnn::bfloat16>();
}
TEST(Im2col16Bit, HalfUnrollsExactly) {
  run_im2col_cases<Kokkos::Experimental::half_t>();
}

/// col2im sums in float and rounds once: within the bound of the float fold of the same
/// values (the float col2im is checked against an independent fold in test_im2col.cpp),
/// with S the fold of the magnitudes; poisoned x, both layouts, both backends.
template <class T>
void run_col2im_cases() {
  for (auto b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space>;
      using FloatMatrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::memory_space>;
      SCOPED_TRACE(backend_name(b));
      for (const auto& c : cases_in_both_layouts()) {
        SCOPED_TRACE(type_name<T>() + " col2im " + c.name + " " + kcnn::to_string(c.layout));
        const std::int64_t K = std::int64_t(c.C) * c.R * c.S, J = std::int64_t(c.N) * c.P() * c.Q();
        const bool nhwc = c.nhwc();
        const std::size_t entries = std::size_t(K) * std::size_t(J);
        Matrix cols("cols", nhwc ? J : K, nhwc ? K : J);
        FloatMatrix cols_float("cols_float", nhwc ? J : K, nhwc ? K : J);
        FloatMatrix cols_magnitude("cols_magnitude", nhwc ? J : K, nhwc ? K : J);
        {
          const auto v = random_values(entries, 8);
          auto h = Kokkos::create_mirror_view(cols);
          auto hf = Kokkos::create_mirror_view(cols_float);
          auto hm = Kokkos::create_mirror_view(cols_magnitude);
          for (std::size_t i = 0; i < entries; ++i) {
            h.data()[i] = T(static_cast<float>(v[i]));
            hf.data()[i] = static_cast<float>(h.data()[i]);  // the same rounded values
            hm.data()[i] = std::abs(hf.data()[i]);
          }
          Kokkos::deep_copy(cols, h);
          Kokkos::deep_copy(cols_float, hf);
          Kokkos::deep_copy(cols_magnitude, hm);
        }
        const auto xe = c.x_extents();
        Tensor4<T, Space> x("x", xe[0], xe[1], xe[2], xe[3]);
        Tensor4<float, Space> x_float("x_float", xe[0], xe[1], xe[2], xe[3]);
        Tensor4<float, Space> x_magnitude("x_magnitude", xe[0], xe[1], xe[2], xe[3]);
        poison(x);
        kcnn::col2im(space, cols, c.R, c.S, c.params(), x);
        kcnn::col2im(space, cols_float, c.R, c.S, c.params(), x_float);
        kcnn::col2im(space, cols_magnitude, c.R, c.S, c.params(), x_magnitude);
        space.fence();
        expect_within_16bit_bound<T>(to_host(x), to_host(x_float), to_host(x_magnitude),
                                     double(c.R) * c.S);
      }
    });
}

TEST(Col2im16Bit, BfloatSumsInFloatRoundsOnce) {
  run_col2im_cases<kcnn::bfloat16>();
}
TEST(Col2im16Bit, HalfSumsInFloatRoundsOnce) {
  run_col2im_cases<Kokkos::Experimental::half_t>();
}

/// activation_backward: dx = dy * act'(y) in float, rounded once.
template <class T>
void run_activation_backward_cases() {
  using Space = Kokkos::DefaultExecutionSpace;
  Space space;
  const ConvCase shape{"act", 2, 3, 7, 5, 1, 1, 1};
  for (auto act : {kcnn::Activation::Identity, kcnn::Activation::ReLU, kcnn::Activation::Sigmoid,
                   kcnn::Activation::Tanh}) {
    SCOPED_TRACE(type_name<T>() + " " + kcnn::to_string(act));
    std::vector<double> yv = random_values(product(shape.x_extents()), 8);
    for (double& v : yv)  // outputs the activation can produce
      v = act == kcnn::Activation::Sigmoid ? 0.5 + 0.5 * v
          : act == kcnn::Activation::ReLU  ? std::max(0.0, v)
                                           : v;
    const auto y = make_tensor<T, Space>("y", shape.x_extents(), yv);
    const auto dy = make_tensor<T, Space>("dy", shape.x_extents(), random_values(yv.size(), 9));
    const auto ye = shape.x_extents();
    Tensor4<T, Space> dx("dx", ye[0], ye[1], ye[2], ye[3]);
    poison(dx);
    kcnn::activation_backward(space, act, y, dy, dx);
    space.fence();
    const auto yr = to_host(y), dyr = to_host(dy);
    std::vector<double> want(yr.size()), scale(yr.size());
    for (std::size_t i = 0; i < yr.size(); ++i) {
      const double slope = act == kcnn::Activation::ReLU      ? (yr[i] > 0 ? 1.0 : 0.0)
                           : act == kcnn::Activation::Sigmoid ? yr[i] * (1 - yr[i])
                           : act == kcnn::Activation::Tanh    ? 1 - yr[i] * yr[i]
                                                              : 1.0;
      want[i] = dyr[i] * slope;
      scale[i] = std::abs(dyr[i]) * (1 + std::abs(yr[i]) + yr[i] * yr[i]);
    }
    expect_within_16bit_bound<T>(to_host(dx), want, scale, 2);
  }
}

TEST(ActivationBackward16Bit, BfloatWithinTheRoundingBound) {
  run_activation_backward_cases<kcnn::bfloat16>();
}
TEST(ActivationBackward16Bit, HalfWithinTheRoundingBound) {
  run_activation_backward_cases<Kokkos::Experimental::half_t>();
}

}  // namespace
