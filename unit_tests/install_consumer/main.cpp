// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Outside code using the installed package: one strided, padded, dilated NHWC
// convolution with bias checked against a direct double loop, and one invalid call.
#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const int N = 2, C = 3, H = 11, W = 9, M = 5, R = 3, S = 3;
  kcnn::Conv2dParams p;
  p.stride_h = 2, p.pad_h = 1, p.pad_w = 2, p.dilation_w = 2;
  p.layout = kcnn::Layout::NHWC;
  p.activation = kcnn::Activation::Tanh;
  const int P = (H + 2 * p.pad_h - p.dilation_h * (R - 1) - 1) / p.stride_h + 1;
  const int Q = (W + 2 * p.pad_w - p.dilation_w * (S - 1) - 1) / p.stride_w + 1;

  Kokkos::View<double****, Space::memory_space> x("x", N, H, W, C), w("w", M, R, S, C),
      y("y", N, P, Q, M);
  Kokkos::View<double*, Space::memory_space> b("b", M);
  auto hx = Kokkos::create_mirror_view(x), hw = Kokkos::create_mirror_view(w);
  auto hb = Kokkos::create_mirror_view(b);
  for (std::size_t i = 0; i < hx.span(); ++i)
    hx.data()[i] = std::sin(0.37 * i + 0.1);
  for (std::size_t i = 0; i < hw.span(); ++i)
    hw.data()[i] = std::cos(0.91 * i);
  for (int m = 0; m < M; ++m)
    hb(m) = 0.1 * m - 0.2;
  Kokkos::deep_copy(x, hx), Kokkos::deep_copy(w, hw), Kokkos::deep_copy(b, hb);

  kcnn::conv2d_forward(Space(), x, w, b, y, p);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);

  double max_err = 0;
  for (int n = 0; n < N; ++n)
    for (int pp = 0; pp < P; ++pp)
      for (int q = 0; q < Q; ++q)
        for (int m = 0; m < M; ++m) {
          double acc = hb(m);
          for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s)
              for (int c = 0; c < C; ++c) {
                const int h = pp * p.stride_h - p.pad_h + r * p.dilation_h;
                const int wc = q * p.stride_w - p.pad_w + s * p.dilation_w;
                if (h >= 0 && h < H && wc >= 0 && wc < W) acc += hx(n, h, wc, c) * hw(m, r, s, c);
              }
          max_err = std::fmax(max_err, std::fabs(std::tanh(acc) - hy(n, pp, q, m)));
        }

  bool threw = false;
  try {
    p.stride_w = 0;
    kcnn::conv2d_forward(Space(), x, w, b, y, p);
  } catch (const kcnn::Error& e) {
    threw = true;
    std::printf("invalid call rejected: %s\n", e.what());
  }
  std::printf("kcnn %s: max error %.3e\n", KCNN_VERSION_STRING, max_err);
  return (max_err < 1e-12 && threw) ? 0 : 1;
}
