// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/pool2d_backward_kernels.hpp
/// \brief The kernel of pool2d_backward: a gather, one thread per input-gradient element,
///        summing the output gradients of the windows that cover it. No atomics, so the
///        result is deterministic also with overlapping windows.
///
/// Max recomputes each covering window's winner from x with the forward's own
/// comparison (PoolReduce<Max>::takes): the gradient of an output goes to the first
/// maximal real cell of its window in row-major window order (the last NaN if the
/// window holds NaN). Average adds dy / divisor with the forward's divisor (pool_window).
/// A thread visits at most ceil(window/stride)^2 windows per dimension pair; Max reads
/// window_h*window_w values of x per visited window. Pooling is memory-bound, and for the
/// usual non-overlapping windows every thread visits one window.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/unroll_map.hpp"
#include "../common/view_checks.hpp"
#include "../epilogue/pool_window.hpp"

namespace kcnn::Impl {

template <Layout L, PoolMode Mode, class ExecSpace, class T>
struct Pool2dBackwardGather {
  kernel_input4_t<ExecSpace, T> x, dy;
  kernel_output4_t<ExecSpace, T> dx;
  Pool2dParams g;
  std::int64_t C, H, W, P, Q;

  /// The pooled outputs [begin, end) whose windows (start o*stride - pad, length
  /// window) cover input index i.
  KOKKOS_INLINE_FUNCTION static IndexRange covering(std::int64_t i, int window, int stride, int pad,
                                                    std::int64_t outputs) {
    std::int64_t lo = floor_div(i + pad - window, stride) + 1;  // o*stride - pad + window > i
    std::int64_t hi = floor_div(i + pad, stride) + 1;           // o*stride - pad <= i
    lo = lo < 0 ? 0 : lo;
    hi = hi > outputs ? outputs : hi;
    return {lo, hi < lo ? lo : hi};
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t t) const {
    std::int64_t rest = t, c, h, w;
    if constexpr (L == Layout::NCHW) {
      w = rest % W, rest /= W;
      h = rest % H, rest /= H;
      c = rest % C, rest /= C;
    } else {
      c = rest % C, rest /= C;
      w = rest % W, rest /= W;
      h = rest % H, rest /= H;
    }
    const std::int64_t n = rest;
    const IndexRange ps = covering(h, g.window_h, g.stride_h, g.pad_h, P);
    const IndexRange qs = covering(w, g.window_w, g.stride_w, g.pad_w, Q);
    // In the accumulator type (16-bit types: float, rounded once at the store); the
    // maxima compare the converted values, which are exact.
    using Acc = accumulator_t<T>;
    Acc acc = 0;
    for (std::int64_t p = ps.begin; p < ps.end; ++p)
      for (std::int64_t q = qs.begin; q < qs.end; ++q) {
        const PoolWindow<std::int64_t> win = pool_window<std::int64_t>(g, H, W, p, q);
        if constexpr (Mode == PoolMode::Max) {
          using Op = PoolReduce<PoolMode::Max, Acc>;
          Acc best = Op::init();
          std::int64_t best_h = win.h_begin, best_w = win.w_begin;
          for (std::int64_t wh = win.h_begin; wh < win.h_end; ++wh)
            for (std::int64_t ww = win.w_begin; ww < win.w_end; ++ww) {
              const Acc v = to_compute(at<L>(x, n, c, wh, ww));
              if (Op::takes(best, v)) best = v, best_h = wh, best_w = ww;
            }
          if (best_h == h && best_w == w) acc += to_compute(at<L>(dy, n, c, p, q));
        } else {
          acc += to_compute(at<L>(dy, n, c, p, q)) / Acc(win.divisor);
        }
      }
    at<L>(dx, n, c, h, w) = from_compute<T>(acc);
  }
};

/// Runs pool2d_backward on validated arguments (kernel Views).
template <class ExecSpace, class T>
void pool2d_backward_launch(const ExecSpace& space, const kernel_input4_t<ExecSpace, T>& x,
                            const kernel_input4_t<ExecSpace, T>& dy,
                            const kernel_output4_t<ExecSpace, T>& dx, const Pool2dProblem& pb) {
  auto launch = [&](auto layout_tag, auto mode_tag) {
    constexpr Layout L = decltype(layout_tag)::value;
    constexpr PoolMode Mode = decltype(mode_tag)::value;
    Kokkos::parallel_for(
        Mode == PoolMode::Max ? "kcnn::pool2d_backward::max" : "kcnn::pool2d_backward::average",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, pb.input_size()),
        Pool2dBackwardGather<L, Mode, ExecSpace, T>{x, dy, dx, pb.pool, pb.C, pb.H, pb.W, pb.P,
                                                    pb.Q});
  };
  with_pool_mode(pb.pool.mode, [&](auto mode_tag) {
    if (pb.pool.layout == Layout::NCHW) {
      launch(std::integral_constant<Layout, Layout::NCHW>{}, mode_tag);
    } else {
      launch(std::integral_constant<Layout, Layout::NHWC>{}, mode_tag);
    }
  });
}

}  // namespace kcnn::Impl
