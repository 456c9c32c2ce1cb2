// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/launch.hpp
/// \brief ConvAlgo::TensorCoreGemm's launch: its limits (the backend, the math mode, the
///        index ranges), the tile and gather choice, and conv2d_tensor_core (the entry).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/mma.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../implicit_gemm/operands.hpp"
#include "../implicit_gemm/tile_choice.hpp"
#include "device_kernel.hpp"
#include "packed_weights.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

inline constexpr const char* kTensorCoreAlgoName = "ConvAlgo::TensorCoreGemm";

/// Which operands the 16-byte copies can gather (each copy a 16-byte aligned run of
/// k): A (double; float A is always packed first) when w is packed in the GEMM's k order (row m of
/// the M x K matrix at m * K) with K a multiple of 16 bytes' worth of elements; B (NHWC only) when
/// the channels are contiguous and C and every pixel stride of x are such multiples.
struct TensorCoreVectorGathers {
  bool a = false, b = false;
};

template <Layout L, class T>
TensorCoreVectorGathers tensor_core_vector_gathers(const ImplicitGemmOperands<L, T>& o,
                                                   const Conv2dProblem& pb) {
  constexpr std::int64_t vec = vector_elements_v<T>;
  auto aligned = [](const T* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  TensorCoreVectorGathers v;
  const bool w_packed =
      L == Layout::NCHW
          ? o.ws.w == 1 && o.ws.h == pb.S && o.ws.c == pb.R * pb.S && o.ws.n == std::int64_t(o.K)
          : o.ws.c == 1 && o.ws.w == pb.C && o.ws.h == pb.S * pb.C && o.ws.n == std::int64_t(o.K);
  v.a = w_packed && o.K % vec == 0 && aligned(o.w);
  v.b = L == Layout::NHWC && o.xs.c == 1 && pb.C % vec == 0 && o.xs.w % vec == 0 &&
        o.xs.h % vec == 0 && o.xs.n % vec == 0 && aligned(o.x);
  return v;
}

/// What a launch hands the kernel besides the operands: the packed A (float), the split
/// of K and its partial sums.
template <class T>
struct TensorCoreLaunchData {
  const T* a_pack = nullptr;
  int k_slices = 1, steps_per_slice = 0;
  T* partial = nullptr;
};

template <class Tile, TensorCoreMath Math, bool AVec, bool BVec, Layout L, class ExecSpace, class T>
void tensor_core_launch_as(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                           const TensorCoreLaunchData<T>& data, LaunchMode mode) {
  using Kernel = TensorCoreDeviceKernel<L, Tile, Math, AVec, BVec, ExecSpace>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t league = m_blocks * ((o.J + Tile::BN - 1) / Tile::BN) * data.k_slices;
  throw_if(league > std::numeric_limits<int>::max(), op, kTensorCoreAlgoName, ": ", league,
           " tiles exceed the launch limit; split the batch");
  throw_if(Kernel::scratch_bytes() > static_cast<std::size_t>(Policy::scratch_size_max(0)), op,
           "internal: ", kTensorCoreAlgoName, " tile needs ", Kernel::scratch_bytes(),
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(0));
  if (mode == LaunchMode::Check) return;
  Policy policy(space, static_cast<int>(league), Tile::threads);
  Kokkos::parallel_for("kcnn::conv2d::tensor_core",
                       policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
                       Kernel{o, static_cast<int>(m_blocks), data.a_pack, data.k_slices,
                              data.steps_per_slice, data.partial});
  if (data.k_slices > 1)
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core_split_k_reduce",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                        std::int64_t(o.M) * o.J),
        SplitKReduce<L, T, Kernel::partial_j_major>{o, data.partial, data.k_slices});
}

/// The split of K for tile `Tile` (ImplicitGemm's wave-fill rule, implicit_gemm_k_slices:
/// the slice count whose copies of the tile grid fill the GPU's team slots best; ResNet's
/// 512-channel 7x7 layer on the H100: 100 tiles of 128 x 64, 5 slices; 256 channels at
/// 14x14: 392 tiles, 2 slices) within `budget` bytes of partial sums.
struct TensorCoreSplitPlan {
  int k_slices = 1, steps_per_slice = 0;
  std::size_t partial_bytes = 0;
};

template <class Tile, Layout L, class T>
TensorCoreSplitPlan tensor_core_split_plan(const ImplicitGemmOperands<L, T>& o,
                                           std::int64_t multiprocessors, std::size_t budget) {
  const int wanted = implicit_gemm_k_slices<Tile>(o, multiprocessors, budget);
  TensorCoreSplitPlan plan;
  plan.steps_per_slice = implicit_gemm_steps_per_slice<Tile>(o.K, wanted);
  plan.k_slices = implicit_gemm_nonempty_slices<Tile>(o.K, wanted);
  if (plan.k_slices > 1)
    plan.partial_bytes =
        static_cast<std::size_t>(plan.k_slices) * sizeof(T) * std::size_t(o.M) * std::size_t(o.J);
  return plan;
}

/// Tile `Tile` under `Math`: float packs its weights for the MMAs first
/// (PackTensorCoreWeights, rounded under TF32); K is split where the tile grid is too
/// small for the GPU. Both live in the instance's cached workspace, [packed A][partial
/// sums], within `limit` bytes; returns their bytes. The gather variants compiled:
/// float B 16-byte (NHWC) or not; double NHWC both operands 16-byte or neither (a layer
/// with one but not the other is rare: C odd with K even, or unpacked w), NCHW A 16-byte
/// or not (B is gathered pixel-major, one element per copy).
template <class Tile, TensorCoreMath Math, Layout L, class ExecSpace, class T>
std::size_t tensor_core_launch_tile(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                                    TensorCoreVectorGathers vec, std::size_t limit,
                                    LaunchMode mode) {
  constexpr bool packs = Math != TensorCoreMath::F64;
  std::int64_t pack_elements = 0, pack_blocks = 0;
  if constexpr (packs) {  // (the packed layout exists for the TF32 tiles only)
    using Packed = TensorCorePackedWeightsShape<Tile>;
    const Packed packed = Packed::of(o.M, o.K);
    pack_elements = packed.elements();
    pack_blocks = packed.m_pad / Packed::quad_rows;
  }
  const std::size_t pack_bytes = align_up(static_cast<std::size_t>(pack_elements) * sizeof(T));
  throw_if(pack_bytes > limit, "kcnn::conv2d_forward", kTensorCoreAlgoName,
           ": the weights packed for the tensor cores take ", pack_bytes,
           " bytes of workspace, more than the limit of ", limit,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  const TensorCoreSplitPlan split =
      tensor_core_split_plan<Tile>(o, multiprocessor_count(space), limit - pack_bytes);
  const std::size_t bytes = pack_bytes + split.partial_bytes;

  auto launch = [&](const T* a_pack, T* partial, LaunchMode m) {
    const TensorCoreLaunchData<T> d{a_pack, split.k_slices, split.steps_per_slice, partial};
    if constexpr (!packs) {
      if constexpr (L == Layout::NHWC) {
        if (vec.a && vec.b) return tensor_core_launch_as<Tile, Math, true, true>(space, o, d, m);
      } else {
        if (vec.a) return tensor_core_launch_as<Tile, Math, true, false>(space, o, d, m);
      }
    } else if constexpr (L == Layout::NHWC) {
      if (vec.b) return tensor_core_launch_as<Tile, Math, false, true>(space, o, d, m);
    }
    tensor_core_launch_as<Tile, Math, false, false>(space, o, d, m);
  };
  launch(nullptr, nullptr, LaunchMode::Check);  // every limit before anything is enqueued
  if (mode == LaunchMode::Check) return bytes;
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, bytes);
  T* const a_pack = packs ? reinterpret_cast<T*>(lease.data()) : nullptr;
  T* const partial = split.k_slices > 1 ? reinterpret_cast<T*>(lease.data() + pack_bytes) : nullptr;
  if constexpr (packs) {
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core::pack_weights",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, pack_elements),
        PackTensorCoreWeights<L, Math == TensorCoreMath::TF32>{o.map, o.w, o.ws, a_pack, o.M, o.K,
                                                               pack_blocks});
  }
  launch(a_pack, partial, mode);
  return bytes;
}

template <TensorCoreMath Math, Layout L, class ExecSpace>
std::size_t tensor_core_launch_float(const ExecSpace& space,
                                     const ImplicitGemmOperands<L, float>& o,
                                     TensorCoreVectorGathers vec, std::size_t limit,
                                     LaunchMode mode) {
  if (o.M <= TensorCoreTiles::FloatSmallM::BM)
    return tensor_core_launch_tile<TensorCoreTiles::FloatSmallM, Math>(space, o, vec, limit, mode);
  return tensor_core_launch_tile<TensorCoreTiles::FloatLargeM, Math>(space, o, vec, limit, mode);
}

/// Runs (or with LaunchMode::Check only plans and checks) ConvAlgo::TensorCoreGemm; `pb`
/// has been validated against the Views and has no pooling (the algorithm does not
/// fuse one: dispatch pools in a second pass). Needs a CUDA build for a GPU with the
/// sm_80 tensor cores; float tensors with MathMode::TF32 or ::TF32x3 (Strict float is
/// the other algorithms' work), double tensors (IEEE fp64 products). Returns the
/// workspace bytes (within pb.workspace_limit_bytes): float's packed weights (M rounded
/// up to the block tile, K to 16, 4 bytes each) and, where K is split, the slices'
/// partial sums (slices x M x N*P*Q elements).
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_tensor_core(const ExecSpace& space, const XView& x, const WView& w,
                               const BView& bias, const YView& y, const Conv2dProblem& pb,
                               LaunchMode mode = LaunchMode::Run) {
  using T = view_scalar_t<YView>;
  constexpr const char* op = "kcnn::conv2d_forward";
  throw_if(!has_tensor_cores_v<ExecSpace>, op, kTensorCoreAlgoName,
           " needs NVIDIA tensor cores (a CUDA build for sm_80 or newer); the ", ExecSpace::name(),
           " backend of this build has none; use another algorithm");
  throw_if(ElementTraits<T>::kind == ElementKind::Float32 && pb.math == MathMode::Strict, op,
           kTensorCoreAlgoName,
           " computes float tensors with TF32 products: it needs params.math = MathMode::TF32 or "
           "MathMode::TF32x3 (MathMode::Strict is the other algorithms')");
  throw_if(pb.has_pool, op, "internal: ", kTensorCoreAlgoName, " handed a fused pooling");
  std::size_t workspace = 0;
  if constexpr (has_tensor_cores_v<ExecSpace>) {
    auto run = [&](auto layout_tag) {
      constexpr Layout L = decltype(layout_tag)::value;
      const auto o = implicit_gemm_operands<L>(x, w, bias, y, pb, kTensorCoreAlgoName);
      const TensorCoreVectorGathers vec = tensor_core_vector_gathers(o, pb);
      const std::size_t limit = pb.workspace_limit_bytes;
      if constexpr (std::is_same_v<T, double>) {
        workspace = tensor_core_launch_tile<TensorCoreTiles::Double, TensorCoreMath::F64>(
            space, o, vec, limit, mode);
      } else if constexpr (std::is_same_v<T, float>) {
        workspace =
            pb.math == MathMode::TF32x3
                ? tensor_core_launch_float<TensorCoreMath::TF32x3>(space, o, vec, limit, mode)
                : tensor_core_launch_float<TensorCoreMath::TF32>(space, o, vec, limit, mode);
      }
    };
    if (pb.layout == Layout::NCHW) {
      run(std::integral_constant<Layout, Layout::NCHW>{});
    } else {
      run(std::integral_constant<Layout, Layout::NHWC>{});
    }
  } else {
    (void)space, (void)x, (void)w, (void)bias, (void)y, (void)mode;
  }
  return workspace;
}

}  // namespace kcnn::Impl
