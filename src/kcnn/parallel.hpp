// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file parallel.hpp
/// \brief Data-parallel training across MPI ranks: the mean of gradient Views over the
///        ranks (all-reduce), the initial weights from one rank (broadcast), and which
///        GPU a rank drives.
///
/// kcnn moves no bytes itself: the transport is the MPI the application already runs
/// under, and for CUDA device memory NCCL (KCNN_ENABLE_NCCL) or a CUDA-aware MPI. It is
/// optional: link the CMake target kcnn::parallel (built where CMake finds MPI,
/// KCNN_ENABLE_MPI), which brings MPI (and NCCL) and defines KCNN_ENABLE_MPI (and
/// KCNN_ENABLE_NCCL); code without it is unchanged.
///
/// The model is PyTorch's DistributedDataParallel: every rank holds the same weights,
/// takes its own shard of each global batch, computes the gradient of its shard's mean
/// loss, and the ranks average the gradients (sum, then divide by the number of ranks),
/// layer by layer as the backward pass produces them (start_allreduce_mean), so the
/// transfers overlap the remaining backward work; then every rank takes the same step.
///
///     MPI_Init(&argc, &argv);
///     kcnn::parallel::Communicator comm;               // MPI_COMM_WORLD
///     Kokkos::initialize(...comm.kokkos_device_argument()...);  // local rank -> GPU
///     comm.broadcast(space, weights);                  // rank 0's initial weights
///     for (each step) {
///       ...backward of the last layer into dw4...
///       requests.push_back(comm.start_allreduce_mean(space, dw4));
///       ...backward of the layers before...
///       kcnn::parallel::wait_all(requests);            // every gradient is the mean
///       ...optimizer step...
///     }
///
/// Ordering: through NCCL (device memory in an NCCL build) a call enqueues the collective
/// on the CUDA stream of the execution space instance it is given (ncclAvg: the mean in
/// one step) and returns; nothing is fenced, and kernels enqueued later on that
/// instance see the result. Through MPI a call first fences the instance (the kernels
/// that wrote the View must have finished before MPI reads it), and the division by the
/// number of ranks runs on that instance after the sum arrives. No other instance is
/// fenced. Every call goes through its transport also on one rank (so a one-rank run
/// takes the path of a many-rank run; only the division by 1 is skipped).
///
/// Every rank must make the same calls in the same order with Views of the same type
/// and size (MPI's rule for collectives; a mismatch is an MPI error or a hang, which
/// kcnn cannot detect without a message of its own per call). Results are identical on
/// all ranks for the MPIs kcnn is tested with (Open MPI); the sum's order, and so its
/// rounding, differs from a sum on one rank.
///
/// Memory: Views the host can access (HostSpace, CUDA UVM or host-pinned memory) go to
/// MPI directly; CUDA device memory goes to NCCL in an NCCL build, otherwise to MPI if
/// it is CUDA-aware (asked at run time); without either a call throws kcnn::Error and
/// nothing is sent (kcnn does not silently stage device memory through the host).
/// Element types: MPI sums float and double; NCCL also half_t and kcnn::bfloat16.
#pragma once

#if !defined(KCNN_ENABLE_MPI)
#error \
    "kcnn/parallel.hpp needs MPI: link the CMake target kcnn::parallel, which brings MPI and defines KCNN_ENABLE_MPI"
#endif

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "impl/parallel/mpi_transport.hpp"
#include "types.hpp"
#if defined(KCNN_ENABLE_NCCL)
#if !defined(KOKKOS_ENABLE_CUDA)
#error "KCNN_ENABLE_NCCL needs Kokkos' CUDA backend"
#endif
#include <memory>

#include "impl/parallel/nccl_transport.hpp"
#endif

namespace kcnn::parallel {

/// An all-reduce in flight (Communicator::start_allreduce_mean). wait() completes it:
/// afterwards the View holds the mean over the ranks (the division enqueued on the
/// execution space instance of the call). Move-only. A request destroyed before wait()
/// waits for the transfer (MPI requires every request to complete) but skips the
/// division: call wait(). (Through NCCL the mean is already enqueued on the instance's
/// stream: the request is done at once.)
class Request {
 public:
  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  Request(Request&& other) noexcept { *this = std::move(other); }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      abandon();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      finish_ = std::move(other.finish_);
      other.finish_ = nullptr;
    }
    return *this;
  }
  ~Request() { abandon(); }

  /// Whether wait() has nothing left to do (a request that moved no data is done).
  bool done() const { return request_ == MPI_REQUEST_NULL && !finish_; }

  /// Lets MPI progress the transfer without blocking (call it between kernels of the
  /// backward pass: MPI moves non-blocking collectives forward inside MPI calls); true
  /// once the data has arrived (wait() then only enqueues the division).
  bool test() {
    if (request_ == MPI_REQUEST_NULL) return true;
    int arrived = 0;
    Impl::check_mpi(MPI_Test(&request_, &arrived, MPI_STATUS_IGNORE), "MPI_Test");
    return arrived != 0;
  }

  /// Waits for the sum and divides it by the number of ranks.
  void wait() {
    if (request_ != MPI_REQUEST_NULL)
      Impl::check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    if (finish_) std::exchange(finish_, nullptr)();
  }

 private:
  friend class Communicator;
  Request(MPI_Request request, std::function<void()> finish)
      : request_(request), finish_(std::move(finish)) {}
  void abandon() noexcept {
    if (request_ != MPI_REQUEST_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Wait(&request_, MPI_STATUS_IGNORE);
      request_ = MPI_REQUEST_NULL;
    }
    finish_ = nullptr;
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::function<void()> finish_;  ///< the division by the number of ranks
};

/// Completes every request in order (see Request::wait).
inline void wait_all(std::vector<Request>& requests) {
  for (auto& r : requests)
    r.wait();
  requests.clear();
}

/// The ranks that train one model together: a duplicate of an MPI communicator (kcnn's
/// messages never match the application's), its size, this process's rank, and its rank
/// among the processes of its node (which GPU it drives). Create it after MPI_Init
/// (a collective call: every rank of `comm` creates it) and destroy it before
/// MPI_Finalize; it needs no Kokkos, so it can choose the GPU before Kokkos starts.
/// MPI errors on it are returned, not fatal: calls throw std::runtime_error with MPI's
/// message.
class Communicator {
 public:
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      throw Error("kcnn::parallel::Communicator: MPI is not initialized (call MPI_Init first)");
    Impl::check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    Impl::check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    Impl::check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    MPI_Comm node = MPI_COMM_NULL;
    Impl::check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
                    "MPI_Comm_split_type");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    MPI_Comm_free(&node);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() {
#if defined(KCNN_ENABLE_NCCL)
    nccl_.reset();
#endif
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  int rank() const {
    return rank_;
  }
  int size() const {
    return size_;
  }
  /// This process's rank among the ranks on its node, and their number.
  int local_rank() const {
    return local_rank_;
  }
  int local_size() const {
    return local_size_;
  }
  /// The duplicated communicator (for the application's own messages beside kcnn's).
  MPI_Comm mpi_comm() const {
    return comm_;
  }

  /// The GPU this rank drives: its local rank modulo the GPUs it sees (so R ranks on a
  /// node with R GPUs take one each), 0 where there are none.
  int device_id() const {
    const int gpus = kcnn::Impl::visible_gpu_count();
    return gpus > 0 ? local_rank_ % gpus : 0;
  }
  /// device_id() as the Kokkos command-line argument that selects it
  /// ("--kokkos-device-id=N", understood by Kokkos 3.4 and later).
  std::string kokkos_device_argument() const {
    return "--kokkos-device-id=" + std::to_string(device_id());
  }

  /// Starts replacing each element of `gradient` by its mean over the ranks; the
  /// request's wait() completes it. MPI: fences `space` first; NCCL: enqueued on its
  /// stream. `gradient`: a contiguous View of the same size on every rank.
  template <class ExecSpace, class View>
  [[nodiscard]] Request start_allreduce_mean(const ExecSpace& space, const View& gradient) const {
    static_assert(Kokkos::is_view<View>::value,
                  "kcnn::parallel: start_allreduce_mean takes a Kokkos::View");
    using T = typename View::non_const_value_type;
    static_assert(std::is_same_v<typename View::value_type, T>,
                  "kcnn::parallel: the gradient View is written: it cannot be const");
    constexpr const char* call = "start_allreduce_mean";
    check_contiguous(gradient, call);
    const std::size_t n = gradient.span();
    T* const data = gradient.data();
    if constexpr (uses_nccl<typename View::memory_space>()) {
#if defined(KCNN_ENABLE_NCCL)
      const ncclComm_t comm = nccl_->get(comm_, rank_, size_);
      if (n > 0)
        Impl::check_nccl(ncclAllReduce(data, data, n, Impl::nccl_type<T>(), ncclAvg, comm,
                                       Impl::stream_of(space)),
                         "ncclAllReduce");
#endif
      return Request();  // ordered on the instance's stream: nothing for the host to wait for
    } else {
      const MPI_Datatype type = Impl::mpi_sum_type<T>();
      check_mpi_reads<typename View::memory_space>(gradient, call);
      check_count(n, call);
      space.fence();
      MPI_Request request = MPI_REQUEST_NULL;
      Impl::check_mpi(
          MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), type, MPI_SUM, comm_, &request),
          "MPI_Iallreduce");
      if (size_ == 1 || n == 0) return Request(request, nullptr);  // the mean of one rank
      const T factor = T(1) / T(size_);
      return Request(request, [space, data, n, factor] { Impl::scale(space, data, n, factor); });
    }
  }

  /// Replaces each element of every View by its mean over the ranks (started together,
  /// so MPI pipelines them); returns once the divisions are enqueued on `space`.
  template <class ExecSpace, class... Views>
  void allreduce_mean(const ExecSpace& space, const Views&... gradients) const {
    std::vector<Request> requests;
    requests.reserve(sizeof...(Views));
    (requests.push_back(start_allreduce_mean(space, gradients)), ...);
    wait_all(requests);
  }

  /// Copies `root`'s View into every rank's (the initial weights: identical replicas).
  /// MPI: fences `space` first; NCCL: enqueued on its stream. Any element type; the same
  /// size on every rank.
  template <class ExecSpace, class View>
  void broadcast(const ExecSpace& space, const View& values, int root = 0) const {
    static_assert(Kokkos::is_view<View>::value, "kcnn::parallel: broadcast takes a Kokkos::View");
    static_assert(std::is_same_v<typename View::value_type, typename View::non_const_value_type>,
                  "kcnn::parallel: the broadcast View is written: it cannot be const");
    constexpr const char* call = "broadcast";
    if (root < 0 || root >= size_)
      throw Error("kcnn::parallel::broadcast: root " + std::to_string(root) +
                  " is not a rank of this communicator (size " + std::to_string(size_) + ")");
    check_contiguous(values, call);
    const std::size_t bytes = values.span() * sizeof(typename View::value_type);
    if constexpr (uses_nccl<typename View::memory_space>()) {
#if defined(KCNN_ENABLE_NCCL)
      const ncclComm_t comm = nccl_->get(comm_, rank_, size_);
      if (bytes > 0)
        Impl::check_nccl(ncclBroadcast(values.data(), values.data(), bytes, ncclUint8, root, comm,
                                       Impl::stream_of(space)),
                         "ncclBroadcast");
#endif
    } else {
      check_mpi_reads<typename View::memory_space>(values, call);
      check_count(bytes, call);
      space.fence();
      Impl::check_mpi(MPI_Bcast(values.data(), static_cast<int>(bytes), MPI_BYTE, root, comm_),
                      "MPI_Bcast");
    }
  }

 private:
  /// Whether Views of MemorySpace go to NCCL (device memory in an NCCL build).
  template <class MemorySpace>
  static constexpr bool uses_nccl() {
#if defined(KCNN_ENABLE_NCCL)
    return !Impl::host_accessible<MemorySpace>;
#else
    return false;
#endif
  }
  /// Refuses strided Views: a collective takes one buffer.
  template <class View>
  static void check_contiguous(const View& v, const char* call) {
    if (!v.span_is_contiguous())
      throw Error(std::string("kcnn::parallel::") + call + ": the View '" + v.label() +
                  "' is not contiguous (a strided subview); pass a contiguous View");
  }
  /// Refuses device memory for an MPI that cannot read it (kcnn does not stage it).
  template <class MemorySpace, class View>
  static void check_mpi_reads(const View& v, const char* call) {
    if constexpr (!Impl::host_accessible<MemorySpace>) {
      if (!Impl::mpi_is_cuda_aware())
        throw Error(std::string("kcnn::parallel::") + call + ": the View '" + v.label() +
                    "' is in device memory (" + MemorySpace::name() +
                    ") and this MPI is not CUDA-aware; build with NCCL (KCNN_ENABLE_NCCL), "
                    "use a CUDA-aware MPI, or host memory");
    }
  }
  /// MPI counts are int.
  static void check_count(std::size_t n, const char* call) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw Error(std::string("kcnn::parallel::") + call + ": " + std::to_string(n) +
                  " elements exceed MPI's int count; split the View");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
#if defined(KCNN_ENABLE_NCCL)
  /// Device-memory collectives; made on first use, destroyed before comm_ is freed.
  std::unique_ptr<Impl::NcclComm> nccl_ = std::make_unique<Impl::NcclComm>();
#endif
};

}  // namespace kcnn::parallel
