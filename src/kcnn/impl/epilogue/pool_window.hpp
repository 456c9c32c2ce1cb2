// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/epilogue/pool_window.hpp
/// \brief The one definition of a pooling window's reduction, shared by pool2d_forward's
///        kernels and by convolution kernels that pool their own outputs (fused pooling).
///
/// A pooled output (p, q) covers input rows [p*stride_h - pad_h, p*stride_h - pad_h +
/// window_h) and likewise columns. `pool_window` clips that to the real input and gives
/// the Average divisor; `PoolReduce<Mode, T>` folds values (init / add / finish);
/// `pool_reduce` runs both over any value source; `pool_output` adds the bias and applies
/// the pooling's activation. A fused convolution kernel computes, for a tile of pooled
/// outputs, the convolution outputs `pool_input_span` names (already biased and
/// activated with the convolution's activation, see bias_activation.hpp), keeps them in scratch
/// or registers, and then per pooled output:
///
///   const auto win = pool_window(pb.pool, pb.P, pb.Q, pp, pq);   // conv-output coords
///   T v = pool_reduce<Mode, T>(win, [&](auto h, auto w) { return tile(h - h0, w - w0); });
///   y(...) = pool_output(pb.pool.activation, v);                  // no pool bias
///
/// with `Mode` a compile-time PoolMode (see `with_pool_mode`).
#pragma once

#include <Kokkos_Core.hpp>
#include <Kokkos_NumericTraits.hpp>

#include <cstdint>
#include <type_traits>

#include "../../types.hpp"
#include "bias_activation.hpp"

namespace kcnn::Impl {

/// Folds the values of one window. Stateless so that a vectorized host loop can keep
/// many accumulators in an array and a GPU thread one in a register.
template <PoolMode Mode, class T>
struct PoolReduce;

/// Max: padded cells are simply never added. NaN propagates (as in PyTorch): once a NaN
/// is added the result is NaN.
template <class T>
struct PoolReduce<PoolMode::Max, T> {
  KOKKOS_FORCEINLINE_FUNCTION static T init() { return -Kokkos::Experimental::infinity<T>::value; }
  /// Whether v replaces the running maximum acc: the first of equal maxima stays (so
  /// pool2d_backward routes the gradient to it), a NaN always replaces.
  KOKKOS_FORCEINLINE_FUNCTION static bool takes(T acc, T v) { return v > acc || v != v; }
  KOKKOS_FORCEINLINE_FUNCTION static T add(T acc, T v) { return takes(acc, v) ? v : acc; }
  /// `divisor` is the Average's; Max ignores it.
  KOKKOS_FORCEINLINE_FUNCTION static T finish(T acc, int /*divisor*/) { return acc; }
};

/// Average: the sum of the real cells divided by `divisor` (see pool_window).
template <class T>
struct PoolReduce<PoolMode::Average, T> {
  KOKKOS_FORCEINLINE_FUNCTION static T init() { return T(0); }
  KOKKOS_FORCEINLINE_FUNCTION static T add(T acc, T v) { return acc + v; }
  KOKKOS_FORCEINLINE_FUNCTION static T finish(T acc, int divisor) { return acc / T(divisor); }
};

/// The part of one pooling window that lies on real input: rows [h_begin, h_end),
/// columns [w_begin, w_end) (never empty, since pad < window), and the Average divisor.
template <class I>
struct PoolWindow {
  I h_begin, h_end, w_begin, w_end;
  int divisor;
};

/// First real input row (or column) covered by a window placed at `start`.
template <class I>
KOKKOS_FORCEINLINE_FUNCTION I clip_begin(I start) {
  return start < I(0) ? I(0) : start;
}
template <class I>
KOKKOS_FORCEINLINE_FUNCTION I clip_end(I start, int window, I extent) {
  const I end = start + static_cast<I>(window);
  return end > extent ? extent : end;
}

/// Average divisor for a window with `rows` x `cols` real cells. With
/// count_include_pad it is the full window area: in floor mode with pad < window a
/// window never reaches beyond the padded input, so this equals PyTorch's divisor too.
KOKKOS_FORCEINLINE_FUNCTION int pool_divisor(const Pool2dParams& g, std::int64_t rows,
                                             std::int64_t cols) {
  // Below 2^31: check_pool_params bounds the window's area.
  return static_cast<int>(g.count_include_pad ? std::int64_t{g.window_h} * g.window_w
                                              : rows * cols);
}

/// The window of pooled output (p, q) over an H x W input.
template <class I>
KOKKOS_INLINE_FUNCTION PoolWindow<I> pool_window(const Pool2dParams& g, I H, I W, I p, I q) {
  const I h0 = p * static_cast<I>(g.stride_h) - static_cast<I>(g.pad_h);
  const I w0 = q * static_cast<I>(g.stride_w) - static_cast<I>(g.pad_w);
  PoolWindow<I> win{clip_begin(h0), clip_end(h0, g.window_h, H), clip_begin(w0),
                    clip_end(w0, g.window_w, W), 0};
  win.divisor = pool_divisor(g, win.h_end - win.h_begin, win.w_end - win.w_begin);
  return win;
}

/// Input rows (or columns) [begin, end) that pooled outputs [out_begin, out_end) read,
/// clipped to [0, in_extent): what a fused kernel's tile must compute. Requires
/// out_begin < out_end.
template <class I>
KOKKOS_INLINE_FUNCTION void pool_input_span(I out_begin, I out_end, int window, int stride, int pad,
                                            I in_extent, I& begin, I& end) {
  begin = clip_begin(out_begin * static_cast<I>(stride) - static_cast<I>(pad));
  end = clip_end((out_end - 1) * static_cast<I>(stride) - static_cast<I>(pad), window, in_extent);
}

/// Input rows (or columns) [0, end) that all `pooled` outputs together read.
template <class I>
KOKKOS_INLINE_FUNCTION I pool_read_extent(I pooled, int window, int stride, int pad, I in_extent) {
  I begin = 0, end = 0;
  pool_input_span(I(0), pooled, window, stride, pad, in_extent, begin, end);
  return end;
}

/// Reduces one window; `value(h, w)` returns the input at real coordinates (h, w).
/// Device kernels pass device lambdas, host kernels host lambdas: nvcc's check of the
/// call's execution space is disabled (a host instantiation never runs on the device).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <PoolMode Mode, class T, class I, class Value>
KOKKOS_INLINE_FUNCTION T pool_reduce(const PoolWindow<I>& win, const Value& value) {
  using Op = PoolReduce<Mode, T>;
  T acc = Op::init();
  for (I h = win.h_begin; h < win.h_end; ++h)
    for (I w = win.w_begin; w < win.w_end; ++w)
      acc = Op::add(acc, value(h, w));
  return Op::finish(acc, win.divisor);
}

/// pool_reduce with the mode known at run time only: for kernels whose pooling is a
/// small final phase (fused convolutions), where a second instantiation of the whole
/// kernel per mode would cost compile time and buy nothing measurable.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class T, class I, class Value>
KOKKOS_INLINE_FUNCTION T pool_reduce_dynamic(PoolMode mode, const PoolWindow<I>& win,
                                             const Value& value) {
  return mode == PoolMode::Max ? pool_reduce<PoolMode::Max, T>(win, value)
                               : pool_reduce<PoolMode::Average, T>(win, value);
}

/// After the reduction: activation(pooled + bias). Fused convolutions have no pool bias.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T pool_output(Activation activation, T pooled, T bias) {
  return apply_activation(activation, pooled + bias);
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T pool_output(Activation activation, T pooled) {
  return apply_activation(activation, pooled);
}

/// Calls f(std::integral_constant<PoolMode, mode>{}) so kernels get the mode at compile
/// time (no branch in the inner loop, vectorizable host loops).
template <class F>
decltype(auto) with_pool_mode(PoolMode mode, F&& f) {
  if (mode == PoolMode::Max) return f(std::integral_constant<PoolMode, PoolMode::Max>{});
  return f(std::integral_constant<PoolMode, PoolMode::Average>{});
}

}  // namespace kcnn::Impl
