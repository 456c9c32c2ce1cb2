// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/select/auto_rules.hpp
/// \brief How `ConvAlgo::Auto` chooses: the tuner's cached winner for the exact problem
///        if there is one, else a heuristic from the shape, layout and backend. Also the
///        list of algorithms this build implements.
#pragma once

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "../../../types.hpp"
#include "../../common/problem.hpp"
#include "algo_cache.hpp"

namespace kcnn::Impl {

/// Every algorithm conv2d_forward can run, in the order find_best_algo tries them.
/// A new algorithm joins by one line here (next to its case in conv2d_forward's dispatch);
/// the heuristic, find_best_algo and kcnn_perf then consider it. The unit test
/// AlgoSelect.ImplementedListMatchesDispatch fails when the two disagree.
inline constexpr ConvAlgo implemented_conv_algos[] = {
    ConvAlgo::Reference,
    ConvAlgo::Tiled,
    ConvAlgo::Im2colGemm,
    ConvAlgo::ImplicitGemm,
};

/// A set of concrete algorithms (never Auto), as a bit mask: cheap to pass and to test.
class AlgoSet {
 public:
  constexpr AlgoSet() = default;
  template <std::size_t N>
  constexpr explicit AlgoSet(const ConvAlgo (&algos)[N]) {
    for (ConvAlgo a : algos)
      bits_ |= bit(a);
  }
  constexpr AlgoSet(std::initializer_list<ConvAlgo> algos) {
    for (ConvAlgo a : algos)
      bits_ |= bit(a);
  }
  constexpr bool contains(ConvAlgo a) const { return a != ConvAlgo::Auto && (bits_ & bit(a)) != 0; }
  constexpr AlgoSet with(ConvAlgo a) const {
    AlgoSet s = *this;
    s.bits_ |= bit(a);
    return s;
  }

 private:
  static constexpr std::uint32_t bit(ConvAlgo a) { return 1u << static_cast<unsigned>(a); }
  std::uint32_t bits_ = 0;
};

inline constexpr AlgoSet implemented_conv_algo_set{implemented_conv_algos};

constexpr bool is_implemented(ConvAlgo a) {
  return implemented_conv_algo_set.contains(a);
}

/// What the algorithm choice cares about in a backend: where the kernels run.
enum class Target { Host, Device };

template <class ExecSpace>
constexpr Target target_of() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible ? Target::Host
                                                                              : Target::Device;
}

inline const char* target_name(Target t) {
  return t == Target::Host ? "host" : "device";
}

/// One rule of the Auto heuristic. Rules are tried in order; the first whose `applies`
/// holds picks the first algorithm of `prefer` that the build implements. Rules list
/// algorithms that do not exist yet, so that each one starts being chosen the moment it
/// joins `implemented_conv_algos`; Reference closes every list.
struct AlgoRule {
  const char* name;  ///< reported by select_conv2d_algo (tests, logs)
  bool (*applies)(const Conv2dProblem&, Target);
  std::array<ConvAlgo, 4> prefer;
};

/// Length of the reduction each output element needs.
inline std::int64_t reduction_length(const Conv2dProblem& pb) {
  return pb.C * pb.R * pb.S;
}

// Thresholds of the rules below, each with the measurement that placed it (H100 and the
// 2-core CPU of perf_tests/RESULTS.md, 2026-11-22, kcnn_perf's suites).

/// GPU: up to this many filters Tiled's direct kernel wins: ImplicitGemm's smallest tile
/// holds 16 filters (LeNet C1, M = 4: Tiled 1.50 ms, ImplicitGemm 6.04 ms; at stride 2
/// 1.03 vs 1.57 ms).
inline constexpr std::int64_t kFewFiltersDevice = 8;
/// GPU, unit stride and dilation, not 1x1: up to this many filters Tiled leads too,
/// since its staging went asynchronous (H100, 2026-11-22, session 5: LeNet C3, M = 16,
/// Tiled 2.83 ms, ImplicitGemm 3.12 ms; NHWC 2.79 vs 3.82 ms). Strided, ImplicitGemm
/// keeps the lead (C3 at stride 2: 0.887 vs 1.59 ms).
inline constexpr std::int64_t kFewFiltersUnitStrideDevice = 16;
/// GPU, NCHW, unit stride and dilation, not 1x1, no fused pooling: Tiled leads up to this
/// many filters since its staging carries its offsets (H100, session 6, three runs: 64
/// filters of 3x3 at 56x56, N = 64, Tiled 0.511-0.524 ms, ImplicitGemm 0.546-0.551 ms;
/// 29 filters of 5x5 over 3 channels, Tiled 0.247-0.254 ms, ImplicitGemm 0.272-0.278
/// ms). From 128 filters the GEMMs lead (128 at 28x28: Tiled 0.62 ms, Im2colGemm 0.55).
inline constexpr std::int64_t kMidFiltersUnitStrideNchwDevice = 64;
/// GPU, convolution with a fused pooling: Tiled pools every window shape inside its
/// kernel, ImplicitGemm only non-overlapping windows, and with few filters Tiled's
/// fused kernel leads (LeNet C3 + ReLU + 4x4 max at batch 10,000: Tiled 2.98 ms,
/// ImplicitGemm 3.05 ms in NCHW, 2.91 vs 3.44 ms in NHWC; C1 + 2x2 max: 1.85 vs 7.79 ms).
inline constexpr std::int64_t kFusedPoolFiltersDevice = 16;
/// GPU, NHWC at unit stride with more than kTiledNhwcFiltersAbove filters and up to
/// kTiledNhwcReductionEnd taps: Tiled stages channel-contiguous rows and leads, where
/// ImplicitGemm's NHWC gathers are not coalesced (H100, 2026-11-22, after Tiled's launch
/// bound: 3x3 with 64 channels at 56x56, Tiled 0.737 ms, ImplicitGemm 1.10 ms; 5x5 from
/// 3 channels to 29 filters, Tiled 0.462 ms, ImplicitGemm 0.511 ms). With 16 filters or
/// fewer ImplicitGemm's 16-row tile leads (LeNet C3: 3.82 vs 3.96 ms).
inline constexpr std::int64_t kTiledNhwcFiltersAbove = 16;
inline constexpr std::int64_t kTiledNhwcReductionEnd = 576;
/// GPU: from this reduction length and kWideGemmFiltersDevice filters cuBLAS on the
/// unrolled matrix leads: the GEMM is large in every dimension (3x3 with 128 channels at
/// 28x28: Im2colGemm 0.545 ms, ImplicitGemm 0.570 ms; 256 channels at 14x14: 0.469 vs
/// 0.587 ms; 512 at 7x7: 0.214 vs 1.37 ms, where few pixels leave ImplicitGemm's tiles
/// too few to fill the GPU).
inline constexpr std::int64_t kWideGemmReductionDevice = 1024;
inline constexpr std::int64_t kWideGemmFiltersDevice = 128;
/// GPU, NHWC 1x1: the unrolled matrix is the input itself; cuBLAS leads up to this many
/// filters (256 -> 64 channels at 56x56: Im2colGemm 0.352 ms, ImplicitGemm 0.444 ms; with
/// 256 filters ImplicitGemm leads, 0.445 vs 0.768 ms).
inline constexpr std::int64_t kPointwiseNhwcGemmFiltersDevice = 64;
inline constexpr std::int64_t kShortReductionHost = 256;
/// Host, strided or dilated: Tiled's innermost loop then gathers every stride-th staged
/// column instead of a contiguous SIMD load, and loses to Im2colGemm unless the
/// reduction is tiny (CPU, batch 1,000: stride-2 LeNet C1, C*R*S = 49, Tiled 94 ms vs
/// Im2colGemm 129 ms; stride-2 C3, 196, Tiled 433 ms vs 117 ms).
inline constexpr std::int64_t kTinyReductionHostStrided = 64;

inline bool unit_stride_and_dilation(const Conv2dProblem& pb) {
  return pb.stride_h == 1 && pb.stride_w == 1 && pb.dilation_h == 1 && pb.dilation_w == 1;
}

/// 1x1, stride 1, no padding: the unrolled matrix is the input itself.
inline bool is_pointwise(const Conv2dProblem& pb) {
  return pb.R == 1 && pb.S == 1 && pb.stride_h == 1 && pb.stride_w == 1 && pb.pad_h == 0 &&
         pb.pad_w == 0;
}

/// The Auto heuristic's rules, most specific first. The last rule applies always.
inline const auto& conv2d_algo_rules() {
  using A = ConvAlgo;
  static const AlgoRule rules[] = {
      // --- GPUs ---------------------------------------------------------------------
      {"device_few_filters",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && pb.M <= kFewFiltersDevice;
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_fused_pool_few_filters",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && pb.has_pool && pb.M <= kFusedPoolFiltersDevice;
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_unit_stride_few_filters",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && pb.M <= kFewFiltersUnitStrideDevice &&
                unit_stride_and_dilation(pb) && !is_pointwise(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_unit_stride_nchw_mid_filters",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && pb.layout == Layout::NCHW && !pb.has_pool &&
                pb.M <= kMidFiltersUnitStrideNchwDevice && unit_stride_and_dilation(pb) &&
                !is_pointwise(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_nhwc_direct",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && pb.layout == Layout::NHWC && unit_stride_and_dilation(pb) &&
                !is_pointwise(pb) && pb.M > kTiledNhwcFiltersAbove &&
                reduction_length(pb) <= kTiledNhwcReductionEnd;
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_wide_gemm",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && reduction_length(pb) >= kWideGemmReductionDevice &&
                pb.M >= kWideGemmFiltersDevice;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"device_pointwise_nhwc",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Device && is_pointwise(pb) && pb.layout == Layout::NHWC &&
                pb.M <= kPointwiseNhwcGemmFiltersDevice;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      // Everything else on a GPU: the gathered GEMM (LeNet C3 at stride 2, 1x1 NCHW
      // layers, AlexNet's conv1, strided and dilated shapes all measured fastest with it).
      {"device_default",
       [](const Conv2dProblem&, Target t) { return t == Target::Device; },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      // --- CPUs ---------------------------------------------------------------------
      // A 1x1, stride-1, unpadded convolution is a plain GEMM (the unrolled matrix is the
      // input itself): hand it to the vendor GEMM.
      {"host_pointwise",
       [](const Conv2dProblem& pb, Target) { return is_pointwise(pb); },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"host_short_reduction",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Host && reduction_length(pb) <= kShortReductionHost &&
                unit_stride_and_dilation(pb);
       },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // (NHWC only: in NCHW ImplicitGemm is ahead here too, LeNet C1 at stride 2: 33-46
      // ms against Tiled's 43-48 ms over three runs.)
      {"host_nhwc_strided_tiny_reduction",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Host && pb.layout == Layout::NHWC &&
                reduction_length(pb) <= kTinyReductionHostStrided;
       },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // The other NCHW layers on a CPU (long reductions, or strided and dilated beyond
      // the tiny ones): ImplicitGemm's per-team panel stays in L2 and its register
      // blocks keep the FMA units busy; it is as fast as Im2colGemm + OpenBLAS or faster
      // and, without the BLAS pipeline, steadier (2 cores, 20 repetitions each: LeNet
      // C3 at stride 2, 46-48 ms against 40-60 ms; the dilated odd shape 1.14-1.19 ms
      // against 1.34-1.71 ms; 3x3 with 64 channels at 56x56, N=8: 15.5 against 15.7 ms,
      // oneDNN NCHW 18.3 ms).
      {"host_nchw_gemm",
       [](const Conv2dProblem& pb, Target t) {
         return t == Target::Host && pb.layout == Layout::NCHW;
       },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      // Other long reductions on a CPU: unroll and call the BLAS sgemm (OpenBLAS/MKL).
      {"host_long_reduction",
       [](const Conv2dProblem&, Target) { return true; },
       {A::Im2colGemm, A::Tiled, A::ImplicitGemm, A::Reference}},
  };
  return rules;
}

/// An algorithm and why it was chosen (a rule's name, or "cache").
struct AlgoChoice {
  ConvAlgo algo;
  const char* reason;
};

/// The Auto heuristic: the first rule that applies to `pb` on `target` picks its most
/// preferred algorithm among `available`. Depends on nothing else (no cache, no timing),
/// so tests can ask it about algorithms the build does not have yet.
inline AlgoChoice select_conv2d_algo(const Conv2dProblem& pb, Target target,
                                     AlgoSet available = implemented_conv_algo_set) {
  for (const AlgoRule& rule : conv2d_algo_rules()) {
    if (!rule.applies(pb, target)) continue;
    for (ConvAlgo a : rule.prefer)
      if (available.contains(a)) return {a, rule.name};
  }
  return {ConvAlgo::Reference, "fallback"};
}

/// What `Auto` runs on a validated problem: find_best_algo's cached winner for exactly
/// this problem (backend, scalar, View types included) when the cache has one that this
/// build implements, otherwise the heuristic's choice.
template <class ExecSpace, class XView, class WView, class YView>
AlgoChoice resolve_auto_algo(const Conv2dProblem& pb) {
  if (!algo_cache().empty()) {
    const auto hit = algo_cache().find(make_algo_cache_key<ExecSpace, XView, WView, YView>(pb));
    if (hit && is_implemented(hit->algo)) return {hit->algo, "cache"};
  }
  return select_conv2d_algo(pb, target_of<ExecSpace>());
}

/// "Reference, Tiled, ..." for messages.
inline std::string implemented_conv_algo_names() {
  std::string names;
  for (ConvAlgo a : implemented_conv_algos)
    names += std::string(names.empty() ? "" : ", ") + to_string(a);
  return names;
}

}  // namespace kcnn::Impl
