// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/select/algo_cache.hpp
/// \brief The process-wide cache of find_best_algo's winners: its key, the cache itself
///        (mutex-protected) and its text file format.
///
/// File format, version 3 (text, one entry per line, fields separated by blanks):
///
///     kcnn-algo-cache 3
///     # backend scalar math layout views activation bias N C H W M R S stride_h ...
///     OpenMP float Strict NCHW RRR ReLU 1 8 64 56 56 64 3 3 1 1 1 1 1 1 1 Reference 0.0123
///     end 1
///
/// Version 2 files (no groups field: every entry ungrouped) and version 1 files (no
/// math field either: every entry Strict) still load.
///
/// The first line names the format and its version; lines starting with '#' are
/// comments; the last line `end <count>` holds the number of entries, so that a
/// truncated file is recognised. A file with any defect is rejected as a whole.
#pragma once

#include <Kokkos_Core.hpp>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <istream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../../types.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/view_checks.hpp"

namespace kcnn::Impl {

/// Finds the concrete ConvAlgo (not Auto) whose to_string is `token`: any enumerator, so
/// that a file naming an algorithm this build does not register still loads (Auto skips
/// such entries).
inline bool parse_conv_algo(const std::string& token, ConvAlgo& algo) {
  for (unsigned i = 0; i < 32; ++i) {
    const auto a = static_cast<ConvAlgo>(i);
    if (a != ConvAlgo::Auto && token == to_string(a)) {
      algo = a;
      return true;
    }
  }
  return false;
}

/// Everything a tuned choice depends on: the problem's geometry, tensor layout, epilogue,
/// the Views' array layouts (a kernel may support LayoutRight only), the backend, the
/// scalar type and the math mode.
struct AlgoCacheKey {
  std::string backend;  ///< ExecSpace::name(): "Cuda", "OpenMP", "Serial", ...
  std::string scalar;   ///< ElementTraits<T>::name: "float", "double"
  MathMode math = MathMode::Strict;
  Layout layout = Layout::NCHW;
  std::string views = "RRR";  ///< x, w, y: 'R' LayoutRight, 'L' LayoutLeft, 'S' other
  Activation activation = Activation::Identity;
  bool has_bias = false;
  std::int64_t N = 0, C = 0, H = 0, W = 0, M = 0, R = 0, S = 0;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;

  auto tie() const {
    return std::tie(backend, scalar, math, layout, views, activation, has_bias, N, C, H, W, M, R, S,
                    stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups);
  }
  bool operator<(const AlgoCacheKey& o) const { return tie() < o.tie(); }
  bool operator==(const AlgoCacheKey& o) const { return tie() == o.tie(); }
};

/// The winner for one key, and its median time in seconds.
struct AlgoCacheEntry {
  ConvAlgo algo = ConvAlgo::Reference;
  double seconds = 0;
};

using AlgoCacheMap = std::map<AlgoCacheKey, AlgoCacheEntry>;

template <class View>
constexpr char view_layout_code() {
  using L = typename View::array_layout;
  return std::is_same_v<L, Kokkos::LayoutRight>  ? 'R'
         : std::is_same_v<L, Kokkos::LayoutLeft> ? 'L'
                                                 : 'S';
}

/// The cache key of a validated problem run on `ExecSpace` with these View types.
template <class ExecSpace, class XView, class WView, class YView>
AlgoCacheKey make_algo_cache_key(const Conv2dProblem& pb) {
  AlgoCacheKey k;
  k.backend = ExecSpace::name();
  k.scalar = ElementTraits<view_scalar_t<YView>>::name;
  k.math = pb.math;
  k.layout = pb.layout;
  k.views = {view_layout_code<XView>(), view_layout_code<WView>(), view_layout_code<YView>()};
  k.activation = pb.activation;
  k.has_bias = pb.has_bias;
  k.N = pb.N, k.C = pb.C, k.H = pb.H, k.W = pb.W, k.M = pb.M, k.R = pb.R, k.S = pb.S;
  k.stride_h = pb.stride_h, k.stride_w = pb.stride_w, k.pad_h = pb.pad_h, k.pad_w = pb.pad_w;
  k.dilation_h = pb.dilation_h, k.dilation_w = pb.dilation_w;
  k.groups = pb.groups;
  return k;
}

// ---------------------------------------------------------------------------
// The process-wide cache
// ---------------------------------------------------------------------------

/// A map from problem to winner behind a mutex. `empty()` is lock-free so that Auto
/// costs nothing extra while nobody has tuned anything.
class AlgoCache {
 public:
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }
  std::size_t size() const { return size_.load(std::memory_order_acquire); }

  std::optional<AlgoCacheEntry> find(const AlgoCacheKey& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void insert(const AlgoCacheKey& key, const AlgoCacheEntry& entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[key] = entry;
    size_.store(entries_.size(), std::memory_order_release);
  }
  /// Adds (or overwrites with) every entry of `more`.
  void merge(const AlgoCacheMap& more) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, entry] : more)
      entries_[key] = entry;
    size_.store(entries_.size(), std::memory_order_release);
  }
  AlgoCacheMap snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    size_.store(0, std::memory_order_release);
  }

 private:
  mutable std::mutex mutex_;
  AlgoCacheMap entries_;
  std::atomic<std::size_t> size_{0};
};

/// The one cache of the process (an inline function's static: one instance across
/// translation units).
inline AlgoCache& algo_cache() {
  static AlgoCache cache;
  return cache;
}

// ---------------------------------------------------------------------------
// File format
// ---------------------------------------------------------------------------

inline constexpr const char* kAlgoCacheMagic = "kcnn-algo-cache";
inline constexpr int kAlgoCacheVersion = 3;
/// Fields of an entry line in a file of format version 3 (version 2: one fewer, no
/// groups; version 1: two fewer, no math either).
inline constexpr std::size_t kAlgoCacheFields = 23;

inline void write_algo_cache(std::ostream& out, const AlgoCacheMap& entries) {
  out << kAlgoCacheMagic << ' ' << kAlgoCacheVersion << '\n'
      << "# backend scalar math layout views activation bias N C H W M R S stride_h stride_w pad_h "
         "pad_w dilation_h dilation_w groups algo seconds\n";
  out.precision(std::numeric_limits<double>::max_digits10);
  for (const auto& [k, e] : entries) {
    out << k.backend << ' ' << k.scalar << ' ' << to_string(k.math) << ' ' << to_string(k.layout)
        << ' ' << k.views << ' ' << to_string(k.activation) << ' ' << (k.has_bias ? 1 : 0) << ' '
        << k.N << ' ' << k.C << ' ' << k.H << ' ' << k.W << ' ' << k.M << ' ' << k.R << ' ' << k.S
        << ' ' << k.stride_h << ' ' << k.stride_w << ' ' << k.pad_h << ' ' << k.pad_w << ' '
        << k.dilation_h << ' ' << k.dilation_w << ' ' << k.groups << ' ' << to_string(e.algo) << ' '
        << e.seconds << '\n';
  }
  out << "end " << entries.size() << '\n';
}

/// Reads an integer in [lo, hi] that spans the whole token.
template <class Int>
bool parse_int(const std::string& token, Int lo, Int hi, Int& value) {
  Int v{};
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, v);
  if (ec != std::errc() || ptr != end || v < lo || v > hi) return false;
  value = static_cast<Int>(v);
  return true;
}

/// Finds the enumerator whose to_string is `token`.
template <class Enum, std::size_t N>
bool parse_enum(const std::string& token, const Enum (&values)[N], Enum& value) {
  for (Enum v : values)
    if (token == to_string(v)) {
      value = v;
      return true;
    }
  return false;
}

/// Parses one entry line of a file of format `version` (1 to 3); on a defect returns
/// false and says which field.
inline bool parse_algo_cache_entry(const std::string& line, AlgoCacheKey& k, AlgoCacheEntry& e,
                                   std::string& error, int version = kAlgoCacheVersion) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string token; in >> token;)
    f.push_back(token);
  const std::size_t fields = kAlgoCacheFields - (version >= 3 ? 0 : version == 2 ? 1 : 2);
  if (f.size() != fields) {
    error = msg("expected ", fields, " fields, found ", f.size());
    return false;
  }
  auto bad = [&](const char* field, const std::string& token) {
    error = msg("bad ", field, " '", token, "'");
    return false;
  };
  constexpr MathMode math_modes[] = {MathMode::Strict, MathMode::TF32, MathMode::TF32x3};
  k.math = MathMode::Strict;
  if (version >= 2) {
    if (!parse_enum(f[2], math_modes, k.math)) return bad("math", f[2]);
    f.erase(f.begin() + 2);  // the rest as in version 1 (but the groups)
  }
  k.groups = 1;
  if (version >= 3) {  // after dilation_w: field 19 once math is out
    if (!parse_int(f[19], std::int64_t(1), std::int64_t(std::numeric_limits<int>::max()), k.groups))
      return bad("groups", f[19]);
    f.erase(f.begin() + 19);
  }
  constexpr Layout layouts[] = {Layout::NCHW, Layout::NHWC};
  constexpr Activation activations[] = {Activation::Identity, Activation::ReLU, Activation::Sigmoid,
                                        Activation::Tanh};
  constexpr std::int64_t kMaxExtent = std::int64_t(1) << 40;
  constexpr int kMaxInt = std::numeric_limits<int>::max();

  k.backend = f[0];
  bool known_scalar = false;
  for (const char* name : supported_element_names)
    known_scalar |= f[1] == name;
  if (!known_scalar) return bad("scalar", f[1]);
  k.scalar = f[1];
  // The non-strict modes are float-only (math_mode_accepts): such an entry is corrupt.
  if (k.math != MathMode::Strict && k.scalar != ElementTraits<float>::name)
    return bad("math for this scalar", to_string(k.math));
  if (!parse_enum(f[2], layouts, k.layout)) return bad("layout", f[2]);
  if (f[3].size() != 3 || f[3].find_first_not_of("RLS") != std::string::npos)
    return bad("views", f[3]);
  k.views = f[3];
  if (!parse_enum(f[4], activations, k.activation)) return bad("activation", f[4]);
  int bias = 0;
  if (!parse_int(f[5], 0, 1, bias)) return bad("bias", f[5]);
  k.has_bias = bias == 1;
  std::int64_t* extents[] = {&k.N, &k.C, &k.H, &k.W, &k.M, &k.R, &k.S};
  const char* extent_names[] = {"N", "C", "H", "W", "M", "R", "S"};
  for (int i = 0; i < 7; ++i)
    if (!parse_int(f[6 + i], std::int64_t(1), kMaxExtent, *extents[i]))
      return bad(extent_names[i], f[6 + i]);
  if (!parse_int(f[13], 1, kMaxInt, k.stride_h)) return bad("stride_h", f[13]);
  if (!parse_int(f[14], 1, kMaxInt, k.stride_w)) return bad("stride_w", f[14]);
  if (!parse_int(f[15], 0, kMaxInt, k.pad_h)) return bad("pad_h", f[15]);
  if (!parse_int(f[16], 0, kMaxInt, k.pad_w)) return bad("pad_w", f[16]);
  if (!parse_int(f[17], 1, kMaxInt, k.dilation_h)) return bad("dilation_h", f[17]);
  if (!parse_int(f[18], 1, kMaxInt, k.dilation_w)) return bad("dilation_w", f[18]);
  if (k.C % k.groups != 0 || k.M % k.groups != 0)
    return bad("groups (C and M must be multiples of it)", std::to_string(k.groups));
  if (!parse_conv_algo(f[19], e.algo)) return bad("algorithm", f[19]);
  char* end = nullptr;
  e.seconds = std::strtod(f[20].c_str(), &end);
  if (end != f[20].c_str() + f[20].size() || !std::isfinite(e.seconds) || e.seconds < 0)
    return bad("seconds", f[20]);
  return true;
}

/// Parses a whole cache file. On any defect (foreign or newer format, a malformed line,
/// a missing or wrong `end` line) returns false with `error` saying what and on which
/// line, and leaves `out` untouched: a file is loaded entirely or not at all.
inline bool parse_algo_cache(std::istream& in, AlgoCacheMap& out, std::string& error) {
  std::string line;
  if (!std::getline(in, line)) {
    error = "empty file";
    return false;
  }
  const std::string expected = msg(kAlgoCacheMagic, ' ', kAlgoCacheVersion);
  int version = 0;
  for (int v = 1; v <= kAlgoCacheVersion; ++v)
    if (line == msg(kAlgoCacheMagic, ' ', v)) version = v;
  if (version == 0) {
    const std::string prefix = msg(kAlgoCacheMagic, ' ');
    error = line.rfind(prefix, 0) == 0
                ? msg("unsupported format version '", line.substr(prefix.size()),
                      "' (this kcnn reads versions 1 to ", kAlgoCacheVersion, ")")
                : msg("not a kcnn algorithm cache (first line is not '", expected, "')");
    return false;
  }
  AlgoCacheMap entries;
  std::size_t line_no = 1;
  bool ended = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    if (ended) {
      error = msg("line ", line_no, ": content after the 'end' line");
      return false;
    }
    if (line.rfind("end ", 0) == 0) {
      std::size_t count = 0;
      if (!parse_int(line.substr(4), std::size_t(0), std::numeric_limits<std::size_t>::max(),
                     count) ||
          count != entries.size()) {
        error = msg("line ", line_no, ": '", line, "' but the file holds ", entries.size(),
                    " distinct entries");
        return false;
      }
      ended = true;
      continue;
    }
    AlgoCacheKey key;
    AlgoCacheEntry entry;
    std::string why;
    if (!parse_algo_cache_entry(line, key, entry, why, version)) {
      error = msg("line ", line_no, ": ", why);
      return false;
    }
    if (!entries.emplace(key, entry).second) {
      error = msg("line ", line_no, ": duplicate entry");
      return false;
    }
  }
  if (!ended) {
    error = "truncated (no 'end <count>' line)";
    return false;
  }
  out = std::move(entries);
  return true;
}

}  // namespace kcnn::Impl
