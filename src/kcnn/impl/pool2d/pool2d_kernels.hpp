// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/pool2d/pool2d_kernels.hpp
/// \brief The kernels of pool2d_forward (and of the pooling pass of conv2d_forward's
///        two-pass fused path). Pooling is memory-bound: each kernel reads x about once
///        and writes y once; the window reduction itself is epilogue/pool_window.hpp's.
///
/// - Device backends (GPU): one thread per output element, threads enumerating y in
///   memory order, so a warp stores consecutive addresses in either layout. In NHWC a
///   warp's loads for one window cell are consecutive channels (fully coalesced); in
///   NCHW they are consecutive columns `stride_w` apart, and the other window columns of
///   the same cache lines follow in the next iterations, served by L1. Index arithmetic
///   is 32-bit when every extent product fits, with divisions by multiply and shift
///   (FastDivmod32), 64-bit otherwise; LayoutRight Views are read through raw pointers.
/// - Host backends: one work item per output row (NCHW: a (n, c, p) row of Q outputs;
///   NHWC: a (n, p) row of Q pixels of C channels), accumulating a block of outputs in a
///   local array with the window loops outside, so the innermost loop runs over
///   contiguous outputs with no branch and vectorizes (NHWC: contiguous loads; NCHW: loads
///   `stride_w` apart). Per-element work has no integer division.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../arch/device_traits.hpp"
#include "../common/index_math.hpp"
#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/view_checks.hpp"
#include "../epilogue/pool_window.hpp"

namespace kcnn::Impl {

/// Device kernel: thread `idx` computes the idx-th element of y in memory order, so a
/// warp stores consecutive addresses. `I` is the index type: int when every element
/// count fits (with FastDivmod32), else int64. Row-major x and y (the common case; the
/// kernel Views are LayoutStride, so this is a run-time property) are addressed through
/// raw pointers with offsets in `I`, without the View's four 64-bit stride products per
/// access; other layouts through the View.
template <PoolMode Mode, Layout L, class I, class XView, class BView, class YView>
struct Pool2dFlatKernel {
  using T = compute_t<view_scalar_t<YView>>;  ///< 16-bit y: float, rounded at the store
  using Divmod = std::conditional_t<std::is_same_v<I, int>, FastDivmod32, Divmod64>;

  XView x;
  BView bias;
  YView y;
  Pool2dParams g;
  I C, H, W, P, Q;
  bool has_bias;
  bool raw_pointers;  ///< x and y are row-major
  Divmod by_C, by_P, by_Q;

  Pool2dFlatKernel(const XView& x_, const BView& bias_, const YView& y_, const Pool2dProblem& pb)
      : x(x_),
        bias(bias_),
        y(y_),
        g(pb.pool),
        C(static_cast<I>(pb.C)),
        H(static_cast<I>(pb.H)),
        W(static_cast<I>(pb.W)),
        P(static_cast<I>(pb.P)),
        Q(static_cast<I>(pb.Q)),
        has_bias(pb.has_bias),
        raw_pointers(is_row_major(x_) && is_row_major(y_)),
        by_C(pb.C),
        by_P(pb.P),
        by_Q(pb.Q) {}

  KOKKOS_INLINE_FUNCTION void operator()(const I idx) const {
    I n, c, p, q, rest;
    if constexpr (L == Layout::NCHW) {
      by_Q(idx, rest, q);
      by_P(rest, rest, p);
      by_C(rest, n, c);
    } else {
      by_C(idx, rest, c);
      by_Q(rest, rest, q);
      by_P(rest, n, p);
    }
    const PoolWindow<I> win = pool_window(g, H, W, p, q);
    T v;
    if (raw_pointers) {
      const auto* xp = x.data();
      if constexpr (L == Layout::NCHW) {
        const I plane = (n * C + c) * H;
        v = pool_reduce<Mode, T>(win, [&](I h, I w) { return T(xp[(plane + h) * W + w]); });
      } else {
        const I image = n * H;
        v = pool_reduce<Mode, T>(win,
                                 [&](I h, I w) { return T(xp[((image + h) * W + w) * C + c]); });
      }
    } else {
      v = pool_reduce<Mode, T>(win, [&](I h, I w) { return T(at<L>(x, n, c, h, w)); });
    }
    const T out =
        has_bias ? pool_output(g.activation, v, T(bias(c))) : pool_output(g.activation, v);
    if (raw_pointers) {
      y.data()[idx] = out;
    } else {
      at<L>(y, n, c, p, q) = out;
    }
  }
};

/// GPU kernel for the most common pooling: 2x2 windows at stride 2 without padding
/// (LeNet's subsampling) on row-major, 16-byte aligned x and y. A thread reads whole
/// 16-byte vectors and writes 4 outputs' worth of work with far less index arithmetic
/// than one output per thread (Pool2dFlatKernel, 69-70% of the copy bandwidth on the
/// H100 for LeNet's C1 output at batch 10,000; this kernel 101%):
///  - NCHW (W a multiple of 4): two neighbouring outputs from one 4-vector of each of the
///    window's two input rows;
///  - NHWC (C a multiple of 4): four channels of one output from one 4-vector per window
///    cell, stored as one 4-vector.
template <PoolMode Mode, Layout L, class T, class BView>
struct Pool2dWindow2x2Kernel {
  using Op = PoolReduce<Mode, T>;
  using Vec4 = AlignedVec4<T>;

  const T* x;
  T* y;
  BView bias;
  Activation activation;
  int C, H, W, P, Q;
  bool has_bias;
  /// NCHW: pairs per output row, P, C; NHWC: 4-vectors per pixel, Q, P.
  FastDivmod32 by_inner, by_middle, by_outer;

  /// Whether the problem and the Views' memory qualify.
  static bool applies(const Pool2dProblem& pb, const T* x_data, const T* y_data, bool row_major) {
    const Pool2dParams& g = pb.pool;
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const bool vectors = L == Layout::NCHW ? pb.W % 4 == 0 : pb.C % 4 == 0;
    return g.layout == L && row_major && vectors && g.window_h == 2 && g.window_w == 2 &&
           g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 &&
           reinterpret_cast<std::uintptr_t>(x_data) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(y_data) % 16 == 0 && pb.input_size() < int_max &&
           pb.output_size() < int_max;
  }

  /// Threads of the launch: 4 outputs' worth each (2 NCHW outputs read 8 inputs).
  static int threads(const Pool2dProblem& pb) {
    return static_cast<int>(L == Layout::NCHW ? pb.N * pb.C * pb.P * (pb.Q / 2)
                                              : pb.N * pb.P * pb.Q * (pb.C / 4));
  }

  Pool2dWindow2x2Kernel(const T* x_, T* y_, const BView& bias_, const Pool2dProblem& pb)
      : x(x_),
        y(y_),
        bias(bias_),
        activation(pb.pool.activation),
        C(static_cast<int>(pb.C)),
        H(static_cast<int>(pb.H)),
        W(static_cast<int>(pb.W)),
        P(static_cast<int>(pb.P)),
        Q(static_cast<int>(pb.Q)),
        has_bias(pb.has_bias),
        by_inner(L == Layout::NCHW ? pb.Q / 2 : pb.C / 4),
        by_middle(L == Layout::NCHW ? pb.P : pb.Q),
        by_outer(L == Layout::NCHW ? pb.C : pb.P) {}

  /// The pooled value of the window cells a, b, c, d (row-major order, as pool_reduce
  /// visits them), bias and activation applied.
  KOKKOS_FORCEINLINE_FUNCTION T pool4(T a, T b, T c, T d, int channel) const {
    T acc = Op::init();
    acc = Op::add(acc, a);
    acc = Op::add(acc, b);
    acc = Op::add(acc, c);
    acc = Op::add(acc, d);
    const T v = Op::finish(acc, 4);
    return has_bias ? pool_output(activation, v, T(bias(channel))) : pool_output(activation, v);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const int idx) const {
    int rest, inner, middle, outer, n;
    by_inner(idx, rest, inner);
    by_middle(rest, rest, middle);
    by_outer(rest, n, outer);
    if constexpr (L == Layout::NCHW) {
      const int pair = inner, p = middle, c = outer;
      const T* row0 = x + ((n * C + c) * H + 2 * p) * W + 4 * pair;
      const Vec4 r0 = *reinterpret_cast<const Vec4*>(row0);
      const Vec4 r1 = *reinterpret_cast<const Vec4*>(row0 + W);
      T* dst = y + ((n * C + c) * P + p) * Q + 2 * pair;
      for (int k = 0; k < 2; ++k)
        dst[k] = pool4(r0.v[2 * k], r0.v[2 * k + 1], r1.v[2 * k], r1.v[2 * k + 1], c);
    } else {
      const int c0 = 4 * inner, q = middle, p = outer;
      const T* cell = x + ((n * H + 2 * p) * W + 2 * q) * C + c0;
      const Vec4 v00 = *reinterpret_cast<const Vec4*>(cell);
      const Vec4 v01 = *reinterpret_cast<const Vec4*>(cell + C);
      const Vec4 v10 = *reinterpret_cast<const Vec4*>(cell + W * C);
      const Vec4 v11 = *reinterpret_cast<const Vec4*>(cell + W * C + C);
      Vec4 out;
      for (int e = 0; e < 4; ++e)
        out.v[e] = pool4(v00.v[e], v01.v[e], v10.v[e], v11.v[e], c0 + e);
      *reinterpret_cast<Vec4*>(y + ((n * P + p) * Q + q) * C + c0) = out;
    }
  }
};

/// Outputs accumulated per block on the host: 128 accumulators (0.5 KiB in float) are
/// enough for long vectorized inner loops and stay in L1 next to the input rows.
inline constexpr std::int64_t kPoolHostBlock = 128;

/// The output columns [begin, end) whose windows lie inside the input's columns (no
/// column padding): the same for every output row.
inline void pool_inner_columns(const Pool2dParams& g, std::int64_t W, std::int64_t Q,
                               std::int64_t& begin, std::int64_t& end) {
  // First q with q*stride - pad >= 0; last q with q*stride - pad + window <= W.
  begin = std::min<std::int64_t>((std::int64_t{g.pad_w} + g.stride_w - 1) / g.stride_w, Q);
  const std::int64_t room = W + g.pad_w - g.window_w;
  end = room < 0 ? begin : std::clamp<std::int64_t>(room / g.stride_w + 1, begin, Q);
}

/// Host kernel, NCHW: work item = one output row (n, c, p). Outputs whose window columns
/// are all real ("inner" columns [q_inner_begin, q_inner_end), the same for every row)
/// are accumulated in blocks with the window loops outside and the output loop inside
/// (no branch, vectorized; loads `stride_w` apart); the few border outputs that touch
/// the column padding go through the generic clipped reduction.
template <PoolMode Mode, class XView, class BView, class YView>
struct Pool2dHostRowKernel {
  using T = compute_t<view_scalar_t<YView>>;  ///< 16-bit y: float, rounded at the store
  using Op = PoolReduce<Mode, T>;

  XView x;
  BView bias;
  YView y;
  Pool2dParams g;
  std::int64_t C, H, W, P, Q;
  bool has_bias;
  std::int64_t q_inner_begin, q_inner_end;

  Pool2dHostRowKernel(const XView& x_, const BView& bias_, const YView& y_, const Pool2dProblem& pb)
      : x(x_),
        bias(bias_),
        y(y_),
        g(pb.pool),
        C(pb.C),
        H(pb.H),
        W(pb.W),
        P(pb.P),
        Q(pb.Q),
        has_bias(pb.has_bias) {
    pool_inner_columns(g, W, Q, q_inner_begin, q_inner_end);
  }

  void operator()(const std::int64_t row) const {
    const std::int64_t p = row % P, c = (row / P) % C, n = row / (P * C);
    const std::int64_t h0 = p * g.stride_h - g.pad_h;
    const std::int64_t h_begin = clip_begin(h0), h_end = clip_end(h0, g.window_h, H);
    const T b = has_bias ? T(bias(c)) : T(0);

    auto border = [&](std::int64_t q) {
      const PoolWindow<std::int64_t> win = pool_window(g, H, W, p, q);
      const T v = pool_reduce<Mode, T>(
          win, [&](std::int64_t h, std::int64_t w) { return T(x(n, c, h, w)); });
      y(n, c, p, q) = pool_output(g.activation, v, b);
    };
    for (std::int64_t q = 0; q < q_inner_begin; ++q)
      border(q);

    const std::int64_t sw = g.stride_w, pw = g.pad_w;
    const int divisor = pool_divisor(g, h_end - h_begin, g.window_w);
    T acc[kPoolHostBlock];
    for (std::int64_t q0 = q_inner_begin; q0 < q_inner_end; q0 += kPoolHostBlock) {
      const std::int64_t qn = std::min(kPoolHostBlock, q_inner_end - q0);
      for (std::int64_t i = 0; i < qn; ++i)
        acc[i] = Op::init();
      for (std::int64_t h = h_begin; h < h_end; ++h)
        for (std::int64_t s = 0; s < g.window_w; ++s)
          for (std::int64_t i = 0; i < qn; ++i)
            acc[i] = Op::add(acc[i], T(x(n, c, h, (q0 + i) * sw - pw + s)));
      with_activation(g.activation, [&](auto act) {
        for (std::int64_t i = 0; i < qn; ++i)
          y(n, c, p, q0 + i) = pool_output(act.value, Op::finish(acc[i], divisor), b);
      });
    }

    for (std::int64_t q = q_inner_end; q < Q; ++q)
      border(q);
  }
};

/// Host kernel, NHWC: work item = one output row (n, p) of Q pixels. With few channels
/// (C <= kPoolHostBlock, LeNet's 4 and 16) the inner pixels of the row (no column
/// padding, see pool_inner_columns) go in blocks of whole pixels x all channels, the
/// window loops outside and one flat (pixel, channel) loop inside, so that no loop is
/// C iterations short; border pixels and many channels take one pixel at a time,
/// channels innermost (contiguous).
template <PoolMode Mode, class XView, class BView, class YView>
struct Pool2dHostPixelKernel {
  using T = compute_t<view_scalar_t<YView>>;  ///< 16-bit y: float, rounded at the store
  using Op = PoolReduce<Mode, T>;

  XView x;
  BView bias;
  YView y;
  Pool2dParams g;
  std::int64_t C, H, W, P, Q;
  bool has_bias;
  std::int64_t q_inner_begin, q_inner_end;

  Pool2dHostPixelKernel(const XView& x_, const BView& bias_, const YView& y_,
                        const Pool2dProblem& pb)
      : x(x_),
        bias(bias_),
        y(y_),
        g(pb.pool),
        C(pb.C),
        H(pb.H),
        W(pb.W),
        P(pb.P),
        Q(pb.Q),
        has_bias(pb.has_bias) {
    pool_inner_columns(g, W, Q, q_inner_begin, q_inner_end);
    if (C > kPoolHostBlock) q_inner_end = q_inner_begin;  // every pixel on its own
  }

  void operator()(const std::int64_t row) const {
    const std::int64_t p = row % P, n = row / P;
    T acc[kPoolHostBlock];
    auto pixel = [&](std::int64_t q) {
      const PoolWindow<std::int64_t> win = pool_window(g, H, W, p, q);
      for (std::int64_t c0 = 0; c0 < C; c0 += kPoolHostBlock) {
        const std::int64_t cn = std::min(kPoolHostBlock, C - c0);
        for (std::int64_t i = 0; i < cn; ++i)
          acc[i] = Op::init();
        for (std::int64_t h = win.h_begin; h < win.h_end; ++h)
          for (std::int64_t w = win.w_begin; w < win.w_end; ++w)
            for (std::int64_t i = 0; i < cn; ++i)
              acc[i] = Op::add(acc[i], T(x(n, h, w, c0 + i)));
        with_activation(g.activation, [&](auto act) {
          for (std::int64_t i = 0; i < cn; ++i)
            y(n, p, q, c0 + i) = pool_output(act.value, Op::finish(acc[i], win.divisor),
                                             has_bias ? T(bias(c0 + i)) : T(0));
        });
      }
    };
    for (std::int64_t q = 0; q < q_inner_begin; ++q)
      pixel(q);

    const std::int64_t h0 = p * g.stride_h - g.pad_h;
    const std::int64_t h_begin = clip_begin(h0), h_end = clip_end(h0, g.window_h, H);
    const int divisor = pool_divisor(g, h_end - h_begin, g.window_w);
    const std::int64_t pixels = C > 0 ? kPoolHostBlock / C : 1;
    const std::int64_t x_step = static_cast<std::int64_t>(x.stride(2)) * g.stride_w;
    const std::int64_t x_c = static_cast<std::int64_t>(x.stride(3));
    for (std::int64_t q0 = q_inner_begin; q0 < q_inner_end; q0 += pixels) {
      const std::int64_t qn = std::min(pixels, q_inner_end - q0), count = qn * C;
      for (std::int64_t i = 0; i < count; ++i)
        acc[i] = Op::init();
      for (std::int64_t h = h_begin; h < h_end; ++h)
        for (std::int64_t s = 0; s < g.window_w; ++s) {
          const auto* in = &x(n, h, q0 * g.stride_w - g.pad_w + s, 0);
          for (std::int64_t j = 0; j < qn; ++j)
            for (std::int64_t c = 0; c < C; ++c)
              acc[j * C + c] = Op::add(acc[j * C + c], T(in[j * x_step + c * x_c]));
        }
      with_activation(g.activation, [&](auto act) {
        for (std::int64_t j = 0; j < qn; ++j)
          for (std::int64_t c = 0; c < C; ++c)
            y(n, p, q0 + j, c) = pool_output(act.value, Op::finish(acc[j * C + c], divisor),
                                             has_bias ? T(bias(c)) : T(0));
      });
    }

    for (std::int64_t q = q_inner_end; q < Q; ++q)
      pixel(q);
  }
};

/// The pooling kernels: the flat one with 32- or 64-bit indices (device backends), or
/// the host row kernels. Tests run the flat kernels on the host too.
enum class Pool2dKernel { Flat32, Flat64, HostRows, Window2x2 };

/// The kernel pool2d uses on `ExecSpace` for this problem.
template <class ExecSpace>
Pool2dKernel default_pool2d_kernel(const Pool2dProblem& pb) {
  if constexpr (runs_on_host_v<ExecSpace>) {
    return Pool2dKernel::HostRows;
  } else {
    // 32-bit indices when no element count (and no index derived from one) can
    // overflow; FastDivmod32 needs divisors <= 2^31, which these extents then are.
    // A window's coordinates reach H + pad_h (and W + pad_w): they must fit too.
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const bool fits = pb.input_size() < int_max && pb.output_size() < int_max &&
                      pb.H + pb.pool.pad_h < int_max && pb.W + pb.pool.pad_w < int_max;
    return fits ? Pool2dKernel::Flat32 : Pool2dKernel::Flat64;
  }
}

/// The kernel pool2d uses for these Views on GPUs: the 2x2 window kernel where it applies,
/// else default_pool2d_kernel's choice.
template <class ExecSpace, class XView, class YView>
Pool2dKernel default_pool2d_kernel(const Pool2dProblem& pb, const XView& x, const YView& y) {
  using T = view_scalar_t<YView>;
  // (the 2x2 window kernel moves x and y as 4-vectors of one type, float or double)
  if constexpr (!runs_on_host_v<ExecSpace> && std::is_same_v<view_scalar_t<XView>, T> &&
                !is_16bit_storage_v<T>) {
    const bool row_major = is_row_major(x) && is_row_major(y);
    const bool window2x2 =
        pb.pool.layout == Layout::NCHW
            ? Pool2dWindow2x2Kernel<PoolMode::Max, Layout::NCHW, T, int>::applies(
                  pb, x.data(), y.data(), row_major)
            : Pool2dWindow2x2Kernel<PoolMode::Max, Layout::NHWC, T, int>::applies(
                  pb, x.data(), y.data(), row_major);
    if (window2x2) return Pool2dKernel::Window2x2;
  }
  return default_pool2d_kernel<ExecSpace>(pb);
}

template <PoolMode Mode, Layout L, class ExecSpace, class XView, class BView, class YView>
void pool2d_launch_layout(const ExecSpace& space, const XView& x, const BView& bias, const YView& y,
                          const Pool2dProblem& pb, Pool2dKernel kernel) {
  constexpr const char* label = "kcnn::pool2d::forward";
  auto flat = [&](auto index) {
    using I = decltype(index);
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;
    Kokkos::parallel_for(label, Policy(space, 0, static_cast<I>(pb.output_size())),
                         Pool2dFlatKernel<Mode, L, I, XView, BView, YView>(x, bias, y, pb));
  };
  constexpr bool window2x2_compiles = std::is_same_v<view_scalar_t<XView>, view_scalar_t<YView>> &&
                                      !is_16bit_storage_v<view_scalar_t<YView>>;
  if constexpr (!window2x2_compiles) {
    throw_if(kernel == Pool2dKernel::Window2x2, label,
             "internal: the 2x2 window kernel takes x and y of one 32- or 64-bit type");
  } else {
    if (kernel == Pool2dKernel::Window2x2) {
      using Kernel = Pool2dWindow2x2Kernel<Mode, L, view_scalar_t<YView>, BView>;
      throw_if(!Kernel::applies(pb, x.data(), y.data(), is_row_major(x) && is_row_major(y)), label,
               "internal: the 2x2 window kernel does not apply to this problem");
      Kokkos::parallel_for(
          label,
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>(space, 0, Kernel::threads(pb)),
          Kernel(x.data(), y.data(), bias, pb));
      return;
    }
  }
  if (kernel == Pool2dKernel::Flat32) {
    flat(int{});
  } else if (kernel == Pool2dKernel::Flat64) {
    flat(std::int64_t{});
  } else if constexpr (runs_on_host_v<ExecSpace>) {
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    if constexpr (L == Layout::NCHW) {
      Kokkos::parallel_for(label, Policy(space, 0, pb.N * pb.C * pb.P),
                           Pool2dHostRowKernel<Mode, XView, BView, YView>(x, bias, y, pb));
    } else {
      Kokkos::parallel_for(label, Policy(space, 0, pb.N * pb.P),
                           Pool2dHostPixelKernel<Mode, XView, BView, YView>(x, bias, y, pb));
    }
  } else {
    throw_if(true, "kcnn::pool2d_forward", "internal: host kernels on a device backend");
  }
}

/// Runs pool2d on validated arguments (`pb` from make_pool2d_problem, or
/// Conv2dProblem::pooling() for the second pass of a two-pass fused convolution).
template <class ExecSpace, class XView, class BView, class YView>
void pool2d_launch(const ExecSpace& space, const XView& x, const BView& bias, const YView& y,
                   const Pool2dProblem& pb, Pool2dKernel kernel) {
  with_pool_mode(pb.pool.mode, [&](auto mode) {
    constexpr PoolMode M = decltype(mode)::value;
    if (pb.pool.layout == Layout::NCHW) {
      pool2d_launch_layout<M, Layout::NCHW>(space, x, bias, y, pb, kernel);
    } else {
      pool2d_launch_layout<M, Layout::NHWC>(space, x, bias, y, pb, kernel);
    }
  });
}

template <class ExecSpace, class XView, class BView, class YView>
void pool2d_launch(const ExecSpace& space, const XView& x, const BView& bias, const YView& y,
                   const Pool2dProblem& pb) {
  pool2d_launch(space, x, bias, y, pb, default_pool2d_kernel<ExecSpace>(pb, x, y));
}

}  // namespace kcnn::Impl
