// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/pool2d_backward_kernels.hpp
/// \brief The kernels of pool2d_backward. Windows that do not overlap (stride >= window
///        in both dimensions: the usual pooling layers) take a scatter, one thread per
///        pooled output, which finds its window's winner once and writes every input
///        gradient of its block; overlapping windows take a gather, one thread per
///        input-gradient element, summing the output gradients of the windows that cover
///        it. No atomics in either, so the result is deterministic.
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

/// The cell of window `win` (image n, channel c) whose gradient a Max pooling routes:
/// the first maximal real cell in row-major window order (the last NaN if the window
/// holds NaN), with the forward's own comparison. In the accumulator type: 16-bit
/// values convert exactly.
struct MaxWinner {
  std::int64_t h, w;
};
template <Layout L, class Acc, class XView>
KOKKOS_INLINE_FUNCTION MaxWinner max_winner(const XView& x, std::int64_t n, std::int64_t c,
                                            const PoolWindow<std::int64_t>& win) {
  using Op = PoolReduce<PoolMode::Max, Acc>;
  Acc best = Op::init();
  MaxWinner at_best{win.h_begin, win.w_begin};
  for (std::int64_t wh = win.h_begin; wh < win.h_end; ++wh)
    for (std::int64_t ww = win.w_begin; ww < win.w_end; ++ww) {
      const Acc v = to_compute(at<L>(x, n, c, wh, ww));
      if (Op::takes(best, v)) best = v, at_best = {wh, ww};
    }
  return at_best;
}

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
    // In the accumulator type (16-bit types: float, rounded once at the store).
    using Acc = accumulator_t<T>;
    Acc acc = 0;
    for (std::int64_t p = ps.begin; p < ps.end; ++p)
      for (std::int64_t q = qs.begin; q < qs.end; ++q) {
        const PoolWindow<std::int64_t> win = pool_window<std::int64_t>(g, H, W, p, q);
        if constexpr (Mode == PoolMode::Max) {
          const MaxWinner best = max_winner<L, Acc>(x, n, c, win);
          if (best.h == h && best.w == w) acc += to_compute(at<L>(dy, n, c, p, q));
        } else {
          acc += to_compute(at<L>(dy, n, c, p, q)) / Acc(win.divisor);
        }
      }
    at<L>(dx, n, c, h, w) = from_compute<T>(acc);
  }
};

/// Non-overlapping windows (stride >= window, both dimensions): output (p, q) owns the
/// input block of rows [b(p), b(p + 1)) with b(0) = 0, b(p) = p*stride_h - pad_h, b(P) =
/// H (and columns likewise). The blocks partition the input (stride >= window > pad),
/// and each holds its window's real cells; cells outside the window (the gaps of a
/// stride above the window, the rows and columns after the last window) get 0. Per output
/// 3 divisions and one read of the window, against about 10 divisions and a read of the
/// window per input element in the gather: on LeNet-5's pools at batch 64 (one thread
/// of a 2-core AMD EPYC) 2x2 on 80x80 197 -> 56 ms, 4x4 on 34x34 207 -> 16 ms. The
/// values equal the gather's bit for bit (1,600 random disjoint shapes, both modes and
/// layouts, compared bitwise in session 47).
template <Layout L, PoolMode Mode, class ExecSpace, class T>
struct Pool2dBackwardScatter {
  kernel_input4_t<ExecSpace, T> x, dy;
  kernel_output4_t<ExecSpace, T> dx;
  Pool2dParams g;
  std::int64_t C, H, W, P, Q;

  /// The block [begin, end) of output o along one dimension.
  KOKKOS_INLINE_FUNCTION static IndexRange block(std::int64_t o, int stride, int pad,
                                                 std::int64_t outputs, std::int64_t extent) {
    return {o == 0 ? 0 : o * stride - pad, o == outputs - 1 ? extent : (o + 1) * stride - pad};
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t t) const {
    std::int64_t rest = t, c, p, q;
    if constexpr (L == Layout::NCHW) {
      q = rest % Q, rest /= Q;
      p = rest % P, rest /= P;
      c = rest % C, rest /= C;
    } else {
      c = rest % C, rest /= C;
      q = rest % Q, rest /= Q;
      p = rest % P, rest /= P;
    }
    const std::int64_t n = rest;
    const PoolWindow<std::int64_t> win = pool_window<std::int64_t>(g, H, W, p, q);
    using Acc = accumulator_t<T>;
    // As the gather computes it: 0 + dy for the winner (Max), 0 + dy / divisor for each
    // cell of the window (Average).
    const Acc d = to_compute(at<L>(dy, n, c, p, q));
    const Acc share = Mode == PoolMode::Max ? Acc(0) + d : Acc(0) + d / Acc(win.divisor);
    MaxWinner best{-1, -1};
    if constexpr (Mode == PoolMode::Max) best = max_winner<L, Acc>(x, n, c, win);
    const IndexRange rows = block(p, g.stride_h, g.pad_h, P, H);
    const IndexRange cols = block(q, g.stride_w, g.pad_w, Q, W);
    for (std::int64_t h = rows.begin; h < rows.end; ++h)
      for (std::int64_t w = cols.begin; w < cols.end; ++w) {
        bool gets;
        if constexpr (Mode == PoolMode::Max) {
          gets = h == best.h && w == best.w;
        } else {
          gets = h >= win.h_begin && h < win.h_end && w >= win.w_begin && w < win.w_end;
        }
        at<L>(dx, n, c, h, w) = from_compute<T>(gets ? share : Acc(0));
      }
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
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    const bool disjoint =
        pb.pool.stride_h >= pb.pool.window_h && pb.pool.stride_w >= pb.pool.window_w;
    if (disjoint)
      Kokkos::parallel_for(Mode == PoolMode::Max ? "kcnn::pool2d_backward::max_scatter"
                                                 : "kcnn::pool2d_backward::average_scatter",
                           Policy(space, 0, pb.output_size()),
                           Pool2dBackwardScatter<L, Mode, ExecSpace, T>{x, dy, dx, pb.pool, pb.C,
                                                                        pb.H, pb.W, pb.P, pb.Q});
    else
      Kokkos::parallel_for(
          Mode == PoolMode::Max ? "kcnn::pool2d_backward::max" : "kcnn::pool2d_backward::average",
          Policy(space, 0, pb.input_size()),
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
