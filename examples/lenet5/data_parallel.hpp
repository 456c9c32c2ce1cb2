// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file data_parallel.hpp
/// \brief The trainer's ranks: kcnn::parallel where lenet5 is built with MPI
///        (KCNN_ENABLE_MPI, linked to kcnn::parallel), a world of one rank otherwise.
///
/// Data-parallel training as PyTorch's DistributedDataParallel does it: every rank holds
/// the same weights (rank 0's, broadcast at the start), takes its shard of each global
/// batch, and the ranks average each layer's gradient as soon as the backward pass has
/// produced it (start_layer_mean), while the backward pass goes on; the optimizer step
/// waits for them all (finish_gradients). The step statistics (loss sum, correct count)
/// are summed over the ranks the same way.
#pragma once

#include <Kokkos_Core.hpp>
#if defined(KCNN_ENABLE_MPI)
#include <kcnn/parallel.hpp>
#endif

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lenet5 {

class Ranks {
 public:
#if defined(KCNN_ENABLE_MPI)
  /// MPI is initialized (main's first step).
  Ranks() : comm_(std::make_unique<kcnn::parallel::Communicator>()) {}
  int rank() const {
    return comm_->rank();
  }
  int size() const {
    return comm_->size();
  }
  /// The Kokkos argument that gives this rank its GPU (local rank modulo the GPUs).
  std::string kokkos_device_argument() const {
    return comm_->kokkos_device_argument();
  }
#else
  int rank() const {
    return 0;
  }
  int size() const {
    return 1;
  }
#endif

  /// Rank 0's values of `weights` on every rank.
  template <class Space, class View>
  void broadcast_from_rank0(const Space& space, const View& weights) const {
#if defined(KCNN_ENABLE_MPI)
    comm_->broadcast(space, weights, 0);
#else
    (void)space, (void)weights;
#endif
  }

  /// Starts averaging one layer's gradient (a contiguous slice of the gradient buffer)
  /// over the ranks; between layers, progress() lets MPI move it forward.
  template <class Space, class View>
  void start_layer_mean(const Space& space, const View& gradient) {
#if defined(KCNN_ENABLE_MPI)
    pending_.push_back(comm_->start_allreduce_mean(space, gradient));
#else
    (void)space, (void)gradient;
#endif
  }
  void progress() {
#if defined(KCNN_ENABLE_MPI)
    for (auto& r : pending_)
      r.test();
#endif
  }
  /// Every gradient started is the mean over the ranks (the divisions enqueued).
  void finish_gradients() {
#if defined(KCNN_ENABLE_MPI)
    kcnn::parallel::wait_all(pending_);
#endif
  }

  /// Starts summing a step's statistics over the ranks; finish_statistics() completes it.
  void start_statistics(double loss_sum, int correct) {
    statistics_[0] = loss_sum, statistics_[1] = correct;
#if defined(KCNN_ENABLE_MPI)
    if (size() > 1)
      MPI_Iallreduce(MPI_IN_PLACE, statistics_, 2, MPI_DOUBLE, MPI_SUM, comm_->mpi_comm(),
                     &statistics_request_);
#endif
  }
  /// The sums of the values given to start_statistics: {loss sum, correct count}.
  std::pair<double, int> finish_statistics() {
#if defined(KCNN_ENABLE_MPI)
    if (statistics_request_ != MPI_REQUEST_NULL) MPI_Wait(&statistics_request_, MPI_STATUS_IGNORE);
#endif
    return {statistics_[0], static_cast<int>(statistics_[1])};
  }

  /// The sum of `value` over the ranks (blocking; between epochs).
  int sum(int value) const {
#if defined(KCNN_ENABLE_MPI)
    if (size() > 1) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_SUM, comm_->mpi_comm());
#endif
    return value;
  }

 private:
#if defined(KCNN_ENABLE_MPI)
  std::unique_ptr<kcnn::parallel::Communicator> comm_;
  std::vector<kcnn::parallel::Request> pending_;
  MPI_Request statistics_request_ = MPI_REQUEST_NULL;
#endif
  double statistics_[2] = {0, 0};
};

}  // namespace lenet5
