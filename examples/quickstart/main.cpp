// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Quickstart: one convolution layer (LeNet-5's C3: 4 -> 16 channels, 7x7 filters, bias,
// ReLU) on a batch of random images, with a checksum of the result.
//
//   kcnn_quickstart [batch]      (1 to 100000 images, default 64; about 100 KB each)
#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>
#include <kcnn/kcnn.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr long kMaxBatch = 100000;

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: kcnn_quickstart [batch]\n"
               "  one convolution (4 -> 16 channels, 7x7, 40x40, bias, ReLU) on `batch` random\n"
               "  images (1 to %ld, default 64); arguments starting with --kokkos- go to Kokkos\n",
               kMaxBatch);
}

/// The batch from the command line (without its --kokkos-* arguments); exits with 0
/// after the usage for --help, with 2 after it for anything but one batch size.
int parse_batch(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      print_usage(stdout);
      std::exit(0);
    }
  if (args.empty()) return 64;
  char* end = nullptr;
  errno = 0;
  const long batch = std::strtol(args[0].c_str(), &end, 10);
  if (args.size() > 1 || args[0].empty() || *end || errno || batch < 1 || batch > kMaxBatch) {
    const std::string given = args.size() > 1 ? args[0] + " " + args[1] : args[0];
    std::fprintf(stderr, "kcnn_quickstart: the batch must be one integer from 1 to %ld, not '%s'\n",
                 kMaxBatch, given.c_str());
    print_usage(stderr);
    std::exit(2);
  }
  return static_cast<int>(batch);
}

}  // namespace

int main(int argc, char* argv[]) {
  std::vector<std::string> args;
  std::vector<char*> kokkos_args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kokkos-", 9) == 0)
      kokkos_args.push_back(argv[i]);
    else
      args.push_back(argv[i]);
  }
  const int batch = parse_batch(args);
  // libgomp read OMP_PROC_BIND when the program loaded: unset, it binds no threads, and
  // Kokkos would warn about it. Set it to what holds.
  setenv("OMP_PROC_BIND", "false", 0);
  int kokkos_argc = static_cast<int>(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::ScopeGuard kokkos(kokkos_argc, kokkos_args.data());
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
