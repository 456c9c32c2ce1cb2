// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file test_support.hpp
/// \brief What every kcnn test needs: the shape families, device Views made from host
///        data, the list of execution spaces to run on, and the tolerance rule; the
///        double-precision host references are in reference.hpp.
#pragma once

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

#include "reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace kcnn_test {

/// Shape families every algorithm must get right: batch 1, C = 1, prime extents,
/// stride 2 and 3, padding (also larger than half the filter), dilation, 1x1 and 7x7
/// filters, non-square filters/strides/inputs, a filter as large as the padded input,
/// and the LeNet-5 layers.
inline std::vector<ConvCase> conv_shape_families() {
  // name, N, C, H, W, M, R, S, stride h/w, pad h/w, dilation h/w
  return {
      {"batch1_c1", 1, 1, 5, 5, 1, 3, 3},
      {"prime", 3, 5, 13, 11, 7, 3, 3},
      {"stride2", 2, 3, 17, 19, 4, 3, 3, 2, 2},
      {"stride3_pad2", 2, 2, 23, 20, 3, 5, 5, 3, 3, 2, 2},
      {"pad1", 2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},
      {"dilation2", 2, 3, 19, 17, 4, 3, 3, 1, 1, 0, 0, 2, 2},
      {"stride2_pad2_dilation3", 1, 4, 21, 22, 3, 3, 3, 2, 2, 2, 2, 3, 3},
      {"k1x1", 2, 16, 7, 5, 8, 1, 1},
      {"k1x1_stride2", 2, 6, 9, 9, 5, 1, 1, 2, 2},
      {"k7x7_pad3", 2, 3, 20, 18, 4, 7, 7, 1, 1, 3, 3},
      {"nonsquare_filter", 2, 3, 11, 13, 2, 2, 5, 1, 1, 1, 0},
      {"mixed_stride_pad_dilation", 2, 2, 15, 16, 3, 3, 3, 1, 2, 0, 1, 2, 1},
      {"filter_fills_input", 3, 2, 5, 5, 3, 5, 5},
      {"pad_larger_than_half_filter", 1, 2, 3, 4, 2, 3, 3, 1, 1, 2, 2},
      {"prime_channels", 1, 37, 6, 6, 29, 3, 3, 1, 1, 1, 1},
      {"stride_larger_than_filter", 2, 3, 16, 16, 2, 2, 2, 3, 3},
      {"tall_filter", 1, 2, 31, 3, 3, 3, 1},
      {"many_filters", 4, 8, 4, 4, 64, 3, 3, 1, 1, 1, 1},
      {"lenet_c1", 2, 1, 86, 86, 4, 7, 7},
      {"lenet_c3", 2, 4, 40, 40, 16, 7, 7},
  };
}

/// The convolution algorithms test_conv2d_conformance.cpp tests (its `algorithms()`),
/// for the other test files.
std::vector<kcnn::ConvAlgo> conv2d_test_algorithms();

template <class T, class Space>
using Tensor4 = Kokkos::View<T****, Kokkos::LayoutRight, typename Space::memory_space>;
template <class T, class Space>
using Tensor1 = Kokkos::View<T*, Kokkos::LayoutRight, typename Space::memory_space>;

/// A device View of the given extents holding `values` (rounded to T).
template <class T, class Space>
Tensor4<T, Space> make_tensor(const std::string& label, const std::array<int, 4>& e,
                              const std::vector<double>& values) {
  Tensor4<T, Space> v(label, e[0], e[1], e[2], e[3]);
  auto h = Kokkos::create_mirror_view(v);
  auto* data = h.data();
  for (std::size_t i = 0; i < values.size(); ++i)
    data[i] = static_cast<T>(values[i]);
  Kokkos::deep_copy(v, h);
  return v;
}

template <class T, class Space>
Tensor1<T, Space> make_vector(const std::string& label, const std::vector<double>& values) {
  Tensor1<T, Space> v(label, values.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < values.size(); ++i)
    h(i) = static_cast<T>(values[i]);
  Kokkos::deep_copy(v, h);
  return v;
}

/// Copies a device View (any rank, contiguous) into a flat double vector.
template <class View>
std::vector<double> to_host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(h.span());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>(h.data()[i]);
  return out;
}

/// Fills a View with NaN so that unwritten outputs cannot pass a comparison.
template <class View>
void poison(const View& v) {
  using T = typename View::non_const_value_type;
  if constexpr (std::is_floating_point_v<T>) {
    Kokkos::deep_copy(v, std::numeric_limits<T>::quiet_NaN());
  } else {  // the 16-bit types: std::numeric_limits knows none of them
    Kokkos::deep_copy(v, T(std::numeric_limits<float>::quiet_NaN()));
  }
}

/// The project's fp32 rule: error relative to the output's magnitude.
template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-11;
}

/// Whether `algo` computes case c's geometry: ConvAlgo::Winograd takes 3x3, stride-1,
/// undilated filters only, ConvAlgo::Depthwise one channel per group (groups = C, M a
/// multiple of C); ConvAlgo::Grouped's budget depends on the element type (algo_serves).
inline bool algo_takes_geometry(kcnn::ConvAlgo algo, const ConvCase& c) {
  if (algo == kcnn::ConvAlgo::Depthwise) return c.groups == c.C && c.M % c.C == 0;
  if (algo != kcnn::ConvAlgo::Winograd) return true;
  return c.R == 3 && c.S == 3 && c.stride_h == 1 && c.stride_w == 1 && c.dilation_h == 1 &&
         c.dilation_w == 1;
}

/// Whether `algo` computes case c on Space with element T under `math` (else
/// conv2d_forward must throw kcnn::Error and write nothing): its geometry
/// (algo_takes_geometry); Grouped's packed filters fit the workspace budget;
/// TensorCoreGemm needs CUDA tensor cores and, for float tensors, a TF32 math mode.
template <class T, class Space>
bool algo_serves(kcnn::ConvAlgo algo, const ConvCase& c, kcnn::MathMode math) {
  if (!algo_takes_geometry(algo, c)) return false;
  if (algo == kcnn::ConvAlgo::Grouped) {
    const std::size_t limit =
        c.workspace_limit_bytes ? c.workspace_limit_bytes : kcnn::workspace_limit();
    return grouped_workspace_bytes<T>(c.groups, c.C / c.groups, c.M / c.groups, c.R, c.S) <=
           double(limit);
  }
  if (algo != kcnn::ConvAlgo::TensorCoreGemm) return true;
  if (!kcnn::Impl::has_tensor_cores_v<Space>) return false;
  return !std::is_same_v<T, float> || math != kcnn::MathMode::Strict;
}

/// The kernels launched while it lives, by name (Kokkos Tools' parallel_for callback).
class LaunchedKernels {
 public:
  LaunchedKernels() {
    names().clear();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(
        [](const char* name, std::uint32_t, std::uint64_t*) { names().emplace_back(name); });
  }
  ~LaunchedKernels() { Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr); }
  LaunchedKernels(const LaunchedKernels&) = delete;
  LaunchedKernels& operator=(const LaunchedKernels&) = delete;
  bool saw(const std::string& name) const {
    return std::find(names().begin(), names().end(), name) != names().end();
  }

 private:
  static std::vector<std::string>& names() {
    static std::vector<std::string> launched;
    return launched;
  }
};

/// Whether every value is NaN (a poisoned output nothing wrote).
inline bool all_nan(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isnan(e)) return false;
  return true;
}

/// A call that must be refused: it throws kcnn::Error and `y` (poisoned before) holds
/// only NaN afterwards.
template <class Space, class Y, class Call>
void expect_refused(const Space& space, const Y& y, Call&& call) {
  EXPECT_THROW(call(), kcnn::Error);
  space.fence();
  EXPECT_TRUE(all_nan(to_host(y))) << "a refused call wrote y";
}

/// max|got - want| / max|want|; NaN anywhere (or a size mismatch) gives +inf.
inline double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::abs(want[i]));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

/// A convolution case's random inputs (fixed seeds) as values and as Views.
template <class T, class Space>
struct RandomConvInputs {
  std::vector<double> xv, wv, bv;
  Tensor4<T, Space> x, w;
  Tensor1<T, Space> bias;
  explicit RandomConvInputs(const ConvCase& c)
      : xv(random_values(product(c.x_extents()), 11)),
        wv(random_values(product(c.w_extents()), 22)),
        bv(random_values(c.M, 33)),
        x(make_tensor<T, Space>("x", c.x_extents(), xv)),
        w(make_tensor<T, Space>("w", c.w_extents(), wv)),
        bias(make_vector<T, Space>("bias", bv)) {}
};

/// Runs `run(x, w, bias, y, params)` on random inputs with y poisoned and compares y with
/// the double-precision host convolution; params.algo is `algo`.
template <class T, class Space, class Run>
void check_forward_with(const Space& space, const ConvCase& c, kcnn::ConvAlgo algo, Run&& run) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const RandomConvInputs<T, Space> in(c);
  // Named references, not a structured binding: C++17 lambdas cannot capture those.
  const auto &xv = in.xv, &wv = in.wv, &bv = in.bv;
  const auto &x = in.x, &w = in.w;
  const auto& bias = in.bias;
  const auto want = host_conv2d(c, xv, wv, bv);
  const auto ye = c.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);

  auto params = c.params();
  params.algo = algo;
  if constexpr (std::is_same_v<T, double>) params.math = kcnn::MathMode::Strict;
  SCOPED_TRACE(std::string("math ") + kcnn::to_string(params.math));
  if (!algo_serves<T, Space>(algo, c, params.math)) {
    expect_refused(space, y, [&] { run(x, w, bias, y, params); });
    return;
  }
  run(x, w, bias, y, params);
  space.fence();
  const auto got = to_host(y);
  if (std::is_same_v<T, float> && params.math == kcnn::MathMode::TF32) {
    // Each product's factors are rounded to TF32 (relative error <= 2^-11 each), so an
    // output's error is at most 2^-10 * sum_k |w_k x_k| plus the float sums' rounding
    // (<= K * 2^-24 of the same sum); bias and activation do not enlarge it.
    ConvCase magnitude = c;
    magnitude.activation = kcnn::Activation::Identity;
    magnitude.bias = false;
    std::vector<double> xa(xv.size()), wa(wv.size());
    for (std::size_t i = 0; i < xv.size(); ++i)
      xa[i] = std::abs(xv[i]);
    for (std::size_t i = 0; i < wv.size(); ++i)
      wa[i] = std::abs(wv[i]);
    const auto scale = host_conv2d(magnitude, xa, wa, {});
    const double K = double(c.C) * c.R * c.S;
    double max_scale = 0, max_diff = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      max_scale = std::max(max_scale, scale[i]);
      max_diff = std::isfinite(got[i]) ? std::max(max_diff, std::abs(got[i] - want[i]))
                                       : std::numeric_limits<double>::infinity();
    }
    const double bound = (std::ldexp(1.0, -10) + K * std::ldexp(1.0, -24)) * max_scale;
    EXPECT_LE(max_diff, bound) << "TF32: max error " << max_diff << ", magnitude " << max_scale;
    return;
  }
  const double err = relative_error(got, want);
  EXPECT_LE(err, tolerance<T>()) << "relative error " << err;
}

// Convolutions with a fused pooling (test_conv2d_pool.cpp, test_conv2d_tiled.cpp).

/// A convolution and the pooling applied to its output. `pool`'s N, C, H, W and layout
/// are derived from the convolution (see pool_of).
struct FusedCase {
  ConvCase conv;
  PoolCase pool;
};

/// The pooling stage of a fused case, with its input extents set to the conv output.
inline PoolCase pool_of(const FusedCase& f) {
  PoolCase p = f.pool;
  p.N = f.conv.N, p.C = f.conv.M, p.H = f.conv.P(), p.W = f.conv.Q();
  p.layout = f.conv.layout;
  p.bias = false;  // the fused form has no pooling bias
  return p;
}

inline PoolCase pool(int wh, int ww, int sh, int sw, int ph, int pw, kcnn::PoolMode mode,
                     bool count_include_pad = true,
                     kcnn::Activation activation = kcnn::Activation::Identity) {
  PoolCase p{"pool", 0, 0, 0, 0, wh, ww, sh, sw, ph, pw};
  p.mode = mode, p.count_include_pad = count_include_pad, p.activation = activation;
  return p;
}

inline ConvCase conv(ConvCase c, kcnn::Activation activation, bool bias) {
  c.activation = activation, c.bias = bias;
  return c;
}

/// Runs `run(x, w, bias, y, params)` (params with f's pooling, algo `algo`) on random
/// inputs with y poisoned and compares y with the double conv -> pool reference.
template <class T, class Space, class Run>
void check_fused_with(const Space& space, const FusedCase& f, kcnn::ConvAlgo algo, Run&& run) {
  SCOPED_TRACE(std::string("scalar ") + (std::is_same_v<T, float> ? "float" : "double"));
  const ConvCase& c = f.conv;
  const PoolCase pc = pool_of(f);
  const RandomConvInputs<T, Space> in(c);
  // Named references, not a structured binding: C++17 lambdas cannot capture those.
  const auto &xv = in.xv, &wv = in.wv, &bv = in.bv;
  const auto &x = in.x, &w = in.w;
  const auto& bias = in.bias;
  const auto want = host_pool2d(pc, host_conv2d(c, xv, wv, bv), {});
  const auto ye = pc.y_extents();
  Tensor4<T, Space> y("y", ye[0], ye[1], ye[2], ye[3]);
  poison(y);

  auto params = c.params();
  params.algo = algo;
  params.pool = pc.params();
  // An algorithm that serves float only under a TF32 mode (TensorCoreGemm) runs TF32x3,
  // whose error is within the Strict tolerance; one that serves nothing here must
  // refuse before writing.
  if (!algo_serves<T, Space>(algo, c, params.math) &&
      algo_serves<T, Space>(algo, c, kcnn::MathMode::TF32x3))
    params.math = kcnn::MathMode::TF32x3;
  SCOPED_TRACE(std::string("math ") + kcnn::to_string(params.math));
  if (!algo_serves<T, Space>(algo, c, params.math)) {
    expect_refused(space, y, [&] { run(x, w, bias, y, params); });
    return;
  }
  run(x, w, bias, y, params);
  space.fence();
  const double err = relative_error(to_host(y), want);
  EXPECT_LE(err, tolerance<T>()) << "relative error " << err;
}

/// Tiled's 7x7 unit-stride GPU kernel with the 4-filter micro-tile and pooling variant
/// `Pooling`, launched with `per_team` row tiles per team (Impl::TiledTuning; the
/// automatic choice groups tiles only for leagues of thousands of teams).
template <kcnn::Impl::TiledPooling Pooling, class Space, class X, class W, class B, class Y>
void run_tiled_row_groups(const Space& space, const X& x, const W& w, const B& bias, const Y& y,
                          const kcnn::Conv2dParams& params, int per_team) {
  namespace I = kcnn::Impl;
  const auto pb = I::make_conv2d_problem("test", x, w, bias, y, params);
  I::TiledTuning tuning;
  tuning.force_tiles_per_team = per_team;
  auto launch = [&](auto layout) {
    constexpr kcnn::Layout L = decltype(layout)::value;
    I::conv2d_tiled_launch<L, 7, 7, true, Pooling, typename I::TiledMicroTiles<Space>::SmallM>(
        space, I::as_kernel_view<Space, false>(x), I::as_kernel_view<Space, false>(w),
        I::as_kernel_view<Space, false>(bias), I::as_kernel_view<Space, true>(y), pb, tuning);
  };
  if (params.layout == kcnn::Layout::NCHW) {
    launch(std::integral_constant<kcnn::Layout, kcnn::Layout::NCHW>{});
  } else {
    launch(std::integral_constant<kcnn::Layout, kcnn::Layout::NHWC>{});
  }
}

/// Calls f(space, layout, per_team) for both layouts and 2, 3 and 100 (all) row tiles
/// per team when the default execution space is a GPU; skips the test on host builds,
/// whose Tiled kernels have no row groups. (A generic lambda, so that host builds do
/// not instantiate f's GPU-only body.)
template <class F>
void for_tiled_row_groups(F&& f) {
  [&](auto space) {
    using Space = decltype(space);
    if constexpr (std::is_same_v<typename Space::memory_space, Kokkos::HostSpace>) {
      GTEST_SKIP() << "row groups are a GPU variant of the Tiled kernels";
    } else {
      for (kcnn::Layout layout : {kcnn::Layout::NCHW, kcnn::Layout::NHWC})
        for (int per_team : {2, 3, 100}) {
          SCOPED_TRACE(std::string(kcnn::to_string(layout)) + ", row tiles per team " +
                       std::to_string(per_team));
          f(space, layout, per_team);
        }
    }
  }(Kokkos::DefaultExecutionSpace());
}

/// The execution spaces the tests run on in this build: the default execution space,
/// plus Serial in host builds whose default is a parallel host backend.
enum class Backend { Default, Serial };

inline std::vector<Backend> backends() {
  std::vector<Backend> list{Backend::Default};
#if defined(KOKKOS_ENABLE_SERIAL)
  if constexpr (!std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Serial> &&
                std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    list.push_back(Backend::Serial);
  }
#endif
  return list;
}

inline std::string backend_name(Backend b) {
  return b == Backend::Default ? Kokkos::DefaultExecutionSpace::name() : "Serial";
}

/// Calls f(space) with an instance of the execution space `b` names.
template <class F>
void with_backend(Backend b, F&& f) {
  if (b == Backend::Default) {
    f(Kokkos::DefaultExecutionSpace());
    return;
  }
#if defined(KOKKOS_ENABLE_SERIAL)
  // Only host builds list Serial; in a device build this branch is never instantiated.
  if constexpr (std::is_same_v<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>) {
    f(Kokkos::Serial());
  }
#endif
}

// --- 16-bit tensors ------------------------------------------------------------------
// A 16-bit result is float sums rounded once, so its error is at most the type's unit
// roundoff u (2^-8 bfloat16, 2^-11 half) of the exact value plus the float sums' rounding
// carried through that rounding: |got - want| <= u |want| + (1 + u) (K + 2) 2^-24 S, with
// K the products (or addends) per output and S the sum of their magnitudes (plus the
// bias); activations have slopes of at most 1 and add their own float rounding
// (2^-24 |want|, taken as 4 ulps). Where Kokkos stores the type as float (host builds'
// half_t) the bound holds with room to spare.

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, kcnn::bfloat16> && !std::is_same_v<T, float>) return "bfloat16";
  if constexpr (std::is_same_v<T, Kokkos::Experimental::half_t> && !std::is_same_v<T, float>)
    return "half";
  return "float (a 16-bit name Kokkos stores as float)";
}

/// The unit roundoff of T's rounding to nearest: 2^-p for p significand bits.
template <class T>
double unit_roundoff() {
  if constexpr (sizeof(T) == 4) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, kcnn::bfloat16>) return std::ldexp(1.0, -8);
  return std::ldexp(1.0, -11);
}

/// Compares elementwise with the bound above; `scale[i]` is S for output i
/// and `products` is K.
template <class T>
void expect_within_16bit_bound(const std::vector<double>& got, const std::vector<double>& want,
                               const std::vector<double>& scale, double products) {
  ASSERT_EQ(got.size(), want.size());
  const double u = unit_roundoff<T>(), f = std::ldexp(1.0, -24);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = u * std::abs(want[i]) +
                         (1 + u) * ((products + 2) * f * scale[i] + 4 * f * std::abs(want[i]));
    if (!(std::abs(got[i] - want[i]) <= bound) && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << "first wrong output " << first << ": got " << got[first] << ", want "
                       << want[first] << " (" << wrong << " of " << got.size() << ")";
}

}  // namespace kcnn_test
