// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Algorithm selection: the list of implemented algorithms against the dispatch, the Auto
// heuristic's rules, find_best_algo (result, cache, the y it leaves), Auto consulting
// the cache, and the cache file (round trip; corrupt, foreign and truncated files).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::ConvAlgo;
using kcnn::Layout;
using kcnn::Impl::AlgoSet;
using kcnn::Impl::Conv2dProblem;
using kcnn::Impl::Target;

/// A problem described directly, for the heuristic (which needs no Views).
Conv2dProblem problem(int N, int C, int H, int W, int M, int R, int S, int stride = 1, int pad = 0,
                      Layout layout = Layout::NCHW) {
  Conv2dProblem pb;
  pb.N = N, pb.C = C, pb.H = H, pb.W = W, pb.M = M, pb.R = R, pb.S = S;
  pb.stride_h = pb.stride_w = stride;
  pb.pad_h = pb.pad_w = pad;
  pb.P = kcnn::Impl::conv_output_extent(H, R, stride, pad, 1);
  pb.Q = kcnn::Impl::conv_output_extent(W, S, stride, pad, 1);
  pb.layout = layout;
  return pb;
}

/// The same problem with dilation `d` in both directions.
Conv2dProblem dilated(Conv2dProblem pb, int d) {
  pb.dilation_h = pb.dilation_w = d;
  pb.P = kcnn::Impl::conv_output_extent(pb.H, pb.R, pb.stride_h, pb.pad_h, d);
  pb.Q = kcnn::Impl::conv_output_extent(pb.W, pb.S, pb.stride_w, pb.pad_w, d);
  return pb;
}

/// The same problem with a fused `window` x `window` max pooling at stride `window`.
Conv2dProblem pooled(Conv2dProblem pb, int window) {
  pb.has_pool = true;
  pb.pool.window_h = pb.pool.window_w = pb.pool.stride_h = pb.pool.stride_w = window;
  pb.pool.layout = pb.layout;
  pb.P_pooled = (pb.P - window) / window + 1;
  pb.Q_pooled = (pb.Q - window) / window + 1;
  return pb;
}

constexpr AlgoSet kEverything{kcnn::Impl::implemented_conv_algos};

/// Every concrete ConvAlgo enumerator (found by its to_string), registered or not.
std::vector<ConvAlgo> every_conv_algo_enumerator() {
  std::vector<ConvAlgo> all;
  for (unsigned i = 0; i < 32; ++i) {
    const auto a = static_cast<ConvAlgo>(i);
    if (a != ConvAlgo::Auto && std::string(kcnn::to_string(a)) != "unknown-algo") all.push_back(a);
  }
  return all;
}

/// The heuristic on `target` for float elements and a build for host ISA `isa` (the
/// rules' expectations below name it: the tests do not depend on the machine's ISA).
kcnn::Impl::AlgoChoice select_for(
    const Conv2dProblem& pb, Target target, AlgoSet available,
    kcnn::Impl::HostIsa isa = kcnn::Impl::HostIsa::Generic,
    kcnn::Impl::ElementKind element = kcnn::Impl::ElementKind::Float32) {
  kcnn::Impl::AutoContext ctx;
  ctx.target = target;
  ctx.element = element;
  ctx.host_isa = isa;
  return kcnn::Impl::select_conv2d_algo(pb, ctx, available);
}

/// A problem, the algorithm the heuristic must pick for it and the rule that picks it.
struct RuleExpectation {
  Conv2dProblem pb;
  ConvAlgo algo;
  std::string rule;
};

/// Each problem's pick and the rule that made it, on `target` for a build for `isa` and
/// tensors of `element`.
template <std::size_t N>
void expect_rules(const RuleExpectation (&table)[N], Target target, kcnn::Impl::HostIsa isa,
                  kcnn::Impl::ElementKind element) {
  for (const RuleExpectation& e : table) {
    const auto choice = select_for(e.pb, target, kEverything, isa, element);
    EXPECT_EQ(choice.algo, e.algo) << "rule " << choice.reason << ", expected " << e.rule;
    EXPECT_EQ(std::string(choice.reason), e.rule);
  }
}

// ---------------------------------------------------------------------------
// The list of implemented algorithms
// ---------------------------------------------------------------------------

// An algorithm is in implemented_conv_algos exactly when conv2d_forward runs it, and
// every ConvAlgo enumerator is registered: an enumerator added without its registry
// line fails here.
TEST(AlgoSelect, ImplementedListMatchesDispatch) {
  using Space = Kokkos::DefaultExecutionSpace;
  const ConvCase c{"small", 2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1};
  auto x = make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 1));
  auto w = make_tensor<float, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 2));
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  const auto list = kcnn::implemented_conv_algos();
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front(), ConvAlgo::Reference);
  for (ConvAlgo algo : every_conv_algo_enumerator()) {
    SCOPED_TRACE(kcnn::to_string(algo));
    auto params = c.params();
    params.algo = algo;
    // Registered: it runs, or refuses this problem for a reason of its own (e.g.
    // TensorCoreGemm without tensor cores); unregistered: "not implemented".
    bool runs = true;
    try {
      kcnn::conv2d_forward(Space(), x, w, y, params);
      Space().fence();
    } catch (const kcnn::Error& e) {
      runs = std::string(e.what()).find("not implemented") == std::string::npos;
      if (runs) {
        EXPECT_FALSE((algo_serves<float, Space>(algo, c, params.math))) << e.what();
      }
    }
    EXPECT_EQ(runs, kcnn::Impl::is_implemented(algo));
    EXPECT_EQ(runs, std::count(list.begin(), list.end(), algo) == 1);
    EXPECT_TRUE(runs) << "ConvAlgo::" << kcnn::to_string(algo) << " is not in the registry";
  }
  EXPECT_EQ(list.size(), every_conv_algo_enumerator().size());
  EXPECT_FALSE(kcnn::Impl::is_implemented(ConvAlgo::Auto));
}

// ---------------------------------------------------------------------------
// The heuristic
// ---------------------------------------------------------------------------

std::vector<Conv2dProblem> heuristic_problems() {
  return {
      problem(10000, 1, 86, 86, 4, 7, 7),                     // LeNet C1
      problem(10000, 4, 40, 40, 16, 7, 7, 2),                 // LeNet C3, stride 2
      problem(64, 64, 56, 56, 64, 3, 3, 1, 1),                // ResNet 3x3
      problem(32, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC),  // ResNet 3x3, NHWC
      problem(64, 256, 56, 56, 64, 1, 1),                     // pointwise
      problem(8, 64, 56, 56, 256, 1, 1, 2),                   // 1x1 with stride 2
      problem(128, 3, 227, 227, 96, 11, 11, 4),               // AlexNet conv1
      problem(3, 5, 13, 11, 7, 3, 3, 1, 0, Layout::NHWC),     // primes
      problem(1, 1, 1, 1, 1, 1, 1),                           // trivial
  };
}

TEST(AlgoSelect, HeuristicPicksReferenceWhenItIsAllThereIs) {
  for (const auto& pb : heuristic_problems())
    for (Target t : {Target::Host, Target::Device})
      EXPECT_EQ(select_for(pb, t, AlgoSet{ConvAlgo::Reference}).algo, ConvAlgo::Reference);
}

TEST(AlgoSelect, HeuristicRulesWithEveryAlgorithm) {
  struct Expect {
    Conv2dProblem pb;
    Target target;
    ConvAlgo algo;
    std::string rule;
  };
  const Expect table[] = {
      // GPUs
      {problem(10000, 1, 86, 86, 4, 7, 7), Target::Device, ConvAlgo::Tiled, "device_few_filters"},
      {problem(10000, 1, 86, 86, 4, 7, 7, 2), Target::Device, ConvAlgo::Tiled,
       "device_few_filters"},
      {problem(10000, 4, 40, 40, 16, 7, 7), Target::Device, ConvAlgo::Tiled,
       "device_unit_stride_few_filters"},
      {pooled(problem(10000, 4, 40, 40, 16, 7, 7), 4), Target::Device, ConvAlgo::Tiled,
       "device_fused_pool_few_filters"},
      {pooled(problem(64, 64, 56, 56, 64, 3, 3, 1, 1), 2), Target::Device, ConvAlgo::ImplicitGemm,
       "device_default"},
      {problem(10000, 4, 40, 40, 16, 7, 7, 1, 0, Layout::NHWC), Target::Device, ConvAlgo::Tiled,
       "device_unit_stride_few_filters"},
      {problem(10000, 4, 40, 40, 16, 7, 7, 2), Target::Device, ConvAlgo::ImplicitGemm,
       "device_default"},
      {problem(64, 64, 56, 56, 64, 3, 3, 1, 1), Target::Device, ConvAlgo::Winograd,
       "device_winograd"},
      {problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), Target::Device, ConvAlgo::Winograd,
       "device_winograd"},
      {problem(64, 64, 56, 56, 16, 3, 3, 1, 1), Target::Device, ConvAlgo::Tiled,
       "device_unit_stride_few_filters"},
      {problem(64, 64, 56, 56, 16, 3, 3, 1, 1, Layout::NHWC), Target::Device, ConvAlgo::Tiled,
       "device_unit_stride_few_filters"},
      {problem(64, 16, 56, 56, 64, 5, 5, 1, 2, Layout::NHWC), Target::Device, ConvAlgo::Tiled,
       "device_nhwc_direct"},
      {problem(61, 3, 127, 131, 29, 5, 5, 1, 2, Layout::NHWC), Target::Device, ConvAlgo::Tiled,
       "device_nhwc_direct"},
      {problem(64, 128, 28, 28, 128, 3, 3, 1, 1), Target::Device, ConvAlgo::Winograd,
       "device_winograd_long_reduction"},
      {problem(64, 128, 28, 28, 128, 3, 3, 1, 1, Layout::NHWC), Target::Device, ConvAlgo::Winograd,
       "device_winograd_long_reduction"},
      {problem(32, 512, 7, 7, 512, 3, 3, 1, 1), Target::Device, ConvAlgo::Winograd,
       "device_winograd_long_reduction"},
      {problem(8, 512, 7, 7, 512, 3, 3, 1, 1), Target::Device, ConvAlgo::Im2colGemm,
       "device_wide_gemm"},
      {problem(64, 128, 28, 28, 128, 3, 3, 2, 1), Target::Device, ConvAlgo::Im2colGemm,
       "device_wide_gemm"},
      {problem(64, 256, 56, 56, 64, 1, 1), Target::Device, ConvAlgo::ImplicitGemm,
       "device_default"},
      {problem(64, 256, 56, 56, 64, 1, 1, 1, 0, Layout::NHWC), Target::Device, ConvAlgo::Im2colGemm,
       "device_pointwise_nhwc"},
      {problem(64, 64, 56, 56, 256, 1, 1, 1, 0, Layout::NHWC), Target::Device,
       ConvAlgo::ImplicitGemm, "device_default"},
      {problem(128, 3, 227, 227, 96, 11, 11, 4), Target::Device, ConvAlgo::ImplicitGemm,
       "device_default"},
      {problem(61, 3, 127, 131, 29, 5, 5, 1, 2), Target::Device, ConvAlgo::Tiled,
       "device_unit_stride_nchw_mid_filters"},
      {problem(64, 64, 56, 56, 65, 3, 3, 1, 1), Target::Device, ConvAlgo::ImplicitGemm,
       "device_default"},
      {problem(61, 17, 61, 59, 31, 3, 3, 2, 1, Layout::NHWC), Target::Device,
       ConvAlgo::ImplicitGemm, "device_default"},
      // CPUs
      {problem(64, 256, 56, 56, 64, 1, 1), Target::Host, ConvAlgo::Im2colGemm, "host_pointwise"},
      {problem(8, 64, 56, 56, 256, 1, 1), Target::Host, ConvAlgo::Im2colGemm, "host_pointwise"},
      {problem(1000, 1, 86, 86, 4, 7, 7), Target::Host, ConvAlgo::Tiled, "host_short_reduction"},
      {problem(1000, 4, 40, 40, 16, 7, 7), Target::Host, ConvAlgo::Tiled, "host_short_reduction"},
      {problem(1000, 1, 86, 86, 4, 7, 7, 2), Target::Host, ConvAlgo::ImplicitGemm,
       "host_nchw_gemm"},
      {problem(1000, 1, 86, 86, 4, 7, 7, 2, 0, Layout::NHWC), Target::Host, ConvAlgo::Tiled,
       "host_nhwc_strided_tiny_reduction"},
      {problem(1000, 4, 40, 40, 16, 7, 7, 2), Target::Host, ConvAlgo::ImplicitGemm,
       "host_nchw_gemm"},
      {problem(1000, 4, 40, 40, 16, 7, 7, 2, 0, Layout::NHWC), Target::Host, ConvAlgo::Im2colGemm,
       "host_long_reduction"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), Target::Host, ConvAlgo::Im2colGemm,
       "host_long_reduction"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1), Target::Host, ConvAlgo::ImplicitGemm,
       "host_nchw_gemm"},
  };
  for (const auto& e : table) {
    const auto choice = select_for(e.pb, e.target, kEverything);
    EXPECT_EQ(choice.algo, e.algo) << "rule " << choice.reason << ", expected " << e.rule;
    EXPECT_EQ(std::string(choice.reason), e.rule);
  }
  // Preferences fall through to the next algorithm the build has.
  const auto lenet_c1 = problem(10000, 1, 86, 86, 4, 7, 7);
  EXPECT_EQ(select_for(lenet_c1, Target::Device,
                       AlgoSet{ConvAlgo::Reference, ConvAlgo::Im2colGemm, ConvAlgo::ImplicitGemm})
                .algo,
            ConvAlgo::ImplicitGemm);
  const auto pointwise = problem(64, 256, 56, 56, 64, 1, 1);
  EXPECT_EQ(select_for(pointwise, Target::Host, AlgoSet{ConvAlgo::Reference, ConvAlgo::Tiled}).algo,
            ConvAlgo::Tiled);
}

// 16-bit tensors on GPUs (TUNING.md, "GPU, 16-bit tensors"): TensorCoreGemm's
// few-channel kernel for layers of at most 4 channels and 16 filters with 1024+
// multiply-adds per pixel (LeNet C3), Tiled for the other layers of up to 16 filters
// (LeNet C1), Im2colGemm (cublasGemmEx) from 4096 taps, TensorCoreGemm in between; where
// TensorCoreGemm is missing, Im2colGemm (few channels: Tiled).
TEST(AlgoSelect, SixteenBitRules) {
  using kcnn::Impl::ElementKind;
  using kcnn::Impl::HostIsa;
  const auto c64 = problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC);
  const auto c256 = problem(64, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NCHW);  // K = 2304
  const auto c512 = problem(32, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC);    // K = 4608
  const auto lenet_c1 = problem(10000, 1, 86, 86, 4, 7, 7, 1, 0, Layout::NCHW);
  const auto lenet_c3 = problem(10000, 4, 40, 40, 16, 7, 7, 1, 0, Layout::NHWC);
  const auto m17 = problem(8, 4, 40, 40, 17, 7, 7, 1, 0, Layout::NHWC);
  for (ElementKind e : {ElementKind::Float16, ElementKind::BFloat16}) {
    auto pick = [&](const Conv2dProblem& pb, AlgoSet set = kEverything) {
      return select_for(pb, Target::Device, set, HostIsa::Generic, e);
    };
    for (const auto& pb : {c64, c256, m17}) {
      EXPECT_EQ(pick(pb).algo, ConvAlgo::TensorCoreGemm);
      EXPECT_STREQ(pick(pb).reason, "device_16bit_tensor_cores");
      EXPECT_EQ(pick(pb, AlgoSet{ConvAlgo::Reference, ConvAlgo::Tiled, ConvAlgo::Im2colGemm}).algo,
                ConvAlgo::Im2colGemm);
    }
    EXPECT_EQ(pick(lenet_c1).algo, ConvAlgo::TensorCoreGemm);
    EXPECT_STREQ(pick(lenet_c1).reason, "device_16bit_single_channel_tensor_cores");
    EXPECT_EQ(pick(lenet_c1, AlgoSet{ConvAlgo::Reference, ConvAlgo::Tiled}).algo, ConvAlgo::Tiled);
    // One channel, filters wider than 9: the few-channel kernel, below its threshold.
    EXPECT_STREQ(pick(problem(10000, 1, 86, 86, 4, 7, 11, 1, 0, Layout::NCHW)).reason,
                 "device_16bit_few_filters");
    EXPECT_EQ(pick(lenet_c3).algo, ConvAlgo::TensorCoreGemm);
    EXPECT_STREQ(pick(lenet_c3).reason, "device_16bit_few_channels_tensor_cores");
    EXPECT_EQ(pick(lenet_c3, AlgoSet{ConvAlgo::Reference, ConvAlgo::Tiled}).algo, ConvAlgo::Tiled);
    // Strided: not the few-channel kernel's; 17 filters: past it.
    EXPECT_STREQ(pick(problem(10000, 4, 40, 40, 16, 7, 7, 2, 0, Layout::NHWC)).reason,
                 "device_16bit_few_filters");
    // CPUs: NCHW layers past the short reductions go to Im2colGemm's sgemm on float
    // copies; the short ones (LeNet) stay with Tiled, as in float.
    const auto host = [&](const Conv2dProblem& pb) {
      return select_for(pb, Target::Host, kEverything, HostIsa::Generic, e);
    };
    EXPECT_EQ(host(problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NCHW)).algo,
              ConvAlgo::Im2colGemm);
    EXPECT_STREQ(host(c256).reason, "host_16bit_nchw_gemm");
    EXPECT_EQ(host(lenet_c1).algo, ConvAlgo::Tiled);
    // Long reductions: Im2colGemm, but NHWC channel runs (C a multiple of 32) stay with
    // TensorCoreGemm.
    EXPECT_EQ(pick(c512).algo, ConvAlgo::TensorCoreGemm);
    EXPECT_STREQ(pick(c512).reason, "device_16bit_tensor_cores");
    const auto c512_nchw = problem(32, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NCHW);
    const auto c520_nhwc = problem(32, 520, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC);
    for (const auto& pb : {c512_nchw, c520_nhwc}) {
      EXPECT_EQ(pick(pb).algo, ConvAlgo::Im2colGemm);
      EXPECT_STREQ(pick(pb).reason, "device_16bit_long_reduction");
      EXPECT_EQ(pick(pb, AlgoSet{ConvAlgo::Reference, ConvAlgo::TensorCoreGemm}).algo,
                ConvAlgo::TensorCoreGemm);
    }
  }
}

// Under TF32 / TF32x3 on GPUs: TensorCoreGemm for layers with 64+ filters (NHWC under TF32
// also 24+ filters with 128+ taps) and reductions up to 2304; elsewhere the strict rules
// (Im2colGemm's cuBLAS then runs TF32). Double: DMMA from 32 filters (NHWC also from 100
// taps) up to 1152 taps, both layouts (NCHW on a channels-last copy). On the host the math
// mode changes nothing. (TUNING.md, "GPU, math modes".)
TEST(AlgoSelect, MathModeRules) {
  using kcnn::MathMode;
  auto with_math = [](Conv2dProblem pb, MathMode m) {
    pb.math = m;
    return pb;
  };
  const auto c64 = problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC);
  const auto c128 = problem(64, 128, 28, 28, 128, 3, 3, 1, 1, Layout::NHWC);
  const auto c256 = problem(64, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NHWC);
  const auto c64_nchw = problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NCHW);
  const auto c128_nchw = problem(64, 128, 28, 28, 128, 3, 3, 1, 1, Layout::NCHW);
  const auto c256_nchw = problem(64, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NCHW);
  const auto c512 = problem(32, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC);
  const auto c512_nchw = problem(32, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NCHW);
  const auto lenet_c3 = problem(10000, 4, 40, 40, 16, 7, 7, 1, 0, Layout::NHWC);
  const auto prime_s2 = problem(61, 17, 61, 59, 31, 3, 3, 2, 1, Layout::NHWC);    // K = 153
  const auto c3_prime = problem(61, 3, 47, 53, 29, 5, 5, 1, 2, Layout::NHWC);     // K = 75
  const auto pointwise = problem(64, 64, 56, 56, 256, 1, 1, 1, 0, Layout::NHWC);  // K = 64
  auto picks = [&](Conv2dProblem pb, MathMode m) {
    return select_for(with_math(pb, m), Target::Device, kEverything).algo;
  };
  for (MathMode m : {MathMode::TF32, MathMode::TF32x3}) {
    for (const auto& pb : {c64, c128, c256, c64_nchw, c128_nchw, c256_nchw})
      EXPECT_EQ(picks(pb, m), ConvAlgo::TensorCoreGemm);
    EXPECT_NE(picks(c512_nchw, m), ConvAlgo::TensorCoreGemm);
    EXPECT_NE(picks(lenet_c3, m), ConvAlgo::TensorCoreGemm);
    EXPECT_NE(picks(c3_prime, m), ConvAlgo::TensorCoreGemm);
    EXPECT_EQ(select_for(with_math(c64, m), Target::Host, kEverything).algo,
              select_for(c64, Target::Host, kEverything).algo);
  }
  // Beyond 2304 taps cuBLAS on the unrolled matrix (TF32 under TF32) leads; under TF32x3
  // (cuBLAS strict) NHWC keeps the tensor cores.
  EXPECT_EQ(picks(c512, MathMode::TF32), ConvAlgo::Im2colGemm);
  EXPECT_EQ(picks(c512, MathMode::TF32x3), ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(picks(c512_nchw, MathMode::TF32), ConvAlgo::Im2colGemm);
  // TF32 also from 24 filters with 128 taps in NHWC (16 at stride > 1: LeNet C3); TF32x3
  // not.
  const auto lenet_c3_s2 = problem(10000, 4, 40, 40, 16, 7, 7, 2, 0, Layout::NHWC);
  EXPECT_EQ(picks(lenet_c3_s2, MathMode::TF32), ConvAlgo::TensorCoreGemm);
  EXPECT_NE(picks(lenet_c3_s2, MathMode::TF32x3), ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(picks(pointwise, MathMode::TF32), ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(picks(prime_s2, MathMode::TF32), ConvAlgo::TensorCoreGemm);
  EXPECT_NE(picks(prime_s2, MathMode::TF32x3), ConvAlgo::TensorCoreGemm);
  Conv2dProblem prime_s2_nchw = prime_s2;
  prime_s2_nchw.layout = Layout::NCHW;
  EXPECT_NE(picks(prime_s2_nchw, MathMode::TF32), ConvAlgo::TensorCoreGemm);
  // Strict float never picks it; without it in the build the strict rules answer.
  EXPECT_NE(select_for(c64, Target::Device, kEverything).algo, ConvAlgo::TensorCoreGemm);
  const AlgoSet without =
      AlgoSet{ConvAlgo::Reference, ConvAlgo::Tiled, ConvAlgo::Im2colGemm, ConvAlgo::ImplicitGemm};
  EXPECT_EQ(select_for(with_math(c64, MathMode::TF32), Target::Device, without).algo,
            select_for(c64, Target::Device, without).algo);
  // Double: up to 1152 taps in both layouts.
  const auto dbl = kcnn::Impl::ElementKind::Float64;
  const auto generic = kcnn::Impl::HostIsa::Generic;
  EXPECT_EQ(select_for(c64, Target::Device, kEverything, generic, dbl).algo,
            ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(select_for(c128, Target::Device, kEverything, generic, dbl).algo,
            ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(select_for(c256, Target::Device, kEverything, generic, dbl).algo, ConvAlgo::Im2colGemm);
  EXPECT_EQ(select_for(c64_nchw, Target::Device, kEverything, generic, dbl).algo,
            ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(select_for(c128_nchw, Target::Device, kEverything, generic, dbl).algo,
            ConvAlgo::TensorCoreGemm);
  EXPECT_EQ(select_for(c256_nchw, Target::Device, kEverything, generic, dbl).algo,
            ConvAlgo::Im2colGemm);
}

// Winograd's fused GPU kernel (TUNING.md, "GPU, float: Winograd"): float 3x3 stride-1
// undilated unpooled layers outside TF32 math, from 16 channels with 64+ filters filling
// two thirds of their blocks of 64 (or 32-63 filters with 64+ channels), with 64+ teams
// of 64 filters x 32 2x2 tiles or at most 64 channels.
TEST(AlgoSelect, DeviceWinogradRule) {
  using kcnn::MathMode;
  auto pick = [](Conv2dProblem pb) { return select_for(pb, Target::Device, kEverything); };
  for (Layout l : {Layout::NCHW, Layout::NHWC}) {
    SCOPED_TRACE(kcnn::to_string(l));
    for (const auto& pb : {problem(64, 16, 56, 56, 64, 3, 3, 1, 1, l),  // C at its minimum
                           problem(64, 64, 56, 56, 32, 3, 3, 1, 1, l),  // 32 filters, 64 ch
                           problem(64, 64, 56, 56, 96, 3, 3, 1, 1, l),  // blocks 3/4 full
                           problem(1, 64, 56, 56, 64, 3, 3, 1, 1, l),   // 25 teams, 64 ch
                           problem(3, 17, 29, 31, 89, 3, 3, 1, 0, l)})  // primes; 89 of 128
      EXPECT_EQ(pick(pb).algo, ConvAlgo::Winograd) << pb.N << " " << pb.C << " " << pb.M;
    for (const auto& pb : {problem(64, 8, 56, 56, 64, 3, 3, 1, 1, l),    // too few channels
                           problem(64, 32, 56, 56, 32, 3, 3, 1, 1, l),   // 32 filters, 32 ch
                           problem(64, 64, 56, 56, 65, 3, 3, 1, 1, l),   // blocks half empty
                           problem(1, 256, 14, 14, 256, 3, 3, 1, 1, l),  // 8 teams, 256 ch
                           problem(64, 64, 56, 56, 64, 3, 3, 2, 1, l),   // stride 2
                           problem(64, 64, 56, 56, 64, 5, 5, 1, 2, l)})  // 5x5
      EXPECT_NE(pick(pb).algo, ConvAlgo::Winograd) << pb.N << " " << pb.C << " " << pb.M;
    auto c64 = problem(64, 64, 56, 56, 64, 3, 3, 1, 1, l);
    EXPECT_NE(pick(pooled(c64, 2)).algo, ConvAlgo::Winograd);
    auto tf32 = problem(8, 64, 56, 56, 32, 3, 3, 1, 1, l);  // TF32: cuBLAS or the tensor cores
    tf32.math = MathMode::TF32;
    EXPECT_NE(pick(tf32).algo, ConvAlgo::Winograd);
    // Without Winograd (or where it cannot run) the rule's next choices: Tiled here,
    // cuBLAS on the long reductions.
    const AlgoSet without{ConvAlgo::Reference, ConvAlgo::Tiled, ConvAlgo::Im2colGemm,
                          ConvAlgo::ImplicitGemm};
    EXPECT_EQ(select_for(c64, Target::Device, without).algo, ConvAlgo::Tiled);
    EXPECT_EQ(
        select_for(problem(64, 256, 14, 14, 256, 3, 3, 1, 1, l), Target::Device, without).algo,
        ConvAlgo::Im2colGemm);
    // Other element types keep their rules; the host never takes this one.
    EXPECT_NE(select_for(c64, Target::Device, kEverything, kcnn::Impl::HostIsa::Generic,
                         kcnn::Impl::ElementKind::Float64)
                  .algo,
              ConvAlgo::Winograd);
    EXPECT_STRNE(select_for(c64, Target::Host, kEverything).reason, "device_winograd");
  }
}

// Whatever the build implements, the heuristic only picks from it.
TEST(AlgoSelect, HeuristicOnlyPicksAvailableAlgorithms) {
  std::vector<ConvAlgo> others;  // every registered algorithm but Reference
  for (ConvAlgo a : kcnn::Impl::implemented_conv_algos)
    if (a != ConvAlgo::Reference) others.push_back(a);
  for (unsigned mask = 0; mask < (1u << others.size()); ++mask) {
    AlgoSet set{ConvAlgo::Reference};
    for (unsigned i = 0; i < others.size(); ++i)
      if (mask & (1u << i)) set = set.with(others[i]);
    for (const auto& pb : heuristic_problems())
      for (Target t : {Target::Host, Target::Device}) {
        const ConvAlgo got = select_for(pb, t, set).algo;
        EXPECT_TRUE(set.contains(got)) << kcnn::to_string(got) << " with mask " << mask;
      }
  }
}

// The double rules on GPUs and the AVX-512 host rule (TUNING.md).
TEST(AlgoSelect, HeuristicRulesByElementTypeAndHostIsa) {
  using kcnn::Impl::ElementKind;
  using kcnn::Impl::HostIsa;
  const auto f64 = ElementKind::Float64;
  using Expect = RuleExpectation;
  const Expect device_double[] = {
      {problem(10000, 1, 86, 86, 4, 7, 7), ConvAlgo::Tiled, "device_double_few_filters"},
      {problem(10000, 4, 40, 40, 16, 7, 7, 2), ConvAlgo::Tiled, "device_double_few_filters"},
      {problem(10000, 1, 86, 86, 4, 7, 7, 2, 0, Layout::NHWC), ConvAlgo::Tiled,
       "device_double_few_filters"},
      {problem(10000, 4, 40, 40, 16, 7, 7, 1, 0, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(10000, 4, 40, 40, 16, 7, 7, 2, 0, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 64, 56, 56, 64, 3, 3, 1, 1), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 128, 28, 28, 128, 3, 3, 1, 1), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 256, 14, 14, 256, 3, 3, 1, 1), ConvAlgo::Im2colGemm, "device_double_wide_gemm"},
      {problem(64, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Im2colGemm,
       "device_double_wide_gemm"},
      {problem(64, 256, 56, 56, 64, 1, 1), ConvAlgo::TensorCoreGemm, "device_double_tensor_cores"},
      {problem(64, 256, 56, 56, 64, 1, 1, 1, 0, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 64, 56, 56, 256, 1, 1), ConvAlgo::TensorCoreGemm, "device_double_tensor_cores"},
      {problem(64, 1024, 14, 14, 256, 1, 1), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(64, 2048, 7, 7, 512, 1, 1), ConvAlgo::ImplicitGemm, "device_double_pointwise_nchw"},
      {problem(128, 3, 227, 227, 96, 11, 11, 4, 0, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(61, 17, 61, 59, 31, 3, 3, 2, 1, Layout::NHWC), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(61, 3, 127, 131, 29, 5, 5, 1, 2, Layout::NHWC), ConvAlgo::ImplicitGemm,
       "device_double_default"},
      {dilated(problem(61, 13, 47, 53, 23, 3, 3, 1, 2), 2), ConvAlgo::Tiled,
       "device_double_nchw_direct"},
      {dilated(problem(61, 13, 47, 53, 23, 3, 3, 1, 2, Layout::NHWC), 2), ConvAlgo::TensorCoreGemm,
       "device_double_tensor_cores"},
      {problem(61, 17, 61, 59, 31, 3, 3, 2, 1), ConvAlgo::ImplicitGemm, "device_double_default"},
  };
  expect_rules(device_double, Target::Device, HostIsa::Generic, f64);
  // double on CPUs.
  const Expect host_double[] = {
      {problem(1000, 1, 86, 86, 4, 7, 7), ConvAlgo::Tiled, "host_double_tiny_reduction"},
      {problem(1000, 4, 40, 40, 16, 7, 7), ConvAlgo::ImplicitGemm, "host_double_default"},
      {problem(1000, 4, 40, 40, 16, 7, 7, 1, 0, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_double_nhwc_short_reduction"},
      {problem(1000, 1, 86, 86, 4, 7, 7, 2, 0, Layout::NHWC), ConvAlgo::Tiled,
       "host_double_nhwc_few_filters"},
      {problem(7, 17, 61, 59, 31, 3, 3, 2, 1, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_double_nhwc_strided"},
      {problem(7, 3, 127, 131, 29, 5, 5, 1, 2, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_double_nhwc_short_reduction"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_double_nhwc_short_reduction"},
      {problem(8, 128, 28, 28, 128, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::ImplicitGemm,
       "host_double_default"},
      {dilated(problem(7, 13, 47, 53, 23, 3, 3, 1, 2, Layout::NHWC), 2), ConvAlgo::ImplicitGemm,
       "host_double_default"},
      {problem(7, 3, 127, 131, 29, 5, 5, 1, 2), ConvAlgo::Im2colGemm,
       "host_double_nchw_short_reduction"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1), ConvAlgo::ImplicitGemm, "host_double_default"},
      {problem(8, 256, 56, 56, 64, 1, 1), ConvAlgo::Im2colGemm, "host_pointwise"},
  };
  expect_rules(host_double, Target::Host, HostIsa::Generic, f64);
  // ResNet's NCHW 3x3 layer on a CPU: Winograd on AVX-512 builds, with AMX (Intel Xeon)
  // or without (AMD Zen 5, session 42); the generic rules' ImplicitGemm elsewhere.
  const auto resnet = problem(8, 64, 56, 56, 64, 3, 3, 1, 1);
  for (HostIsa isa : {HostIsa::Avx512, HostIsa::Avx512Amx})
    EXPECT_EQ(select_for(resnet, Target::Host, kEverything, isa).algo, ConvAlgo::Winograd);
  EXPECT_EQ(std::string(select_for(resnet, Target::Host, kEverything, HostIsa::Generic).reason),
            "host_nchw_gemm");
  // AVX2 (AMD EPYC Zen 3, session 32): Tiled's register-blocked kernel for float and
  // double in both layouts, pointwise layers excepted (the BLAS); float 3x3 stride-1
  // layers of 32 to 128 channels over at least 256 tiles: Winograd (session 34).
  const RuleExpectation avx2[] = {
      {problem(8, 512, 7, 7, 512, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(1000, 4, 40, 40, 16, 7, 7, 2), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(1000, 4, 40, 40, 16, 7, 7, 2, 0, Layout::NHWC), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(8, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(8, 256, 56, 56, 64, 1, 1), ConvAlgo::Im2colGemm, "host_pointwise"},
      {problem(8, 256, 56, 56, 64, 1, 1, 1, 0, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_pointwise"},
  };
  expect_rules(avx2, Target::Host, HostIsa::Avx2, ElementKind::Float32);
  expect_rules(avx2, Target::Host, HostIsa::Avx2, f64);
  const RuleExpectation avx2_float_only[] = {
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1), ConvAlgo::Winograd, "host_avx2_winograd"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Winograd,
       "host_avx2_winograd"},
      {problem(8, 128, 28, 28, 256, 3, 3, 1, 1), ConvAlgo::Winograd, "host_avx2_winograd"},
      {problem(8, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Winograd,
       "host_avx2_winograd"},
      // 16 channels; 512 channels; 64 tiles; stride 2; a fused pooling: Tiled.
      {problem(8, 16, 112, 112, 16, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(8, 512, 14, 14, 512, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(1, 64, 28, 28, 64, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(8, 64, 56, 56, 64, 3, 3, 2, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {pooled(problem(8, 64, 56, 56, 64, 3, 3, 1, 1), 2), ConvAlgo::Tiled, "host_avx2_direct"},
  };
  expect_rules(avx2_float_only, Target::Host, HostIsa::Avx2, ElementKind::Float32);
  const RuleExpectation avx2_double[] = {
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx2_direct"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Tiled, "host_avx2_direct"},
  };
  expect_rules(avx2_double, Target::Host, HostIsa::Avx2, f64);
  // 16-bit tensors keep their rule on AVX2 (Tiled's register kernel takes float and double).
  EXPECT_EQ(std::string(
                select_for(resnet, Target::Host, kEverything, HostIsa::Avx2, ElementKind::BFloat16)
                    .reason),
            "host_16bit_nchw_gemm");
  // AVX-512 (AMD EPYC Zen 5 without AMX, sessions 25 and 42; AVX-512 + AMX builds take
  // the same rules since session 43), float: Winograd on 3x3 stride-1 layers of 32 to 512
  // channels over at least 32 tiles, Tiled's register-blocked kernel on the others in
  // both layouts; pointwise layers keep the BLAS, double its rules.
  const RuleExpectation avx512[] = {
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Winograd,
       "host_avx512_winograd"},
      {problem(8, 64, 56, 56, 64, 3, 3, 1, 1), ConvAlgo::Winograd, "host_avx512_winograd"},
      {problem(8, 256, 14, 14, 256, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Winograd,
       "host_avx512_winograd"},
      {problem(8, 512, 7, 7, 512, 3, 3, 1, 1, Layout::NHWC), ConvAlgo::Winograd,
       "host_avx512_winograd"},
      {problem(8, 512, 7, 7, 512, 3, 3, 1, 1), ConvAlgo::Winograd, "host_avx512_winograd"},
      // 1,024 channels; 16 tiles; 16 channels; stride 2; a fused pooling: Tiled.
      {problem(8, 1024, 7, 7, 1024, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx512_direct"},
      {problem(4, 512, 7, 7, 512, 3, 3, 1, 1), ConvAlgo::Tiled, "host_avx512_direct"},
      {problem(8, 16, 112, 112, 16, 3, 3, 1, 1), ConvAlgo::Tiled, "host_short_reduction"},
      {problem(8, 64, 56, 56, 64, 3, 3, 2, 1), ConvAlgo::Tiled, "host_avx512_direct"},
      {pooled(problem(8, 64, 56, 56, 64, 3, 3, 1, 1), 2), ConvAlgo::Tiled, "host_avx512_direct"},
      {problem(8, 256, 56, 56, 64, 1, 1, 1, 0, Layout::NHWC), ConvAlgo::Im2colGemm,
       "host_pointwise"},
  };
  expect_rules(avx512, Target::Host, HostIsa::Avx512, ElementKind::Float32);
  expect_rules(avx512, Target::Host, HostIsa::Avx512Amx, ElementKind::Float32);
  // Every rule names its target, and each target ends with a rule that always applies.
  for (Target t : {Target::Host, Target::Device})
    for (const auto& pb : heuristic_problems())
      EXPECT_NE(std::string(select_for(pb, t, kEverything).reason), "fallback");
}

// An algorithm that cannot run the problem is skipped for the rule's next preference.
TEST(AlgoSelect, HeuristicSkipsAlgorithmsThatCannotRunTheProblem) {
  kcnn::Impl::AutoContext ctx;
  ctx.target = Target::Device;
  const auto lenet_c1 = problem(10000, 1, 86, 86, 4, 7, 7);
  const auto choice = kcnn::Impl::select_conv2d_algo(
      lenet_c1, ctx, kEverything, [](ConvAlgo a) { return a != ConvAlgo::Tiled; });
  EXPECT_EQ(choice.algo, ConvAlgo::ImplicitGemm);
  EXPECT_EQ(std::string(choice.reason), "device_few_filters");
}

/// One geometry of the Auto grid below.
struct GridShape {
  int C, H, W, M, R, S, stride, pad, dilation;
};

// Auto only ever picks an algorithm whose can_implement holds, and then runs, over a grid
// of problems: dilated, strided, padded, 1x1 to 11x11, every pooling shape (none,
// non-overlapping, overlapping, padded average, windows of more than 64 cells), both
// layouts, float and double; among them a filter whose dilated span does not fit Tiled's
// team scratch on GPUs (the rules prefer Tiled for its few filters).
template <class T>
void auto_grid(Layout layout) {
  using Space = Kokkos::DefaultExecutionSpace;
  using View4 = Kokkos::View<T****, Kokkos::LayoutRight, Space::memory_space>;
  using View1 = Kokkos::View<const T*, Space::memory_space>;
  const GridShape shapes[] = {
      {3, 17, 19, 4, 3, 3, 1, 1, 1},      {5, 23, 21, 20, 5, 5, 2, 2, 1},
      {4, 31, 29, 9, 3, 3, 1, 2, 2},      {2, 40, 37, 12, 7, 7, 3, 0, 1},
      {6, 13, 11, 70, 1, 1, 1, 0, 1},     {1, 29, 31, 3, 7, 7, 1, 3, 1},
      {1, 200, 190, 4, 11, 11, 1, 0, 16},
  };
  std::vector<std::optional<kcnn::Pool2dParams>> pools = {std::nullopt};
  auto pool = [&](kcnn::PoolMode mode, int wh, int ww, int sh, int sw, int ph, int pw) {
    kcnn::Pool2dParams p;
    p.mode = mode;
    p.window_h = wh, p.window_w = ww, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
    p.layout = layout;
    pools.push_back(p);
  };
  pool(kcnn::PoolMode::Max, 2, 2, 2, 2, 0, 0);
  pool(kcnn::PoolMode::Max, 4, 4, 4, 4, 0, 0);
  pool(kcnn::PoolMode::Max, 3, 3, 2, 2, 1, 1);
  pool(kcnn::PoolMode::Average, 3, 2, 1, 2, 1, 0);
  pool(kcnn::PoolMode::Max, 9, 9, 9, 9, 0, 0);
  int checked = 0;
  for (const GridShape& g : shapes)
    for (const auto& pl : pools) {
      kcnn::Conv2dParams params;
      params.stride_h = params.stride_w = g.stride;
      params.pad_h = params.pad_w = g.pad;
      params.dilation_h = params.dilation_w = g.dilation;
      params.layout = layout;
      params.activation = kcnn::Activation::ReLU;
      params.pool = pl;
      const auto P = kcnn::Impl::conv_output_extent(g.H, g.R, g.stride, g.pad, g.dilation);
      const auto Q = kcnn::Impl::conv_output_extent(g.W, g.S, g.stride, g.pad, g.dilation);
      std::int64_t Py = P, Qy = Q;
      if (pl) {
        Py = kcnn::Impl::pool_output_extent(P, pl->window_h, pl->stride_h, pl->pad_h);
        Qy = kcnn::Impl::pool_output_extent(Q, pl->window_w, pl->stride_w, pl->pad_w);
      }
      if (P < 1 || Q < 1 || Py < 1 || Qy < 1) continue;
      const int N = 2;
      const bool nhwc = layout == Layout::NHWC;
      View4 x("x", N, nhwc ? g.H : g.C, nhwc ? g.W : g.H, nhwc ? g.C : g.W);
      View4 w("w", g.M, nhwc ? g.R : g.C, nhwc ? g.S : g.R, nhwc ? g.C : g.S);
      View4 y("y", N, nhwc ? Py : g.M, nhwc ? Qy : Py, nhwc ? g.M : Qy);
      Kokkos::deep_copy(x, T(0.5));
      Kokkos::deep_copy(w, T(0.25));
      const View1 no_bias;
      SCOPED_TRACE(::testing::Message()
                   << "C=" << g.C << " " << g.H << "x" << g.W << " M=" << g.M << " " << g.R << "x"
                   << g.S << " s" << g.stride << " p" << g.pad << " d" << g.dilation
                   << (pl ? " pool " + std::to_string(pl->window_h) + "x" +
                                std::to_string(pl->window_w)
                          : std::string(" no pool"))
                   << " " << kcnn::to_string(layout));
      const ConvAlgo algo = kcnn::resolve_conv2d_algo(Space(), x, w, no_bias, y, params);
      const auto pb = kcnn::Impl::make_conv2d_problem("test", x, w, no_bias, y, params);
      const auto why_not = kcnn::Impl::conv2d_can_implement(
          Space(), algo, kcnn::Impl::as_kernel_view<Space, false>(x),
          kcnn::Impl::as_kernel_view<Space, false>(w),
          kcnn::Impl::as_kernel_view<Space, false>(no_bias),
          kcnn::Impl::as_kernel_view<Space, true>(y), pb);
      EXPECT_FALSE(why_not.has_value()) << kcnn::to_string(algo) << ": " << why_not.value_or("");
      EXPECT_NO_THROW(kcnn::conv2d_forward(Space(), x, w, y, params));
      Space().fence();
      ++checked;
    }
  EXPECT_GT(checked, 30);
}

// The descriptors' workspace (the value of their launch, Check or Run): none for Reference,
// Tiled's packed weights where its register-blocked host kernel serves the call (else
// none), Im2colGemm's plan, the unpooled buffer added where a pooling is not fused; a
// Check writes nothing.
TEST(AlgoSelect, CheckReportsWorkspaceAndWritesNothing) {
  using Space = Kokkos::DefaultExecutionSpace;
  using View4 = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space>;
  using View1 = Kokkos::View<const float*, Space::memory_space>;
  namespace I = kcnn::Impl;
  View4 x("x", 3, 5, 13, 11), w("w", 7, 5, 3, 3), y("y", 3, 7, 13, 11);
  View4 y_pooled("y_pooled", 3, 7, 6, 5);
  Kokkos::deep_copy(x, 1.0f);
  Kokkos::deep_copy(w, 1.0f);
  const View1 no_bias;
  kcnn::Conv2dParams params;
  params.pad_h = params.pad_w = 1;
  const auto pb = I::make_conv2d_problem("test", x, w, no_bias, y, params);
  kcnn::Conv2dParams pooled_params = params;
  kcnn::Pool2dParams pool;
  pool.window_h = pool.window_w = pool.stride_h = pool.stride_w = 2;
  pooled_params.pool = pool;
  const auto pb_pooled = I::make_conv2d_problem("test", x, w, no_bias, y_pooled, pooled_params);
  const auto xk = I::as_kernel_view<Space, false>(x), wk = I::as_kernel_view<Space, false>(w);
  const auto bk = I::as_kernel_view<Space, false>(no_bias);
  const auto yk = I::as_kernel_view<Space, true>(y), ypk = I::as_kernel_view<Space, true>(y_pooled);
  auto check = [&](ConvAlgo a, const auto& out, const Conv2dProblem& p) {
    return I::conv2d_launch(Space(), a, xk, wk, bk, out, p, I::LaunchMode::Check);
  };
  Kokkos::deep_copy(y, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(check(ConvAlgo::Reference, yk, pb), 0u);
  // 7 filters, more than the staged host kernel's 4 (tiled_host_prefers_staged).
  std::size_t tiled_workspace = 0;
  if constexpr (kcnn::Impl::runs_on_host_v<Space>)
    tiled_workspace = I::TiledHostSimdPlan::make<float>(pb).workspace_bytes<float>();
  EXPECT_EQ(check(ConvAlgo::Tiled, yk, pb), tiled_workspace);
  EXPECT_EQ(
      check(ConvAlgo::Im2colGemm, yk, pb),
      I::plan_im2col_gemm(Space(), xk, wk, bk, yk, pb, pb.workspace_limit_bytes).workspace_bytes());
  EXPECT_GT(check(ConvAlgo::Im2colGemm, yk, pb), 0u);
  // Reference does not fuse a pooling: the unpooled output is its workspace.
  EXPECT_EQ(check(ConvAlgo::Reference, ypk, pb_pooled),
            static_cast<std::size_t>(pb.output_size()) * sizeof(float));
  EXPECT_EQ(check(ConvAlgo::Tiled, ypk, pb_pooled), 0u);
  if constexpr (I::has_tensor_cores_v<Space>) {
    // float under TF32: the weights packed for the MMAs, 7 filters padded to the 64 of
    // the block tile, 45 taps to 48 (C = 5 is no multiple of a 16-byte vector, so this
    // NCHW call is not staged channels-last: no copy of x).
    Conv2dProblem tf32 = pb;
    tf32.math = kcnn::MathMode::TF32;
    EXPECT_EQ(check(ConvAlgo::TensorCoreGemm, yk, tf32), std::size_t(64) * 48 * sizeof(float));
  }
  const auto y_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  for (std::size_t i = 0; i < y_host.span(); ++i)
    ASSERT_TRUE(std::isnan(y_host.data()[i])) << "a Check wrote y at " << i;
}

TEST(AlgoSelect, AutoOnlyPicksAlgorithmsThatCanImplementTheProblem) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    auto_grid<float>(layout);
    auto_grid<double>(layout);
  }
}

// ---------------------------------------------------------------------------
// find_best_algo and the cache
// ---------------------------------------------------------------------------

/// Inputs, y and the expected result of one problem on one execution space.
template <class T, class Space>
struct Problem {
  ConvCase c;
  Tensor4<T, Space> x, w, y;
  Tensor1<T, Space> bias;
  std::vector<double> want;

  explicit Problem(const ConvCase& cc) : c(cc) {
    const auto xv = random_values(product(c.x_extents()), 101);
    const auto wv = random_values(product(c.w_extents()), 202);
    const auto bv = random_values(c.M, 303);
    want = host_conv2d(c, xv, wv, bv);
    x = make_tensor<T, Space>("x", c.x_extents(), xv);
    w = make_tensor<T, Space>("w", c.w_extents(), wv);
    bias = make_vector<T, Space>("bias", bv);
    const auto ye = c.y_extents();
    y = Tensor4<T, Space>("y", ye[0], ye[1], ye[2], ye[3]);
  }
  kcnn::FindAlgoResult find(const Space& space, kcnn::FindAlgoOptions options = {}) const {
    return c.bias ? kcnn::find_best_algo(space, x, w, bias, y, c.params(), options)
                  : kcnn::find_best_algo(space, x, w, y, c.params(), options);
  }
  Conv2dProblem pb() const {
    return kcnn::Impl::make_conv2d_problem("test", x, w, c.bias ? bias : Tensor1<T, Space>(), y,
                                           c.params());
  }
  kcnn::Impl::AlgoChoice auto_choice() const {
    const Tensor1<T, Space> b = c.bias ? bias : Tensor1<T, Space>();
    return kcnn::Impl::resolve_auto_algo<Space, decltype(x), decltype(w), decltype(y)>(
        Space(), kcnn::Impl::as_kernel_view<Space, false>(x),
        kcnn::Impl::as_kernel_view<Space, false>(w), kcnn::Impl::as_kernel_view<Space, false>(b),
        kcnn::Impl::as_kernel_view<Space, true>(y), pb());
  }
  kcnn::Impl::AlgoCacheKey key() const {
    return kcnn::Impl::make_algo_cache_key<Space, decltype(x), decltype(w), decltype(y)>(pb());
  }
  double error() const { return relative_error(to_host(y), want); }
};

ConvCase tuned_case(Layout layout, bool bias) {
  ConvCase c{"tuned", 2, 5, 13, 11, 7, 3, 3, 2, 1, 1, 1};  // primes, stride 2/1, padding
  c.layout = layout;
  c.activation = kcnn::Activation::ReLU;
  c.bias = bias;
  return c;
}

class FindBestAlgo : public ::testing::Test {
 protected:
  void SetUp() override { kcnn::clear_algo_cache(); }
  void TearDown() override { kcnn::clear_algo_cache(); }
};

TEST_F(FindBestAlgo, TimesEveryAlgorithmCachesTheWinnerAndLeavesACorrectY) {
  for (Backend b : backends()) {
    SCOPED_TRACE(backend_name(b));
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      kcnn::clear_algo_cache();
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (bool bias : {false, true}) {
          SCOPED_TRACE(std::string(kcnn::to_string(layout)) + (bias ? " bias" : " no bias"));
          Problem<float, Space> p(tuned_case(layout, bias));
          const std::size_t cached_before = kcnn::algo_cache_size();

          poison(p.y);
          const auto first = p.find(space);
          space.fence();
          EXPECT_TRUE(kcnn::Impl::is_implemented(first.algo));
          EXPECT_FALSE(first.from_cache);
          ASSERT_EQ(first.timings.size(), kcnn::implemented_conv_algos().size());
          // Each algorithm either ran or says why not (an algorithm may not support a
          // shape); the winner ran and was the fastest.
          double best = -1;
          for (const auto& t : first.timings) {
            EXPECT_NE(t.ok(), !t.error.empty()) << kcnn::to_string(t.algo) << ": " << t.error;
            if (t.algo == first.algo) best = t.seconds;
          }
          EXPECT_GE(best, 0.0);
          for (const auto& t : first.timings)
            EXPECT_TRUE(!t.ok() || best <= t.seconds) << kcnn::to_string(t.algo);
          EXPECT_LE(p.error(), tolerance<float>());
          EXPECT_EQ(kcnn::algo_cache_size(), cached_before + 1);
          const auto entry = kcnn::Impl::algo_cache().find(p.key());
          ASSERT_TRUE(entry.has_value());
          EXPECT_EQ(entry->algo, first.algo);

          // The second time the cache answers, and y is still computed.
          poison(p.y);
          const auto second = p.find(space);
          space.fence();
          EXPECT_TRUE(second.from_cache);
          EXPECT_TRUE(second.timings.empty());
          EXPECT_EQ(second.algo, first.algo);
          EXPECT_LE(p.error(), tolerance<float>());

          // Unless told to time again.
          poison(p.y);
          const auto third = p.find(space, {3, false});
          space.fence();
          EXPECT_FALSE(third.from_cache);
          EXPECT_EQ(third.timings.size(), kcnn::implemented_conv_algos().size());
          EXPECT_LE(p.error(), tolerance<float>());
          EXPECT_EQ(kcnn::algo_cache_size(), cached_before + 1);
        }
      }
    });
  }
}

TEST_F(FindBestAlgo, DoublePrecisionIsItsOwnEntry) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<float, Space> pf(tuned_case(Layout::NCHW, true));
  Problem<double, Space> pd(tuned_case(Layout::NCHW, true));
  pf.find(Space());
  poison(pd.y);
  pd.find(Space());
  Space().fence();
  EXPECT_EQ(kcnn::algo_cache_size(), 2u);
  EXPECT_LE(pd.error(), tolerance<double>());
}

TEST_F(FindBestAlgo, InvalidArgumentsThrowBeforeWritingY) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<float, Space> p(tuned_case(Layout::NCHW, true));
  Kokkos::deep_copy(p.y, 7.0f);
  auto params = p.c.params();
  params.stride_h = 0;
  EXPECT_THROW(kcnn::find_best_algo(Space(), p.x, p.w, p.bias, p.y, params), kcnn::Error);
  Tensor4<float, Space> wrong_w("w", p.c.M, p.c.C + 1, p.c.R, p.c.S);
  EXPECT_THROW(kcnn::find_best_algo(Space(), p.x, wrong_w, p.bias, p.y, p.c.params()), kcnn::Error);
  EXPECT_THROW(kcnn::find_best_algo(Space(), p.x, p.w, p.bias, p.y, p.c.params(), {0, true}),
               kcnn::Error);
  for (double v : to_host(p.y))
    ASSERT_EQ(v, 7.0);
  EXPECT_EQ(kcnn::algo_cache_size(), 0u);
}

/// Records the names of the profiling regions pushed while it lives. Thread-safe: on
/// host backends Im2colGemm runs KokkosBlas::gemm from several threads at once, and each
/// call pushes a region of its own (unguarded, the concurrent emplace_back corrupted the
/// list: a segfault in about 40% of runs).
class RegionRecorder {
 public:
  RegionRecorder() {
    names().clear();
    Kokkos::Tools::Experimental::set_push_region_callback([](const char* name) {
      const std::lock_guard<std::mutex> lock(mutex());
      names().emplace_back(name);
    });
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  ~RegionRecorder() { Kokkos::Tools::Experimental::set_push_region_callback(nullptr); }
  static std::vector<std::string>& names() {
    static std::vector<std::string> list;
    return list;
  }
};

TEST_F(FindBestAlgo, AutoConsultsTheCacheFirst) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<float, Space> p(tuned_case(Layout::NHWC, true));
  auto params = p.c.params();  // algo = Auto
  const auto heuristic = p.auto_choice();
  EXPECT_NE(std::string(heuristic.reason), "cache");

  const auto found = p.find(Space());
  Space().fence();
  EXPECT_EQ(std::string(p.auto_choice().reason), "cache");
  EXPECT_EQ(p.auto_choice().algo, found.algo);
  EXPECT_EQ(kcnn::resolve_conv2d_algo(Space(), p.x, p.w, p.bias, p.y, params), found.algo);

  // Whatever implemented algorithm the cache names is what Auto runs (and says so in
  // its profiling region).
  for (ConvAlgo algo : kcnn::implemented_conv_algos()) {
    if (!algo_serves<float, Space>(algo, p.c, params.math)) continue;  // Auto passes it over
    SCOPED_TRACE(kcnn::to_string(algo));
    kcnn::Impl::algo_cache().insert(p.key(), {algo, 1.0});
    poison(p.y);
    {
      RegionRecorder recorder;
      kcnn::conv2d_forward(Space(), p.x, p.w, p.bias, p.y, params);
      Space().fence();
      const std::string expected =
          std::string("kcnn::conv2d_forward[") + kcnn::to_string(algo) + "]";
      std::string recorded;
      for (const auto& name : RegionRecorder::names())
        recorded += name + "; ";
      EXPECT_EQ(
          std::count(RegionRecorder::names().begin(), RegionRecorder::names().end(), expected), 1)
          << "regions recorded: " << recorded;
    }
    EXPECT_LE(p.error(), tolerance<float>());
  }

  // A cached algorithm this build lacks (e.g. from a newer kcnn's file: a value no
  // descriptor has) is passed over.
  for (ConvAlgo algo : {static_cast<ConvAlgo>(17)}) {
    ASSERT_FALSE(kcnn::Impl::is_implemented(algo));
    kcnn::Impl::algo_cache().insert(p.key(), {algo, 1.0});
    EXPECT_EQ(p.auto_choice().algo, heuristic.algo);
    EXPECT_NE(std::string(p.auto_choice().reason), "cache");
    poison(p.y);
    kcnn::conv2d_forward(Space(), p.x, p.w, p.bias, p.y, params);
    Space().fence();
    EXPECT_LE(p.error(), tolerance<float>());
  }
}

TEST(AlgoCacheKey, DistinguishesEverythingThatMayChangeTheWinner) {
  using Space = Kokkos::DefaultExecutionSpace;
  using kcnn::Impl::make_algo_cache_key;
  using Right = Tensor4<float, Space>;
  using Left = Kokkos::View<float****, Kokkos::LayoutLeft, Space::memory_space>;
  using DRight = Tensor4<double, Space>;
  const auto pb = problem(2, 3, 9, 9, 4, 3, 3);
  const auto base = make_algo_cache_key<Space, Right, Right, Right>(pb);
  EXPECT_EQ(base.views, "RRR");
  EXPECT_EQ(base.scalar, "float");
  EXPECT_EQ(base.backend, Space::name());
  EXPECT_EQ(base, (make_algo_cache_key<Space, Right, Right, Right>(pb)));
  EXPECT_EQ((make_algo_cache_key<Space, Left, Right, Left>(pb)).views, "LRL");
  EXPECT_EQ((make_algo_cache_key<Space, DRight, DRight, DRight>(pb)).scalar, "double");
  auto other = pb;
  other.has_bias = true;
  EXPECT_FALSE(base == (make_algo_cache_key<Space, Right, Right, Right>(other)));
  other = pb;
  other.activation = kcnn::Activation::Tanh;
  EXPECT_FALSE(base == (make_algo_cache_key<Space, Right, Right, Right>(other)));
  other = pb;
  other.dilation_w = 2;
  EXPECT_FALSE(base == (make_algo_cache_key<Space, Right, Right, Right>(other)));
}

// ---------------------------------------------------------------------------
// The cache file
// ---------------------------------------------------------------------------

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "kcnn_algo_cache_" + std::to_string(getpid()) + "_" + name + ".txt";
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class AlgoCacheFile : public FindBestAlgo {};

TEST_F(AlgoCacheFile, SaveAndLoadRoundTrip) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<float, Space> a(tuned_case(Layout::NCHW, true));
  Problem<float, Space> b(tuned_case(Layout::NHWC, false));
  a.find(Space());
  b.find(Space());
  Space().fence();
  ASSERT_EQ(kcnn::algo_cache_size(), 2u);
  const auto before = kcnn::Impl::algo_cache().snapshot();

  const std::string path = temp_path("roundtrip");
  ASSERT_TRUE(kcnn::save_algo_cache(path));
  const std::string text = read_file(path);
  EXPECT_EQ(text.rfind("kcnn-algo-cache 3\n", 0), 0u) << text;

  kcnn::clear_algo_cache();
  EXPECT_NE(std::string(a.auto_choice().reason), "cache");
  testing::internal::CaptureStderr();
  EXPECT_TRUE(kcnn::load_algo_cache(path));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  const auto after = kcnn::Impl::algo_cache().snapshot();
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [key, entry] : before) {
    const auto it = after.find(key);
    ASSERT_NE(it, after.end());
    EXPECT_EQ(it->second.algo, entry.algo);
    EXPECT_EQ(it->second.seconds, entry.seconds);
  }
  // Auto now answers from the loaded cache; find_best_algo too.
  EXPECT_EQ(std::string(a.auto_choice().reason), "cache");
  EXPECT_TRUE(b.find(Space()).from_cache);
  // Saving what was loaded gives the same file.
  const std::string again = temp_path("roundtrip_again");
  ASSERT_TRUE(kcnn::save_algo_cache(again));
  EXPECT_EQ(read_file(again), text);
  std::remove(path.c_str());
  std::remove(again.c_str());
}

TEST_F(AlgoCacheFile, HandWrittenFileWithCommentsLoads) {
  const std::string path = temp_path("handwritten");
  write_file(
      path,
      "kcnn-algo-cache 3\n"
      "# a comment\n"
      "\n"
      "OpenMP float Strict NCHW RRR ReLU 1 2 3 9 9 4 3 3 1 1 1 1 1 1 1 Reference 0.001\n"
      "OpenMP float TF32 NCHW RRR ReLU 1 2 3 9 9 4 3 3 1 1 1 1 1 1 1 Tiled 0.001\n"
      "Cuda double Strict NHWC RLR Identity 0 8 64 56 56 64 3 3 2 2 1 1 1 1 1 Tiled 2.5e-05\n"
      "Cuda double Strict NHWC RLR Identity 0 8 64 56 56 64 3 3 2 2 1 1 1 1 64 Reference "
      "1e-05\n"
      "end 4\n");
  EXPECT_TRUE(kcnn::load_algo_cache(path));
  EXPECT_EQ(kcnn::algo_cache_size(), 4u);
  // The math mode and the groups are part of the key: the TF32 entry and the
  // depthwise one are their own.
  const auto entries = kcnn::Impl::algo_cache().snapshot();
  int tf32 = 0, depthwise = 0;
  for (const auto& [key, entry] : entries) {
    tf32 += key.math == kcnn::MathMode::TF32 && entry.algo == kcnn::ConvAlgo::Tiled;
    depthwise += key.groups == 64 && entry.algo == kcnn::ConvAlgo::Reference;
  }
  EXPECT_EQ(tf32, 1);
  EXPECT_EQ(depthwise, 1);
  std::remove(path.c_str());
}

// Files of format version 2 (before the groups) load, every entry ungrouped.
TEST_F(AlgoCacheFile, Version2FileLoadsUngrouped) {
  const std::string path = temp_path("version2");
  write_file(path,
             "kcnn-algo-cache 2\n"
             "OpenMP float TF32 NCHW RRR ReLU 1 2 3 9 9 4 3 3 1 1 1 1 1 1 Tiled 0.001\n"
             "Cuda double Strict NHWC RLR Identity 0 8 64 56 56 64 3 3 2 2 1 1 1 1 Tiled 2.5e-05\n"
             "end 2\n");
  EXPECT_TRUE(kcnn::load_algo_cache(path));
  const auto entries = kcnn::Impl::algo_cache().snapshot();
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& [key, entry] : entries)
    EXPECT_EQ(key.groups, 1);
  std::remove(path.c_str());
}

// Files of format version 1 (before the math mode) load, every entry Strict.
TEST_F(AlgoCacheFile, Version1FileLoadsAsStrict) {
  const std::string path = temp_path("version1");
  write_file(path,
             "kcnn-algo-cache 1\n"
             "OpenMP float NCHW RRR ReLU 1 2 3 9 9 4 3 3 1 1 1 1 1 1 Reference 0.001\n"
             "Cuda double NHWC RLR Identity 0 8 64 56 56 64 3 3 2 2 1 1 1 1 Tiled 2.5e-05\n"
             "end 2\n");
  EXPECT_TRUE(kcnn::load_algo_cache(path));
  const auto entries = kcnn::Impl::algo_cache().snapshot();
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& [key, entry] : entries)
    EXPECT_EQ(key.math, kcnn::MathMode::Strict);
  std::remove(path.c_str());
}

TEST_F(AlgoCacheFile, MissingFileIsIgnoredSilently) {
  testing::internal::CaptureStderr();
  EXPECT_FALSE(kcnn::load_algo_cache(temp_path("does_not_exist")));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(kcnn::algo_cache_size(), 0u);
}

TEST_F(AlgoCacheFile, UnwritablePathWarns) {
  testing::internal::CaptureStderr();
  EXPECT_FALSE(kcnn::save_algo_cache("/nonexistent-directory/kcnn/cache.txt"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("warning"), std::string::npos);
}

// Every defective file is ignored as a whole, with a warning, leaving the cache as it was.
TEST_F(AlgoCacheFile, CorruptForeignAndTruncatedFilesAreIgnoredWithAWarning) {
  using Space = Kokkos::DefaultExecutionSpace;
  Problem<float, Space> p(tuned_case(Layout::NCHW, true));
  p.find(Space());
  Space().fence();
  const auto before = kcnn::Impl::algo_cache().snapshot();
  ASSERT_EQ(before.size(), 1u);

  const std::string header = "kcnn-algo-cache 3\n";
  const std::string good =
      "OpenMP float Strict NCHW RRR ReLU 1 2 3 9 9 4 3 3 1 1 1 1 1 1 1 Reference 0.001\n";
  const std::string good2 =
      "Serial double Strict NHWC RRR Tanh 0 1 7 5 5 3 3 3 1 1 0 0 1 1 1 Reference 0.5\n";
  const std::string valid = header + good + good2 + "end 2\n";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return header + s + "end 1\n";
  };
  const char binary[] =
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\xff\xfe garbage\n";
  const std::map<std::string, std::string> files = {
      {"empty", ""},
      {"json", "{\"context\": {}, \"benchmarks\": []}\n"},
      {"binary", std::string(binary, sizeof(binary) - 1)},
      {"other_magic", "kcnn-algo-cachex 1\n" + good + "end 1\n"},
      {"newer_version", "kcnn-algo-cache 4\n" + good + "end 1\n"},
      {"version1_with_math_field", "kcnn-algo-cache 1\n" + good + "end 1\n"},
      {"version2_with_groups_field", "kcnn-algo-cache 2\n" + good + "end 1\n"},
      {"zero_groups", with(" 1 Reference", " 0 Reference")},
      {"groups_not_dividing_m", with(" 1 Reference", " 3 Reference")},
      {"text_groups", with(" 1 Reference", " one Reference")},
      {"unknown_math", with("Strict", "FastMath")},
      {"tf32_double",
       header +
           "Serial double TF32 NHWC RRR Tanh 0 1 7 5 5 3 3 3 1 1 0 0 1 1 1 Reference 0.5\nend 1\n"},
      {"header_only", header},
      {"truncated_no_end", header + good + good2},
      {"truncated_mid_line", valid.substr(0, header.size() + good.size() + 20)},
      {"wrong_count", header + good + good2 + "end 3\n"},
      {"bad_count", header + good + "end one\n"},
      {"content_after_end", valid + good},
      {"duplicate", header + good + good + "end 2\n"},
      {"too_few_fields", header + "OpenMP float Strict NCHW RRR ReLU 1 2 3 9 9\nend 1\n"},
      {"too_many_fields", with("0.001", "0.001 extra")},
      {"unknown_algo", with("Reference", "Fastest")},
      {"auto_algo", with("Reference", "Auto")},
      {"unknown_layout", with("NCHW", "CHWN")},
      {"unknown_activation", with("ReLU", "Swish")},
      {"unknown_scalar", with("float", "int8")},
      {"bad_views", with("RRR", "RRX")},
      {"bad_bias", with("ReLU 1", "ReLU 2")},
      {"negative_extent", with(" 2 3 9 9 ", " -2 3 9 9 ")},
      {"zero_extent", with(" 2 3 9 9 ", " 2 0 9 9 ")},
      {"non_numeric_extent", with(" 2 3 9 9 ", " 2 3 nine 9 ")},
      {"overflowing_extent", with(" 2 3 9 9 ", " 2 3 99999999999999999999999 9 ")},
      {"zero_stride", with("3 3 1 1 1 1 1 1", "3 3 0 1 1 1 1 1")},
      {"negative_pad", with("3 3 1 1 1 1 1 1", "3 3 1 1 -1 1 1 1")},
      {"nan_seconds", with("0.001", "nan")},
      {"negative_seconds", with("0.001", "-1")},
      {"text_seconds", with("0.001", "fast")},
  };
  for (const auto& [name, content] : files) {
    SCOPED_TRACE(name);
    const std::string path = temp_path(name);
    write_file(path, content);
    testing::internal::CaptureStderr();
    EXPECT_FALSE(kcnn::load_algo_cache(path));
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("warning"), std::string::npos) << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    const auto after = kcnn::Impl::algo_cache().snapshot();
    ASSERT_EQ(after.size(), before.size());
    EXPECT_TRUE(after.begin()->first == before.begin()->first);
    std::remove(path.c_str());
  }
  // The same entries in a well-formed file do load.
  const std::string path = temp_path("valid");
  write_file(path, valid);
  EXPECT_TRUE(kcnn::load_algo_cache(path));
  EXPECT_EQ(kcnn::algo_cache_size(), before.size() + 2);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kcnn_test
