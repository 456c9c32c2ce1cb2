// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/problem.hpp
/// \brief Conv2dProblem: the one place where a convolution's extents are read from its
///        Views, checked, and turned into derived sizes. Every algorithm takes it.
#pragma once

#include <cstdint>

#include "../types.hpp"
#include "view_checks.hpp"

namespace kcnn::Impl {

/// Output extent of a (possibly dilated, strided, padded) window sliding over `in`.
/// Returns a value < 1 when the window does not fit even once.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t conv_output_extent(std::int64_t in,
                                                                 std::int64_t kernel, int stride,
                                                                 int pad, int dilation) {
  const std::int64_t span = static_cast<std::int64_t>(dilation) * (kernel - 1) + 1;
  const std::int64_t room = in + 2 * static_cast<std::int64_t>(pad) - span;
  return room < 0 ? 0 : room / stride + 1;
}

/// Every extent of a 2-D convolution, in 64-bit integers so that products such as
/// N*M*P*Q or C*R*S*N*P*Q never overflow.
struct Conv2dProblem {
  std::int64_t N = 0, C = 0, H = 0, W = 0;  ///< input: batch, channels, height, width
  std::int64_t M = 0, R = 0, S = 0;         ///< filters: count, height, width
  std::int64_t P = 0, Q = 0;                ///< output height, width
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  Layout layout = Layout::NCHW;
  Activation activation = Activation::Identity;
  bool has_bias = false;

  KOKKOS_INLINE_FUNCTION std::int64_t output_size() const { return N * M * P * Q; }
  KOKKOS_INLINE_FUNCTION std::int64_t input_size() const { return N * C * H * W; }
  KOKKOS_INLINE_FUNCTION std::int64_t weight_size() const { return M * C * R * S; }
  /// Multiply-adds times two, the usual convolution FLOP count.
  KOKKOS_INLINE_FUNCTION double flops() const {
    return 2.0 * static_cast<double>(output_size()) * static_cast<double>(C * R * S);
  }
  bool empty() const { return output_size() == 0; }
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

/// Validates the parameters that do not depend on tensors (shared with im2col and
/// pooling, which slide windows the same way).
inline void check_window_params(const char* op, const Conv2dParams& p) {
  throw_if(p.stride_h < 1 || p.stride_w < 1, op, "stride must be >= 1, got stride_h=", p.stride_h,
           " stride_w=", p.stride_w);
  throw_if(p.dilation_h < 1 || p.dilation_w < 1, op,
           "dilation must be >= 1, got dilation_h=", p.dilation_h, " dilation_w=", p.dilation_w);
  throw_if(p.pad_h < 0 || p.pad_w < 0, op, "padding must be >= 0, got pad_h=", p.pad_h,
           " pad_w=", p.pad_w);
  throw_if(p.layout != Layout::NCHW && p.layout != Layout::NHWC, op, "unknown layout value ",
           static_cast<int>(p.layout));
  throw_if(p.activation != Activation::Identity && p.activation != Activation::ReLU &&
               p.activation != Activation::Sigmoid && p.activation != Activation::Tanh,
           op, "unknown activation value ", static_cast<int>(p.activation));
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

/// The geometry of unrolling x with a kernel_h x kernel_w window (im2col, col2im):
/// N, C, H, W from x, R, S from the kernel, P, Q derived; M = 0, no bias. Validates the
/// parameters, the extents and x's contiguity.
template <class XView>
Conv2dProblem make_unroll_problem(const char* op, const XView& x, std::int64_t kernel_h,
                                  std::int64_t kernel_w, const Conv2dParams& p) {
  check_window_params(op, p);
  Conv2dProblem pb;
  activation_extents(x, p.layout, pb.N, pb.C, pb.H, pb.W);
  throw_if(pb.C < 1, op, "x has no input channels (", to_string(p.layout), " extents ",
           extents_string(x), ")");
  pb.R = kernel_h, pb.S = kernel_w;
  derive_window_geometry(op, pb, p);
  check_contiguous(op, "x", x);
  return pb;
}

/// Reads and validates a convolution's arguments; throws kcnn::Error naming the
/// offending values, and returns the problem with every derived extent.
template <class XView, class WView, class BView, class YView>
Conv2dProblem make_conv2d_problem(const char* op, const XView& x, const WView& w, const BView& bias,
                                  const YView& y, const Conv2dParams& p) {
  check_window_params(op, p);

  Conv2dProblem pb;
  const char* lname = to_string(p.layout);
  activation_extents(x, p.layout, pb.N, pb.C, pb.H, pb.W);
  std::int64_t wc = 0;
  activation_extents(w, p.layout, pb.M, wc, pb.R, pb.S);  // (M, C, R, S) in the same order

  throw_if(pb.C < 1, op, "x has no input channels (", lname, " extents ", extents_string(x), ")");
  throw_if(wc != pb.C, op, "channel mismatch: x has C=", pb.C, " (", lname, " extents ",
           extents_string(x), ") but w has C=", wc, " (extents ", extents_string(w), ")");
  derive_window_geometry(op, pb, p);

  std::int64_t yn = 0, ym = 0, yp = 0, yq = 0;
  activation_extents(y, p.layout, yn, ym, yp, yq);
  throw_if(yn != pb.N || ym != pb.M || yp != pb.P || yq != pb.Q, op, "wrong y extents ",
           extents_string(y), ": expected ", lname, " (N, M, P, Q) = (", pb.N, ", ", pb.M, ", ",
           pb.P, ", ", pb.Q, ")", p.layout == Layout::NHWC ? " in the order (N, P, Q, M)" : "");

  const auto bias_extent = static_cast<std::int64_t>(bias.extent(0));
  throw_if(bias_extent != 0 && bias_extent != pb.M, op, "bias has extent ", bias_extent,
           "; expected 0 (no bias) or M=", pb.M);
  pb.has_bias = bias_extent != 0;

  check_contiguous(op, "x", x);
  check_contiguous(op, "w", w);
  check_contiguous(op, "y", y);
  check_no_overlap(op, "y", y, "x", x);
  check_no_overlap(op, "y", y, "w", w);
  check_no_overlap(op, "y", y, "bias", bias);
  return pb;
}

}  // namespace kcnn::Impl
