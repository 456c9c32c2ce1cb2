// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/split_counters.hpp
/// \brief The split TMA kernel's tile counters (TmaSplitCounters): kTmaMostSplitTeams
///        ints in device memory per execution-space instance, zero between calls.
///
/// The split kernel's teams of a tile count their arrivals on the tile's counter; the
/// last sets it back to zero (tma_kernel.hpp), so a call finds the counters as the
/// previous call on its instance left them: zero. Only a new buffer (the first call on
/// an instance, or after the buffer was released: its generation) needs zeroing, which
/// is enqueued on the instance before the kernel. The buffer is a WorkspaceCache of its
/// own purpose, held for the whole call (another host thread on the same instance waits).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "../../common/workspace_cache.hpp"

namespace kcnn::Impl {

/// The most teams a split TMA launch may have: its counters (the split rule splits grids
/// of less than half a wave, some hundreds of teams).
inline constexpr std::int64_t kTmaMostSplitTeams = 2048;

/// Zeroes a new counter buffer.
struct TmaZeroSplitCounters {
  int* counters;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { counters[i] = 0; }
};

template <class ExecSpace>
class TmaSplitCounters {
 public:
  /// Holds the instance's counters (blocks while another host thread does) until
  /// destroyed; zeroes them first (on the instance) where the buffer is new.
  explicit TmaSplitCounters(const ExecSpace& space)
      : lease_(WorkspaceCache<ExecSpace, ScratchForSplitCounters>::acquire(
            space, sizeof(int) * kTmaMostSplitTeams)) {
    bool zeroed = false;
    {
      std::lock_guard<std::mutex> lock(zeroed_mutex());
      Zeroed& z = zeroed_buffers()[instance_key(space)];
      zeroed = z.generation == lease_.generation() && z.data == lease_.data();
      z.generation = lease_.generation();
      z.data = lease_.data();
    }
    if (!zeroed)
      Kokkos::parallel_for(
          "kcnn::conv2d::tensor_core_tma::zero_counters",
          Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(kTmaMostSplitTeams)),
          TmaZeroSplitCounters{data()});
  }

  int* data() const { return reinterpret_cast<int*>(lease_.data()); }

 private:
  struct Zeroed {
    std::uint64_t generation = ~std::uint64_t(0);
    const unsigned char* data = nullptr;
  };
  // Never destroyed (as WorkspaceCache's maps): host tables only, keyed by instance.
  static std::mutex& zeroed_mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::map<std::uintptr_t, Zeroed>& zeroed_buffers() {
    static auto* z = new std::map<std::uintptr_t, Zeroed>;
    return *z;
  }

  typename WorkspaceCache<ExecSpace, ScratchForSplitCounters>::Lease lease_;
};

}  // namespace kcnn::Impl
