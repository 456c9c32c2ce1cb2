// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Every public operation with a Kokkos profiling tool's callbacks attached (regions,
// fences, kernel launches), as Kokkos Tools users run: no kcnn code may make a Kokkos or
// Kokkos Kernels call inside a parallel region. Kokkos forbids it; with a tool attached,
// Kokkos 4.x fences on every region push and launch, and a fence inside an OpenMP
// parallel region deadlocks (a hang here is a failure by CTest's timeout). On OpenMP
// each callback also checks that it is not running inside a parallel region, which
// catches the fault on Kokkos versions that would not deadlock (3.4).
#include "test_support.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

namespace kcnn_test {
namespace {

using kcnn::ConvAlgo;
using kcnn::Layout;

/// The callbacks of a minimal profiling tool, attached while it lives: counts what it
/// sees and records every callback made from inside a host parallel region.
class AttachedTool {
 public:
  AttachedTool() {
    reset();
    namespace tools = Kokkos::Tools::Experimental;
    tools::set_push_region_callback([](const char* name) {
      regions()++;
      seen("push region ", name);
    });
    tools::set_pop_region_callback([] { seen("pop region", ""); });
    tools::set_begin_fence_callback([](const char* name, std::uint32_t, std::uint64_t* id) {
      *id = 0;
      seen("fence ", name);
    });
    tools::set_end_fence_callback([](std::uint64_t) { seen("end fence", ""); });
    tools::set_begin_parallel_for_callback(
        [](const char* name, std::uint32_t, std::uint64_t* id) { begin_kernel(name, id); });
    tools::set_begin_parallel_reduce_callback(
        [](const char* name, std::uint32_t, std::uint64_t* id) { begin_kernel(name, id); });
    tools::set_begin_parallel_scan_callback(
        [](const char* name, std::uint32_t, std::uint64_t* id) { begin_kernel(name, id); });
    tools::set_end_parallel_for_callback([](std::uint64_t) { seen("end kernel", ""); });
    tools::set_end_parallel_reduce_callback([](std::uint64_t) { seen("end kernel", ""); });
    tools::set_end_parallel_scan_callback([](std::uint64_t) { seen("end kernel", ""); });
  }
  ~AttachedTool() {
    namespace tools = Kokkos::Tools::Experimental;
    tools::set_push_region_callback(nullptr);
    tools::set_pop_region_callback(nullptr);
    tools::set_begin_fence_callback(nullptr);
    tools::set_end_fence_callback(nullptr);
    tools::set_begin_parallel_for_callback(nullptr);
    tools::set_begin_parallel_reduce_callback(nullptr);
    tools::set_begin_parallel_scan_callback(nullptr);
    tools::set_end_parallel_for_callback(nullptr);
    tools::set_end_parallel_reduce_callback(nullptr);
    tools::set_end_parallel_scan_callback(nullptr);
  }
  AttachedTool(const AttachedTool&) = delete;
  AttachedTool& operator=(const AttachedTool&) = delete;

  static std::atomic<long>& regions() {
    static std::atomic<long> n{0};
    return n;
  }
  static std::atomic<long>& kernels() {
    static std::atomic<long> n{0};
    return n;
  }
  /// The callbacks made from inside a parallel region ("" if none).
  static std::string violations() {
    const std::lock_guard<std::mutex> lock(mutex());
    return violation_list();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::string& violation_list() {
    static std::string list;
    return list;
  }
  static void reset() {
    regions() = 0, kernels() = 0;
    const std::lock_guard<std::mutex> lock(mutex());
    violation_list().clear();
  }
  static void begin_kernel(const char* name, std::uint64_t* id) {
    *id = 0;
    kernels()++;
    seen("kernel ", name);
  }
  static void seen(const char* what, const char* name) {
#if defined(KOKKOS_ENABLE_OPENMP)
    if (omp_in_parallel()) {
      const std::lock_guard<std::mutex> lock(mutex());
      violation_list() += std::string(what) + name + "; ";
    }
#else
    (void)what, (void)name;
#endif
  }
};

/// A problem big enough for every host path to run (Im2colGemm's concurrent pipeline
/// needs at least as many chunks as threads), small enough to be quick.
ConvCase tool_case(Layout layout) {
  ConvCase c{"tool", 4, 6, 15, 13, 8, 3, 3, 1, 1, 1, 1};
  c.layout = layout, c.bias = true, c.activation = kcnn::Activation::ReLU;
  return c;
}

template <class Space>
void run_every_operation(const Space& space, Layout layout) {
  using T = float;
  const ConvCase c = tool_case(layout);
  auto x = make_tensor<T, Space>("x", c.x_extents(), random_values(product(c.x_extents()), 11));
  auto w = make_tensor<T, Space>("w", c.w_extents(), random_values(product(c.w_extents()), 12));
  auto bias = make_vector<T, Space>("bias", random_values(c.M, 13));
  Tensor4<T, Space> y("y", c.y_extents()[0], c.y_extents()[1], c.y_extents()[2], c.y_extents()[3]);
  const auto want = host_conv2d(c, to_host(x), to_host(w), to_host(bias));

  kcnn::Pool2dParams pool;  // 2x2 max
  pool.layout = layout;
  const int P = c.P() / 2, Q = c.Q() / 2;
  const bool nchw = layout == Layout::NCHW;
  Tensor4<T, Space> pooled("pooled", c.N, nchw ? c.M : P, nchw ? P : Q, nchw ? Q : c.M);

  // The forward convolution with every algorithm, then with a fused pooling.
  for (ConvAlgo algo : kcnn::implemented_conv_algos()) {
    if (!algo_serves<T, Space>(algo, c, c.params().math)) continue;
    SCOPED_TRACE(kcnn::to_string(algo));
    auto params = c.params();
    params.algo = algo;
    poison(y);
    kcnn::conv2d_forward(space, x, w, bias, y, params);
    space.fence();
    EXPECT_LE(relative_error(to_host(y), want), tolerance<T>());
    params.pool = pool;
    kcnn::conv2d_forward(space, x, w, bias, pooled, params);
    space.fence();
  }
  kcnn::find_best_algo(space, x, w, bias, y, c.params(), {1, false});

  // Pooling forward and backward, activation backward.
  kcnn::pool2d_forward(space, y, pooled, pool);
  Tensor4<T, Space> dy("dy", y.extent(0), y.extent(1), y.extent(2), y.extent(3));
  kcnn::pool2d_backward(space, y, pooled, dy, pool);
  kcnn::activation_backward(space, kcnn::Activation::ReLU, y, dy, dy);

  // The backward convolutions (linear: no activation in the parameters).
  auto linear = c.params();
  linear.activation = kcnn::Activation::Identity;
  Tensor4<T, Space> dx("dx", x.extent(0), x.extent(1), x.extent(2), x.extent(3));
  Tensor4<T, Space> dw("dw", w.extent(0), w.extent(1), w.extent(2), w.extent(3));
  Tensor1<T, Space> dbias("dbias", c.M);
  kcnn::conv2d_backward_data(space, dy, w, dx, linear);
  kcnn::conv2d_backward_weights(space, x, dy, dw, dbias, linear);

  // im2col and its adjoint.
  const std::int64_t K = std::int64_t(c.C) * c.R * c.S, pixels = std::int64_t(c.N) * c.P() * c.Q();
  Kokkos::View<T**, Kokkos::LayoutRight, typename Space::memory_space> cols(
      "cols", nchw ? K : pixels, nchw ? pixels : K);
  kcnn::im2col(space, x, c.R, c.S, linear, cols);
  kcnn::col2im(space, cols, c.R, c.S, linear, dx);
  space.fence();
}

TEST(ProfilingTools, NoKokkosCallInsideAParallelRegion) {
  for (Backend b : backends()) {
    SCOPED_TRACE(backend_name(b));
    with_backend(b, [&](auto space) {
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        SCOPED_TRACE(kcnn::to_string(layout));
        kcnn::clear_algo_cache();
        AttachedTool tool;
        run_every_operation(space, layout);
        EXPECT_EQ(AttachedTool::violations(), "");
        EXPECT_GT(AttachedTool::regions().load(), 0);  // the tool did see kcnn's calls
        EXPECT_GT(AttachedTool::kernels().load(), 0);
      }
    });
  }
  kcnn::clear_algo_cache();
}

}  // namespace
}  // namespace kcnn_test
