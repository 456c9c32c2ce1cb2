// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/depthwise/depthwise_data_walk_kernel.hpp
/// \brief The depthwise data gradient where the forward kernels cannot compute it (a
///        stride of 2, channel multipliers, padding beyond the filter): each thread walks
///        a line of dx with the filter taps in registers.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"

namespace kcnn::Impl {

/// conv2d_backward_data's tensors as pointers and logical strides.
template <class T>
struct DepthwiseBackwardDataOperands {
  const T* dy;
  LogicalStrides dys;
  const T* w;
  LogicalStrides ws;
  T* dx;
  LogicalStrides dxs;
};

/// dx of a depthwise layer with a Taps x Taps filter, the same stride Stride (1 or 2)
/// along both axes and no dilation: a thread owns one line of dx (NCHW: a column of a
/// channel plane, the warp's threads on neighbouring columns; NHWC: a row of a channel,
/// the warp's threads on neighbouring channels) and walks along it. Across the line the
/// taps that reach it, and their dy positions, are fixed: found once per line (a tap s
/// reaches column e where Stride divides e + pad - s, the dy column that quotient). Along
/// the line the same test is a compile-time shift and mask. The filters of the thread's
/// channel stay in registers where the multiplier is 1. 32-bit offsets within an image
/// (takes() checks they fit).
///
///   dx(n, c, h, w) = sum over j < k, r, s of dy(n, c k + j, p, q) w(c k + j, r, s),
///   p Stride = h + pad_h - r, q Stride = w + pad_w - s.
template <Layout L, int Taps, int Stride, class T>
struct DepthwiseDataWalkKernel {
  using Acc = accumulator_t<T>;
  static constexpr bool kWalksRows = L == Layout::NCHW;  ///< else along the columns

  DepthwiseBackwardDataOperands<T> op;
  std::int64_t N = 0, C = 0, multiplier = 1;
  int walk_in = 0, cross_in = 0;    ///< dx along the walk axis (NCHW: H) and across it
  int walk_out = 0, cross_out = 0;  ///< dy likewise
  int walk_pad = 0, cross_pad = 0;
  int dx_walk = 0, dx_cross = 0, dy_walk = 0, dy_cross = 0;  ///< strides
  int w_walk = 0, w_cross = 0;                               ///< filter tap strides

  /// Whether the kernel computes pb (a depthwise problem) on tensors of strides dys, dxs.
  static bool takes(const Conv2dProblem& pb, const LogicalStrides& dys, const LogicalStrides& dxs) {
    if (pb.R != Taps || pb.S != Taps || pb.stride_h != Stride || pb.stride_w != Stride ||
        pb.dilation_h != 1 || pb.dilation_w != 1)
      return false;
    const std::int64_t limit = std::int64_t(1) << 30;
    const std::int64_t rows = pb.H + pb.P + Taps + pb.pad_h, cols = pb.W + pb.Q + Taps + pb.pad_w;
    return dys.h >= 0 && dys.w >= 0 && dxs.h >= 0 && dxs.w >= 0 && rows < limit && cols < limit &&
           dxs.h < limit / rows && dxs.w < limit / cols && dys.h < limit / rows &&
           dys.w < limit / cols && pb.N * pb.C <= limit && pb.pad_h < limit && pb.pad_w < limit;
  }

  static DepthwiseDataWalkKernel make(const DepthwiseBackwardDataOperands<T>& op,
                                      const Conv2dProblem& pb) {
    DepthwiseDataWalkKernel k{op, pb.N, pb.C, pb.M / pb.C};
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    if constexpr (kWalksRows) {
      k.walk_in = i32(pb.H), k.cross_in = i32(pb.W), k.walk_out = i32(pb.P);
      k.cross_out = i32(pb.Q), k.walk_pad = pb.pad_h, k.cross_pad = pb.pad_w;
      k.dx_walk = i32(op.dxs.h), k.dx_cross = i32(op.dxs.w);
      k.dy_walk = i32(op.dys.h), k.dy_cross = i32(op.dys.w);
      k.w_walk = i32(op.ws.h), k.w_cross = i32(op.ws.w);
    } else {
      k.walk_in = i32(pb.W), k.cross_in = i32(pb.H), k.walk_out = i32(pb.Q);
      k.cross_out = i32(pb.P), k.walk_pad = pb.pad_w, k.cross_pad = pb.pad_h;
      k.dx_walk = i32(op.dxs.w), k.dx_cross = i32(op.dxs.h);
      k.dy_walk = i32(op.dys.w), k.dy_cross = i32(op.dys.h);
      k.w_walk = i32(op.ws.w), k.w_cross = i32(op.ws.h);
    }
    return k;
  }

  /// Lines of dx: NCHW (n, c, column), columns fastest; NHWC (n, row, c), channels fastest.
  std::int64_t items() const { return N * C * cross_in; }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    std::int64_t n, c;
    int cross;
    if constexpr (kWalksRows) {
      cross = static_cast<int>(item % cross_in);
      const std::int64_t rest = item / cross_in;
      c = rest % C, n = rest / C;
    } else {
      c = item % C;
      const std::int64_t rest = item / C;
      cross = static_cast<int>(rest % cross_in), n = rest / cross_in;
    }
    // The cross taps reaching this line: tap s reads dy at cross position reach[s].
    bool reaches[Taps];
    int reach[Taps];
    KCNN_DEVICE_UNROLL
    for (int s = 0; s < Taps; ++s) {
      const int u = cross + cross_pad - s;
      reach[s] = u / Stride;
      reaches[s] = u >= 0 && u % Stride == 0 && u / Stride < cross_out;
    }
    T* const dxl = op.dx + n * op.dxs.n + c * op.dxs.c + std::int64_t(cross) * dx_cross;
    const T* const dyn = op.dy + n * op.dys.n;
    if (multiplier == 1) {
      Acc wr[Taps][Taps];  // [walk tap][cross tap]
      const T* const wm = op.w + c * op.ws.n;
      KCNN_DEVICE_UNROLL
      for (int k = 0; k < Taps; ++k) {
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < Taps; ++s)
          wr[k][s] = Acc(wm[k * w_walk + s * w_cross]);
      }
      for (int e = 0; e < walk_in; ++e) {
        Acc acc = 0;
        add_taps(
            e, dyn + c * op.dys.c, reaches, reach, [&](int k, int s) { return wr[k][s]; }, acc);
        dxl[std::int64_t(e) * dx_walk] = from_compute<T>(acc);
      }
    } else {  // the k filters of the channel, their taps read where used (cached)
      for (int e = 0; e < walk_in; ++e) {
        Acc acc = 0;
        for (std::int64_t j = 0; j < multiplier; ++j) {
          const std::int64_t m = c * multiplier + j;
          const T* const wm = op.w + m * op.ws.n;
          add_taps(
              e, dyn + m * op.dys.c, reaches, reach,
              [&](int k, int s) { return Acc(wm[k * w_walk + s * w_cross]); }, acc);
        }
        dxl[std::int64_t(e) * dx_walk] = from_compute<T>(acc);
      }
    }
  }

  /// Adds to acc the products of dx position e (along the line) with filter `tap` (k, s)
  /// of channel m, whose dy is dym.
  template <class Tap>
  KOKKOS_INLINE_FUNCTION void add_taps(int e, const T* dym, const bool (&reaches)[Taps],
                                       const int (&reach)[Taps], const Tap& tap, Acc& acc) const {
    KCNN_DEVICE_UNROLL
    for (int k = 0; k < Taps; ++k) {
      const int u = e + walk_pad - k;
      // u >= 0 first: with Stride a power of two, % and / are a mask and a shift.
      if (u < 0 || u % Stride != 0 || u / Stride >= walk_out) continue;
      const T* const dyl = dym + (u / Stride) * dy_walk;
      KCNN_DEVICE_UNROLL
      for (int s = 0; s < Taps; ++s)
        if (reaches[s]) acc += Acc(dyl[reach[s] * dy_cross]) * tap(k, s);
    }
  }
};

}  // namespace kcnn::Impl
