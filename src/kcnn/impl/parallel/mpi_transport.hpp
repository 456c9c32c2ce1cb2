// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/parallel/mpi_transport.hpp
/// \brief What kcnn::parallel asks of MPI: element types, error codes, whether the MPI
///        reads device memory (CUDA-aware); the division of a mean.
#pragma once

// kcnn calls MPI's C interface only; MPI's C++ bindings (removed in MPI 3) stay out.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
// Open MPI declares its CUDA-awareness query in its extensions header.
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <Kokkos_Core.hpp>

#include "../arch/gpu_devices.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

namespace kcnn::parallel::Impl {

/// MPI's datatype for T: the all-reduce sums float and double.
template <class T>
MPI_Datatype mpi_sum_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "kcnn::parallel: the all-reduce through MPI sums float or double Views "
                "(16-bit gradients: keep float master gradients, or use the NCCL path)");
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

/// Throws std::runtime_error naming the MPI call and MPI's message for a failed code.
/// (kcnn's communicators return errors instead of aborting: MPI_ERRORS_RETURN.)
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("kcnn::parallel: ") + call +
                           " failed: " + std::string(text, length));
}

/// Whether this MPI reads and writes CUDA device memory (Open MPI built with CUDA,
/// asked at run time; false for MPIs that cannot say).
inline bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

/// Whether kernels on ExecSpace may write memory of MemorySpace that the host reads
/// directly (host memory, CUDA's UVM / host-pinned), i.e. MPI may be given the pointer.
template <class MemorySpace>
inline constexpr bool host_accessible =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

/// x[i] *= factor for i < n: the "divide by the world size" of a mean.
template <class T>
struct ScaleFunctor {
  T* data;
  T factor;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const { data[i] *= factor; }
};

template <class ExecSpace, class T>
void scale(const ExecSpace& space, T* data, std::size_t n, T factor) {
  Kokkos::parallel_for("kcnn::parallel::scale", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       ScaleFunctor<T>{data, factor});
}

}  // namespace kcnn::parallel::Impl
