// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file timing.hpp
/// \brief How kcnn_perf times anything: one untimed warm-up run, then repeated runs each
///        ending in a device synchronisation, and their median.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace kcnn_perf {

struct Timing {
  double median = 0;  ///< seconds
  double min = 0, max = 0;
  int reps = 0;
};

/// Times `once`, which must return only when its work is finished (launch + fence).
/// The first run is a warm-up (first touch, caches, lazy initialisation) and is not
/// counted. `reps` > 0 fixes the number of timed runs; otherwise as many as fit in
/// `target_seconds` judging by the warm-up, at least 3 and at most 100.
template <class F>
Timing time_median(F&& once, int reps, double target_seconds);

/// time_median with a `timed` that runs once and returns the seconds it measured itself
/// (e.g. between device events).
template <class F>
Timing time_median_measured(F&& timed, int reps, double target_seconds) {
  const double warm = timed();
  if (reps <= 0)
    reps =
        static_cast<int>(std::clamp(std::ceil(target_seconds / std::max(warm, 1e-6)), 3.0, 100.0));
  std::vector<double> runs(static_cast<std::size_t>(reps));
  for (double& t : runs)
    t = timed();
  std::sort(runs.begin(), runs.end());
  const std::size_t n = runs.size();
  Timing t;
  t.median = n % 2 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
  t.min = runs.front();
  t.max = runs.back();
  t.reps = reps;
  return t;
}

template <class F>
Timing time_median(F&& once, int reps, double target_seconds) {
  using clock = std::chrono::steady_clock;
  return time_median_measured(
      [&] {
        const auto t0 = clock::now();
        once();
        return std::chrono::duration<double>(clock::now() - t0).count();
      },
      reps, target_seconds);
}

}  // namespace kcnn_perf
