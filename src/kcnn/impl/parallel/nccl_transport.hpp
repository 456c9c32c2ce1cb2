// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/parallel/nccl_transport.hpp
/// \brief What kcnn::parallel asks of NCCL (KCNN_ENABLE_NCCL, CUDA builds): the element
///        types, error codes, and a communicator made once per kcnn::parallel
///        Communicator, over the ranks of its MPI communicator, on the GPU each rank
///        drives.
#pragma once

#include <nccl.h>
#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "../../bfloat16.hpp"
#include "mpi_transport.hpp"

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 10, 0)
#error "kcnn::parallel needs NCCL 2.10 or later (ncclAvg)"
#endif

namespace kcnn::parallel::Impl {

/// NCCL's datatype for T: the all-reduce averages float, double and the 16-bit types.
template <class T>
ncclDataType_t nccl_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, Kokkos::Experimental::half_t> ||
                    std::is_same_v<T, kcnn::bfloat16>,
                "kcnn::parallel: the all-reduce through NCCL averages float, double, "
                "Kokkos::Experimental::half_t or kcnn::bfloat16 Views");
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  if constexpr (std::is_same_v<T, Kokkos::Experimental::half_t>) return ncclFloat16;
  return ncclBfloat16;
}

/// Throws std::runtime_error naming the NCCL call and NCCL's message for a failed code.
inline void check_nccl(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  throw std::runtime_error(std::string("kcnn::parallel: ") + call +
                           " failed: " + ncclGetErrorString(code));
}

/// The CUDA stream of an execution space instance (the stream NCCL's work is ordered on).
template <class ExecSpace>
cudaStream_t stream_of(const ExecSpace& space) {
  static_assert(std::is_same_v<ExecSpace, Kokkos::Cuda>,
                "kcnn::parallel: device-memory collectives run on a Kokkos::Cuda instance");
  return space.cuda_stream();
}

/// An NCCL communicator over the ranks of an MPI communicator, made on first use (a
/// collective call: rank 0's unique id goes to every rank by MPI), on the GPU that is
/// current then (the one Kokkos drives).
class NcclComm {
 public:
  NcclComm() = default;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }

  ncclComm_t get(MPI_Comm mpi, int rank, int size) {
    if (comm_) return comm_;
    ncclUniqueId id;
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi), "MPI_Bcast");
    check_nccl(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
    return comm_;
  }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace kcnn::parallel::Impl
