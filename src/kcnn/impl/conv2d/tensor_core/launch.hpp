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
#include "../../common/problem.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../implicit_gemm/operands.hpp"
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

template <class Tile, TensorCoreMath Math, bool AVec, bool BVec, Layout L, class ExecSpace, class T>
void tensor_core_launch_as(const ExecSpace& space, const ImplicitGemmOperands<L, T>& o,
                           const T* a_pack, LaunchMode mode) {
  using Kernel = TensorCoreDeviceKernel<L, Tile, Math, AVec, BVec, ExecSpace>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t league = m_blocks * ((o.J + Tile::BN - 1) / Tile::BN);
  throw_if(league > std::numeric_limits<int>::max(), op, kTensorCoreAlgoName, ": ", league,
           " tiles exceed the launch limit; split the batch");
  throw_if(Kernel::scratch_bytes() > static_cast<std::size_t>(Policy::scratch_size_max(0)), op,
           "internal: ", kTensorCoreAlgoName, " tile needs ", Kernel::scratch_bytes(),
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(0));
  if (mode == LaunchMode::Check) return;
  Policy policy(space, static_cast<int>(league), Tile::threads);
  Kokkos::parallel_for("kcnn::conv2d::tensor_core",
                       policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
                       Kernel{o, static_cast<int>(m_blocks), a_pack});
}

/// double: the gather variants compiled are NHWC both operands 16-byte or neither (a
/// layer with one but not the other is rare: C odd with K even, or unpacked w); NCHW A
/// 16-byte or not (B is gathered pixel-major, one element per copy).
template <class Tile, Layout L, class ExecSpace>
void tensor_core_launch_double(const ExecSpace& space, const ImplicitGemmOperands<L, double>& o,
                               TensorCoreVectorGathers vec, LaunchMode mode) {
  constexpr TensorCoreMath F64 = TensorCoreMath::F64;
  const double* const no_pack = nullptr;  // fp64 gathers w itself
  if constexpr (L == Layout::NHWC) {
    if (vec.a && vec.b)
      return tensor_core_launch_as<Tile, F64, true, true>(space, o, no_pack, mode);
  } else {
    if (vec.a) return tensor_core_launch_as<Tile, F64, true, false>(space, o, no_pack, mode);
  }
  tensor_core_launch_as<Tile, F64, false, false>(space, o, no_pack, mode);
}

/// float: the weights packed for the MMAs (PackTensorCoreWeights, rounded under TF32)
/// into the instance's cached workspace, then the kernel, B 16-byte (NHWC) or not.
/// Returns the workspace bytes (the packed weights), which `limit` bounds.
template <class Tile, TensorCoreMath Math, Layout L, class ExecSpace>
std::size_t tensor_core_launch_float_tile(const ExecSpace& space,
                                          const ImplicitGemmOperands<L, float>& o,
                                          TensorCoreVectorGathers vec, std::size_t limit,
                                          LaunchMode mode) {
  using Packed = TensorCorePackedWeightsShape<Tile>;
  const Packed packed = Packed::of(o.M, o.K);
  throw_if(packed.bytes() > limit, "kcnn::conv2d_forward", kTensorCoreAlgoName,
           ": the weights packed for the tensor cores take ", packed.bytes(),
           " bytes of workspace, more than the limit of ", limit,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  auto launch = [&](const float* a_pack, LaunchMode m) {
    if constexpr (L == Layout::NHWC) {
      if (vec.b) return tensor_core_launch_as<Tile, Math, false, true>(space, o, a_pack, m);
    }
    tensor_core_launch_as<Tile, Math, false, false>(space, o, a_pack, m);
  };
  launch(nullptr, LaunchMode::Check);  // every limit before anything is enqueued
  if (mode == LaunchMode::Check) return packed.bytes();
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, packed.bytes());
  float* const a_pack = reinterpret_cast<float*>(lease.data());
  Kokkos::parallel_for(
      "kcnn::conv2d::tensor_core::pack_weights",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, packed.elements()),
      PackTensorCoreWeights<L, Math == TensorCoreMath::TF32>{o.map, o.w, o.ws, a_pack, o.M, o.K,
                                                             packed.m_pad / Packed::quad_rows});
  launch(a_pack, mode);
  return packed.bytes();
}

template <TensorCoreMath Math, Layout L, class ExecSpace>
std::size_t tensor_core_launch_float(const ExecSpace& space,
                                     const ImplicitGemmOperands<L, float>& o,
                                     TensorCoreVectorGathers vec, std::size_t limit,
                                     LaunchMode mode) {
  if (o.M <= TensorCoreTiles::FloatSmallM::BM)
    return tensor_core_launch_float_tile<TensorCoreTiles::FloatSmallM, Math>(space, o, vec, limit,
                                                                             mode);
  return tensor_core_launch_float_tile<TensorCoreTiles::FloatLargeM, Math>(space, o, vec, limit,
                                                                           mode);
}

/// Runs (or with LaunchMode::Check only plans and checks) ConvAlgo::TensorCoreGemm; `pb`
/// has been validated against the Views and has no pooling (the algorithm does not
/// fuse one: dispatch pools in a second pass). Needs a CUDA build for a GPU with the
/// sm_80 tensor cores; float tensors with MathMode::TF32 or ::TF32x3 (Strict float is
/// the other algorithms' work), double tensors (IEEE fp64 products). Returns the
/// workspace bytes: float packs its weights (M rounded up to the block tile, K to 16,
/// 4 bytes each; within pb.workspace_limit_bytes), double needs none.
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
      if constexpr (std::is_same_v<T, double>) {
        tensor_core_launch_double<TensorCoreTiles::Double>(space, o, vec, mode);
      } else if constexpr (std::is_same_v<T, float>) {
        const std::size_t limit = pb.workspace_limit_bytes;
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
