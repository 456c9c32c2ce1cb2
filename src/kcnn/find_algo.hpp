// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file find_algo.hpp
/// \brief Choosing a convolution algorithm: which one `ConvAlgo::Auto` runs, the tuner
///        find_best_algo (kcnn's counterpart of cuDNN's "find"), and its cache, which
///        lives for the process and can be saved to and loaded from a file.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "conv2d.hpp"
#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/conv2d/select/algo_cache.hpp"
#include "impl/conv2d/select/auto_rules.hpp"
#include "types.hpp"

namespace kcnn {

/// Every algorithm conv2d_forward implements in this build (never Auto), in the order
/// find_best_algo tries them.
inline std::vector<ConvAlgo> implemented_conv_algos() {
  return {std::begin(Impl::implemented_conv_algos), std::end(Impl::implemented_conv_algos)};
}

/// One algorithm's trial in find_best_algo.
struct AlgoTiming {
  ConvAlgo algo = ConvAlgo::Reference;
  double seconds = -1;  ///< median of the timed runs (each fenced); -1 if it could not run
  std::string error;    ///< why it could not run (the exception's message); else empty
  bool ok() const { return seconds >= 0; }
};

/// What find_best_algo found.
struct FindAlgoResult {
  ConvAlgo algo = ConvAlgo::Reference;  ///< the winner; never Auto
  std::vector<AlgoTiming> timings;      ///< every implemented algorithm; empty if from_cache
  bool from_cache = false;              ///< true: the cached winner, nothing was timed
};

struct FindAlgoOptions {
  int repetitions = 5;       ///< timed runs per algorithm after one untimed warm-up run
  bool reuse_cached = true;  ///< false: time again even if the cache knows the problem
};

namespace Impl {

/// Runs every implemented algorithm on the problem, writing only into `y_trial`; one
/// warm-up run, then `repetitions` runs each fenced and timed; returns the medians.
/// An algorithm that throws (e.g. does not support the problem) gets seconds = -1.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::vector<AlgoTiming> time_conv2d_algos(const ExecSpace& space, const XView& x, const WView& w,
                                          const BView& bias, const YView& y_trial,
                                          const Conv2dParams& params, int repetitions) {
  std::vector<AlgoTiming> timings;
  std::vector<double> runs(static_cast<std::size_t>(repetitions));
  for (ConvAlgo algo : implemented_conv_algos) {
    AlgoTiming t;
    t.algo = algo;
    Conv2dParams p = params;
    p.algo = algo;
    try {
      conv2d_forward(space, x, w, bias, y_trial, p);
      space.fence();
      for (double& seconds : runs) {
        const auto t0 = std::chrono::steady_clock::now();
        conv2d_forward(space, x, w, bias, y_trial, p);
        space.fence();
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      std::nth_element(runs.begin(), runs.begin() + repetitions / 2, runs.end());
      t.seconds = runs[static_cast<std::size_t>(repetitions / 2)];
    } catch (const std::exception& e) {
      space.fence();
      t.seconds = -1;
      t.error = e.what();
    }
    timings.push_back(t);
  }
  return timings;
}

}  // namespace Impl

/// \brief Times every implemented convolution algorithm on this problem and returns the
///        fastest; the winner is cached for the process, and `Auto` uses it from then on.
///
/// The trials write into a scratch copy of y (allocated here, the size of y, freed
/// before returning); the caller's x, w and bias are only read. When the trials are
/// done, y receives the convolution computed by the winner, exactly as
/// `conv2d_forward(space, x, w, bias, y, params)` with `params.algo = result.algo`
/// would: so y holds a correct result afterwards, also when the winner came from the
/// cache. That last run is enqueued on `space` without a fence, like conv2d_forward.
///
/// The cache key is the whole problem: N, C, H, W, M, R, S, stride, padding, dilation,
/// groups, layout, activation, bias or not, the Views' array layouts, the backend
/// (ExecSpace::name()) and the scalar type. An empty problem (N = 0 or M = 0) is not
/// timed nor cached; the heuristic's choice is returned.
///
/// Synchronous: it fences `space` around every timed run. Thread-safe with respect to
/// the cache (a mutex guards it), but timings taken while other work shares the device
/// are meaningless.
///
/// \param space, x, w, bias, y  as for conv2d_forward (same checks, same kcnn::Error)
/// \param params  as for conv2d_forward; params.algo is ignored
/// \param options repetitions per algorithm, and whether a cached winner may be reused
/// \throws kcnn::Error on invalid arguments (before anything is run or written), or if
///         no implemented algorithm can run the problem.
template <class ExecSpace, class XView, class WView, class BView, class YView>
FindAlgoResult find_best_algo(const ExecSpace& space, const XView& x, const WView& w,
                              const BView& bias, const YView& y, const Conv2dParams& params,
                              const FindAlgoOptions& options = {}) {
  Impl::static_check_conv2d_views<ExecSpace, XView, WView, BView, YView>();
  constexpr const char* op = "kcnn::find_best_algo";
  const Impl::Conv2dProblem pb = Impl::make_conv2d_problem(op, x, w, bias, y, params);
  Impl::throw_if(options.repetitions < 1, op, "repetitions must be >= 1, got ",
                 options.repetitions);
  Impl::ProfilingRegion region(op);

  FindAlgoResult result;
  const auto key = Impl::make_algo_cache_key<ExecSpace, XView, WView, YView>(pb);
  // The cached winner, or Auto for none (a plain value: GCC's -Wmaybe-uninitialized
  // misreads an optional's payload here once the key grows).
  ConvAlgo cached = ConvAlgo::Auto;
  if (options.reuse_cached)
    if (const auto hit = Impl::algo_cache().find(key)) cached = hit->algo;
  if (pb.empty()) {
    result.algo = Impl::select_conv2d_algo(
                      pb.group_slice(), Impl::auto_context<ExecSpace, Impl::view_scalar_t<YView>>())
                      .algo;
  } else if (cached != ConvAlgo::Auto && Impl::is_implemented(cached) &&
             !Impl::conv2d_can_implement(space, cached, Impl::as_kernel_view<ExecSpace, false>(x),
                                         Impl::as_kernel_view<ExecSpace, false>(w),
                                         Impl::as_kernel_view<ExecSpace, false>(bias),
                                         Impl::as_kernel_view<ExecSpace, true>(y), pb)
                  .has_value()) {
    result.algo = cached;
    result.from_cache = true;
  } else {
    {
      using Scratch = Kokkos::View<typename YView::non_const_data_type,
                                   typename YView::array_layout, typename YView::memory_space>;
      const Scratch y_trial(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kcnn::find_best_algo::y")),
          y.layout());
      result.timings =
          Impl::time_conv2d_algos(space, x, w, bias, y_trial, params, options.repetitions);
    }
    const AlgoTiming* best = nullptr;
    std::string errors;
    for (const AlgoTiming& t : result.timings) {
      if (t.ok() && (!best || t.seconds < best->seconds)) best = &t;
      if (!t.ok()) errors += std::string(" [") + to_string(t.algo) + ": " + t.error + "]";
    }
    Impl::throw_if(best == nullptr, op, "no implemented algorithm could run this problem:", errors);
    result.algo = best->algo;
    Impl::algo_cache().insert(key, {best->algo, best->seconds});
  }
  Conv2dParams final_params = params;
  final_params.algo = result.algo;
  conv2d_forward(space, x, w, bias, y, final_params);
  return result;
}

/// \brief find_best_algo without bias.
template <class ExecSpace, class XView, class WView, class YView>
FindAlgoResult find_best_algo(const ExecSpace& space, const XView& x, const WView& w,
                              const YView& y, const Conv2dParams& params,
                              const FindAlgoOptions& options = {}) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  return find_best_algo(space, x, w, NoBias(), y, params, options);
}

/// \brief The algorithm conv2d_forward(space, x, w, bias, y, params) would run:
///        params.algo, or for Auto the cached winner or the heuristic's choice.
///        Validates the arguments like conv2d_forward; runs nothing.
template <class ExecSpace, class XView, class WView, class BView, class YView>
ConvAlgo resolve_conv2d_algo(const ExecSpace& space, const XView& x, const WView& w,
                             const BView& bias, const YView& y, const Conv2dParams& params) {
  Impl::static_check_conv2d_views<ExecSpace, XView, WView, BView, YView>();
  const Impl::Conv2dProblem pb =
      Impl::make_conv2d_problem("kcnn::resolve_conv2d_algo", x, w, bias, y, params);
  if (params.algo != ConvAlgo::Auto) return params.algo;
  return Impl::resolve_auto_algo<ExecSpace, XView, WView, YView>(
             space, Impl::as_kernel_view<ExecSpace, false>(x),
             Impl::as_kernel_view<ExecSpace, false>(w),
             Impl::as_kernel_view<ExecSpace, false>(bias), Impl::as_kernel_view<ExecSpace, true>(y),
             pb)
      .algo;
}

/// \brief resolve_conv2d_algo without bias.
template <class ExecSpace, class XView, class WView, class YView>
ConvAlgo resolve_conv2d_algo(const ExecSpace& space, const XView& x, const WView& w, const YView& y,
                             const Conv2dParams& params) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  return resolve_conv2d_algo(space, x, w, NoBias(), y, params);
}

/// Number of problems in the process-wide cache of find_best_algo's winners.
inline std::size_t algo_cache_size() {
  return Impl::algo_cache().size();
}

/// Forgets every cached winner (Auto falls back to the heuristic).
inline void clear_algo_cache() {
  Impl::algo_cache().clear();
}

/// \brief Writes the cache of find_best_algo's winners to `path` (text, see
///        impl/conv2d/select/algo_cache.hpp for the format), replacing the file atomically.
/// \return false, with a warning on stderr, if the file cannot be written.
inline bool save_algo_cache(const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (out) Impl::write_algo_cache(out, Impl::algo_cache().snapshot());
    out.flush();
    if (!out) {
      std::cerr << "kcnn::save_algo_cache: warning: cannot write '" << tmp
                << "': " << std::strerror(errno) << '\n';
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::cerr << "kcnn::save_algo_cache: warning: cannot rename '" << tmp << "' to '" << path
              << "': " << std::strerror(errno) << '\n';
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

/// \brief Adds the winners saved in `path` to the cache (an entry for a problem already
///        cached replaces it).
///
/// A file that is not a kcnn algorithm cache of this format version, or is corrupt or
/// truncated anywhere, is ignored as a whole with a warning on stderr: the cache stays
/// as it was. A missing file is no error (the first run of a program) and is ignored
/// silently. Entries naming algorithms this build lacks are kept but Auto skips them.
/// \return true if the file was loaded.
inline bool load_algo_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    if (err != ENOENT)
      std::cerr << "kcnn::load_algo_cache: warning: cannot read '" << path
                << "': " << std::strerror(err) << '\n';
    return false;
  }
  Impl::AlgoCacheMap entries;
  std::string error;
  if (!Impl::parse_algo_cache(in, entries, error)) {
    std::cerr << "kcnn::load_algo_cache: warning: ignoring '" << path << "': " << error
              << " (the algorithm cache is unchanged)\n";
    return false;
  }
  Impl::algo_cache().merge(entries);
  return true;
}

}  // namespace kcnn
