// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 47: a minimal Kokkos Tools library for finding where a training step's time
// goes (issue 24): per kernel / region / fence / deep copy counts and times, and every
// allocation (count and bytes per label). Load with
//   KOKKOS_PROFILE_LIBRARY=./libs47prof.so KOKKOS_TOOLS_LIBS=./libs47prof.so program ...
// S47PROF_SYNC=1 synchronizes the GPU at every kernel / region boundary, so each kernel's
// time is its own (the program runs serialized: total wall time grows); 0 (default)
// only counts and times the host side (launch cost, fences, copies).
// Build: g++ -O2 -shared -fPIC -o libs47prof.so s47-kokkos-step-profiler.cpp
//        [-DS47_CUDA -I$CUDA/include -L$CUDA/lib64 -lcudart]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#if defined(S47_CUDA)
#include <cuda_runtime.h>
#endif

namespace {
struct SpaceHandle {
  char name[64];
};
using Clock = std::chrono::steady_clock;
struct Stat {
  long count = 0;
  double seconds = 0;
  double bytes = 0;
};
std::mutex mutex;
bool sync_gpu = false;
std::map<std::string, Stat> kernels, regions, fences, copies, allocations;
std::vector<std::pair<std::string, Clock::time_point>> open_regions;
std::map<std::uint64_t, std::pair<std::string, Clock::time_point>> open_kernels, open_fences;
std::uint64_t next_id = 1;
Clock::time_point copy_start, program_start;
std::string copy_name;

void sync() {
#if defined(S47_CUDA)
  if (sync_gpu) cudaDeviceSynchronize();
#endif
}
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
void begin_kernel(const char* kind, const char* name, std::uint64_t* id) {
  sync();
  std::lock_guard<std::mutex> lock(mutex);
  *id = next_id++;
  open_kernels[*id] = {std::string(kind) + " " + name, Clock::now()};
}
void end_kernel(std::uint64_t id) {
  sync();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = open_kernels.find(id);
  if (it == open_kernels.end()) return;
  auto& s = kernels[it->second.first];
  s.count++, s.seconds += since(it->second.second);
  open_kernels.erase(it);
}
void print(const char* title, const std::map<std::string, Stat>& stats, bool bytes) {
  std::vector<std::pair<std::string, Stat>> rows(stats.begin(), stats.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) {
    return a.second.seconds > b.second.seconds ||
           (a.second.seconds == b.second.seconds && a.second.count > b.second.count);
  });
  std::fprintf(stderr, "== %s\n", title);
  for (auto& [name, s] : rows)
    if (bytes)
      std::fprintf(stderr, "%9ld  %10.1f MB  %s\n", s.count, s.bytes / 1e6, name.c_str());
    else
      std::fprintf(stderr, "%9ld  %10.3f ms  %8.2f us/call  %s\n", s.count, s.seconds * 1e3,
                   s.seconds * 1e6 / std::max(1L, s.count), name.c_str());
}
}  // namespace

extern "C" {
void kokkosp_init_library(const int, const std::uint64_t, const std::uint32_t, void*) {
  const char* s = std::getenv("S47PROF_SYNC");
  sync_gpu = s && s[0] == '1';
  program_start = Clock::now();
}
void kokkosp_finalize_library() {
  std::fprintf(stderr, "== s47prof: %.3f s since Kokkos started, GPU sync %s\n",
               since(program_start), sync_gpu ? "on" : "off");
  print("kernels", kernels, false);
  print("regions", regions, false);
  print("fences", fences, false);
  print("deep copies", copies, false);
  print("allocations", allocations, true);
}
void kokkosp_begin_parallel_for(const char* n, const std::uint32_t, std::uint64_t* id) {
  begin_kernel("for", n, id);
}
void kokkosp_end_parallel_for(const std::uint64_t id) {
  end_kernel(id);
}
void kokkosp_begin_parallel_reduce(const char* n, const std::uint32_t, std::uint64_t* id) {
  begin_kernel("reduce", n, id);
}
void kokkosp_end_parallel_reduce(const std::uint64_t id) {
  end_kernel(id);
}
void kokkosp_begin_parallel_scan(const char* n, const std::uint32_t, std::uint64_t* id) {
  begin_kernel("scan", n, id);
}
void kokkosp_end_parallel_scan(const std::uint64_t id) {
  end_kernel(id);
}
void kokkosp_push_profile_region(const char* n) {
  sync();
  std::lock_guard<std::mutex> lock(mutex);
  open_regions.push_back({n, Clock::now()});
}
void kokkosp_pop_profile_region() {
  sync();
  std::lock_guard<std::mutex> lock(mutex);
  if (open_regions.empty()) return;
  auto& s = regions[open_regions.back().first];
  s.count++, s.seconds += since(open_regions.back().second);
  open_regions.pop_back();
}
void kokkosp_begin_fence(const char* n, const std::uint32_t, std::uint64_t* id) {
  std::lock_guard<std::mutex> lock(mutex);
  *id = next_id++;
  open_fences[*id] = {n, Clock::now()};
}
void kokkosp_end_fence(const std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = open_fences.find(id);
  if (it == open_fences.end()) return;
  auto& s = fences[it->second.first];
  s.count++, s.seconds += since(it->second.second);
  open_fences.erase(it);
}
void kokkosp_begin_deep_copy(SpaceHandle dst, const char* dst_name, const void*, SpaceHandle src,
                             const char* src_name, const void*, std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mutex);
  copy_name = std::string(src.name) + "->" + dst.name + " " + src_name + "->" + dst_name;
  copy_start = Clock::now();
  copies[copy_name].bytes += double(size);
}
void kokkosp_end_deep_copy() {
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = copies[copy_name];
  s.count++, s.seconds += since(copy_start);
}
void kokkosp_allocate_data(const SpaceHandle space, const char* label, const void*,
                           const std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = allocations[std::string(space.name) + " " + label];
  s.count++, s.bytes += double(size);
}
void kokkosp_deallocate_data(const SpaceHandle, const char*, const void*, const std::uint64_t) {}
}
