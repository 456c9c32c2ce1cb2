// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ConvAlgo::ImplicitGemm beyond the conformance suite (test_conv2d_conformance.cpp):
// every GPU tile (Impl::ImplicitGemmDeviceTiles) launched directly, against the double
// host convolution. CUDA builds only; host builds compile this file to nothing.
#include "test_support.hpp"

namespace kcnn_test {
namespace {

using kcnn::Activation;
using kcnn::ConvAlgo;
using kcnn::Layout;

#if defined(KOKKOS_ENABLE_CUDA)
// ImplicitGemm picks its GPU tile from M and the number of output tiles, so small test
// shapes would reach only some tiles: run every tile directly on shapes with partial
// M, pixel and K tiles, both layouts, padding, stride and dilation.
template <class Tile>
void check_implicit_gemm_tile(const ConvCase& c) {
  using Space = Kokkos::DefaultExecutionSpace;
  check_forward_with<float>(Space(), c, ConvAlgo::ImplicitGemm,
                            [&](const auto& x, const auto& w, const auto& bias, const auto& y,
                                const kcnn::Conv2dParams& params) {
                              const auto pb =
                                  kcnn::Impl::make_conv2d_problem("test", x, w, bias, y, params);
                              auto launch = [&](auto layout_tag) {
                                constexpr kcnn::Layout L = decltype(layout_tag)::value;
                                const auto o = kcnn::Impl::implicit_gemm_operands<L>(
                                    kcnn::Impl::as_kernel_view<Space, false>(x),
                                    kcnn::Impl::as_kernel_view<Space, false>(w),
                                    kcnn::Impl::as_kernel_view<Space, false>(bias),
                                    kcnn::Impl::as_kernel_view<Space, true>(y), pb);
                                kcnn::Impl::implicit_gemm_device_launch<Tile>(Space(), o);
                              };
                              if (c.layout == Layout::NCHW) {
                                launch(std::integral_constant<Layout, Layout::NCHW>{});
                              } else {
                                launch(std::integral_constant<Layout, Layout::NHWC>{});
                              }
                            });
}

TEST(ImplicitGemmDeviceTiles, EveryTileMatchesReference) {
  using Tiles = kcnn::Impl::ImplicitGemmDeviceTiles;
  std::vector<ConvCase> cases = {{"m130_j507_k45_pad", 3, 5, 13, 13, 130, 3, 3, 1, 1, 1, 1},
                                 {"m70_k28_s2_d2", 2, 7, 21, 17, 70, 2, 2, 2, 2, 1, 0, 2, 2}};
  cases[0].activation = Activation::ReLU;
  cases[1].activation = Activation::Tanh;
  for (ConvCase c : cases)
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      c.layout = layout;
      c.bias = true;
      SCOPED_TRACE(c.name + " " + kcnn::to_string(layout));
      check_implicit_gemm_tile<Tiles::SmallM>(c);
      check_implicit_gemm_tile<Tiles::MidM>(c);
      check_implicit_gemm_tile<Tiles::LargeM>(c);
      check_implicit_gemm_tile<Tiles::HugeM>(c);
      check_implicit_gemm_tile<Tiles::Narrow>(c);
    }
}
#endif

}  // namespace
}  // namespace kcnn_test
