// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Math modes and ConvAlgo::TensorCoreGemm: every algorithm under TF32 and TF32x3 on the
// shape families and the tensor-core tile edges (float; double under Strict), each
// against the double reference with the mode's tolerance (test_support.hpp,
// check_forward_with: TF32 <= (2^-10 + K 2^-24) * max sum|w x|, TF32x3 and Strict 1e-4
// of the output's magnitude); TF32 really rounds (crafted inputs); invalid mode / type
// combinations throw before writing; TensorCoreGemm's can_implement per backend.
#include "test_support.hpp"

#include <kcnn/impl/arch/grid_constant_launch.hpp>

#include <cstring>

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;
using kcnn::MathMode;

struct MathParam {
  ConvCase c;
  ConvAlgo algo;
  Backend backend;
};

void PrintTo(const MathParam& p, std::ostream* os) {
  *os << p.c.name;
}

std::string math_param_name(const ::testing::TestParamInfo<MathParam>& info) {
  const auto& p = info.param;
  return p.c.name + "_" + kcnn::to_string(p.c.layout) + "_" + kcnn::to_string(p.c.math) + "_" +
         kcnn::to_string(p.algo) + "_" + backend_name(p.backend);
}

/// Shapes at the tensor-core tiles' edges (float: 64 x 128 or 128 x 64 filters x pixels,
/// 16 taps a stage; double: 64 x 64, 8 taps a stage; mma K of 8 and 4): partial M,
/// pixel and K tiles, K not a multiple of the MMA's K, channel counts that break the
/// 16-byte gathers, one K step, K split into slices (tc_k2304 and tc_split_k_*: 2-4
/// slices on the H100).
std::vector<ConvCase> tensor_core_edges() {
  return {
      {"tc_m63_j127_k27", 1, 3, 9, 15, 63, 3, 3, 1, 1, 1, 1},
      {"tc_m65_j129_k20", 1, 5, 13, 11, 65, 2, 2},
      {"tc_m129_k576_nhwc_vec", 2, 64, 9, 9, 129, 3, 3, 1, 1, 1, 1},
      {"tc_m128_j256_k16", 1, 16, 16, 16, 128, 1, 1},
      {"tc_m8_k4_vec", 3, 4, 7, 7, 8, 1, 1},
      {"tc_m200_k18_odd_channels", 2, 2, 11, 13, 200, 3, 3, 2, 2, 1, 1},
      {"tc_m17_k1", 1, 1, 6, 5, 17, 1, 1},
      {"tc_dilated_strided", 2, 8, 23, 19, 40, 3, 3, 2, 3, 2, 2, 2, 2},
      {"tc_k2304", 1, 256, 6, 6, 70, 3, 3, 1, 1, 1, 1},
      // K split (grids far below the GPU's team slots): slices of uneven length, a
      // partial last stage, partial M and pixel tiles; 16-byte NHWC gathers.
      {"tc_split_k_uneven", 2, 130, 5, 7, 33, 3, 3, 1, 1, 1, 1},
      {"tc_split_k_vec", 1, 128, 4, 5, 40, 3, 3, 1, 1, 1, 1},
  };
}

bool backend_has_tensor_cores(Backend b) {
  return b == Backend::Default && kcnn::Impl::has_tensor_cores_v<Kokkos::DefaultExecutionSpace>;
}

std::vector<MathParam> math_params() {
  std::vector<ConvCase> shapes = conv_shape_families();
  for (const auto& e : tensor_core_edges())
    shapes.push_back(e);
  std::vector<ConvAlgo> algos = kcnn::implemented_conv_algos();
  algos.push_back(ConvAlgo::Auto);
  std::vector<MathParam> list;
  int i = 0;
  for (const auto& base : shapes)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (MathMode math : {MathMode::TF32, MathMode::TF32x3}) {
        ConvCase c = base;
        c.layout = layout, c.math = math;
        c.activation = i % 3 == 0 ? Activation::ReLU : Activation::Identity;
        c.bias = i % 2 == 0;
        ++i;
        for (Backend b : backends())
          for (ConvAlgo algo : algos)
            // Without tensor cores every algorithm computes strictly (the conformance
            // suite's check; StrictAlgorithmsComputeStrictlyUnderTF32 checks the mode is
            // accepted): there only TensorCoreGemm's refusal and Auto run the families.
            if (backend_has_tensor_cores(b) || algo == ConvAlgo::TensorCoreGemm ||
                algo == ConvAlgo::Auto)
              list.push_back({c, algo, b});
      }
  return list;
}

class Conv2dMathModes : public ::testing::TestWithParam<MathParam> {};

// Float under the mode's tolerance; double (Strict) alongside, so TensorCoreGemm's DMMA
// path sees every shape too.
TEST_P(Conv2dMathModes, MatchesDoubleReference) {
  const auto& p = GetParam();
  with_backend(p.backend, [&](const auto& space) {
    auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                   const kcnn::Conv2dParams& params) {
      if (p.c.bias) {
        kcnn::conv2d_forward(space, x, w, bias, y, params);
      } else {
        kcnn::conv2d_forward(space, x, w, y, params);
      }
    };
    check_forward_with<float>(space, p.c, p.algo, run);
    if (p.c.math == MathMode::TF32) check_forward_with<double>(space, p.c, p.algo, run);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dMathModes, ::testing::ValuesIn(math_params()),
                         math_param_name);

/// y = x * w for 1x1 filters, C = 1: x = 1 + 2^-12 is not a TF32 number (10 mantissa
/// bits; it rounds to 1), w = 1. Strict and TF32x3 give x exactly, TF32 gives 1: a mode
/// that silently computed strictly, or a TF32x3 that dropped its small parts, fails.
template <class Space>
std::vector<double> crafted_product(const Space& space, ConvAlgo algo, MathMode math,
                                    Layout layout) {
  const int N = 2, H = 5, W = 7, M = 9;
  ConvCase c{"crafted", N, 1, H, W, M, 1, 1};
  c.layout = layout, c.math = math;
  const float x_value = 1.0f + std::ldexp(1.0f, -12);
  auto x = make_tensor<float, Space>("x", c.x_extents(),
                                     std::vector<double>(product(c.x_extents()), x_value));
  auto w =
      make_tensor<float, Space>("w", c.w_extents(), std::vector<double>(product(c.w_extents()), 1));
  const auto ye = c.y_extents();
  Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);
  auto params = c.params();
  params.algo = algo;
  kcnn::conv2d_forward(space, x, w, y, params);
  space.fence();
  return to_host(y);
}

TEST(TensorCoreGemm, TF32RoundsItsFactorsAndTF32x3DoesNot) {
  with_backend(Backend::Default, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    if (!kcnn::Impl::has_tensor_cores_v<Space>) GTEST_SKIP() << "no tensor cores here";
    const double exact = 1.0 + std::ldexp(1.0, -12);
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      for (double v : crafted_product(space, ConvAlgo::TensorCoreGemm, MathMode::TF32, layout))
        ASSERT_EQ(v, 1.0) << "TF32 did not round its factors";
      for (double v : crafted_product(space, ConvAlgo::TensorCoreGemm, MathMode::TF32x3, layout))
        ASSERT_EQ(v, exact) << "TF32x3 lost the small parts";
      for (double v : crafted_product(space, ConvAlgo::ImplicitGemm, MathMode::Strict, layout))
        ASSERT_EQ(v, exact);
    }
  });
}

// On backends without tensor cores a non-strict mode computes strictly (documented):
// every other algorithm gives the exact product under TF32.
TEST(MathMode, StrictAlgorithmsComputeStrictlyUnderTF32) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      const double exact = 1.0 + std::ldexp(1.0, -12);
      for (ConvAlgo algo : kcnn::implemented_conv_algos()) {
        if (algo == ConvAlgo::TensorCoreGemm || algo == ConvAlgo::Im2colGemm) continue;
        // 1x1 filters: not Winograd's (WinogradMathModes.Tf32ComputesStrictly instead).
        if (algo == ConvAlgo::Winograd) continue;
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
          for (double v : crafted_product(space, algo, MathMode::TF32, layout))
            ASSERT_EQ(v, exact) << kcnn::to_string(algo);
      }
    });
}

// TF32 and TF32x3 are float modes: double tensors with them throw kcnn::Error before
// anything is written, for every algorithm and Auto, forward and backward.
TEST(MathMode, NonStrictModeWithDoubleTensorsThrowsBeforeWriting) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      ConvCase c{"double_tf32", 2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1};
      const RandomConvInputs<double, Space> in(c);
      const auto &x = in.x, &w = in.w;
      const auto ye = c.y_extents();
      Tensor4<double, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      std::vector<ConvAlgo> algos = kcnn::implemented_conv_algos();
      algos.push_back(ConvAlgo::Auto);
      for (MathMode math : {MathMode::TF32, MathMode::TF32x3})
        for (ConvAlgo algo : algos) {
          poison(y);
          auto params = c.params();
          params.algo = algo, params.math = math;
          expect_refused(space, y, [&] { kcnn::conv2d_forward(space, x, w, y, params); });
          try {  // the message names the mode
            kcnn::conv2d_forward(space, x, w, y, params);
          } catch (const kcnn::Error& e) {
            EXPECT_NE(std::string(e.what()).find(kcnn::to_string(math)), std::string::npos)
                << e.what();
          }
        }
      // The backward data operation validates the same way.
      auto params = c.params();
      params.math = MathMode::TF32;
      Tensor4<double, Space> dx("dx", c.x_extents()[0], c.x_extents()[1], c.x_extents()[2],
                                c.x_extents()[3]);
      poison(dx);
      expect_refused(space, dx, [&] { kcnn::conv2d_backward_data(space, y, w, dx, params); });
      // An enumerator value outside MathMode is refused too.
      params.math = static_cast<MathMode>(7);
      EXPECT_THROW(kcnn::conv2d_forward(space, x, w, y, params), kcnn::Error);
    });
}

// TensorCoreGemm's can_implement: CUDA builds for sm_80+ serve float under TF32 /
// TF32x3 and double; host backends and Strict float are refused with the reason.
/// TensorCoreGemm's per-thread tap walk (carries, no division) against the tap
/// decomposition of the unroll map, both layouts, from every start position of a stage,
/// on geometries where a stage spans several channels, filter columns or rows.
TEST(TapWalker, MatchesTheUnrollMapsTaps) {
  struct Geometry {
    int C, R, S;
  };
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (Geometry g : {Geometry{1, 1, 1}, Geometry{3, 3, 3}, Geometry{64, 3, 3}, Geometry{5, 7, 2},
                       Geometry{17, 1, 5}, Geometry{2, 5, 7}})
      for (int step : {8, 16}) {
        // stride 1 x 2, padding 1 x 2, dilation 2 x 1 on an 11 x 13 image
        kcnn::Impl::Conv2dProblem pb{};
        pb.C = g.C, pb.H = 11, pb.W = 13, pb.R = g.R, pb.S = g.S;
        pb.stride_h = 1, pb.stride_w = 2, pb.pad_h = 1, pb.pad_w = 2;
        pb.dilation_h = 2, pb.dilation_w = 1;
        pb.P = (pb.H + 2 * pb.pad_h - pb.dilation_h * (pb.R - 1) - 1) / pb.stride_h + 1;
        pb.Q = (pb.W + 2 * pb.pad_w - pb.dilation_w * (pb.S - 1) - 1) / pb.stride_w + 1;
        const kcnn::Impl::LogicalStrides xs{1000003, 10007, 101, 7}, ws{100003, 1009, 11, 3};
        const int K = g.C * g.R * g.S;
        auto check = [&](auto layout_tag) {
          constexpr Layout L = decltype(layout_tag)::value;
          const auto map = kcnn::Impl::UnrollMap<L>::from(pb);
          for (int start = 0; start < step; ++start) {
            kcnn::Impl::TapWalker<L> walk(map, start, step, K);
            for (int k = start; k < K + 2 * step; k += step, walk.advance()) {
              const kcnn::Impl::GatherTap want =
                  k < K ? map.gather_tap(k, xs, ws) : kcnn::Impl::outside_tap();
              const kcnn::Impl::GatherTap got = walk.tap(map, xs, ws);
              ASSERT_EQ(got.x_offset, want.x_offset) << kcnn::to_string(L) << " k " << k;
              ASSERT_EQ(got.w_offset, want.w_offset) << kcnn::to_string(L) << " k " << k;
              ASSERT_EQ(got.dh, want.dh) << kcnn::to_string(L) << " k " << k;
              ASSERT_EQ(got.dw, want.dw) << kcnn::to_string(L) << " k " << k;
            }
          }
        };
        if (layout == Layout::NCHW) {
          check(std::integral_constant<Layout, Layout::NCHW>{});
        } else {
          check(std::integral_constant<Layout, Layout::NHWC>{});
        }
      }
}

/// A filter geometry of the packed-weights tests: the problem on a 9x9 input, the
/// strides of packed w in `layout`, and the (c, r, s) of GEMM tap k (UnrollMap's k order:
/// NCHW (c, r, s), NHWC (r, s, c), c / s fastest).
struct PackGeometry {
  int M, C, R, S;
  int K() const { return C * R * S; }
  kcnn::Impl::Conv2dProblem problem() const {
    kcnn::Impl::Conv2dProblem pb{};
    pb.C = C, pb.H = 9, pb.W = 9, pb.R = R, pb.S = S, pb.M = M;
    pb.P = pb.H - pb.R + 1, pb.Q = pb.W - pb.S + 1;
    return pb;
  }
  kcnn::Impl::LogicalStrides strides(Layout layout) const {
    return layout == Layout::NCHW ? kcnn::Impl::LogicalStrides{K(), R * S, S, 1}
                                  : kcnn::Impl::LogicalStrides{K(), 1, S * C, C};
  }
  void tap(Layout layout, std::int64_t k, int& c, int& r, int& s) const {
    if (layout == Layout::NCHW) {
      c = int(k / (R * S)), r = int(k / S % R), s = int(k % S);
    } else {
      r = int(k / (S * C)), s = int(k / C % S), c = int(k % C);
    }
  }
};

/// TensorCoreGemm's packed weights (float): every lane's quad of every MMA k-step holds
/// the fragment the PTX ISA assigns it (m16n8k8 A: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
/// a3 (g + 8, t + 4)) at the stage taps B's chunks give MMA slots (slot t of k-step ks:
/// tap 4 t + 2 ks, slot t + 4: tap 4 t + 2 ks + 1), rounded to TF32 under TF32 and as
/// they are under TF32x3, zeros past M and K; both layouts, on the host.
TEST(TensorCoreGemm, PackedWeightsHoldTheFragmentsTheMmasRead) {
  namespace I = kcnn::Impl;
  using Host = Kokkos::DefaultHostExecutionSpace;
  using Tile = I::TensorCoreTiles::FloatNhwcSmallM;
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (PackGeometry g : {PackGeometry{1, 1, 1, 1}, PackGeometry{70, 3, 3, 3},
                           PackGeometry{17, 5, 1, 7}, PackGeometry{64, 16, 1, 1}})
      for (bool round : {true, false}) {
        const I::Conv2dProblem pb = g.problem();
        const int K = g.K();
        // w(m, c, r, s) = 1 + m + 2^-12 (c * R * S + r * S + s + 1): not TF32 numbers
        const I::LogicalStrides ws = g.strides(layout);
        auto weight = [&](int m, int c, int r, int s) {
          return 1.0f + m + std::ldexp(float(c * g.R * g.S + r * g.S + s + 1), -12);
        };
        Kokkos::View<float*, Kokkos::HostSpace> w("w", std::size_t(g.M) * K);
        for (int m = 0; m < g.M; ++m)
          for (int c = 0; c < g.C; ++c)
            for (int r = 0; r < g.R; ++r)
              for (int s = 0; s < g.S; ++s)
                w(ws.offset(m, c, r, s)) = weight(m, c, r, s);
        const auto shape = I::TensorCorePackedWeightsShape<Tile>::of(g.M, K);
        ASSERT_EQ(shape.m_pad, (g.M + 63) / 64 * 64);
        ASSERT_EQ(shape.steps, (K + 15) / 16);
        Kokkos::View<float*, Kokkos::HostSpace> packed("packed", shape.elements());
        auto pack = [&](auto layout_tag, auto round_tag) {
          constexpr Layout L = decltype(layout_tag)::value;
          Kokkos::parallel_for(
              Kokkos::RangePolicy<Host, Kokkos::IndexType<std::int64_t>>(0, shape.elements()),
              I::PackTensorCoreWeights<L, float, decltype(round_tag)::value>{
                  I::UnrollMap<L>::from(pb), w.data(), ws, packed.data(), g.M, K,
                  shape.m_pad / 16});
          Kokkos::fence();
        };
        auto pack_rounded = [&](auto layout_tag) {
          if (round) {
            pack(layout_tag, std::true_type{});
          } else {
            pack(layout_tag, std::false_type{});
          }
        };
        if (layout == Layout::NCHW) {
          pack_rounded(std::integral_constant<Layout, Layout::NCHW>{});
        } else {
          pack_rounded(std::integral_constant<Layout, Layout::NHWC>{});
        }
        // The GEMM's k order (UnrollMap): NCHW (c, r, s), NHWC (r, s, c), c/s fastest.
        auto expected = [&](std::int64_t m, std::int64_t k) {
          if (m >= g.M || k >= K) return 0.0f;
          int c, r, s;
          g.tap(layout, k, c, r, s);
          const float v = weight(int(m), c, r, s);
          return round ? I::tf32_value(I::tf32_round(v)) : v;
        };
        std::int64_t i = 0;
        for (std::int64_t stage = 0; stage < shape.steps; ++stage)
          for (std::int64_t block = 0; block < shape.m_pad / 16; ++block)
            for (int ks = 0; ks < 2; ++ks)
              for (int lane = 0; lane < 32; ++lane)
                for (int a = 0; a < 4; ++a, ++i) {
                  const int gr = lane / 4, t = lane % 4;
                  const int row = gr + (a % 2 == 1 ? 8 : 0), slot = t + (a >= 2 ? 4 : 0);
                  const int tap = 4 * (slot % 4) + 2 * ks + slot / 4;
                  ASSERT_EQ(packed(i), expected(16 * block + row, 16 * stage + tap))
                      << kcnn::to_string(layout) << " M " << g.M << " K " << K << " index " << i;
                }
        ASSERT_EQ(i, shape.elements());
      }
}

/// 16-bit weights are packed as m16n8k16's A fragments (PTX ISA, "Matrix Fragments for
/// mma.m16n8k16"): lane (g, t) of MMA k-step ks holds in register r (two elements, the
/// lower k in the low half) row g + 8 (r % 2), taps 16 ks + 2 t + 8 (r / 2) and the next,
/// the stage's taps in their natural order (B comes from ldmatrix on rows of taps in
/// order); bit-exact copies, zeros past M and K; both layouts, on the host, for each
/// 16-bit type that is 16 bits in this build (kcnn::bfloat16 is where Kokkos is older
/// than 3.6; half_t and bhalf_t are float in host-only Kokkos builds).
template <class B16>
void check_packed_16bit_weights() {
  namespace I = kcnn::Impl;
  using Host = Kokkos::DefaultHostExecutionSpace;
  auto from_bits = [](std::uint16_t bits) {
    B16 v;
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(v));  // (a class type in some builds)
    return v;
  };
  auto bits_of = [](B16 v) {
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const void*>(&v), sizeof(bits));
    return bits;
  };
  {
    using Tile = I::TensorCoreTiles::Bit16NhwcSmallM<B16>;
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (PackGeometry g : {PackGeometry{1, 1, 1, 1}, PackGeometry{70, 3, 3, 3},
                             PackGeometry{17, 5, 1, 7}, PackGeometry{64, 40, 1, 1}}) {
        const I::Conv2dProblem pb = g.problem();
        const int K = g.K();
        const I::LogicalStrides ws = g.strides(layout);
        // A distinct, nonzero bit pattern per weight: 0x1000 + m * K + k' (k' in (c, r, s)
        // order), below the 16-bit limit for these geometries.
        auto weight_bits = [&](int m, int c, int r, int s) {
          return std::uint16_t(0x1000 + m * K + c * g.R * g.S + r * g.S + s);
        };
        Kokkos::View<B16*, Kokkos::HostSpace> w("w", std::size_t(g.M) * K);
        for (int m = 0; m < g.M; ++m)
          for (int c = 0; c < g.C; ++c)
            for (int r = 0; r < g.R; ++r)
              for (int s = 0; s < g.S; ++s)
                w(ws.offset(m, c, r, s)) = from_bits(weight_bits(m, c, r, s));
        const auto shape = I::TensorCorePackedWeightsShape<Tile>::of(g.M, K);
        ASSERT_EQ(shape.m_pad, (g.M + 63) / 64 * 64);
        ASSERT_EQ(shape.steps, (K + 31) / 32);
        Kokkos::View<B16*, Kokkos::HostSpace> packed("packed", shape.elements());
        Kokkos::deep_copy(packed, from_bits(0x7fc1));  // a NaN the packing must overwrite
        auto pack = [&](auto layout_tag) {
          constexpr Layout L = decltype(layout_tag)::value;
          Kokkos::parallel_for(
              Kokkos::RangePolicy<Host, Kokkos::IndexType<std::int64_t>>(0, shape.elements()),
              I::PackTensorCoreWeights<L, B16, false>{I::UnrollMap<L>::from(pb), w.data(), ws,
                                                      packed.data(), g.M, K, shape.m_pad / 16});
          Kokkos::fence();
        };
        if (layout == Layout::NCHW) {
          pack(std::integral_constant<Layout, Layout::NCHW>{});
        } else {
          pack(std::integral_constant<Layout, Layout::NHWC>{});
        }
        auto expected = [&](std::int64_t m, std::int64_t k) -> std::uint16_t {
          if (m >= g.M || k >= K) return 0;
          int c, r, s;
          g.tap(layout, k, c, r, s);
          return weight_bits(int(m), c, r, s);
        };
        std::int64_t i = 0;
        for (std::int64_t stage = 0; stage < shape.steps; ++stage)
          for (std::int64_t block = 0; block < shape.m_pad / 16; ++block)
            for (int ks = 0; ks < 2; ++ks)
              for (int lane = 0; lane < 32; ++lane)
                for (int reg = 0; reg < 4; ++reg)
                  for (int half = 0; half < 2; ++half, ++i) {
                    const int row = lane / 4 + 8 * (reg % 2);
                    const int tap = 16 * ks + 2 * (lane % 4) + 8 * (reg / 2) + half;
                    ASSERT_EQ(bits_of(packed(i)), expected(16 * block + row, 32 * stage + tap))
                        << kcnn::to_string(layout) << " M " << g.M << " K " << K << " index " << i;
                  }
        ASSERT_EQ(i, shape.elements());
      }
  }
}

TEST(TensorCoreGemm, PackedSixteenBitWeightsHoldTheM16n8k16Fragments) {
  int checked = 0;
  if constexpr (sizeof(kcnn::bfloat16) == 2) {
    check_packed_16bit_weights<kcnn::bfloat16>();
    ++checked;
  }
  if constexpr (sizeof(Kokkos::Experimental::half_t) == 2) {
    check_packed_16bit_weights<Kokkos::Experimental::half_t>();
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no 16-bit type is 16 bits in this build";
}

/// TensorCoreGemm splits K where its tile grid leaves most of the H100's 264 team slots
/// (132 multiprocessors x 2) idle, within the workspace budget, and nowhere else.
TEST(TensorCoreGemm, SplitsKWhereTheTileGridIsSmall) {
  namespace I = kcnn::Impl;
  auto slices = [](auto tile, int M, int K, std::int64_t J,
                   std::size_t budget = std::size_t(1) << 30) {
    I::ImplicitGemmOperands<Layout::NHWC, float> o{};
    o.M = M, o.K = K, o.J = J;
    const auto plan = I::tensor_core_split_plan<decltype(tile)>(o, 132, budget);
    if (plan.k_slices > 1) {
      EXPECT_EQ(plan.partial_bytes, std::size_t(plan.k_slices) * sizeof(float) * M * J);
    }
    return plan.k_slices;
  };
  using Small = I::TensorCoreTiles::FloatNhwcSmallM;
  using Large = I::TensorCoreTiles::FloatNhwcLargeM;
  EXPECT_EQ(slices(Large{}, 512, 4608, 32 * 49), 5);   // 100 tiles
  EXPECT_EQ(slices(Large{}, 256, 2304, 64 * 196), 2);  // 392 tiles: 1.5 waves
  EXPECT_EQ(slices(Large{}, 128, 1152, 64 * 784), 1);  // 784 tiles
  EXPECT_EQ(slices(Small{}, 64, 576, 64 * 3136), 1);
  EXPECT_EQ(slices(Small{}, 40, 1152, 20), 2);           // tc_split_k_vec: one tile, 72 stages
  EXPECT_EQ(slices(Large{}, 512, 4608, 32 * 49, 1), 1);  // no room for partial sums
}

/// NCHW problems with R*S > 1 and C a multiple of a 16-byte vector run on the NHWC kernel
/// with x (and double's w) copied channels-last where the copies fit the workspace limit,
/// and on the NCHW kernel where they do not (one byte short); the others always on the
/// NCHW kernel. All match the double reference: float under TF32 and TF32x3, double, on
/// the tile edges (odd channel counts, 1x1, dilation and stride, K split into slices) and
/// prime extents.
TEST(TensorCoreGemm, NchwRunsChannelsLastWhereTheWorkspaceAllows) {
  namespace I = kcnn::Impl;
  if (!backend_has_tensor_cores(Backend::Default)) GTEST_SKIP() << "no tensor cores";
  with_backend(Backend::Default, [&](const auto& space) {
    using Space = std::decay_t<decltype(space)>;
    auto run = [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                   const kcnn::Conv2dParams& params) {
      kcnn::conv2d_forward(space, x, w, bias, y, params);
    };
    std::vector<ConvCase> shapes = tensor_core_edges();
    shapes.push_back({"prime_padded", 3, 5, 13, 11, 7, 3, 3, 1, 1, 1, 1});
    auto check = [&](auto scalar_tag, ConvCase c) {
      using T = decltype(scalar_tag);
      c.layout = Layout::NCHW, c.bias = true, c.activation = Activation::ReLU;
      const std::int64_t K = std::int64_t(c.C) * c.R * c.S;
      I::ChannelsLastStaging<T> staging;
      staging.N = c.N, staging.C = c.C, staging.H = c.H, staging.W = c.W;
      staging.M = c.M, staging.R = c.R, staging.S = c.S;
      staging.copy_w = std::is_same_v<T, double>;
      constexpr I::TensorCoreMath packing =
          std::is_same_v<T, double> ? I::TensorCoreMath::F64 : I::TensorCoreMath::TF32;
      const std::size_t pack = I::with_tensor_core_tile<T, Layout::NHWC>(c.M, [&](auto tile) {
        return I::tensor_core_pack_bytes<decltype(tile), packing>(c.M, K);
      });
      const bool stages = c.R * c.S > 1 && c.C % kcnn::Impl::vector_elements_v<T> == 0;
      for (bool room : {true, false}) {
        SCOPED_TRACE(c.name + (room ? " with room" : " without room") + " for the copy");
        c.workspace_limit_bytes = room ? 0 : staging.bytes() + pack - 1;
        const LaunchedKernels launched;
        check_forward_with<T>(space, c, ConvAlgo::TensorCoreGemm, run);
        EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core::x_channels_last"), room && stages);
        EXPECT_EQ(launched.saw("kcnn::conv2d::tensor_core::w_channels_last"),
                  (room && stages && std::is_same_v<T, double>));
      }
    };
    if constexpr (I::has_tensor_cores_v<Space>) {
      for (ConvCase c : shapes) {
        for (MathMode math : {MathMode::TF32, MathMode::TF32x3}) {
          c.math = math;
          check(float{}, c);
        }
        c.math = MathMode::Strict;
        check(double{}, c);
      }
    }
  });
}

TEST(TensorCoreGemm, CanImplementNamesItsLimits) {
  for (Backend b : backends())
    with_backend(b, [&](const auto& space) {
      using Space = std::decay_t<decltype(space)>;
      ConvCase c{"can_implement", 1, 8, 8, 8, 16, 3, 3, 1, 1, 1, 1};
      c.layout = Layout::NHWC;
      const RandomConvInputs<float, Space> in(c);
      const auto &x = in.x, &w = in.w;
      const auto ye = c.y_extents();
      Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
      auto why = [&](MathMode math, std::size_t workspace_limit = 0) {
        auto params = c.params();
        params.math = math;
        params.workspace_limit_bytes = workspace_limit;
        params.algo = ConvAlgo::TensorCoreGemm;
        try {
          kcnn::conv2d_forward(space, x, w, y, params);
          space.fence();
          return std::string();
        } catch (const kcnn::Error& e) {
          return std::string(e.what());
        }
      };
      if (kcnn::Impl::has_tensor_cores_v<Space>) {
        EXPECT_EQ(why(MathMode::TF32), "");
        EXPECT_EQ(why(MathMode::TF32x3), "");
        EXPECT_NE(why(MathMode::Strict).find("MathMode::TF32"), std::string::npos);
        // The packed weights take 64 filters x 80 taps x 4 bytes.
        EXPECT_NE(why(MathMode::TF32, 20479).find("workspace"), std::string::npos);
        EXPECT_EQ(why(MathMode::TF32, 20480), "");
      } else {
        EXPECT_NE(why(MathMode::TF32).find("tensor cores"), std::string::npos)
            << why(MathMode::TF32);
      }
    });
}

/// The grid-constant parameter of GridConstantProbe's launches.
struct GridConstantTable {
  int values[64];
};

/// What launch_grid_constant_teams' kernel shows a team: each thread writes its league
/// and team ranks, the value it reads from the grid-constant parameter through a member's
/// address (as the TMA kernels hand their tensor maps' addresses to the hardware), and
/// whether its scratch starts on 1,024 bytes and holds what the team wrote there.
struct GridConstantProbe {
  static constexpr int kThreads = 64;
  int* out;  ///< 4 ints per thread

  KOKKOS_INLINE_FUNCTION void operator()(const kcnn::Impl::GridConstantTeam& team,
                                         const GridConstantTable& table) const {
    const int t = team.team_rank(), league = team.league_rank();
    unsigned char* const scratch = team.scratch_aligned(1024);
    int* const shared = reinterpret_cast<int*>(scratch);
    shared[t] = league * 1000 + t;
    team.team_barrier();
    const int* const member = table.values;  // the parameter's own address
    int* const mine = out + 4 * (league * kThreads + t);
    mine[0] = league;
    mine[1] = t;
    mine[2] = member[(t + league) % kThreads];
    const bool aligned = reinterpret_cast<std::uintptr_t>(scratch) % 1024 == 0;
    mine[3] = aligned && shared[kThreads - 1 - t] == league * 1000 + kThreads - 1 - t &&
              team.league_size() == 7;
  }
};

/// The grid-constant launch (arch/grid_constant_launch.hpp, CUDA only): every team of the
/// league runs with its ranks, member addresses read the parameter, the scratch is
/// aligned as asked, Kokkos Tools see the label, and asking for more scratch than the
/// kernel's limit throws before launching.
TEST(GridConstantLaunch, RunsEveryTeamOnTheInstancesStream) {
#if !defined(KOKKOS_ENABLE_CUDA)
  GTEST_SKIP() << "a grid-constant launch is CUDA's";
#else
  namespace I = kcnn::Impl;
  constexpr int teams = 7, threads = GridConstantProbe::kThreads;
  constexpr std::size_t scratch = threads * sizeof(int) + 1024;
  Kokkos::View<int*, Kokkos::CudaSpace> out("out", 4 * teams * threads);
  Kokkos::deep_copy(out, -1);
  GridConstantTable table{};
  for (int i = 0; i < threads; ++i)
    table.values[i] = 3 * i + 11;
  const GridConstantProbe probe{out.data()};
  const Kokkos::Cuda space;
  {
    const LaunchedKernels launched;
    I::launch_grid_constant_teams<threads, 1, scratch>(space, "kcnn::test::grid_constant", teams,
                                                       scratch, probe, table);
    EXPECT_TRUE(launched.saw("kcnn::test::grid_constant"));
  }
  space.fence();
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  for (int league = 0; league < teams; ++league)
    for (int t = 0; t < threads; ++t) {
      const int* const mine = &host(4 * (league * threads + t));
      EXPECT_EQ(mine[0], league);
      EXPECT_EQ(mine[1], t);
      EXPECT_EQ(mine[2], 3 * ((t + league) % threads) + 11);
      EXPECT_EQ(mine[3], 1) << "team " << league << " thread " << t;
    }
  EXPECT_THROW((I::launch_grid_constant_teams<threads, 1, scratch>(
                   space, "kcnn::test::grid_constant", teams, scratch + 1, probe, table)),
               std::runtime_error);
#endif
}

}  // namespace
}  // namespace kcnn_test
