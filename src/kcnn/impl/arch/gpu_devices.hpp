// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/gpu_devices.hpp
/// \brief The GPUs a process sees, asked before Kokkos starts (which GPU a rank drives).
#pragma once

#include <Kokkos_Core.hpp>

namespace kcnn::Impl {

/// The GPUs this process sees (0 where the build has no GPU backend), asked of the CUDA
/// runtime directly: it works before Kokkos is initialized.
inline int visible_gpu_count() {
#if defined(KOKKOS_ENABLE_CUDA)
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
#else
  return 0;
#endif
}

}  // namespace kcnn::Impl
