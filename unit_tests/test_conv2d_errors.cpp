// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Every invalid conv2d_forward call throws kcnn::Error (a std::invalid_argument) whose
// message names the problem, and leaves y exactly as it was.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::ConvAlgo;
using kcnn::Layout;
using Space = Kokkos::DefaultExecutionSpace;
using T4 = Tensor4<float, Space>;
using T1 = Tensor1<float, Space>;

constexpr float kSentinel = 12.5f;

/// A valid NCHW problem (N=2, C=3, 9x8 input, M=4, 3x3 filters, pad 1) whose pieces
/// each error test breaks one at a time.
struct Fixture {
  ConvCase c{"valid", 2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1};
  T4 x = make_tensor<float, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 1));
  T4 w = make_tensor<float, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 2));
  T1 bias = make_vector<float, Space>("bias", random_values(c.M, 3));
  kcnn::Conv2dParams params = c.params();
};

template <class YView>
void fill_sentinel(const YView& y) {
  Kokkos::deep_copy(y, kSentinel);
}

template <class YView>
bool untouched(const YView& y) {
  Kokkos::fence();
  for (double v : to_host(y))
    if (v != kSentinel) return false;
  return true;
}

/// Runs `call`, expects kcnn::Error whose message contains `needle`.
template <class F>
void expect_error(F&& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected kcnn::Error mentioning '" << needle << "'";
  } catch (const kcnn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kcnn::conv2d_forward"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "message: " << what;
    // kcnn::Error is a std::invalid_argument.
    const std::invalid_argument& base = e;
    EXPECT_EQ(std::string(base.what()), what);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// Breaks one thing about a valid call, runs it, checks the error and that y survived.
void expect_rejected(const std::string& needle,
                     const std::function<void(Fixture&, T4& y, kcnn::Conv2dParams&)>& breaker,
                     std::array<int, 4> y_extents = {0, 0, 0, 0}) {
  Fixture f;
  if (y_extents[0] == 0 && y_extents[1] == 0) y_extents = f.c.y_extents();
  T4 y("y", y_extents[0], y_extents[1], y_extents[2], y_extents[3]);
  fill_sentinel(y);
  auto params = f.params;
  expect_error([&] { breaker(f, y, params); }, needle);
  EXPECT_TRUE(untouched(y));
}

TEST(Conv2dErrors, ChannelMismatch) {
  expect_rejected("channel mismatch", [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
    T4 w5("w5", 4, 5, 3, 3);
    Kokkos::deep_copy(w5, 1.0f);
    kcnn::conv2d_forward(Space(), f.x, w5, f.bias, y, p);
  });
}

TEST(Conv2dErrors, WrongOutputBatch) {
  expect_rejected("wrong y extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {3, 4, 9, 8});
}

TEST(Conv2dErrors, WrongOutputChannels) {
  expect_rejected("wrong y extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {2, 5, 9, 8});
}

TEST(Conv2dErrors, WrongOutputHeight) {
  expect_rejected("wrong y extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {2, 4, 7, 8});
}

TEST(Conv2dErrors, WrongOutputWidth) {
  expect_rejected("wrong y extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {2, 4, 9, 9});
}

TEST(Conv2dErrors, OutputInOtherLayoutOrder) {
  // NHWC-ordered y extents for an NCHW problem are rejected.
  expect_rejected("wrong y extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {2, 9, 8, 4});
}

TEST(Conv2dErrors, StrideBelowOne) {
  for (auto [sh, sw] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{-2, 1}}) {
    expect_rejected("stride must be >= 1",
                    [sh = sh, sw = sw](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                      p.stride_h = sh, p.stride_w = sw;
                      kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                    });
  }
}

TEST(Conv2dErrors, DilationBelowOne) {
  for (auto [dh, dw] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{-1, -1}}) {
    expect_rejected("dilation must be >= 1",
                    [dh = dh, dw = dw](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                      p.dilation_h = dh, p.dilation_w = dw;
                      kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                    });
  }
}

TEST(Conv2dErrors, NegativePadding) {
  for (auto [ph, pw] : {std::pair{-1, 0}, std::pair{0, -1}}) {
    expect_rejected("padding must be >= 0",
                    [ph = ph, pw = pw](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                      p.pad_h = ph, p.pad_w = pw;
                      kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                    });
  }
}

TEST(Conv2dErrors, FilterLargerThanPaddedInput) {
  expect_rejected("empty output",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    T4 x_small("x_small", 2, 3, 2, 8);  // 2 rows, 3x3 filter, no padding
                    Kokkos::deep_copy(x_small, 1.0f);
                    p.pad_h = p.pad_w = 0;
                    kcnn::conv2d_forward(Space(), x_small, f.w, f.bias, y, p);
                  },
                  {2, 4, 1, 8});
}

TEST(Conv2dErrors, DilatedFilterLargerThanInput) {
  expect_rejected("empty output", [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
    p.pad_h = p.pad_w = 0;
    p.dilation_h = 5;  // span 11 > 9 rows
    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
  });
}

TEST(Conv2dErrors, BiasExtentNeitherZeroNorM) {
  expect_rejected("bias has extent 3", [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
    T1 bias3("bias3", 3);
    kcnn::conv2d_forward(Space(), f.x, f.w, bias3, y, p);
  });
}

TEST(Conv2dErrors, OutputOverlapsInput) {
  expect_rejected("y overlaps x", [](Fixture& f, T4&, kcnn::Conv2dParams& p) {
    // y shares x's memory (same element count: 2*4*9*8 vs x 2*3*9*8: use a bigger x).
    T4 big("big", 2, 4, 9, 8);
    Kokkos::deep_copy(big, 1.0f);
    Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        x_alias(big.data(), 2, 3, 9, 8);
    kcnn::conv2d_forward(Space(), x_alias, f.w, f.bias, big, p);
  });
}

TEST(Conv2dErrors, OutputOverlapsWeights) {
  Fixture f;
  T4 y("y", 2, 4, 9, 8);
  fill_sentinel(y);
  // w lives inside y's allocation (its last 4*3*3*3 elements).
  Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      w_alias(y.data() + y.span() - 108, 4, 3, 3, 3);
  expect_error([&] { kcnn::conv2d_forward(Space(), f.x, w_alias, f.bias, y, f.params); },
               "y overlaps w");
  EXPECT_TRUE(untouched(y));
}

TEST(Conv2dErrors, OutputOverlapsBias) {
  Fixture f;
  T4 y("y", 2, 4, 9, 8);
  fill_sentinel(y);
  Kokkos::View<float*, Kokkos::LayoutRight, Space::memory_space,
               Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      bias_alias(y.data() + 10, 4);
  expect_error([&] { kcnn::conv2d_forward(Space(), f.x, f.w, bias_alias, y, f.params); },
               "y overlaps bias");
  EXPECT_TRUE(untouched(y));
}

TEST(Conv2dErrors, NonContiguousOutput) {
  Fixture f;
  T4 big("big", 2, 4, 9, 10);
  fill_sentinel(big);
  auto y =
      Kokkos::subview(big, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::pair<int, int>(0, 8));
  expect_error([&] { kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, f.params); }, "contiguous");
  EXPECT_TRUE(untouched(big));
}

TEST(Conv2dErrors, UnknownAlgorithm) {
  // Every named algorithm is implemented; a value outside the enum is still refused.
  expect_rejected("not implemented yet", [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
    p.algo = static_cast<ConvAlgo>(42);
    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
  });
}

TEST(Conv2dErrors, ImplicitGemmGeometryLimit) {
  // The implicit GEMM's gathers use 32-bit window coordinates: a padded extent of 2^29
  // or more is refused (here by padding, with a stride that keeps y small).
  expect_rejected("ConvAlgo::ImplicitGemm: padded input extents",
                  [](Fixture& f, T4& y, kcnn::Conv2dParams& p) {
                    p.algo = ConvAlgo::ImplicitGemm;
                    p.pad_h = 1 << 28;
                    p.stride_h = 1 << 30;
                    kcnn::conv2d_forward(Space(), f.x, f.w, f.bias, y, p);
                  },
                  {2, 4, 1, 8});
}

TEST(Conv2dErrors, NhwcChannelMismatch) {
  expect_rejected("channel mismatch",
                  [](Fixture&, T4& y, kcnn::Conv2dParams& p) {
                    p.layout = Layout::NHWC;
                    T4 x("x", 2, 9, 8, 3), w("w", 4, 3, 3, 2);  // x has C=3, w has C=2
                    kcnn::conv2d_forward(Space(), x, w, y, p);
                  },
                  {2, 9, 8, 4});
}

TEST(Conv2dErrors, EmptyBatchIsNoOp) {
  Fixture f;
  T4 x0("x0", 0, 3, 9, 8), y0("y0", 0, 4, 9, 8);
  EXPECT_NO_THROW(kcnn::conv2d_forward(Space(), x0, f.w, f.bias, y0, f.params));
  // ... but an empty batch is still validated.
  T4 y_bad("y_bad", 0, 5, 9, 8);
  expect_error([&] { kcnn::conv2d_forward(Space(), x0, f.w, f.bias, y_bad, f.params); },
               "wrong y extents");
}

}  // namespace
}  // namespace kcnn_test
