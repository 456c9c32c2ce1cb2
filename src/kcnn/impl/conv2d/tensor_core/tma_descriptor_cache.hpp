// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/tma_descriptor_cache.hpp
/// \brief The TMA kernel's tensor maps in device memory, kept per execution-space
///        instance across calls (TmaDescriptorCache), so that a call whose maps are
///        already there enqueues the convolution alone.
///
/// Why: the hardware reads a tensor map from device memory (arch/tma.hpp), and writing
/// one per call took a second kernel launch, which in a timed single call costs the
/// launch's host time too. A map holds nothing but what it was encoded from (addresses,
/// extents, strides, box, swizzle), so an entry whose 384 bytes equal this call's maps is
/// this call's maps: the key is the maps themselves, and no weight or activation update
/// can make an entry stale. The host encodes the maps on every call (a few driver calls,
/// no device work) and compares them with the instance's entries.
///
/// Each instance (CUDA stream) has kEntries entries in one device buffer (a
/// WorkspaceCache of its own purpose, held for the whole call: another host thread on the
/// same instance waits), each the three maps and kTmaMostSplitTeams split counters. A new
/// problem takes the least recently used entry: TensorCoreTmaPrepare, enqueued on the
/// instance before the convolution, writes the maps and zeroes the counters, and the work
/// that read the old ones was enqueued earlier on the same stream. The split kernel's
/// last team of a tile sets its counter back to zero, so an entry's counters are zero
/// between calls. The host's copy of the keys is dropped whenever the buffer was
/// reallocated or released (its generation).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "../../arch/tma.hpp"
#include "../../common/workspace_cache.hpp"

namespace kcnn::Impl {

/// The most teams a split TMA launch may have: its counters per cache entry (the split
/// rule splits grids of less than half a wave, some hundreds of teams).
inline constexpr std::int64_t kTmaMostSplitTeams = 2048;

/// Writes a cache entry's three tensor maps and zeroes its split counters: items
/// [0, 48) copy a map word each, the others zero a counter. The maps travel as plain
/// words: a functor of 512 bytes or more would make Kokkos launch through constant
/// memory, which waits on the host for the previous such launch.
struct TensorCoreTmaPrepare {
  static constexpr int map_words = 3 * 16;
  std::uint64_t words[map_words];
  std::uint64_t* maps;  ///< device: the entry's TmaDescriptor[3]
  int* counters;        ///< device: the entry's kTmaMostSplitTeams counters

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    if (i < map_words)
      maps[i] = words[i];
    else
      counters[i - map_words] = 0;
  }
};

template <class ExecSpace>
class TmaDescriptorCache {
 public:
  static constexpr int kEntries = 32;
  static constexpr std::size_t kMapBytes = 3 * sizeof(TmaDescriptor);
  static constexpr std::size_t kEntryBytes =
      (kMapBytes + sizeof(int) * kTmaMostSplitTeams + 255) / 256 * 256;

  struct Entry {
    const TmaDescriptor* maps;  ///< device: x, w, y
    int* counters;              ///< device: kTmaMostSplitTeams zeros
  };

  /// Holds the instance's entries (blocks while another host thread does) until destroyed.
  explicit TmaDescriptorCache(const ExecSpace& space)
      : space_(space),
        lease_(WorkspaceCache<ExecSpace, ScratchForTensorMaps>::acquire(space,
                                                                        kEntries * kEntryBytes)) {
    std::lock_guard<std::mutex> lock(tables_mutex());
    auto& table = tables()[instance_key(space)];
    if (!table) table = std::make_unique<Table>();
    table_ = table.get();
  }

  /// The entry holding `maps`, written first (on the instance) where none does.
  Entry find_or_insert(const TmaDescriptor (&maps)[3]) {
    Table& t = *table_;
    if (t.generation != lease_.generation() || t.data != lease_.data()) {
      t = Table{};
      t.generation = lease_.generation();
      t.data = lease_.data();
    }
    ++t.clock;
    int victim = 0;
    for (int i = 0; i < kEntries; ++i) {
      if (t.used[i] && std::memcmp(t.keys[i], maps, kMapBytes) == 0) {
        t.stamp[i] = t.clock;
        return entry(i);
      }
      if (!t.used[i] || (t.used[victim] && t.stamp[i] < t.stamp[victim])) victim = i;
    }
    std::memcpy(t.keys[victim], maps, kMapBytes);
    t.used[victim] = true;
    t.stamp[victim] = t.clock;
    const Entry e = entry(victim);
    TensorCoreTmaPrepare prepare{};
    std::memcpy(prepare.words, maps, kMapBytes);
    prepare.maps = reinterpret_cast<std::uint64_t*>(const_cast<TmaDescriptor*>(e.maps));
    prepare.counters = e.counters;
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core_tma::write_maps",
        Kokkos::Experimental::require(
            Kokkos::RangePolicy<ExecSpace>(
                space_, 0, TensorCoreTmaPrepare::map_words + int(kTmaMostSplitTeams)),
            Kokkos::Experimental::WorkItemProperty::HintLightWeight),
        prepare);
    return e;
  }

 private:
  struct Table {
    std::uint64_t generation = ~std::uint64_t(0);
    const unsigned char* data = nullptr;
    std::uint64_t clock = 0;
    bool used[kEntries] = {};
    std::uint64_t stamp[kEntries] = {};
    TmaDescriptor keys[kEntries][3];
  };

  Entry entry(int i) const {
    unsigned char* const at = lease_.data() + std::size_t(i) * kEntryBytes;
    return {reinterpret_cast<const TmaDescriptor*>(at), reinterpret_cast<int*>(at + kMapBytes)};
  }

  // Never destroyed (as WorkspaceCache's maps): host tables only, keyed by instance.
  static std::mutex& tables_mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::map<std::uintptr_t, std::unique_ptr<Table>>& tables() {
    static auto* t = new std::map<std::uintptr_t, std::unique_ptr<Table>>;
    return *t;
  }

  ExecSpace space_;
  typename WorkspaceCache<ExecSpace, ScratchForTensorMaps>::Lease lease_;
  Table* table_ = nullptr;
};

}  // namespace kcnn::Impl
