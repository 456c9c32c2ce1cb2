// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Two execution-space instances running different convolutions at once, with kcnn's
// cached workspaces, give the results that serial runs give.
//
// Each instance runs its own list of jobs (forward with every workspace user: Im2colGemm
// chunked by a small budget, a fused pooling that keeps the unpooled output in its cached
// buffer, TensorCoreGemm's packed weights; Tiled, ImplicitGemm; both backward
// convolutions), several rounds, into its own outputs. A buffer the two instances shared
// would be overwritten while the other instance's kernels read it.
//  - Device backends: two instances on streams of their own, driven from one host thread
//    without fences in between, so the two streams' kernels overlap on the device.
//  - OpenMP: two host threads, each running its instance on its own part of the thread
//    pool (Kokkos 3.x: OpenMP::partition_master; Kokkos 4: partition_space instances
//    driven from two std::threads). Host backends share one cached buffer, taken in turn.
#include "test_support.hpp"

#include <exception>
#include <functional>
#include <optional>
#include <thread>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

namespace kcnn_test {
namespace {

using Space = Kokkos::DefaultExecutionSpace;
constexpr bool kOnHost = kcnn::Impl::runs_on_host_v<Space>;

/// One operation with its own inputs and outputs: `run` enqueues it on an instance,
/// `result` copies its outputs to the host (after the caller fenced), `poison` fills them
/// with NaN.
struct Job {
  std::string name;
  double tolerance;  // of the output's magnitude (see compare_with_serial)
  std::function<void(const Space&)> run;
  std::function<std::vector<double>()> result;
  std::function<void()> poison;
};

template <class T>
Tensor4<T, Space> output(const std::array<int, 4>& e) {
  return Tensor4<T, Space>("out", e[0], e[1], e[2], e[3]);
}

template <class T>
Tensor4<T, Space> random_tensor(const std::string& label, const std::array<int, 4>& e,
                                unsigned seed) {
  return make_tensor<T, Space>(label, e, random_values(product(e), seed));
}

/// Same results up to the order of floating-point sums: cuBLAS may pick another kernel
/// while a second stream is active and OpenBLAS splits work by its thread count, so
/// only a few ulps of the output's magnitude may differ. A race on a shared buffer
/// gives errors of the output's own size (or NaN from the poison).
template <class T>
constexpr double reorder_tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

/// A job writing one output View: run(space) enqueues the call.
template <class T, class Run>
Job one_output_job(const std::string& name, const Tensor4<T, Space>& out, Run run) {
  return {name, reorder_tolerance<T>(), run, [=] { return to_host(out); },
          [=] { kcnn_test::poison(out); }};
}

template <class T>
Job forward_job(const std::string& name, ConvCase c, kcnn::ConvAlgo algo,
                std::optional<PoolCase> pool = std::nullopt) {
  const RandomConvInputs<T, Space> in(c);
  kcnn::Conv2dParams params = c.params();
  params.algo = algo;
  std::array<int, 4> ye = c.y_extents();
  if (pool) {
    FusedCase f{c, *pool};
    const PoolCase p = pool_of(f);
    params.pool = p.params();
    ye = p.y_extents();
  }
  auto y = output<T>(ye);
  auto x = in.x, w = in.w;
  auto bias = c.bias ? in.bias : Tensor1<T, Space>("no_bias", 0);
  return one_output_job<T>(
      name, y, [=](const Space& space) { kcnn::conv2d_forward(space, x, w, bias, y, params); });
}

template <class T>
Job backward_data_job(const std::string& name, const ConvCase& c) {
  const auto dy = random_tensor<T>("dy", c.y_extents(), 5);
  const auto w = random_tensor<T>("w", c.w_extents(), 6);
  auto dx = output<T>(c.x_extents());
  const kcnn::Conv2dParams params = c.params();
  return one_output_job<T>(
      name, dx, [=](const Space& space) { kcnn::conv2d_backward_data(space, dy, w, dx, params); });
}

template <class T>
Job backward_weights_job(const std::string& name, const ConvCase& c) {
  const auto x = random_tensor<T>("x", c.x_extents(), 7);
  const auto dy = random_tensor<T>("dy", c.y_extents(), 8);
  auto dw = output<T>(c.w_extents());
  Tensor1<T, Space> dbias("dbias", c.M);
  const kcnn::Conv2dParams params = c.params();
  return {
      name, reorder_tolerance<T>(),
      [=](const Space& space) { kcnn::conv2d_backward_weights(space, x, dy, dw, dbias, params); },
      [=] {
        std::vector<double> out = to_host(dw);
        const std::vector<double> db = to_host(dbias);
        out.insert(out.end(), db.begin(), db.end());
        return out;
      },
      [=] {
        kcnn_test::poison(dw);
        kcnn_test::poison(dbias);
      }};
}

ConvCase with_layout(ConvCase c, kcnn::Layout layout, std::size_t workspace_limit_bytes = 0) {
  c.layout = layout;
  c.workspace_limit_bytes = workspace_limit_bytes;
  return c;
}

/// The two instances' job lists: different problems, each list with every cached-buffer
/// user, so both instances hold their buffers at once.
std::array<std::vector<Job>, 2> job_lists() {
  using kcnn::ConvAlgo;
  using kcnn::Layout;
  // A budget that holds one or two images' unrolled matrices (a: 230 KB per image in
  // float, b: 497 KB in double), not the batch's: the GEMM algorithms run chunk after
  // chunk through the same buffer.
  constexpr std::size_t small_budget = 512 << 10;
  const ConvCase a{"a", 6, 16, 21, 19, 24, 3, 3, 1, 1, 1, 1};
  const ConvCase b{"b", 5, 12, 17, 23, 20, 5, 5, 2, 1, 2, 2};
  const ConvCase big{"big", 2, 32, 28, 28, 32, 3, 3, 1, 1, 1, 1};
  const PoolCase overlapping = pool(3, 3, 2, 2, 1, 1, kcnn::PoolMode::Max);
  const PoolCase average = pool(2, 2, 2, 2, 0, 0, kcnn::PoolMode::Average);

  std::array<std::vector<Job>, 2> lists;
  auto& first = lists[0];
  first.push_back(forward_job<float>(
      "im2col_gemm chunked NCHW float",
      with_layout(conv(a, kcnn::Activation::ReLU, true), Layout::NCHW, small_budget),
      ConvAlgo::Im2colGemm));
  first.push_back(forward_job<float>("im2col_gemm + overlapping max pool NHWC float",
                                     with_layout(b, Layout::NHWC), ConvAlgo::Im2colGemm,
                                     overlapping));
  first.push_back(
      forward_job<float>("tiled NCHW float", with_layout(b, Layout::NCHW), ConvAlgo::Tiled));
  first.push_back(backward_data_job<float>("backward data NHWC float",
                                           with_layout(a, Layout::NHWC, small_budget)));
  auto& second = lists[1];
  second.push_back(forward_job<double>("im2col_gemm chunked NHWC double",
                                       with_layout(b, Layout::NHWC, small_budget),
                                       ConvAlgo::Im2colGemm));
  second.push_back(
      forward_job<float>("reference + average pool NCHW float",
                         with_layout(conv(a, kcnn::Activation::Tanh, true), Layout::NCHW),
                         ConvAlgo::Reference, average));
  second.push_back(forward_job<double>("implicit_gemm NHWC double", with_layout(a, Layout::NHWC),
                                       ConvAlgo::ImplicitGemm));
  second.push_back(backward_weights_job<float>("backward weights NCHW float",
                                               with_layout(b, Layout::NCHW, small_budget)));
  ConvCase tf32 = with_layout(big, Layout::NHWC);
  if (algo_serves<float, Space>(ConvAlgo::TensorCoreGemm, tf32, kcnn::MathMode::TF32)) {
    tf32.math = kcnn::MathMode::TF32;
    second.push_back(
        forward_job<float>("tensor_core_gemm TF32 NHWC float", tf32, ConvAlgo::TensorCoreGemm));
  }
  return lists;
}

constexpr int kRounds = 4;

/// Runs `jobs` kRounds times on `space` and fences it (host backends' threads; unused
/// where the device branch is the only one compiled).
[[maybe_unused]] void run_rounds(const Space& space, const std::vector<Job>& jobs) {
  for (int round = 0; round < kRounds; ++round)
    for (const Job& job : jobs)
      job.run(space);
  space.fence();
}

/// Each job's result when the jobs run one at a time on the default instance.
std::array<std::vector<std::vector<double>>, 2> serial_results(
    const std::array<std::vector<Job>, 2>& lists) {
  std::array<std::vector<std::vector<double>>, 2> results;
  for (int i = 0; i < 2; ++i) {
    for (const Job& job : lists[i]) {
      job.poison();
      job.run(Space());
      Space().fence();
      results[i].push_back(job.result());
    }
  }
  return results;
}

void compare_with_serial(const std::array<std::vector<Job>, 2>& lists,
                         const std::array<std::vector<std::vector<double>>, 2>& serial) {
  for (int i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < lists[i].size(); ++j) {
      const Job& job = lists[i][j];
      SCOPED_TRACE("instance " + std::to_string(i) + ": " + job.name);
      ASSERT_FALSE(all_nan(serial[i][j]));
      EXPECT_LE(relative_error(job.result(), serial[i][j]), job.tolerance);
    }
  }
}

/// Device backends: one host thread enqueues both instances' work, interleaved, kRounds
/// times, and fences only at the end, so that the two streams' kernels overlap.
template <class Instances>
void run_interleaved(const Instances& instances, const std::array<std::vector<Job>, 2>& lists) {
  for (int round = 0; round < kRounds; ++round)
    for (std::size_t j = 0; j < std::max(lists[0].size(), lists[1].size()); ++j)
      for (int i = 0; i < 2; ++i)
        if (j < lists[i].size()) lists[i][j].run(instances[i]);
  instances[0].fence();
  instances[1].fence();
}

/// Runs the two job lists at once, each on an instance of its own. A template (S is
/// Space) so that `if constexpr` discards the other backends' branches.
template <class S>
void run_concurrently(const std::array<std::vector<Job>, 2>& lists) {
#if KOKKOS_VERSION >= 40000
  const auto instances = Kokkos::Experimental::partition_space(S(), 1, 1);
  if constexpr (kcnn::Impl::runs_on_host_v<S>) {
    std::array<std::exception_ptr, 2> errors;
    auto drive = [&](int i) {
      try {
        run_rounds(instances[i], lists[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    };
    std::thread first(drive, 0), second(drive, 1);
    first.join();
    second.join();
    for (const auto& error : errors)
      if (error) std::rethrow_exception(error);
  } else {
    run_interleaved(instances, lists);
    kcnn::release_workspaces();  // the instances' streams go with them
  }
#else
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<S, Kokkos::Cuda>) {
    struct Streams {
      cudaStream_t stream[2] = {nullptr, nullptr};
      Streams() {
        for (auto& s : stream)
          cudaStreamCreate(&s);
      }
      ~Streams() {
        for (auto& s : stream)
          cudaStreamDestroy(s);
      }
    } streams;
    {
      const std::array<Kokkos::Cuda, 2> instances{Kokkos::Cuda(streams.stream[0]),
                                                  Kokkos::Cuda(streams.stream[1])};
      run_interleaved(instances, lists);
    }
    // The cached buffers of these streams' instances are keyed by the stream: give them
    // back before the streams go (a later stream may reuse the handle).
    kcnn::release_workspaces();
    return;
  }
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same_v<S, Kokkos::OpenMP>) {
    // partition_master runs f on two new masters, each over half of the pool, when
    // nested OpenMP parallelism is allowed.
    const int saved_levels = omp_get_max_active_levels();
    omp_set_max_active_levels(2);
    std::array<std::exception_ptr, 2> errors;
    std::array<int, 2> partitions_seen{0, 0};
    Kokkos::OpenMP::partition_master(
        [&](int partition, int partitions) {
          partitions_seen[partition] = partitions;
          try {
            run_rounds(S(), lists[partition]);
          } catch (...) {
            errors[partition] = std::current_exception();
          }
        },
        2, Kokkos::OpenMP::concurrency() / 2);
    omp_set_max_active_levels(saved_levels);
    // Without nested parallelism partition_master would run f once, on one master.
    EXPECT_EQ(partitions_seen[0], 2);
    EXPECT_EQ(partitions_seen[1], 2);
    for (const auto& error : errors)
      if (error) std::rethrow_exception(error);
    return;
  }
#endif
  FAIL() << "no two concurrent instances of " << S::name() << " in Kokkos 3";
#endif
}

TEST(Concurrency, TwoInstancesGiveTheSerialResults) {
  if constexpr (kOnHost) {
    if (Space().concurrency() < 2)
      GTEST_SKIP() << Space::name() << " has one thread: no two partitions";
  }
#if KOKKOS_VERSION < 40000
  if constexpr (kOnHost && !std::is_same_v<Space, Kokkos::OpenMP>)
    GTEST_SKIP() << Space::name() << " has no concurrent instances in Kokkos 3";
#endif
  const auto lists = job_lists();
  const auto serial = serial_results(lists);
  for (const auto& list : lists)
    for (const Job& job : list)
      job.poison();
  run_concurrently<Space>(lists);
  compare_with_serial(lists, serial);
}

}  // namespace
}  // namespace kcnn_test
