// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Quickstart: one convolution layer (LeNet-5's C3: 4 -> 16 channels, 7x7 filters, bias,
// ReLU) on a batch of random images, with a checksum of the result.
//
//   kcnn_quickstart [batch]
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const int batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const int C = 4, H = 40, W = 40, M = 16, R = 7, S = 7;

  using Space = Kokkos::DefaultExecutionSpace;
  using Tensor = Kokkos::View<float****, Kokkos::LayoutRight, Space::memory_space>;
  Tensor x("x", batch, C, H, W);  // NCHW input
  Tensor w("w", M, C, R, S);      // filters
  Kokkos::View<float*, Space::memory_space> bias("bias", M);
  Tensor y("y", batch, M, H - R + 1, W - S + 1);

  Kokkos::Random_XorShift64_Pool<Space> pool(2024);
  Kokkos::fill_random(x, pool, -1.0f, 1.0f);
  Kokkos::fill_random(w, pool, -0.1f, 0.1f);
  Kokkos::fill_random(bias, pool, -0.5f, 0.5f);

  kcnn::Conv2dParams params;  // stride 1, no padding, NCHW
  params.activation = kcnn::Activation::ReLU;
  kcnn::conv2d_forward(Space(), x, w, bias, y, params);  // asynchronous

  double checksum = 0;
  Kokkos::parallel_reduce(
      "checksum", Kokkos::RangePolicy<Space>(0, y.span()),
      KOKKOS_LAMBDA(const std::size_t i, double& sum) { sum += y.data()[i]; }, checksum);

  std::printf("kcnn %s on %s: conv %dx%dx%dx%d (*) %dx%dx%dx%d + bias, ReLU -> %dx%dx%dx%d\n",
              KCNN_VERSION_STRING, Space::name(), batch, C, H, W, M, C, R, S, batch, M,
              static_cast<int>(y.extent(2)), static_cast<int>(y.extent(3)));
  std::printf("checksum (sum of outputs) = %.6e\n", checksum);
  return 0;
}
