// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/device_traits.hpp
/// \brief The hardware facts kernels depend on, in one place: what counts as the host,
///        the GPU's warp (width, shuffles), its multiprocessor count, and team policies
///        with launch bounds. Portable code asks these; it never names a CUDA
///        intrinsic, a warp width or an SM count itself.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kcnn::Impl {

/// Whether kernels for ExecSpace run on the host (and take the host-shaped variants):
/// the one definition every algorithm, the Auto rules and the launchers use.
template <class ExecSpace>
inline constexpr bool runs_on_host_v =
    std::is_same_v<typename ExecSpace::memory_space, Kokkos::HostSpace>;

/// Threads of a GPU warp (NVIDIA: 32). Kernels shape thread blocks and pair threads in
/// warps by it; on host backends it only sizes the GPU-shaped variants the tests force.
inline constexpr int kWarpSize = 32;

/// Whether ExecSpace's kernels may exchange registers between the threads of a warp
/// (warp_shuffle_down): CUDA only.
template <class ExecSpace>
inline constexpr bool has_warp_shuffle_v =
#if defined(KOKKOS_ENABLE_CUDA)
    std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
    false;
#endif

/// Value `v` of the lane `delta` lanes above in the warp (every lane of a full warp
/// calls it). Only kernels for spaces with has_warp_shuffle_v call it; elsewhere it
/// returns `v`.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T warp_shuffle_down(T v, int delta) {
#if defined(__CUDA_ARCH__)
  return __shfl_down_sync(0xffffffffu, v, delta);
#else
  (void)delta;
  return v;
#endif
}

/// Value `v` of lane `lane ^ mask` (every lane of a full warp calls it); as
/// warp_shuffle_down, `v` itself where there are no warps.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T warp_shuffle_xor(T v, int mask) {
#if defined(__CUDA_ARCH__)
  return __shfl_xor_sync(0xffffffffu, v, mask);
#else
  (void)mask;
  return v;
#endif
}

/// Whether `v` holds in any lane of the warp (every lane of a full warp calls it); `v`
/// itself where there are no warps.
KOKKOS_FORCEINLINE_FUNCTION bool warp_any(bool v) {
#if defined(__CUDA_ARCH__)
  return __any_sync(0xffffffffu, v) != 0;
#else
  return v;
#endif
}

/// The larger of a and b, NaN when either is NaN (pool2d's Max semantics), one
/// max.NaN instruction on sm_80 and newer.
KOKKOS_FORCEINLINE_FUNCTION float max_propagating_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b > a || b != b) ? (a != a ? a : b) : a;
#endif
}

/// Resident threads per multiprocessor that Kokkos' concurrency() counts on the GPUs
/// kcnn is tuned for (V100, A100, H100: 2048). On sm_75 (1024) and sm_86/89 (1536)
/// multiprocessor_count undercounts by that ratio, which only shifts the wave-fill
/// heuristics there (not tuned on such GPUs yet).
inline constexpr std::int64_t kThreadsPerMultiprocessor = 2048;

/// Multiprocessors of the device behind `space` (H100 SXM: 132), for wave-fill
/// heuristics; at least 1.
template <class ExecSpace>
std::int64_t multiprocessor_count(const ExecSpace& space) {
  return std::max<std::int64_t>(1, space.concurrency() / kThreadsPerMultiprocessor);
}

/// A team policy whose kernel the device compiler builds for at most `MaxThreads`
/// threads per team and `MinTeamsPerMultiprocessor` resident teams (CUDA's
/// __launch_bounds__), which caps its registers per thread; host backends ignore it.
template <class ExecSpace, int MaxThreads, int MinTeamsPerMultiprocessor>
using BoundedTeamPolicy =
    Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<MaxThreads, MinTeamsPerMultiprocessor>>;

}  // namespace kcnn::Impl
