// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_public_api.cpp
/// \brief libFuzzer target over kcnn's public operations: conv2d_forward (every
///        algorithm, with and without the fused pooling), pool2d_forward, im2col, col2im,
///        conv2d_backward_data, conv2d_backward_weights, pool2d_backward and
///        activation_backward, in float and double on the host backend.
///
/// The fuzzer's bytes choose the operation, the extents (mostly small, now and then one
/// near 2^31, 2^32, 2^62, 2^63 or 2^64), the parameters (mostly small, now and then an
/// int edge such as INT_MIN or INT_MAX), the enum values (now and then one outside the
/// declared ones), each tensor's storage (row-major, column-major, with gaps, or, when
/// its element count does not fit 64 bits, a View whose extents lie about its memory),
/// aliasing between an output and an input, wrong output or bias extents, and a
/// workspace budget. The harness decides on its own, from the documented rules, whether
/// the call is valid, and then:
///  - a call that throws must throw kcnn::Error and leave every output byte and every
///    input byte as it was; an operation that documents no limit of its own (Auto,
///    Reference, ImplicitGemm, Im2colGemm within the default budget, pooling, im2col,
///    the backward operations within the default budget) must not refuse a valid call;
///  - a call that returns must have been valid, must leave its inputs as they were, and
///    its outputs must match the double-precision references of ../reference.hpp within
///    a bound derived from the arithmetic: 2 (K + 2) u times the sum of the magnitudes
///    of the K terms of each output (u the unit roundoff of the element type), plus 8 u
///    of the result for the activation; im2col is a copy and must be exact.
/// Anything else calls std::abort(), which libFuzzer reports with the input.
#include "fuzz_harness.hpp"

using kcnn_fuzz::Draw;
using kcnn_fuzz::fuzz_one;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // libFuzzer's options (-max_total_time=...) are not Kokkos'; Kokkos sees none.
  (void)argc, (void)argv;
  int kokkos_argc = 1;
  char name[] = "kcnn_fuzz_public_api";
  char* kokkos_argv[] = {name, nullptr};
  Kokkos::initialize(kokkos_argc, kokkos_argv);
  // libFuzzer ends with exit(): finalize Kokkos (which frees kcnn's cached workspaces)
  // in an exit handler, after the static destructors of everything used later.
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Draw d(in);
  return d.flag() ? fuzz_one<float>(d) : fuzz_one<double>(d);
}
