// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The standalone drivers' timer (perf_tests/data/s37-* on): the median of `reps` runs of
// f() after one warm-up, in milliseconds. CUDA: events on the default instance's stream
// around each run; host backends: wall time around the run and a fence.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace drv {

template <class F>
double time_ms(F f, int reps) {
  f();
  Kokkos::fence();
  std::vector<double> t;
#if defined(KOKKOS_ENABLE_CUDA)
  cudaStream_t stream = Kokkos::Cuda().cuda_stream();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < reps; i++) {
    cudaEventRecord(a, stream);
    f();
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
#else
  for (int i = 0; i < reps; i++) {
    const auto a = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
#endif
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace drv
