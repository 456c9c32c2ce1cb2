// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 47 (issue 24): the GPU bias gradient of conv2d_backward_weights (BiasGradient,
// impl/backward/conv2d_backward_gemm.hpp) before (one thread an element, its own index
// divisions; copied here) and after (rows to threads, q to vector lanes), on LeNet-5's
// dy at N = 64 and 1000, NCHW and NHWC: max relative error against a double host sum,
// and the median of 20 fenced calls.
#include <Kokkos_Core.hpp>
#include <kcnn/conv2d_backward.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kcnn;
using Space = Kokkos::DefaultExecutionSpace;

template <Layout L, class T>
struct OldBiasGradient {
  using Member = Kokkos::TeamPolicy<Space>::member_type;
  Impl::kernel_input4_t<Space, T> dy;
  Impl::kernel_view_t<Space, T*> dbias;
  std::int64_t N, P, Q;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const std::int64_t m = team.league_rank();
    float sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, N * P * Q),
        [&](const std::int64_t t, float& acc) {
          const std::int64_t q = t % Q, rest = t / Q;
          const std::int64_t p = rest % P, n = rest / P;
          acc += Impl::to_compute(Impl::at<L>(dy, n, m, p, q));
        },
        sum);
    Kokkos::single(Kokkos::PerTeam(team), [&] { dbias(m) = sum; });
  }
};

template <Layout L>
void run(int N, int M, int P, int Q) {
  const bool nchw = L == Layout::NCHW;
  Kokkos::View<float****, Kokkos::LayoutRight> dy("dy", N, nchw ? M : P, nchw ? P : Q,
                                                  nchw ? Q : M);
  Kokkos::View<float*> db("db", M);
  auto h = Kokkos::create_mirror_view(dy);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (std::size_t i = 0; i < h.span(); ++i)
    h.data()[i] = d(rng);
  Kokkos::deep_copy(dy, h);
  std::vector<double> ref(M, 0.0), mag(M, 0.0);
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < M; ++m)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          const double v = nchw ? h(n, m, p, q) : h(n, p, q, m);
          ref[m] += v, mag[m] += std::abs(v);
        }
  const auto dyk = Impl::as_kernel_view<Space, false>(dy);
  const Impl::kernel_view_t<Space, float*> dbk(db.data(), Kokkos::LayoutStride(M, 1));
  auto time = [&](auto launch) {
    std::vector<double> t;
    for (int r = 0; r < 21; ++r) {
      Kokkos::fence();
      auto t0 = std::chrono::steady_clock::now();
      launch();
      Kokkos::fence();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), db);
    double err = 0;
    for (int m = 0; m < M; ++m)
      err = std::max(err, std::abs(hb(m) - ref[m]) / mag[m]);
    std::printf("  %.4f ms, max |err| / sum|dy| %.2e\n", t[10] * 1e3, err);
  };
  std::printf("%s N=%d M=%d %dx%d old:", nchw ? "NCHW" : "NHWC", N, M, P, Q);
  time([&] {
    Kokkos::parallel_for(Kokkos::TeamPolicy<Space>(M, Kokkos::AUTO),
                         OldBiasGradient<L, float>{dyk, dbk, N, P, Q});
  });
  std::printf("%s N=%d M=%d %dx%d new:", nchw ? "NCHW" : "NHWC", N, M, P, Q);
  time([&] {
    Kokkos::parallel_for(Kokkos::TeamPolicy<Space>(M, 8, 32),
                         Impl::BiasGradient<L, Space, float>{dyk, dbk, N, P, Q});
  });
}

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  if (argc > 1) {  // small shapes only (compute-sanitizer)
    run<Layout::NCHW>(2, 4, 20, 20);
    run<Layout::NHWC>(2, 3, 9, 7);
    return 0;
  }
  for (int N : {64, 1000}) {
    run<Layout::NCHW>(N, 4, 80, 80);
    run<Layout::NCHW>(N, 16, 34, 34);
    run<Layout::NHWC>(N, 16, 34, 34);
  }
  run<Layout::NCHW>(3, 5, 13, 7);  // odd
  run<Layout::NHWC>(1, 1, 1, 1);
}
