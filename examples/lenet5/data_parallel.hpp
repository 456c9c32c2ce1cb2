// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file data_parallel.hpp
/// \brief The trainer's ranks: kcnn::parallel where lenet5 is built with MPI
///        (KCNN_ENABLE_MPI, linked to kcnn::parallel), a world of one rank otherwise.
///
/// Data-parallel training as PyTorch's DistributedDataParallel does it: every rank holds
/// the same weights (rank 0's, broadcast at the start), takes its shard of each global
/// batch, and the ranks average each layer's gradient as soon as the backward pass has
/// produced it (start_layer_mean), while the backward pass goes on; the optimizer step
/// waits for them all (finish_gradients). The loss and accuracy are summed over the ranks
/// when progress is reported (sum).
#pragma once

#include <Kokkos_Core.hpp>
#if defined(KCNN_ENABLE_MPI)
#include <kcnn/parallel.hpp>
#endif

#include <memory>
#include <string>
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

  /// Rank 0's value of `value` on every rank (a choice only rank 0 can make).
  bool rank0_value(bool value) const {
#if defined(KCNN_ENABLE_MPI)
    int v = value;
    if (size() > 1) MPI_Bcast(&v, 1, MPI_INT, 0, comm_->mpi_comm());
    return v != 0;
#else
    return value;
#endif
  }

  /// The sums over the ranks of a loss sum and a correct count (blocking).
  template <class LossAndCorrect>
  LossAndCorrect sum(LossAndCorrect mine) const {
#if defined(KCNN_ENABLE_MPI)
    if (size() > 1) {
      double both[2] = {mine.loss, double(mine.correct)};
      MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_SUM, comm_->mpi_comm());
      mine.loss = both[0], mine.correct = static_cast<int>(both[1]);
    }
#endif
    return mine;
  }

 private:
#if defined(KCNN_ENABLE_MPI)
  std::unique_ptr<kcnn::parallel::Communicator> comm_;
  std::vector<kcnn::parallel::Request> pending_;
#endif
};

}  // namespace lenet5
