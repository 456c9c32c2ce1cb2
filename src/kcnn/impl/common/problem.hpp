// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/problem.hpp
/// \brief Conv2dProblem: the one place where a convolution's extents are read from its
///        Views, checked, and turned into derived sizes. Every algorithm takes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "../../types.hpp"
#include "element_traits.hpp"
#include "view_checks.hpp"
#include "workspace_cache.hpp"

namespace kcnn::Impl {

/// What an algorithm's launch does: Run plans and enqueues its kernels; Check plans
/// only, making every test of its limits (the same code, so the two cannot disagree)
/// and throwing the same kcnn::Error, but allocating and enqueuing nothing. An
/// algorithm's can_implement is its launch in Check mode.
enum class LaunchMode { Run, Check };

/// Output extent of a (possibly dilated, strided, padded) window sliding over `in`, for
/// validated arguments (in >= 0, kernel >= 1, stride, dilation >= 1, pad >= 0). Returns 0
/// when the window does not fit even once. Nothing wraps for any such arguments: the
/// padded extent is formed in 64 unsigned bits (< 2^63 + 2^32), the window's span is
/// compared with it before it is formed, and a result past 2^63 - 1 saturates there
/// (the size checks then refuse the problem).
KOKKOS_INLINE_FUNCTION constexpr std::int64_t conv_output_extent(std::int64_t in,
                                                                 std::int64_t kernel, int stride,
                                                                 int pad, int dilation) {
  const std::uint64_t padded = static_cast<std::uint64_t>(in) + 2 * static_cast<std::uint64_t>(pad);
  const auto reach = static_cast<std::uint64_t>(kernel - 1);  // span = dilation * reach + 1
  if (padded == 0 || reach > (padded - 1) / static_cast<std::uint64_t>(dilation)) return 0;
  const std::uint64_t span = static_cast<std::uint64_t>(dilation) * reach + 1;
  const std::uint64_t extent = (padded - span) / static_cast<std::uint64_t>(stride) + 1;
  constexpr auto max = static_cast<std::uint64_t>(INT64_MAX);
  return static_cast<std::int64_t>(extent > max ? max : extent);
}

/// in + 2 * pad for limit checks, saturating at 2^63 - 1 instead of wrapping.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t padded_extent(std::int64_t in, int pad) {
  const std::uint64_t padded = static_cast<std::uint64_t>(in) + 2 * static_cast<std::uint64_t>(pad);
  constexpr auto max = static_cast<std::uint64_t>(INT64_MAX);
  return static_cast<std::int64_t>(padded > max ? max : padded);
}

/// Output extent of a pooling window sliding over `in` (floor mode): a convolution
/// extent without dilation. Returns a value < 1 when the window does not fit even once.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t pool_output_extent(std::int64_t in, int window,
                                                                 int stride, int pad) {
  return conv_output_extent(in, window, stride, pad, 1);
}

/// Every extent of a 2-D pooling, in 64-bit integers. The layout is `pool.layout`.
struct Pool2dProblem {
  std::int64_t N = 0, C = 0, H = 0, W = 0;  ///< input: batch, channels, height, width
  std::int64_t P = 0, Q = 0;                ///< output height, width
  Pool2dParams pool;                        ///< validated window, mode, layout, activation
  bool has_bias = false;                    ///< act(pool(x) + bias[c])

  KOKKOS_INLINE_FUNCTION std::int64_t output_size() const { return N * C * P * Q; }
  KOKKOS_INLINE_FUNCTION std::int64_t input_size() const { return N * C * H * W; }
  bool empty() const { return output_size() == 0; }
};

/// Every extent of a 2-D convolution, in 64-bit integers so that products such as
/// N*M*P*Q or C*R*S*N*P*Q never overflow.
struct Conv2dProblem {
  std::int64_t N = 0, C = 0, H = 0, W = 0;  ///< input: batch, channels, height, width
  std::int64_t M = 0, R = 0, S = 0;         ///< filters: count, height, width
  std::int64_t P = 0, Q = 0;                ///< convolution output height, width (unpooled)
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  /// Conv2dParams::groups (validated: divides C and M). C and M count every group's
  /// channels and filters; w's channel extent is C / groups.
  std::int64_t groups = 1;
  Layout layout = Layout::NCHW;
  Activation activation = Activation::Identity;
  bool has_bias = false;
  /// Conv2dParams::math, validated for the element type (math_mode_accepts).
  MathMode math = MathMode::Strict;
  /// Fused pooling (Conv2dParams::pool). When set, y is the pooled tensor, NCHW
  /// (N, M, P_pooled, Q_pooled) or NHWC (N, P_pooled, Q_pooled, M), holding
  /// pool.activation(pool(activation(conv + bias))); P and Q stay the convolution's
  /// extents, the input extents of the pooling.
  bool has_pool = false;
  Pool2dParams pool;                        ///< validated; pool.layout == layout
  std::int64_t P_pooled = 0, Q_pooled = 0;  ///< y's height, width when has_pool
  /// Scratch budget of algorithms that need scratch (Im2colGemm's unrolled matrix,
  /// TensorCoreGemm's packed float weights, the packed weights of Tiled's register-blocked
  /// host kernel): the call's
  /// Conv2dParams::workspace_limit_bytes, or the process-wide kcnn::workspace_limit().
  std::size_t workspace_limit_bytes = kDefaultWorkspaceLimit;

  /// Elements of the convolution output (before any pooling).
  KOKKOS_INLINE_FUNCTION std::int64_t output_size() const { return N * M * P * Q; }
  /// Elements of y: the pooled extents when has_pool.
  KOKKOS_INLINE_FUNCTION std::int64_t y_size() const {
    return has_pool ? N * M * P_pooled * Q_pooled : output_size();
  }
  KOKKOS_INLINE_FUNCTION std::int64_t input_size() const { return N * C * H * W; }
  /// Input channels a filter reads (C / groups).
  KOKKOS_INLINE_FUNCTION std::int64_t group_channels() const { return C / groups; }
  /// Filters of a group (M / groups).
  KOKKOS_INLINE_FUNCTION std::int64_t group_filters() const { return M / groups; }
  /// One input channel per group (groups = C), M a multiple of C (channel multiplier
  /// M / C): a depthwise layer (ConvAlgo::Depthwise's; with C = 1 an ungrouped one).
  bool depthwise() const { return groups == C && C > 0 && M % C == 0; }
  KOKKOS_INLINE_FUNCTION std::int64_t weight_size() const { return M * group_channels() * R * S; }
  /// Multiply-adds times two, the usual convolution FLOP count.
  KOKKOS_INLINE_FUNCTION double flops() const {
    return 2.0 * static_cast<double>(output_size()) * static_cast<double>(group_channels() * R * S);
  }
  bool empty() const { return output_size() == 0; }

  /// One group of a grouped convolution as a convolution of its own: C / groups
  /// channels, M / groups filters (the tensors are the group's channel slices, see
  /// conv2d/groups.hpp). The problem itself when groups is 1.
  Conv2dProblem group_slice() const {
    Conv2dProblem pb = *this;
    pb.C = group_channels();
    pb.M = group_filters();
    pb.groups = 1;
    return pb;
  }

  /// The same convolution without the pooling: what an algorithm without a fused
  /// pooling kernel computes into a temporary.
  Conv2dProblem unpooled() const {
    Conv2dProblem pb = *this;
    pb.has_pool = false;
    pb.P_pooled = pb.Q_pooled = 0;
    return pb;
  }
  /// The pooling applied to the convolution output (N, M, P, Q): no bias of its own.
  Pool2dProblem pooling() const {
    Pool2dProblem pp;
    pp.N = N, pp.C = M, pp.H = P, pp.W = Q;
    pp.P = P_pooled, pp.Q = Q_pooled;
    pp.pool = pool;
    pp.has_bias = false;
    return pp;
  }
};

/// Reads (N, C, H, W) of an activation tensor in the given layout.
template <class View>
void activation_extents(const View& v, Layout layout, std::int64_t& n, std::int64_t& c,
                        std::int64_t& h, std::int64_t& w) {
  n = static_cast<std::int64_t>(v.extent(0));
  if (layout == Layout::NCHW) {
    c = v.extent(1), h = v.extent(2), w = v.extent(3);
  } else {
    h = v.extent(1), w = v.extent(2), c = v.extent(3);
  }
}

/// Stride of a sliding window; `what` prefixes the messages ("" for the convolution,
/// "pool: " for a fused pooling).
inline void check_stride(const char* op, const char* what, int stride_h, int stride_w) {
  throw_if(stride_h < 1 || stride_w < 1, op, what, "stride must be >= 1, got stride_h=", stride_h,
           " stride_w=", stride_w);
}

inline void check_padding(const char* op, const char* what, int pad_h, int pad_w) {
  throw_if(pad_h < 0 || pad_w < 0, op, what, "padding must be >= 0, got pad_h=", pad_h,
           " pad_w=", pad_w);
}

/// Enum values outside the declared ones (a cast integer) are rejected.
inline void check_layout_activation(const char* op, const char* what, Layout layout,
                                    Activation activation) {
  throw_if(layout != Layout::NCHW && layout != Layout::NHWC, op, what, "unknown layout value ",
           static_cast<int>(layout));
  throw_if(activation != Activation::Identity && activation != Activation::ReLU &&
               activation != Activation::Sigmoid && activation != Activation::Tanh,
           op, what, "unknown activation value ", static_cast<int>(activation));
}

/// Validates the parameters that do not depend on tensors (shared with im2col and
/// pooling, which slide windows the same way).
inline void check_window_params(const char* op, const Conv2dParams& p) {
  check_stride(op, "", p.stride_h, p.stride_w);
  throw_if(p.dilation_h < 1 || p.dilation_w < 1, op,
           "dilation must be >= 1, got dilation_h=", p.dilation_h, " dilation_w=", p.dilation_w);
  check_padding(op, "", p.pad_h, p.pad_w);
  check_layout_activation(op, "", p.layout, p.activation);
}

/// Validates a pooling's parameters (pool2d_forward, and conv2d_forward's fused pool
/// with `what` = "pool: "). pad < window guarantees that every window holds at least one
/// real input cell, so Max is always defined and the Average divisor never zero.
inline void check_pool_params(const char* op, const char* what, const Pool2dParams& p) {
  throw_if(p.mode != PoolMode::Max && p.mode != PoolMode::Average, op, what,
           "unknown PoolMode value ", static_cast<int>(p.mode));
  throw_if(p.window_h < 1 || p.window_w < 1, op, what,
           "window must be >= 1, got window_h=", p.window_h, " window_w=", p.window_w);
  check_stride(op, what, p.stride_h, p.stride_w);
  check_padding(op, what, p.pad_h, p.pad_w);
  throw_if(std::int64_t{p.window_h} * p.window_w > std::numeric_limits<int>::max(), op, what,
           "the window's area window_h*window_w must be below 2^31, got ", p.window_h, "x",
           p.window_w);
  throw_if(p.pad_h >= p.window_h || p.pad_w >= p.window_w, op, what,
           "padding must be smaller than the window, got pad_h=", p.pad_h, " pad_w=", p.pad_w,
           " for a ", p.window_h, "x", p.window_w, " window");
  check_layout_activation(op, what, p.layout, p.activation);
}

/// Throws unless y has the (N, channels, P, Q) extents in `layout`'s order. `note`
/// ends the message (e.g. how pooled extents came about); `y_name` names the tensor
/// (the backward operations check "dy" and "dx" with it).
template <class YView, class Note = const char*>
void check_output_extents(const char* op, const YView& y, Layout layout, const char* channel_name,
                          std::int64_t N, std::int64_t C, std::int64_t P, std::int64_t Q,
                          const Note& note = "", const char* y_name = "y") {
  std::int64_t yn = 0, yc = 0, yp = 0, yq = 0;
  activation_extents(y, layout, yn, yc, yp, yq);
  throw_if(yn != N || yc != C || yp != P || yq != Q, op, "wrong ", y_name, " extents ",
           extents_text(y), ": expected ", to_string(layout), " (N, ", channel_name, ", P, Q) = (",
           N, ", ", C, ", ", P, ", ", Q, ")", lazy_text([&](std::ostream& out) {
             if (layout == Layout::NHWC) out << " in the order (N, P, Q, " << channel_name << ")";
           }),
           note);
}

/// The geometry of a pooling of x (forward input) with output extents checked on `y`
/// (named `y_name`): parameters, extents and the contiguity of x and y. No bias, no
/// aliasing checks (the callers' outputs differ). Shared by pool2d_forward and
/// pool2d_backward.
template <class XView, class YView>
Pool2dProblem make_pool2d_geometry(const char* op, const XView& x, const YView& y,
                                   const Pool2dParams& p, const char* y_name) {
  check_pool_params(op, "", p);
  check_extents_fit(op, "x", x);
  check_extents_fit(op, y_name, y);

  Pool2dProblem pb;
  pb.pool = p;
  activation_extents(x, p.layout, pb.N, pb.C, pb.H, pb.W);
  // With H or W = 0 every window would lie in the padding: no Max, a zero divisor.
  throw_if(pb.H < 1 || pb.W < 1, op, "x has no rows or no columns (", to_string(p.layout),
           " extents ", extents_text(x), "): every pooling window needs a real input cell");
  pb.P = pool_output_extent(pb.H, p.window_h, p.stride_h, p.pad_h);
  pb.Q = pool_output_extent(pb.W, p.window_w, p.stride_w, p.pad_w);
  throw_if(pb.P < 1 || pb.Q < 1, op, "empty output: the ", p.window_h, "x", p.window_w,
           " window is larger than the padded ", pb.H, "x", pb.W, " input (padding ", p.pad_h, "x",
           p.pad_w, ")");
  check_output_extents(op, y, p.layout, "C", pb.N, pb.C, pb.P, pb.Q, "", y_name);
  check_contiguous(op, "x", x);
  check_contiguous(op, y_name, y);
  return pb;
}

/// Reads and validates a pooling's arguments; throws kcnn::Error naming the offending
/// values, and returns the problem with every derived extent. C = 0 or N = 0 is a valid
/// empty problem.
template <class XView, class BView, class YView>
Pool2dProblem make_pool2d_problem(const char* op, const XView& x, const BView& bias, const YView& y,
                                  const Pool2dParams& p) {
  check_extents_fit(op, "bias", bias);
  Pool2dProblem pb = make_pool2d_geometry(op, x, y, p, "y");

  const auto bias_extent = static_cast<std::int64_t>(bias.extent(0));
  throw_if(bias_extent != 0 && bias_extent != pb.C, op, "bias has extent ", bias_extent,
           "; expected 0 (no bias) or C=", pb.C);
  pb.has_bias = bias_extent != 0;

  check_no_overlap(op, "y", y, "x", x);
  check_no_overlap(op, "y", y, "bias", bias);
  return pb;
}

/// Throws when a size kcnn derives from the problem would not fit std::int64_t: the
/// convolution output N*M*P*Q and the unrolled matrix N*P*Q x C*R*S (zeros skipped, see
/// nonzero_product_fits). Padding and stride can make P*Q far larger than x.
inline void check_problem_size(const char* op, const Conv2dProblem& pb) {
  throw_if(!nonzero_product_fits({pb.N, pb.M, pb.P, pb.Q}) ||
               !nonzero_product_fits({pb.N, pb.P, pb.Q, pb.C, pb.R, pb.S}),
           op, "the problem is too large: with N=", pb.N, " C=", pb.C, " M=", pb.M, ", a ", pb.R,
           "x", pb.S, " filter and a ", pb.P, "x", pb.Q,
           " output, N*M*P*Q or N*P*Q*C*R*S is 2^63 or more");
}

/// Copies the window parameters into `pb` (whose N, C, H, W, R, S are set) and derives
/// the output extents P, Q; throws when the filter is empty or does not fit. Shared by
/// every operation that slides a window (conv2d_forward, im2col, col2im).
inline void derive_window_geometry(const char* op, Conv2dProblem& pb, const Conv2dParams& p) {
  pb.stride_h = p.stride_h, pb.stride_w = p.stride_w;
  pb.pad_h = p.pad_h, pb.pad_w = p.pad_w;
  pb.dilation_h = p.dilation_h, pb.dilation_w = p.dilation_w;
  pb.layout = p.layout;
  pb.activation = p.activation;

  throw_if(pb.R < 1 || pb.S < 1, op, "filter extents must be >= 1, got R=", pb.R, " S=", pb.S);
  pb.P = conv_output_extent(pb.H, pb.R, p.stride_h, p.pad_h, p.dilation_h);
  pb.Q = conv_output_extent(pb.W, pb.S, p.stride_w, p.pad_w, p.dilation_w);
  throw_if(pb.P < 1 || pb.Q < 1, op, "empty output: the ", pb.R, "x", pb.S, " filter (dilation ",
           p.dilation_h, "x", p.dilation_w, ") is larger than the padded ", pb.H, "x", pb.W,
           " input (padding ", p.pad_h, "x", p.pad_w, ")");
}

/// What a convolution's tensors are called in messages: conv2d_forward's x, w, bias,
/// y, or the backward operations' dx, dw, dbias, dy.
struct ConvTensorNames {
  const char* x = "x";
  const char* w = "w";
  const char* bias = "bias";
  const char* y = "y";
};

/// Conv2dParams::groups against C (x's channels) and M (w's filters).
inline void check_groups(const char* op, int groups, std::int64_t C, std::int64_t M,
                         const ConvTensorNames& names = {}) {
  throw_if(groups < 1, op, "params.groups must be >= 1, got ", groups);
  throw_if(C % groups != 0, op, "params.groups=", groups, " does not divide the ", C,
           " input channels of ", names.x);
  throw_if(M % groups != 0, op, "params.groups=", groups, " does not divide the ", M,
           " filters of ", names.w);
}

/// The geometry of unrolling x with a kernel_h x kernel_w window (im2col, col2im):
/// N, C, H, W from x, R, S from the kernel, P, Q derived; M = 0, no bias. Validates the
/// parameters, the extents and x's contiguity.
template <class XView>
Conv2dProblem make_unroll_problem(const char* op, const XView& x, std::int64_t kernel_h,
                                  std::int64_t kernel_w, const Conv2dParams& p) {
  check_window_params(op, p);
  check_extents_fit(op, "x", x);
  Conv2dProblem pb;
  activation_extents(x, p.layout, pb.N, pb.C, pb.H, pb.W);
  throw_if(pb.C < 1, op, "x has no input channels (", to_string(p.layout), " extents ",
           extents_text(x), ")");
  // The unrolled matrix does not depend on the groups (group g's GEMM reads the rows of
  // its channels); they are checked against C all the same.
  check_groups(op, p.groups, pb.C, 0);
  pb.R = kernel_h, pb.S = kernel_w;
  derive_window_geometry(op, pb, p);
  check_problem_size(op, pb);
  check_contiguous(op, "x", x);
  return pb;
}

/// The one validation of a convolution's geometry, shared by conv2d_forward and the
/// backward operations: parameters (and the fused pool's), the extents of the
/// x-shaped, w-shaped and y-shaped tensors and of the bias (`bias_extent`: 0 or M),
/// and their contiguity. Aliasing is checked by the callers (their outputs differ).
template <class XView, class WView, class YView>
Conv2dProblem make_conv2d_geometry(const char* op, const XView& x, const WView& w,
                                   std::int64_t bias_extent, const YView& y, const Conv2dParams& p,
                                   const ConvTensorNames& names = {}) {
  check_window_params(op, p);
  if (p.pool) {
    check_pool_params(op, "pool: ", *p.pool);
    throw_if(p.pool->layout != p.layout, op, "pool layout ", to_string(p.pool->layout),
             " differs from the convolution's layout ", to_string(p.layout),
             "; they must be equal");
  }

  using T = view_scalar_t<YView>;
  throw_if(p.math != MathMode::Strict && p.math != MathMode::TF32 && p.math != MathMode::TF32x3, op,
           "params.math has the invalid value ", static_cast<int>(p.math));
  throw_if(!math_mode_accepts(ElementTraits<T>::kind, p.math), op, "params.math is ",
           to_string(p.math), ", which rounds float factors; ", ElementTraits<T>::name,
           " tensors take MathMode::Strict");

  check_extents_fit(op, names.x, x);
  check_extents_fit(op, names.w, w);
  check_extents_fit(op, names.y, y);

  Conv2dProblem pb;
  pb.math = p.math;
  const char* lname = to_string(p.layout);
  activation_extents(x, p.layout, pb.N, pb.C, pb.H, pb.W);
  std::int64_t wc = 0;
  activation_extents(w, p.layout, pb.M, wc, pb.R, pb.S);  // (M, C, R, S) in the same order

  throw_if(pb.C < 1, op, names.x, " has no input channels (", lname, " extents ", extents_text(x),
           ")");
  check_groups(op, p.groups, pb.C, pb.M, names);
  pb.groups = p.groups;
  if (p.groups == 1) {
    throw_if(wc != pb.C, op, "channel mismatch: ", names.x, " has C=", pb.C, " (", lname,
             " extents ", extents_text(x), ") but ", names.w, " has C=", wc, " (extents ",
             extents_text(w), ")");
  } else {
    throw_if(wc != pb.C / p.groups, op, "channel mismatch: ", names.x, " has C=", pb.C, " (", lname,
             " extents ", extents_text(x), ") in ", p.groups, " groups of ", pb.C / p.groups,
             " channels, but ", names.w, " has ", wc, " channels (extents ", extents_text(w),
             "); a grouped filter reads its group's C / groups channels");
  }
  derive_window_geometry(op, pb, p);
  check_problem_size(op, pb);

  if (p.pool) {
    const Pool2dParams& pool = *p.pool;
    pb.has_pool = true;
    pb.pool = pool;
    pb.P_pooled = pool_output_extent(pb.P, pool.window_h, pool.stride_h, pool.pad_h);
    pb.Q_pooled = pool_output_extent(pb.Q, pool.window_w, pool.stride_w, pool.pad_w);
    throw_if(pb.P_pooled < 1 || pb.Q_pooled < 1, op, "empty output: the ", pool.window_h, "x",
             pool.window_w, " pool window is larger than the padded ", pb.P, "x", pb.Q,
             " convolution output (pool padding ", pool.pad_h, "x", pool.pad_w, ")");
    check_output_extents(op, y, p.layout, "M", pb.N, pb.M, pb.P_pooled, pb.Q_pooled,
                         lazy_text([&](std::ostream& out) {
                           out << ", the pooled extents of the " << pb.P << "x" << pb.Q
                               << " convolution output (" << pool.window_h << "x" << pool.window_w
                               << " window, stride " << pool.stride_h << "x" << pool.stride_w
                               << ", padding " << pool.pad_h << "x" << pool.pad_w << ")";
                         }),
                         names.y);
  } else {
    check_output_extents(op, y, p.layout, "M", pb.N, pb.M, pb.P, pb.Q, "", names.y);
  }

  throw_if(bias_extent != 0 && bias_extent != pb.M, op, names.bias, " has extent ", bias_extent,
           "; expected 0 (no bias) or M=", pb.M);
  pb.has_bias = bias_extent != 0;
  pb.workspace_limit_bytes =
      p.workspace_limit_bytes != 0 ? p.workspace_limit_bytes : workspace_limit_value().load();

  check_contiguous(op, names.x, x);
  check_contiguous(op, names.w, w);
  check_contiguous(op, names.y, y);
  return pb;
}

/// Reads and validates a convolution's arguments; throws kcnn::Error naming the
/// offending values, and returns the problem with every derived extent.
template <class XView, class WView, class BView, class YView>
Conv2dProblem make_conv2d_problem(const char* op, const XView& x, const WView& w, const BView& bias,
                                  const YView& y, const Conv2dParams& p) {
  check_extents_fit(op, "bias", bias);
  const Conv2dProblem pb =
      make_conv2d_geometry(op, x, w, static_cast<std::int64_t>(bias.extent(0)), y, p);
  check_no_overlap(op, "y", y, "x", x);
  check_no_overlap(op, "y", y, "w", w);
  check_no_overlap(op, "y", y, "bias", bias);
  return pb;
}

/// Validates a backward convolution (conv2d_backward_data / _weights): the forward
/// geometry of the x-shaped, w-shaped and y-shaped tensors (see make_conv2d_geometry),
/// for the linear convolution only: the activation (see activation_backward) and a
/// fused pooling (see pool2d_backward) have backward operations of their own.
template <class XView, class WView, class YView>
Conv2dProblem make_conv2d_backward_problem(const char* op, const XView& x, const WView& w,
                                           std::int64_t bias_extent, const YView& y,
                                           const Conv2dParams& p, const ConvTensorNames& names) {
  throw_if(p.activation != Activation::Identity, op, "params.activation is ",
           to_string(p.activation),
           "; the backward convolution is that of the linear convolution: apply "
           "kcnn::activation_backward to dy first and pass Activation::Identity");
  throw_if(p.pool.has_value(), op,
           "params.pool is set; the backward convolution is that of the unpooled convolution: "
           "apply kcnn::pool2d_backward to dy first and pass no pool");
  return make_conv2d_geometry(op, x, w, bias_extent, y, p, names);
}

}  // namespace kcnn::Impl
