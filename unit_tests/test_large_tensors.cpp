// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tensors past 2^31 elements on GPUs (the H100 has 80 GB; these need about 20 GB), for
// every kernel with a separate 64-bit path: Tiled's staging (x offsets beyond int),
// ImplicitGemm's gathers, pooling's Flat64 kernel, im2col/col2im's 64-bit kernels. x is
// filled on the device from its index by a hash, so the host reference evaluates the
// same hash at the cells a sampled output reads (no copy of x). Host builds skip them.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using Space = Kokkos::DefaultExecutionSpace;
constexpr bool kOnGpu = !kcnn::Impl::runs_on_host_v<Space>;

/// A value in [-1, 1) from an index (splitmix64), the same on host and device.
KOKKOS_INLINE_FUNCTION float hashed(std::uint64_t i) {
  std::uint64_t z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return float(double(z >> 40) / double(1ULL << 24) * 2.0 - 1.0);
}

template <class View>
void fill_hashed(const View& v, std::uint64_t salt) {
  auto* p = v.data();
  Kokkos::parallel_for(
      "fill_hashed", Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, v.span()),
      KOKKOS_LAMBDA(std::int64_t i) { p[i] = hashed(std::uint64_t(i) + salt); });
}

/// Sampled outputs (first, last, a spread in between) of a flat array of n elements.
std::vector<std::int64_t> samples(std::int64_t n) {
  std::vector<std::int64_t> s;
  for (int k = 0; k < 64; ++k)
    s.push_back(k == 63 ? n - 1 : n / 63 * k);
  return s;
}

// x with 2^31 + ... elements (N=1, C=2, H=W=32771: 2,147,876,882): Tiled's staging, the
// pooling's Flat64 kernel, ImplicitGemm's gathers; NCHW and NHWC.
TEST(LargeTensors, ConvAndPoolPast2To31Elements) {
  if constexpr (!kOnGpu) GTEST_SKIP() << "GPU only (8 GB tensors)";
  for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    ConvCase c{"large", 1, 2, 32771, 32771, 2, 3, 3, 1, 1, 1, 1};
    c.layout = layout;
    const auto xe = c.x_extents(), we = c.w_extents(), ye = c.y_extents();
    Tensor4<float, Space> x("x", xe[0], xe[1], xe[2], xe[3]);
    fill_hashed(x, 0);
    const auto wv = random_values(product(we), 7);
    const auto w = make_tensor<float, Space>("w", we, wv);
    Tensor4<float, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
    auto xval = [&](int n, int ch, int h, int wc) -> double {
      return hashed(x_index(c, n, ch, h, wc));
    };
    for (kcnn::ConvAlgo algo : {kcnn::ConvAlgo::Tiled, kcnn::ConvAlgo::ImplicitGemm}) {
      SCOPED_TRACE(std::string(kcnn::to_string(layout)) + " " + kcnn::to_string(algo));
      poison(y);
      auto params = c.params();
      params.algo = algo;
      kcnn::conv2d_forward(Space(), x, w, y, params);
      Space().fence();
      auto yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
      for (std::int64_t i : samples(std::int64_t(yh.span()))) {
        const auto [n, m, p, q] = layout_coordinates(c.nhwc(), c.M, c.P(), c.Q(), i);
        double want = 0;
        for (int ch = 0; ch < c.C; ++ch)
          for (int r = 0; r < c.R; ++r)
            for (int s = 0; s < c.S; ++s) {
              const std::int64_t h = p * c.stride_h - c.pad_h + r * c.dilation_h;
              const std::int64_t wc = q * c.stride_w - c.pad_w + s * c.dilation_w;
              if (h < 0 || h >= c.H || wc < 0 || wc >= c.W) continue;
              want += xval(int(n), ch, int(h), int(wc)) * wv[w_index(c, int(m), ch, r, s)];
            }
        EXPECT_NEAR(yh.data()[i], want, 1e-4 * 9 * c.C) << "output " << i;
      }
    }
    // The pooling of x, 2x2 max at stride 2: input_size >= 2^31 picks the Flat64 kernel.
    PoolCase pc{"large_pool", 1, 2, c.H, c.W};
    pc.layout = layout;
    const auto pe = pc.y_extents();
    Tensor4<float, Space> yp("yp", pe[0], pe[1], pe[2], pe[3]);
    poison(yp);
    kcnn::pool2d_forward(Space(), x, yp, pc.params());
    Space().fence();
    auto ph = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yp);
    for (std::int64_t i : samples(std::int64_t(ph.span()))) {
      const auto [n, ch, p, q] = layout_coordinates(pc.nhwc(), pc.C, pc.P(), pc.Q(), i);
      double want = -1e30;
      for (int r = 0; r < pc.window_h; ++r)
        for (int s = 0; s < pc.window_w; ++s)
          want = std::max(
              want, xval(int(n), int(ch), int(p * pc.stride_h + r), int(q * pc.stride_w + s)));
      EXPECT_EQ(ph.data()[i], float(want)) << "pooled output " << i;
    }
  }
}

// im2col and col2im with an unrolled matrix of 2^31 + ... entries (x of 1 x 1 x 46341 x
// 46341, a 1x1 window): their 64-bit kernels without the test-only variant switch.
TEST(LargeTensors, Im2colAndCol2imPast2To31Entries) {
  if constexpr (!kOnGpu) GTEST_SKIP() << "GPU only (8 GB tensors)";
  const std::int64_t H = 46341, W = 46341;
  Tensor4<float, Space> x("x", 1, 1, H, W);
  fill_hashed(x, 99);
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> cols("cols", 1, H * W);
  kcnn::Conv2dParams params;
  kcnn::im2col(Space(), x, 1, 1, params, cols);
  Space().fence();
  auto ch = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cols);
  for (std::int64_t i : samples(H * W))
    EXPECT_EQ(ch(0, i), hashed(std::uint64_t(i) + 99)) << "entry " << i;
  // col2im of the same matrix with a 1x1 window is a copy back into x.
  poison(x);
  kcnn::col2im(Space(), cols, 1, 1, params, x);
  Space().fence();
  auto xh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  for (std::int64_t i : samples(H * W))
    EXPECT_EQ(xh.data()[i], hashed(std::uint64_t(i) + 99)) << "element " << i;
}

}  // namespace
}  // namespace kcnn_test
