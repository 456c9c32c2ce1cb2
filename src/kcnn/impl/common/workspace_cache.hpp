// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/workspace_cache.hpp
/// \brief Scratch memory that algorithms such as Im2colGemm reuse across calls instead
///        of allocating per call: one growing buffer per execution-space instance.
///
/// Rules (the public side is documented in kcnn/workspace.hpp):
///  - One buffer ("slot") per execution-space instance: per CUDA stream on the CUDA
///    backend, one for all instances of a host backend (host kernels are synchronous).
///    Work enqueued on one stream is ordered, so a call may reuse the buffer while
///    earlier calls on the same stream are still running; calls on different streams
///    use different buffers and never wait for each other.
///  - A Lease owns its slot exclusively (a mutex) from acquire() until it is destroyed,
///    which a caller does after enqueueing all its work: two host threads that share an
///    instance cannot interleave their kernels on one buffer.
///  - Growing a slot fences its instance first (earlier work may still read the old
///    buffer); release_all() fences every device first. Kokkos::finalize releases all.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace kcnn::Impl {

/// 256 MiB: what one Im2colGemm call may hold in scratch unless told otherwise.
inline constexpr std::size_t kDefaultWorkspaceLimit = std::size_t(256) << 20;

inline std::atomic<std::size_t>& workspace_limit_value() {
  static std::atomic<std::size_t> limit{kDefaultWorkspaceLimit};
  return limit;
}

/// The functions that free every cache type's buffers, run by Kokkos::finalize (a
/// static View must not outlive Kokkos) and by kcnn::release_workspaces().
class WorkspaceRegistry {
 public:
  using Releaser = void (*)();

  /// Never destroyed, like the caches it lists: Kokkos::finalize may run from an exit
  /// handler or a static destructor, after function-local statics are gone.
  static WorkspaceRegistry& instance() {
    static auto* registry = new WorkspaceRegistry;
    return *registry;
  }

  void add(Releaser release) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(releasers_.begin(), releasers_.end(), release) == releasers_.end())
      releasers_.push_back(release);
    if (!hook_pushed_) {
      Kokkos::push_finalize_hook([] { WorkspaceRegistry::instance().release_all(true); });
      hook_pushed_ = true;
    }
  }

  void release_all(bool finalizing = false) {
    const std::vector<Releaser> list = snapshot(finalizing);
    if (list.empty()) return;
    Kokkos::fence();  // nothing may still use a buffer we free
    for (Releaser release : list)
      release();
  }

 private:
  /// The releasers, copied under the lock (constructed, not assigned: GCC 12 reports a
  /// false -Wfree-nonheap-object on the assignment once it is inlined here).
  std::vector<Releaser> snapshot(bool finalizing) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finalizing) hook_pushed_ = false;  // a later Kokkos::initialize needs a new hook
    return std::vector<Releaser>(releasers_.begin(), releasers_.end());
  }

  std::mutex mutex_;
  std::vector<Releaser> releasers_;
  bool hook_pushed_ = false;
};

template <class ExecSpace, class = void>
struct has_cuda_stream : std::false_type {};
template <class ExecSpace>
struct has_cuda_stream<ExecSpace, std::void_t<decltype(std::declval<ExecSpace>().cuda_stream())>>
    : std::true_type {};

/// Identifies the instance whose work is ordered with `space`'s: the CUDA stream, or 0.
template <class ExecSpace>
std::uintptr_t instance_key(const ExecSpace& space) {
  if constexpr (has_cuda_stream<ExecSpace>::value) {
    return reinterpret_cast<std::uintptr_t>(space.cuda_stream());
  } else {
    (void)space;
    return 0;
  }
}

/// Purpose tags of the caches: each purpose has its own buffer per instance, so that an
/// operation holding one (the unpooled output of a two-pass fused convolution) can run
/// an algorithm that takes the other (Im2colGemm's unrolled matrix).
struct ScratchForAlgorithms {};
struct ScratchForUnpooledOutput {};
/// The split TMA kernel's tile counters, kept (zero) between calls (TmaSplitCounters).
struct ScratchForSplitCounters {};

template <class ExecSpace, class Purpose = ScratchForAlgorithms>
class WorkspaceCache {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using Buffer = Kokkos::View<unsigned char*, memory_space>;

 private:
  struct Slot {
    std::mutex mutex;
    Buffer buffer;
    /// Counts the buffer's allocations and releases: what a caller left in it is there
    /// only while this stays the same.
    std::uint64_t generation = 0;
  };

 public:
  /// Exclusive use of one instance's buffer (at least the bytes asked for) while alive.
  class Lease {
   public:
    unsigned char* data() const { return slot_->buffer.data(); }
    std::size_t size() const { return slot_->buffer.extent(0); }
    std::uint64_t generation() const { return slot_->generation; }

   private:
    friend class WorkspaceCache;
    Lease(std::unique_lock<std::mutex> lock, Slot* slot) : lock_(std::move(lock)), slot_(slot) {}
    std::unique_lock<std::mutex> lock_;
    Slot* slot_;
  };

  /// Blocks while another host thread holds this instance's buffer.
  static Lease acquire(const ExecSpace& space, std::size_t bytes) {
    Slot* slot = nullptr;
    {
      std::lock_guard<std::mutex> lock(map_mutex());
      auto& entry = slots()[instance_key(space)];
      if (!entry) entry = std::make_unique<Slot>();
      slot = entry.get();
    }
    std::unique_lock<std::mutex> lock(slot->mutex);
    if (slot->buffer.extent(0) < bytes) {
      WorkspaceRegistry::instance().add(&WorkspaceCache::release_all);
      if (slot->buffer.extent(0) != 0) space.fence();  // earlier calls may still use it
      slot->buffer = Buffer();                         // free before allocating the larger one
      constexpr std::size_t granule = std::size_t(1) << 20;
      const std::size_t rounded = (bytes + granule - 1) / granule * granule;
      slot->buffer =
          Buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kcnn::workspace"), rounded);
      ++slot->generation;
    }
    return Lease(std::move(lock), slot);
  }

  /// Frees every buffer of this cache type; callers fence first (WorkspaceRegistry).
  static void release_all() {
    std::lock_guard<std::mutex> lock(map_mutex());
    for (auto& entry : slots()) {
      std::lock_guard<std::mutex> slot_lock(entry.second->mutex);
      entry.second->buffer = Buffer();
      ++entry.second->generation;
    }
  }

  /// Bytes held by all buffers of this cache type (for tests and diagnostics).
  static std::size_t bytes_held() {
    std::lock_guard<std::mutex> lock(map_mutex());
    std::size_t total = 0;
    for (auto& entry : slots()) {
      std::lock_guard<std::mutex> slot_lock(entry.second->mutex);
      total += entry.second->buffer.extent(0);
    }
    return total;
  }

 private:
  // Never destroyed (see WorkspaceRegistry::instance): Kokkos::finalize's hook may
  // release the buffers after static destructors ran.
  static std::mutex& map_mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::map<std::uintptr_t, std::unique_ptr<Slot>>& slots() {
    static auto* s = new std::map<std::uintptr_t, std::unique_ptr<Slot>>;
    return *s;
  }
};

}  // namespace kcnn::Impl
