// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/grid_constant_launch.hpp
/// \brief Launches a team functor as a CUDA kernel with a second, `__grid_constant__`
///        parameter (launch_grid_constant_teams), on the stream of a Kokkos::Cuda
///        instance; the functor sees its thread block as a GridConstantTeam, whose
///        members are named as Kokkos' team member's, and the grid-constant parameter by
///        reference.
///
/// Why: the TMA kernels' tensor maps (arch/tma.hpp) must lie in kernel-parameter,
/// constant or global memory. Kokkos passes a functor to its kernel as an ordinary
/// by-value parameter, whose address is a local copy, so the maps used to live in device
/// memory (a small kernel wrote them when new) and every team acquired them with a proxy
/// fence before its first copy. A grid-constant parameter's address is the parameter
/// itself: the maps travel with the launch, no fence, no device copy. The functor stays
/// an ordinary parameter, read once into registers (PTX: with the whole functor
/// grid-constant, the halo kernel reloaded its geometry from the parameter inside its
/// main loop). Measured on the
/// halo kernel (H200, ResNet 3x3 bf16, session 29's harness): a block per tile with the
/// three fences 0.045 / 0.042 / 0.040 ms, without them 0.040 / 0.040 / 0.039. The launch
/// also leaves out Kokkos' TeamPolicy set-up, ~5 us of host time per call in Kokkos 3.4
/// (session 29's host phases), which a single timed call waits for.
///
/// What it keeps of a Kokkos launch: the instance's stream (ordered with the instance's
/// other work), its device (set first where it is not the current one), the kernel
/// label for Kokkos Tools (begin/end parallel_for), and an exception when the launch
/// fails. Only the CUDA backend has it; the kernels launched so are CUDA-only
/// (TensorCoreGemm's TMA and halo kernels).
#pragma once

#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace kcnn::Impl {

/// A thread block as a kernel launched by launch_grid_constant_teams sees it: one team of
/// blockDim.x threads (team_rank = threadIdx.x), league_rank = blockIdx.x, and the
/// block's dynamic shared memory as its scratch.
struct GridConstantTeam {
  KOKKOS_FORCEINLINE_FUNCTION int team_rank() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  KOKKOS_FORCEINLINE_FUNCTION int league_rank() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockIdx.x);
#else
    return 0;
#endif
  }
  KOKKOS_FORCEINLINE_FUNCTION int league_size() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(gridDim.x);
#else
    return 1;
#endif
  }
  KOKKOS_FORCEINLINE_FUNCTION void team_barrier() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  /// The block's dynamic shared memory from its first `alignment`-byte boundary (a
  /// power of two): the launch's scratch bytes include `alignment` bytes of slack.
  KOKKOS_FORCEINLINE_FUNCTION unsigned char* scratch_aligned(std::size_t alignment) const {
#if defined(__CUDA_ARCH__)
    extern __shared__ __align__(16) unsigned char kcnn_grid_constant_scratch[];
    const std::uint32_t base =
        static_cast<std::uint32_t>(__cvta_generic_to_shared(kcnn_grid_constant_scratch));
    const std::uint32_t pad =
        static_cast<std::uint32_t>((alignment - base % alignment) % alignment);
    return kcnn_grid_constant_scratch + pad;
#else
    (void)alignment;
    return nullptr;
#endif
  }
};

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)

/// The kernel: one GridConstantTeam per block runs `functor` with `constants`, whose
/// members' addresses (a tensor map's) are the parameter's.
template <class Functor, class Constants, int Threads, int MinBlocksPerMultiprocessor>
__global__ void __launch_bounds__(Threads, MinBlocksPerMultiprocessor)
    grid_constant_team_kernel(const Functor functor, const __grid_constant__ Constants constants) {
  functor(GridConstantTeam{}, constants);
}

#endif

/// Launches `teams` blocks of `Threads` threads running `functor` (trivially copyable;
/// its operator() takes a GridConstantTeam and a `const Constants&`: `constants`, the
/// grid-constant parameter, trivially copyable) with `scratch_bytes` of dynamic
/// shared memory, on `space`'s stream; the compiler builds the kernel for at least
/// `MinBlocksPerMultiprocessor` resident blocks (its register cap). The first launch of
/// each kernel on a device sets its dynamic shared-memory limit to the most it may ask
/// for, `MaxScratchBytes`, and its carveout to shared memory (TMA kernels read their
/// operands from scratch; L1 serves them nothing). Throws std::runtime_error, naming
/// `label`, when CUDA refuses the set-up or the launch.
template <int Threads, int MinBlocksPerMultiprocessor, std::size_t MaxScratchBytes, class ExecSpace,
          class Functor, class Constants>
void launch_grid_constant_teams(const ExecSpace& space, const char* label, int teams,
                                std::size_t scratch_bytes, const Functor& functor,
                                const Constants& constants) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
  static_assert(std::is_same_v<ExecSpace, Kokkos::Cuda>, "a grid-constant launch is CUDA's");
  static_assert(std::is_trivially_copyable_v<Functor> && std::is_trivially_copyable_v<Constants>,
                "the functor and the constants travel as the kernel's parameter bytes");
  static_assert(sizeof(Functor) + sizeof(Constants) <= 4096,
                "CUDA's kernel parameters hold at most 4 KB");
  auto* const kernel =
      &grid_constant_team_kernel<Functor, Constants, Threads, MinBlocksPerMultiprocessor>;
  auto fail = [label](const char* what, cudaError_t e) {
    throw std::runtime_error(std::string(label) + ": " + what + ": " + cudaGetErrorString(e));
  };
  if (scratch_bytes > MaxScratchBytes)
    fail("scratch beyond the kernel's limit", cudaErrorInvalidValue);
  if (teams <= 0) return;

  // Kokkos 4.x instances may sit on different devices; launch on the instance's.
  const int device = space.cuda_device();
  int current = 0;
  if (cudaError_t e = cudaGetDevice(&current); e != cudaSuccess) fail("cudaGetDevice", e);
  if (current != device)
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) fail("cudaSetDevice", e);

  // Function attributes are per device: set once on each (devices past 63 every time).
  static std::atomic<std::uint64_t> configured{0};
  const std::uint64_t bit = device < 64 ? std::uint64_t(1) << device : 0;
  if (bit == 0 || (configured.load(std::memory_order_acquire) & bit) == 0) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(MaxScratchBytes));
        e != cudaSuccess)
      fail("the kernel's shared-memory limit", e);
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             int(cudaSharedmemCarveoutMaxShared));
        e != cudaSuccess)
      fail("the kernel's shared-memory carveout", e);
    configured.fetch_or(bit, std::memory_order_release);
  }

  std::uint64_t kernel_id = 0;
  const bool tools = Kokkos::Tools::profileLibraryLoaded();
  if (tools)
    Kokkos::Tools::beginParallelFor(label, Kokkos::Tools::Experimental::device_id(space),
                                    &kernel_id);
  kernel<<<static_cast<unsigned>(teams), Threads, scratch_bytes, space.cuda_stream()>>>(functor,
                                                                                        constants);
  const cudaError_t launched = cudaGetLastError();
  if (tools) Kokkos::Tools::endParallelFor(kernel_id);
  if (launched != cudaSuccess) fail("kernel launch", launched);
#else
  static_assert(!std::is_same_v<ExecSpace, ExecSpace>, "a grid-constant launch needs CUDA");
  (void)space, (void)label, (void)teams, (void)scratch_bytes, (void)functor, (void)constants;
#endif
}

}  // namespace kcnn::Impl
