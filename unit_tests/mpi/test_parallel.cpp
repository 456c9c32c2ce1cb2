// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kcnn::parallel under MPI: run by mpiexec with 1, 2 and 3 ranks (CTest: mpi_parallel_*).
// The Views are in the default execution space's memory: in a CUDA build with NCCL
// (KCNN_ENABLE_NCCL) device memory, so the same tests check the NCCL path.
// Every rank runs every test; a test passes where it passes on every rank (the exit
// code is the same on all of them). Ranks other than 0 print only their failures.
//
// The data of rank r comes from seed (test seed + r), so every rank can regenerate every
// other rank's data and compute the serial result itself, in double.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>
#include <kcnn/parallel.hpp>  // (brings mpi.h)

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "../test_support.hpp"

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using kcnn_test::random_values;

template <class T>
constexpr double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

using kcnn_test::to_host;

/// Rank 0's copy of `values`: checks that every rank holds the same result.
std::vector<double> rank0_copy(const kcnn::parallel::Communicator& comm,
                               std::vector<double> values) {
  MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, 0, comm.mpi_comm());
  return values;
}

template <class T>
class MpiAllreduce : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MpiAllreduce, Scalars);

// The mean over the ranks of random Views of several sizes, against the serial sum of
// every rank's values in double. Bound: a sum of R values in any order errs by at most
// u sum|x_r| (u: the unit roundoff of T), the division by R by u |mean|; the
// result is bitwise the same on every rank.
TYPED_TEST(MpiAllreduce, MeanOfRandomDataMatchesTheSerialSum) {
  using T = TypeParam;
  kcnn::parallel::Communicator comm;
  const int R = comm.size();
  for (const std::size_t n :
       {std::size_t(1), std::size_t(7), std::size_t(1000), std::size_t(100003)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto rounded = [&](int rank) {
      auto v = random_values(n, 1000 + 17 * unsigned(n) + unsigned(rank));
      for (auto& e : v)
        e = static_cast<double>(static_cast<T>(e));
      return v;
    };
    auto grads = kcnn_test::make_vector<T, Space>("grads", rounded(comm.rank()));
    comm.allreduce_mean(Space(), grads);
    Space().fence();
    const auto got = to_host(grads);
    std::vector<double> sum(n, 0.0), abs_sum(n, 0.0);
    for (int r = 0; r < R; ++r) {
      const auto v = rounded(r);
      for (std::size_t i = 0; i < n; ++i)
        sum[i] += v[i], abs_sum[i] += std::abs(v[i]);
    }
    const double u = unit_roundoff<T>();
    for (std::size_t i = 0; i < n; ++i) {
      const double bound = 1.01 * ((R - 1) * u * abs_sum[i] + u * std::abs(sum[i])) / R;
      ASSERT_NEAR(got[i], sum[i] / R, bound) << "element " << i;
    }
    EXPECT_EQ(got, rank0_copy(comm, got)) << "the ranks hold different results";
  }
}

// Several Views started at once (the layer-by-layer path), progressed with test() and
// completed with wait(): the same values as the blocking call; a multi-dimensional
// LayoutLeft View and a contiguous subview are single buffers too.
TYPED_TEST(MpiAllreduce, StartedRequestsMatchTheBlockingCall) {
  using T = TypeParam;
  kcnn::parallel::Communicator comm;
  const auto a_values = random_values(3 * 5 * 7 * 11, 2000 + comm.rank());
  const auto b_values = random_values(64, 3000 + comm.rank());
  Kokkos::View<T****, Kokkos::LayoutLeft, Space::memory_space> a("a", 3, 5, 7, 11), a_blocking;
  {
    auto flat = kcnn_test::make_vector<T, Space>("a_flat", a_values);
    Kokkos::deep_copy(Kokkos::View<T*, Space::memory_space>(a.data(), a.span()), flat);
  }
  a_blocking =
      Kokkos::View<T****, Kokkos::LayoutLeft, Space::memory_space>("a_blocking", 3, 5, 7, 11);
  Kokkos::deep_copy(a_blocking, a);
  auto b_full = kcnn_test::make_vector<T, Space>("b", b_values);
  auto b = Kokkos::subview(b_full, std::make_pair(8, 40));  // contiguous
  auto b_blocking = kcnn_test::make_vector<T, Space>("b_blocking", b_values);

  std::vector<kcnn::parallel::Request> requests;
  requests.push_back(comm.start_allreduce_mean(Space(), a));
  requests.push_back(comm.start_allreduce_mean(Space(), b));
  for (int spin = 0; spin < 1000 && !(requests[0].test() && requests[1].test()); ++spin) {
  }
  kcnn::parallel::wait_all(requests);
  EXPECT_TRUE(requests.empty());
  comm.allreduce_mean(Space(), a_blocking, b_blocking);
  Space().fence();
  EXPECT_EQ(to_host(a), to_host(a_blocking));
  const auto b_got = to_host(b_full), b_expected = to_host(b_blocking);
  for (int i = 0; i < 64; ++i) {
    if (i >= 8 && i < 40)
      EXPECT_EQ(b_got[i], b_expected[i]) << i;
    else
      EXPECT_EQ(b_got[i], static_cast<double>(static_cast<T>(b_values[i])))
          << "element " << i << " outside the subview was written";
  }
}

// A communicator of one rank (each rank alone): the mean is the View itself, untouched.
TYPED_TEST(MpiAllreduce, OneRankLeavesTheValues) {
  using T = TypeParam;
  MPI_Comm alone = MPI_COMM_NULL;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &alone);
  {
    kcnn::parallel::Communicator comm(alone);
    EXPECT_EQ(comm.size(), 1);
    EXPECT_EQ(comm.rank(), 0);
    const auto values = random_values(101, 4000 + world_rank);
    auto grads = kcnn_test::make_vector<T, Space>("grads", values);
    const auto before = to_host(grads);
    comm.allreduce_mean(Space(), grads);
    EXPECT_EQ(to_host(grads), before);
  }
  MPI_Comm_free(&alone);
}

#if defined(KCNN_ENABLE_NCCL)
// NCCL builds: device memory goes through NCCL, which also averages 16-bit Views. Bound
// as for float, with the unit roundoff of the type (2^-11 half, 2^-8 bfloat16), and
// the inputs rounded to the type.
template <class T>
class NcclAllreduce16 : public ::testing::Test {};
using SixteenBit = ::testing::Types<Kokkos::Experimental::half_t, kcnn::bfloat16>;
TYPED_TEST_SUITE(NcclAllreduce16, SixteenBit);

TYPED_TEST(NcclAllreduce16, MeanOfRandomDataMatchesTheSerialSum) {
  using T = TypeParam;
  kcnn::parallel::Communicator comm;
  const int R = comm.size();
  const std::size_t n = 4099;
  auto rounded = [&](int rank) {
    auto v = random_values(n, 8000 + unsigned(rank));
    for (auto& e : v)
      e = static_cast<double>(static_cast<float>(static_cast<T>(e)));
    return v;
  };
  auto grads = kcnn_test::make_vector<T, Space>("grads", rounded(comm.rank()));
  comm.allreduce_mean(Space(), grads);
  const auto got = to_host(grads);
  const double u = std::is_same_v<T, kcnn::bfloat16> ? 0x1p-8 : 0x1p-11;
  std::vector<double> sum(n, 0.0), abs_sum(n, 0.0);
  for (int r = 0; r < R; ++r) {
    const auto v = rounded(r);
    for (std::size_t i = 0; i < n; ++i)
      sum[i] += v[i], abs_sum[i] += std::abs(v[i]);
  }
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], sum[i] / R, 1.01 * ((R - 1) * u * abs_sum[i] + u * std::abs(sum[i])) / R)
        << "element " << i;
  EXPECT_EQ(got, rank0_copy(comm, got)) << "the ranks hold different results";
}
#endif

TEST(MpiBroadcast, RootValuesReachEveryRank) {
  kcnn::parallel::Communicator comm;
  for (const int root : {0, comm.size() - 1}) {
    auto mine = random_values(1001, 5000 + comm.rank());
    auto rootss = random_values(1001, 5000 + root);
    auto v = kcnn_test::make_vector<float, Space>("weights", mine);
    comm.broadcast(Space(), v, root);
    const auto got = to_host(v);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], static_cast<double>(static_cast<float>(rootss[i]))) << i;
  }
  // Any element type (bytes): 16-bit weights too.
  Kokkos::View<Kokkos::Experimental::half_t*, Space::memory_space> h("half", 33);
  Kokkos::deep_copy(h, Kokkos::Experimental::half_t(float(comm.rank() + 1)));
  comm.broadcast(Space(), h);
  for (const double e : to_host(h))
    ASSERT_EQ(e, 1.0);
}

// Bad input: kcnn::Error on every rank, before any message (nothing written, and the
// ranks stay in step: the next collective still matches).
TEST(MpiErrors, RefusedBeforeAnythingMoves) {
  kcnn::parallel::Communicator comm;
  auto values = random_values(40, 6000 + comm.rank());
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> m("m", 5, 8);
  {
    auto flat = kcnn_test::make_vector<float, Space>("flat", values);
    Kokkos::deep_copy(Kokkos::View<float*, Space::memory_space>(m.data(), m.span()), flat);
  }
  const auto before = to_host(m);
  auto column = Kokkos::subview(m, Kokkos::ALL, 3);  // stride 8: not one buffer
  try {
    comm.allreduce_mean(Space(), column);
    ADD_FAILURE() << "a strided View was accepted";
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not contiguous"), std::string::npos) << e.what();
  }
  try {
    comm.broadcast(Space(), m, comm.size());
    ADD_FAILURE() << "root " << comm.size() << " was accepted";
  } catch (const kcnn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(comm.size())), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(to_host(m), before);
  MPI_Barrier(comm.mpi_comm());
}

// One data-parallel training step of a convolution layer, against the same step on one
// rank over the whole batch. The loss is mean_n <dy_n, conv(x_n, w)>, so its gradient
// is (1/N) sum_n backward_weights(x_n, dy_n). Each rank takes N/R images, computes the
// mean over its shard, and the ranks average: (1/R) sum_r (1/L) sum_{n in r} = the
// serial (1/N) sum_n, up to the order of the float sums. Bound: each of the two
// computations sums K = N P Q products per weight (in any order: within gamma_K of the
// sum of their magnitudes, S), so they differ by at most 2 K u S / N, plus the
// roundings of the scalings (4 u |g|); the step w - lr g then differs by lr times that
// plus 2 u (|w| + lr |g|).
TEST(MpiTrainingStep, ShardedStepMatchesTheSerialStep) {
  kcnn::parallel::Communicator comm;
  const int R = comm.size();
  for (const auto layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC}) {
    kcnn_test::ConvCase c{"step", 6, 3, 11, 9, 5, 3, 3, 2, 1, 1, 1};
    c.layout = layout;
    SCOPED_TRACE(kcnn::to_string(layout));
    ASSERT_EQ(c.N % R, 0) << "run with 1, 2, 3 or 6 ranks";
    const int L = c.N / R;
    const auto x_host = random_values(kcnn_test::product(c.x_extents()), 7001);
    const auto dy_host = random_values(kcnn_test::product(c.y_extents()), 7002);
    const auto w_host = random_values(kcnn_test::product(c.w_extents()), 7003);
    using Tensor = kcnn_test::Tensor4<float, Space>;
    const Tensor x = kcnn_test::make_tensor<float, Space>("x", c.x_extents(), x_host);
    const Tensor dy = kcnn_test::make_tensor<float, Space>("dy", c.y_extents(), dy_host);
    const Tensor w = kcnn_test::make_tensor<float, Space>("w", c.w_extents(), w_host);
    const auto we = c.w_extents();
    const float lr = 0.1f;
    const kcnn::Conv2dParams linear = c.params();

    // Sharded: images [rank L, (rank + 1) L), the shard's mean, the ranks' mean.
    const auto shard = std::make_pair(comm.rank() * L, (comm.rank() + 1) * L);
    Tensor g_sharded("g_sharded", we[0], we[1], we[2], we[3]);
    Kokkos::deep_copy(g_sharded, std::numeric_limits<float>::quiet_NaN());
    kcnn::conv2d_backward_weights(
        Space(), Tensor(Kokkos::subview(x, shard, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL)),
        Tensor(Kokkos::subview(dy, shard, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL)), g_sharded,
        linear);
    kcnn::parallel::Impl::scale(Space(), g_sharded.data(), g_sharded.span(), 1.0f / float(L));
    comm.allreduce_mean(Space(), g_sharded);
    // Serial: the whole batch on this rank.
    Tensor g_serial("g_serial", we[0], we[1], we[2], we[3]);
    Kokkos::deep_copy(g_serial, std::numeric_limits<float>::quiet_NaN());
    kcnn::conv2d_backward_weights(Space(), x, dy, g_serial, linear);
    kcnn::parallel::Impl::scale(Space(), g_serial.data(), g_serial.span(), 1.0f / float(c.N));
    Space().fence();

    // The bound's S: the weight gradient of |x| and |dy|, in double.
    std::vector<double> abs_x(x_host.size()), abs_dy(dy_host.size()), S, unused;
    for (std::size_t i = 0; i < abs_x.size(); ++i)
      abs_x[i] = std::abs(double(float(x_host[i])));
    for (std::size_t i = 0; i < abs_dy.size(); ++i)
      abs_dy[i] = std::abs(double(float(dy_host[i])));
    kcnn_test::host_backward_weights(c, abs_x, abs_dy, S, unused);
    const double u = unit_roundoff<float>();
    const double K = double(c.N) * c.P() * c.Q();
    const auto gs = to_host(g_sharded), g1 = to_host(g_serial);
    EXPECT_EQ(gs, rank0_copy(comm, gs)) << "the ranks hold different gradients";
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const double g_bound = 2 * K * u * S[i] / c.N + 4 * u * std::abs(g1[i]);
      ASSERT_NEAR(gs[i], g1[i], g_bound) << "gradient element " << i;
      const double w0 = double(float(w_host[i]));
      const double stepped_sharded = double(float(w0 - lr * float(gs[i])));
      const double stepped_serial = double(float(w0 - lr * float(g1[i])));
      ASSERT_NEAR(stepped_sharded, stepped_serial,
                  lr * g_bound + 2 * u * (std::abs(w0) + lr * std::abs(g1[i])))
          << "weight " << i;
    }
  }
}

/// Ranks other than 0 print only failed assertions, prefixed with their rank.
class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::printf("[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?",
                  r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(rank));
  }
  int failed = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    failed = RUN_ALL_TESTS() != 0;
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
