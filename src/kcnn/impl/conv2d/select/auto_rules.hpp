// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/select/auto_rules.hpp
/// \brief How `ConvAlgo::Auto` chooses: the tuner's cached winner for the exact problem
///        if there is one, else rules keyed by target, element type and host ISA (the
///        evidence: TUNING.md), among the registered algorithms that can run the problem.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../../types.hpp"
#include "../../arch/device_traits.hpp"
#include "../../arch/host_simd.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../dispatch.hpp"
#include "../registry.hpp"
#include "../tensor_core/few_channels_launch.hpp"
#include "../winograd/device_fused.hpp"
#include "algo_cache.hpp"

namespace kcnn::Impl {

/// Every algorithm conv2d_forward can run, in the order find_best_algo tries them: the
/// registry's (impl/conv2d/registry.hpp).
inline constexpr const auto& implemented_conv_algos = Conv2dRegistry::ids;

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
  // Values beyond the mask (a cast integer) belong to no set.
  static constexpr std::uint32_t bit(ConvAlgo a) {
    const auto i = static_cast<unsigned>(a);
    return i < 32 ? 1u << i : 0u;
  }
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
  return runs_on_host_v<ExecSpace> ? Target::Host : Target::Device;
}

/// What the Auto rules look at besides the problem: where the kernels run, the element
/// type, and the host ISA of the build (the GPU rules are measured on the H100, sm_90).
struct AutoContext {
  Target target = Target::Host;
  ElementKind element = ElementKind::Float32;
  HostIsa host_isa = build_host_isa();
};

/// One rule of the Auto heuristic. Rules are tried in order; the first whose target is
/// the call's and whose `applies` holds picks the first algorithm of `prefer` that the
/// build implements and that can run the problem (its can_implement). Rules may list
/// algorithms that do not exist yet, so that each one starts being chosen the moment it
/// joins the registry; Reference closes every list. The measurements behind each rule
/// are in TUNING.md, next to this file.
struct AlgoRule {
  const char* name;  ///< reported by select_conv2d_algo (tests, logs)
  Target target;     ///< the rule applies on this target only
  bool (*applies)(const Conv2dProblem&, const AutoContext&);
  std::vector<ConvAlgo> prefer;
};

/// Whether elements of this kind are 16-bit (half_t, kcnn::bfloat16).
constexpr bool is_16bit(ElementKind e) {
  return e == ElementKind::Float16 || e == ElementKind::BFloat16;
}

/// Length of the reduction each output element needs.
inline std::int64_t reduction_length(const Conv2dProblem& pb) {
  return pb.C * pb.R * pb.S;
}

// Thresholds of the rules below. Each was placed by a measurement; the tables are in
// TUNING.md (same folder), by rule and constant.

/// GPU, 16-bit tensors that TensorCoreGemm runs with its few-channel kernel (at most 4
/// channels and 16 filters, unit stride and dilation, no pooling or 2x2 / 4x4 at their
/// stride): it leads Tiled from this many multiply-adds per output pixel (C*R*S*M).
/// Measured at two points (H100, bfloat16, batch 10,000, bias + ReLU + fused max
/// pooling): LeNet C3 (4 x 49 x 16 = 3136) 0.70 ms against Tiled's 2.56; C1 (1 x 49 x 4 =
/// 196) 2.69 ms against 1.82. The threshold sits between the two, not placed finer.
inline constexpr std::int64_t kFewChannelsTensorCoreMacs16BitDevice = 1024;
/// GPU, 16-bit tensors: up to this many filters Tiled's direct kernel leads
/// (TensorCoreGemm's 16-bit tiles hold 64 or 128 filters: LeNet's 4 and 16 fill them to
/// 6-25%).
inline constexpr std::int64_t kFewFilters16BitDevice = 16;
/// GPU, 16-bit tensors: from this reduction length Im2colGemm (cuBLAS' 16-bit GEMM on
/// the unrolled matrix) leads TensorCoreGemm (measured: 2304 taps TensorCoreGemm,
/// 4608 Im2colGemm).
inline constexpr std::int64_t kLongReduction16BitDevice = 4096;
/// GPU, 16-bit tensors: NHWC layers whose channel count is a multiple of this run
/// TensorCoreGemm's channel-run kernel (its stages' 32 taps), which leads Im2colGemm at
/// every reduction length measured (session 25, H200, K = 4608: bf16 0.053 against 0.058
/// ms, half 0.055 against 0.059): they skip device_16bit_long_reduction.
inline constexpr std::int64_t kChannelRunTaps16Bit = 32;

/// GPU: up to this many filters Tiled's direct kernel leads (ImplicitGemm's smallest
/// tile holds 16 filters).
inline constexpr std::int64_t kFewFiltersDevice = 8;
/// GPU, unit stride and dilation, not 1x1: Tiled leads up to this many filters.
inline constexpr std::int64_t kFewFiltersUnitStrideDevice = 16;
/// GPU, NCHW, unit stride and dilation, not 1x1, no fused pooling: Tiled leads up to
/// this many filters; from 128 the GEMMs lead.
inline constexpr std::int64_t kMidFiltersUnitStrideNchwDevice = 64;
/// GPU, fused pooling: Tiled's fused kernel leads up to this many filters.
inline constexpr std::int64_t kFusedPoolFiltersDevice = 16;
/// GPU, NHWC at unit stride, more filters than this and a reduction up to
/// kTiledNhwcReductionEnd: Tiled's channel-contiguous staging leads ImplicitGemm's
/// uncoalesced NHWC gathers.
inline constexpr std::int64_t kTiledNhwcFiltersAbove = 16;
inline constexpr std::int64_t kTiledNhwcReductionEnd = 576;
/// GPU: from this reduction length and kWideGemmFiltersDevice filters, cuBLAS on the
/// unrolled matrix leads.
inline constexpr std::int64_t kWideGemmReductionDevice = 1024;
inline constexpr std::int64_t kWideGemmFiltersDevice = 128;
/// GPU, TF32 / TF32x3: where TensorCoreGemm leads (select/TUNING.md, "GPU, math modes").
/// From kTensorCoreFiltersDevice filters; NHWC under TF32 also from
/// kTensorCoreFiltersNhwcDevice filters with kTensorCoreReductionBeginNhwcDevice taps
/// (fewer: LeNet's and the odd suite's small layers, where Tiled and ImplicitGemm lead).
/// (kTensorCoreFiltersNhwcStridedDevice at stride > 1: LeNet C3 at stride 2). Up to
/// kTensorCoreReductionEndDevice taps (beyond, Im2colGemm with cuBLAS in TF32 leads);
/// TF32x3 likewise in NCHW and without a bound in NHWC (Im2colGemm's cuBLAS computes
/// strictly then). NCHW 3x3 layers run the NHWC kernel on a channels-last copy of x
/// (tensor_core/channels_last.hpp), so both layouts share the bounds but NHWC's
/// few-filters clauses, where the copy would cost too much.
inline constexpr std::int64_t kTensorCoreFiltersNhwcDevice = 24;
inline constexpr std::int64_t kTensorCoreFiltersNhwcStridedDevice = 16;
inline constexpr std::int64_t kTensorCoreReductionBeginNhwcDevice = 128;
inline constexpr std::int64_t kTensorCoreFiltersDevice = 64;
inline constexpr std::int64_t kTensorCoreReductionEndDevice = 2304;
/// GPU, double: TensorCoreGemm's DMMA leads from this many filters (NHWC also, past the
/// few-filters rule, from kTensorCoreReductionBeginDoubleNhwcDevice taps) up to this
/// reduction length, in both layouts (NCHW on the channels-last copy). 1x1 layers
/// included.
inline constexpr std::int64_t kTensorCoreFiltersDoubleDevice = 32;
inline constexpr std::int64_t kTensorCoreReductionBeginDoubleNhwcDevice = 100;
inline constexpr std::int64_t kTensorCoreReductionEndDoubleDevice = 1152;
/// GPU, double: up to this many filters Tiled leads (LeNet C1 and C3, strided too);
/// NHWC only up to kFewFiltersDoubleNhwcDevice (LeNet C1; C3 goes to the tensor cores).
inline constexpr std::int64_t kFewFiltersDoubleDevice = 16;
inline constexpr std::int64_t kFewFiltersDoubleNhwcDevice = 8;
/// GPU, double: from this many filters cuBLAS's dgemm (fp64 tensor cores) leads.
inline constexpr std::int64_t kWideGemmFiltersDoubleDevice = 64;
/// GPU, NHWC 1x1: cuBLAS on the input itself leads up to this many filters.
inline constexpr std::int64_t kPointwiseNhwcGemmFiltersDevice = 64;
/// Host, AVX2 and AVX-512 without AMX, float, 3x3 stride-1 undilated unpooled layers:
/// Winograd's F(4x4) leads Tiled and oneDNN's blocked layout from kWinogradMinChannelsHost
/// to kWinogradMaxChannelsHost input channels with at most kWinogradMaxFiltersHost filters
/// and at least kWinogradMinTilesHost 4x4 output tiles (TUNING.md, session 34 on AVX2,
/// session 42 on AVX-512: the 64-, 128- and 256-channel ResNet layers at N=8; 16 and 3
/// channels and the 512-channel layer at 7x7, 32 tiles, slower than Tiled).
inline constexpr std::int64_t kWinogradMinChannelsHost = 32;
inline constexpr std::int64_t kWinogradMaxChannelsHost = 256;
inline constexpr std::int64_t kWinogradMaxFiltersHost = 256;
inline constexpr std::int64_t kWinogradMinTilesHost = 128;
/// The same on AVX-512 builds without AMX (AMD Zen 5, session 42, after the vectorized
/// filter transform): Winograd also leads Tiled on the 512-channel layers at 7x7 (32
/// tiles: NCHW / NHWC 4.22 / 4.72 ms against 5.76 / 5.59) and 14x14 (11.4 / 11.8
/// against 20.3 / 30.4), and oneDNN's blocked layout (4.71 and 19.2).
inline constexpr std::int64_t kWinogradMaxChannelsHostAvx512 = 512;
inline constexpr std::int64_t kWinogradMinTilesHostAvx512 = 32;
/// GPU (CUDA), float, 3x3 stride-1 undilated unpooled layers outside TF32 math:
/// Winograd's fused F(2x2) kernel leads Tiled and ImplicitGemm (TUNING.md, session 35,
/// H200) with at least kWinogradMinChannelsDevice channels and either
/// kWinogradMinFiltersDevice filters or more filling at least two thirds of its blocks of
/// WinogradFusedShape::BK, or from kWinogradMinFiltersDevice / 2 filters with
/// kWinogradWideChannelsDevice channels; and with at least kWinogradMinTeamsDevice teams
/// or at most kWinogradWideChannelsDevice channels (a team's steps run in sequence: the
/// 256- and 512-channel layers at batch 1 and 8, 8 and 32 teams, trailed ImplicitGemm).
inline constexpr std::int64_t kWinogradMinChannelsDevice = 16;
inline constexpr std::int64_t kWinogradMinFiltersDevice = 64;
inline constexpr std::int64_t kWinogradWideChannelsDevice = 64;
inline constexpr std::int64_t kWinogradMinTeamsDevice = 64;
/// Host, unit stride: up to this reduction length Tiled's direct kernel leads.
inline constexpr std::int64_t kShortReductionHost = 256;
/// Host, NHWC, strided or dilated: Tiled leads only for reductions up to this length.
inline constexpr std::int64_t kTinyReductionHostStrided = 64;
/// Host, double, NHWC: Tiled's direct kernel leads up to this many filters (LeNet's C1);
/// with more, the GEMMs do.
inline constexpr std::int64_t kFewFiltersDoubleHost = 8;
/// Host, double, NHWC, undilated: below this reduction length the BLAS dgemm on the
/// unrolled matrix leads; from it, ImplicitGemm's register blocks (ResNet's 128- and
/// 256-channel layers).
inline constexpr std::int64_t kLongReductionDoubleNhwcHost = 1024;
/// Host, double, NCHW at unit stride and dilation: reductions in
/// (kTinyReductionHostStrided, kShortReductionDoubleNchwHost] go to the BLAS dgemm.
inline constexpr std::int64_t kShortReductionDoubleNchwHost = 128;

/// A stride above 1 in either direction.
inline bool is_strided(const Conv2dProblem& pb) {
  return pb.stride_h > 1 || pb.stride_w > 1;
}

inline bool unit_stride_and_dilation(const Conv2dProblem& pb) {
  return pb.stride_h == 1 && pb.stride_w == 1 && pb.dilation_h == 1 && pb.dilation_w == 1;
}

/// 3x3 at stride 1 without dilation: the geometry ConvAlgo::Winograd computes.
inline bool is_winograd_3x3(const Conv2dProblem& pb) {
  return pb.R == 3 && pb.S == 3 && unit_stride_and_dilation(pb);
}

/// Whether Winograd's fused GPU kernel leads on pb (see kWinogradMinChannelsDevice).
inline bool winograd_leads_on_device(const Conv2dProblem& pb) {
  if (!is_winograd_3x3(pb) || pb.has_pool || pb.math == MathMode::TF32 ||
      pb.C < kWinogradMinChannelsDevice)
    return false;
  using Shape = WinogradFusedShape;
  const std::int64_t blocks = (pb.M + Shape::BK - 1) / Shape::BK;
  const bool filters = pb.M >= kWinogradMinFiltersDevice ? 3 * pb.M >= 2 * blocks * Shape::BK
                                                         : 2 * pb.M >= kWinogradMinFiltersDevice &&
                                                               pb.C >= kWinogradWideChannelsDevice;
  const std::int64_t teams = Shape::teams(pb.M, pb.N, pb.P, pb.Q);
  return filters && (teams >= kWinogradMinTeamsDevice || pb.C <= kWinogradWideChannelsDevice);
}

/// Output tiles of 4x4 over the batch: the work Winograd's F(4x4) spreads over threads.
inline std::int64_t winograd_4x4_tiles(const Conv2dProblem& pb) {
  return pb.N * ((pb.P + 3) / 4) * ((pb.Q + 3) / 4);
}

/// An unpooled 3x3 stride-1 layer in a host Winograd rule's range (Tiled fuses the
/// pooling): from kWinogradMinChannelsHost channels, at most max_channels channels and
/// max_filters filters, at least min_tiles 4x4 output tiles.
inline bool host_winograd_range(const Conv2dProblem& pb, std::int64_t max_channels,
                                std::int64_t max_filters, std::int64_t min_tiles) {
  return is_winograd_3x3(pb) && !pb.has_pool && pb.C >= kWinogradMinChannelsHost &&
         pb.C <= max_channels && pb.M <= max_filters && winograd_4x4_tiles(pb) >= min_tiles;
}

/// 1x1, stride 1, no padding: the unrolled matrix is the input itself.
inline bool is_pointwise(const Conv2dProblem& pb) {
  return pb.R == 1 && pb.S == 1 && pb.stride_h == 1 && pb.stride_w == 1 && pb.pad_h == 0 &&
         pb.pad_w == 0;
}

/// The Auto heuristic's rules, most specific first; per target the last rule applies
/// always. Evidence for every rule and threshold: TUNING.md.
inline const std::vector<AlgoRule>& conv2d_algo_rules() {
  using A = ConvAlgo;
  using P = const Conv2dProblem&;
  using C = const AutoContext&;
  constexpr Target D = Target::Device, H = Target::Host;
  static const std::vector<AlgoRule> rules = {
      // --- GPUs, 16-bit tensors (half_t, kcnn::bfloat16): TensorCoreGemm's single-channel
      // kernel where it applies, its few-channel kernel where that has enough multiply-adds
      // per pixel, Tiled for other few filters,
      // Im2colGemm (cublasGemmEx) for long reductions, else TensorCoreGemm's m16n8k16;
      // without tensor cores Im2colGemm, which led every ResNet layer among the others ----
      {"device_16bit_single_channel_tensor_cores",
       D,
       [](P pb, C c) { return is_16bit(c.element) && single_channel_kernel_fits(pb); },
       {A::TensorCoreGemm, A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      {"device_16bit_few_channels_tensor_cores",
       D,
       [](P pb, C c) {
         return is_16bit(c.element) && few_channels_unfit(pb) == nullptr &&
                reduction_length(pb) * pb.M >= kFewChannelsTensorCoreMacs16BitDevice;
       },
       {A::TensorCoreGemm, A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      {"device_16bit_few_filters",
       D,
       [](P pb, C c) { return is_16bit(c.element) && pb.M <= kFewFilters16BitDevice; },
       {A::Tiled, A::TensorCoreGemm, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      {"device_16bit_long_reduction",
       D,
       [](P pb, C c) {
         return is_16bit(c.element) && reduction_length(pb) >= kLongReduction16BitDevice &&
                !(pb.layout == Layout::NHWC && pb.C % kChannelRunTaps16Bit == 0);
       },
       {A::Im2colGemm, A::TensorCoreGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"device_16bit_tensor_cores",
       D,
       [](P, C c) { return is_16bit(c.element); },
       {A::TensorCoreGemm, A::Im2colGemm, A::Tiled, A::ImplicitGemm, A::Reference}},
      // --- GPUs, TF32 math modes: TensorCoreGemm where it leads (enough filters, short
      // enough reductions; the bounds per layout and mode above); elsewhere the strict rules
      // below, under which Im2colGemm's cuBLAS runs TF32 and leads the long reductions -----
      {"device_tensor_cores",
       D,
       [](P pb, C c) {
         if (c.element != ElementKind::Float32 || pb.math == MathMode::Strict) return false;
         const std::int64_t K = reduction_length(pb);
         const bool nhwc = pb.layout == Layout::NHWC;
         const bool few_filters_nhwc = nhwc && pb.math == MathMode::TF32 &&
                                       K >= kTensorCoreReductionBeginNhwcDevice &&
                                       pb.M >= (is_strided(pb) ? kTensorCoreFiltersNhwcStridedDevice
                                                               : kTensorCoreFiltersNhwcDevice);
         const bool unbounded = nhwc && pb.math == MathMode::TF32x3;
         return (pb.M >= kTensorCoreFiltersDevice || few_filters_nhwc) &&
                (unbounded || K <= kTensorCoreReductionEndDevice);
       },
       {A::TensorCoreGemm}},
      // --- GPUs, double: cuBLAS's dgemm runs on the H100's fp64 tensor cores, Tiled and
      // ImplicitGemm on its fp64 FMA units; the GEMM wins once M feeds them ---------------
      {"device_double_few_filters",
       D,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 &&
                pb.M <= (pb.layout == Layout::NHWC ? kFewFiltersDoubleNhwcDevice
                                                   : kFewFiltersDoubleDevice);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_double_tensor_cores",
       D,
       [](P pb, C c) {
         if (c.element != ElementKind::Float64) return false;
         const std::int64_t K = reduction_length(pb);
         const bool long_reduction_nhwc =
             pb.layout == Layout::NHWC && K >= kTensorCoreReductionBeginDoubleNhwcDevice;
         return (pb.M >= kTensorCoreFiltersDoubleDevice || long_reduction_nhwc) &&
                K <= kTensorCoreReductionEndDoubleDevice;
       },
       {A::TensorCoreGemm}},
      {"device_double_pointwise_nchw",
       D,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && is_pointwise(pb) && pb.layout == Layout::NCHW;
       },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      {"device_double_wide_gemm",
       D,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.M >= kWideGemmFiltersDoubleDevice;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"device_double_nchw_direct",
       D,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.layout == Layout::NCHW && !is_strided(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_double_default",
       D,
       [](P, C c) { return c.element == ElementKind::Float64; },
       {A::ImplicitGemm, A::Tiled, A::Im2colGemm, A::Reference}},
      // --- GPUs, float ----------------------------------------------------------------
      // 3x3 stride-1 layers with enough channels and filters, outside TF32: Winograd's
      // fused kernel (session 35, TUNING.md); where it cannot run (its workspace), what
      // the rules below pick for the measured layers: cuBLAS for the long reductions of
      // many filters, else Tiled.
      {"device_winograd_long_reduction",
       D,
       [](P pb, C c) {
         return c.element == ElementKind::Float32 && winograd_leads_on_device(pb) &&
                reduction_length(pb) >= kWideGemmReductionDevice && pb.M >= kWideGemmFiltersDevice;
       },
       {A::Winograd, A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"device_winograd",
       D,
       [](P pb, C c) { return c.element == ElementKind::Float32 && winograd_leads_on_device(pb); },
       {A::Winograd, A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_few_filters",
       D,
       [](P pb, C) { return pb.M <= kFewFiltersDevice; },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_fused_pool_few_filters",
       D,
       [](P pb, C) { return pb.has_pool && pb.M <= kFusedPoolFiltersDevice; },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_unit_stride_few_filters",
       D,
       [](P pb, C) {
         return pb.M <= kFewFiltersUnitStrideDevice && unit_stride_and_dilation(pb) &&
                !is_pointwise(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_unit_stride_nchw_mid_filters",
       D,
       [](P pb, C) {
         return pb.layout == Layout::NCHW && !pb.has_pool &&
                pb.M <= kMidFiltersUnitStrideNchwDevice && unit_stride_and_dilation(pb) &&
                !is_pointwise(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_nhwc_direct",
       D,
       [](P pb, C) {
         return pb.layout == Layout::NHWC && unit_stride_and_dilation(pb) && !is_pointwise(pb) &&
                pb.M > kTiledNhwcFiltersAbove && reduction_length(pb) <= kTiledNhwcReductionEnd;
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"device_wide_gemm",
       D,
       [](P pb, C) {
         return reduction_length(pb) >= kWideGemmReductionDevice && pb.M >= kWideGemmFiltersDevice;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"device_pointwise_nhwc",
       D,
       [](P pb, C) {
         return is_pointwise(pb) && pb.layout == Layout::NHWC &&
                pb.M <= kPointwiseNhwcGemmFiltersDevice;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      // Everything else on a GPU: the gathered GEMM.
      {"device_default",
       D,
       [](P, C) { return true; },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      // --- CPUs -----------------------------------------------------------------------
      // A 1x1, stride-1, unpadded convolution is a plain GEMM: the vendor GEMM.
      {"host_pointwise",
       H,
       [](P pb, C) { return is_pointwise(pb); },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      // AVX2 builds (AMD EPYC Zen 3, session 32), float and double, both layouts: Tiled's
      // register-blocked kernel (NCHW too since session 32, whose AVX2 channel blocks grew
      // to 72 KB) leads or ties every layer of the suites measured (TUNING.md): float NCHW
      // ResNet 3x3 1.1-1.4x the BLAS, AlexNet, LeNet and the odd shapes 1.2-3x; float NHWC
      // 0.99x (512 channels) to 3.3x; double 1.06x (NCHW, 64 channels) to 6x the fastest
      // GEMM.
      // AVX2 builds, float, 3x3 stride-1 layers of 32 to 256 channels over enough tiles,
      // unpooled (Tiled fuses the pooling): Winograd's F(4x4) (session 34, TUNING.md).
      {"host_avx2_winograd",
       H,
       [](P pb, C c) {
         return c.host_isa == HostIsa::Avx2 && c.element == ElementKind::Float32 &&
                host_winograd_range(pb, kWinogradMaxChannelsHost, kWinogradMaxFiltersHost,
                                    kWinogradMinTilesHost);
       },
       {A::Winograd, A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // AVX-512 builds (measured on AMD EPYC Zen 5, without AMX, session 42): F(4x4)
      // 1.4-2x Tiled's register-blocked kernel and 1.05-1.9x oneDNN's blocked layout on
      // the four ResNet layers, 512 channels included (TUNING.md). AVX-512 + AMX builds
      // (Intel Xeon) take it too since session 43, unmeasured there: the kernels are the
      // same AVX-512 code (AMX multiplies 16- and 8-bit values only), and the BLAS that
      // the AMX rule chose ran those layers 1.8-2.5x behind oneDNN's blocked layout on a
      // Xeon (issue 20's table).
      {"host_avx512_winograd",
       H,
       [](P pb, C c) {
         return has_avx512(c.host_isa) && c.element == ElementKind::Float32 &&
                host_winograd_range(pb, kWinogradMaxChannelsHostAvx512,
                                    kWinogradMaxChannelsHostAvx512, kWinogradMinTilesHostAvx512);
       },
       {A::Winograd, A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      {"host_avx2_direct",
       H,
       [](P, C c) {
         return c.host_isa == HostIsa::Avx2 &&
                (c.element == ElementKind::Float32 || c.element == ElementKind::Float64);
       },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // CPUs, double (AMD Zen 4, medians of three runs: TUNING.md). The fp64 BLAS and
      // ImplicitGemm's fp64 register blocks rank differently from fp32.
      {"host_double_tiny_reduction",
       H,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 &&
                reduction_length(pb) <= kTinyReductionHostStrided && unit_stride_and_dilation(pb);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"host_double_nhwc_few_filters",
       H,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.layout == Layout::NHWC &&
                pb.M <= kFewFiltersDoubleHost && reduction_length(pb) <= kShortReductionHost &&
                (unit_stride_and_dilation(pb) || reduction_length(pb) <= kTinyReductionHostStrided);
       },
       {A::Tiled, A::ImplicitGemm, A::Im2colGemm, A::Reference}},
      {"host_double_nhwc_strided",
       H,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.layout == Layout::NHWC && is_strided(pb);
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"host_double_nhwc_short_reduction",
       H,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.layout == Layout::NHWC &&
                pb.dilation_h == 1 && pb.dilation_w == 1 &&
                reduction_length(pb) < kLongReductionDoubleNhwcHost;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"host_double_nchw_short_reduction",
       H,
       [](P pb, C c) {
         return c.element == ElementKind::Float64 && pb.layout == Layout::NCHW &&
                unit_stride_and_dilation(pb) && reduction_length(pb) > kTinyReductionHostStrided &&
                reduction_length(pb) <= kShortReductionDoubleNchwHost;
       },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      {"host_double_default",
       H,
       [](P, C c) { return c.element == ElementKind::Float64; },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      // CPUs, float.
      {"host_short_reduction",
       H,
       [](P pb, C) {
         return reduction_length(pb) <= kShortReductionHost && unit_stride_and_dilation(pb);
       },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      {"host_nhwc_strided_tiny_reduction",
       H,
       [](P pb, C) {
         return pb.layout == Layout::NHWC && reduction_length(pb) <= kTinyReductionHostStrided;
       },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // AVX-512 builds (AMD EPYC Zen 5, without AMX), float: Tiled's register-blocked
      // kernel leads every NHWC layer of the suites measured (session 25: ResNet 3x3 64 /
      // 128 / 256 / 512 channels 3.0 / 2.7 / 2.0 / 1.4x the BLAS, AlexNet conv1 and the
      // odd shapes 1.8-3.2x ImplicitGemm or the BLAS) and, since it serves NCHW too, the
      // NCHW ResNet layers (session 42: 1.2-1.4x ImplicitGemm, 2-2.3x the BLAS; TUNING.md).
      // Pointwise layers keep host_pointwise above, though Tiled measured 1.9x the BLAS
      // there too. AVX-512 + AMX builds since session 43, as host_avx512_winograd (their
      // former rule, the BLAS on NCHW layers of reductions from 512, was measured against
      // ImplicitGemm only, before this kernel served NCHW).
      {"host_avx512_direct",
       H,
       [](P, C c) { return has_avx512(c.host_isa) && c.element == ElementKind::Float32; },
       {A::Tiled, A::Im2colGemm, A::ImplicitGemm, A::Reference}},
      // 16-bit tensors, the other NCHW layers: the BLAS sgemm on the unrolled matrix's float
      // copy (ImplicitGemm converts each element in its inner loop: 1.5-1.6x slower here).
      {"host_16bit_nchw_gemm",
       H,
       [](P pb, C c) { return is_16bit(c.element) && pb.layout == Layout::NCHW; },
       {A::Im2colGemm, A::ImplicitGemm, A::Tiled, A::Reference}},
      // The other NCHW layers on a CPU: ImplicitGemm's per-team panel stays in L2.
      {"host_nchw_gemm",
       H,
       [](P pb, C) { return pb.layout == Layout::NCHW; },
       {A::ImplicitGemm, A::Im2colGemm, A::Tiled, A::Reference}},
      // Other long reductions on a CPU: unroll and call the BLAS sgemm.
      {"host_long_reduction",
       H,
       [](P, C) { return true; },
       {A::Im2colGemm, A::Tiled, A::ImplicitGemm, A::Reference}},
  };
  return rules;
}

/// An algorithm and why it was chosen (a rule's name, or "cache").
struct AlgoChoice {
  ConvAlgo algo;
  const char* reason;
};

/// The Auto heuristic: the first rule for `ctx.target` that applies to `pb` picks its
/// most preferred algorithm among `available` for which `can_run(algo)` holds. Depends
/// on nothing else (no cache, no timing), so tests can ask it about algorithms the build
/// does not have yet.
template <class CanRun>
AlgoChoice select_conv2d_algo(const Conv2dProblem& pb, const AutoContext& ctx, AlgoSet available,
                              const CanRun& can_run) {
  for (const AlgoRule& rule : conv2d_algo_rules()) {
    if (rule.target != ctx.target || !rule.applies(pb, ctx)) continue;
    for (ConvAlgo a : rule.prefer)
      if (available.contains(a) && can_run(a)) return {a, rule.name};
  }
  return {ConvAlgo::Reference, "fallback"};
}

/// The heuristic without can_implement (every available algorithm counts as able).
inline AlgoChoice select_conv2d_algo(const Conv2dProblem& pb, const AutoContext& ctx,
                                     AlgoSet available = implemented_conv_algo_set) {
  return select_conv2d_algo(pb, ctx, available, [](ConvAlgo) { return true; });
}

/// The context of a call on `ExecSpace` with elements of type T.
template <class ExecSpace, class T>
AutoContext auto_context() {
  AutoContext ctx;
  ctx.target = target_of<ExecSpace>();
  ctx.element = ElementTraits<T>::kind;
  return ctx;
}

/// The widest groups (C / groups and M / groups) Auto gives ConvAlgo::Grouped on GPUs. On an H200
/// (session 41, N = 64, 3x3 pad 1, fp32, bias and ReLU; NCHW / NHWC ms, cuDNN 9.19's
/// grouped convolution with bias in the same call), 32 groups of 4 channels (128 x 56^2)
/// 0.141 / 0.436 vs 0.716 / 1.37; of 8 (256 x 28^2) 0.105 / 0.157 vs 0.436 / 0.630; of 16
/// (512 x 14^2) 0.110 / 0.149 vs 0.224 / 0.380; of 32 (1024 x 7^2) 0.108 / 0.136 vs 0.173 /
/// 0.246. Wider groups were not measured: they go group by group. (Measured: fp32 3x3
/// layers with as many filters as channels; other filters and element types follow
/// unmeasured.) Not on CPUs: on a
/// 2-core AMD EPYC with AVX-512 (session 41, N = 8, the 8-channel layer) Grouped took
/// 4.62 / 4.07 ms and the group-by-group path Auto picks 4.26 / 4.48 (oneDNN 10.2 / 1.48).
inline constexpr std::int64_t kGroupedAutoChannels = 32;

/// What `Auto` runs on a validated problem and its kernel Views: find_best_algo's cached
/// winner for exactly this problem (backend, scalar, View types included) when the
/// cache has one that this build implements and that can run it, otherwise the
/// heuristic's choice among the algorithms that can (can_implement). An empty problem
/// runs nothing: the heuristic alone. Depthwise layers (more than one group, one channel
/// each) run ConvAlgo::Depthwise, the memory-bound stencil kernel made for them. On GPUs,
/// grouped layers of at most kGroupedAutoChannels channels and filters a group run
/// ConvAlgo::Grouped's single launch. Other grouped problems run one convolution per group
/// (conv2d/dispatch.hpp): the rules see one group's problem.
template <class ExecSpace, class XView, class WView, class YView, class XK, class WK, class BK,
          class YK>
AlgoChoice resolve_auto_algo(const ExecSpace& space, const XK& x, const WK& w, const BK& bias,
                             const YK& y, const Conv2dProblem& pb) {
  const AutoContext ctx = auto_context<ExecSpace, view_scalar_t<YView>>();
  const Conv2dProblem group = pb.group_slice();
  const bool depthwise = pb.groups > 1 && pb.depthwise();
  if (pb.empty())
    return depthwise ? AlgoChoice{ConvAlgo::Depthwise, "depthwise"}
                     : select_conv2d_algo(group, ctx);
  auto can_run = [&](ConvAlgo a) {
    return !conv2d_can_implement(space, a, x, w, bias, y, pb).has_value();
  };
  if (!algo_cache().empty()) {
    const auto hit = algo_cache().find(make_algo_cache_key<ExecSpace, XView, WView, YView>(pb));
    if (hit && is_implemented(hit->algo) && can_run(hit->algo)) return {hit->algo, "cache"};
  }
  if (depthwise && can_run(ConvAlgo::Depthwise)) return {ConvAlgo::Depthwise, "depthwise"};
  const bool narrow_groups = pb.groups > 1 && !depthwise && group.C <= kGroupedAutoChannels &&
                             group.M <= kGroupedAutoChannels;
  if (narrow_groups && ctx.target == Target::Device && can_run(ConvAlgo::Grouped))
    return {ConvAlgo::Grouped, "grouped"};
  return select_conv2d_algo(group, ctx, implemented_conv_algo_set, can_run);
}

/// "Reference, Tiled, ..." for messages.
inline std::string implemented_conv_algo_names() {
  std::string names;
  for (ConvAlgo a : implemented_conv_algos)
    names += std::string(names.empty() ? "" : ", ") + to_string(a);
  return names;
}

}  // namespace kcnn::Impl
