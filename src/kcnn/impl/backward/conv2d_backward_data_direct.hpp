// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/backward/conv2d_backward_data_direct.hpp
/// \brief conv2d_backward_data on CPUs through Tiled's register-blocked micro-kernel
///        (conv2d/tiled/host_simd_kernel.hpp): at unit stride the input gradient is a
///        forward convolution of dy with the filters rotated by 180 degrees and
///        transposed.
///
/// With stride 1, dilation d and padding pad, the adjoint of y(p) = sum over r of
/// x(p - pad + r d) w(r) is
///   dx(h) = sum over r of dy(h + pad - r d) w(r)
///         = sum over r' of dy(h - pad' + r' d) w(R - 1 - r'),   pad' = (R - 1) d - pad,
/// (and the same in the width), summed over the filters m for each channel c: a forward
/// convolution of dy (M channels, P x Q, dy read as zero outside) with the filters
/// w'(c, m, r', s') = w(m, c, R - 1 - r', S - 1 - s') and padding pad', whose output is
/// H x W. The kernel packs its weights through strides, so w' is w read from its last
/// tap with the tap strides negated and the filter and channel strides swapped: no
/// copy. It writes every element of dx once (no col2im scatter, no unrolled matrix);
/// the reduction order is fixed, so the result is deterministic.
///
/// Serves float and double at unit stride with pad <= (R - 1) d in both dimensions (pad'
/// >= 0) where the register-blocked kernel applies (tiled_host_simd_applies) and its
/// packed weights fit the workspace limit; the caller runs the GEMM path otherwise.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

#include "../arch/device_traits.hpp"
#include "../common/problem.hpp"
#include "../common/tensor_access.hpp"
#include "../common/view_checks.hpp"
#include "../conv2d/tiled/host_simd_kernel.hpp"

namespace kcnn::Impl {

/// The forward convolution whose output is backward data's dx (see the file comment),
/// or an empty optional-like result (ok == false) where it does not exist or does not fit
/// int: stride other than 1, pad beyond (R - 1) d, or pad' beyond int.
struct BackwardDataAsForward {
  bool ok = false;
  Conv2dProblem forward;
};

inline BackwardDataAsForward backward_data_as_forward(const Conv2dProblem& pb) {
  BackwardDataAsForward out;
  if (pb.stride_h != 1 || pb.stride_w != 1 || pb.P == 0 || pb.Q == 0) return out;
  const std::int64_t pad_h = (pb.R - 1) * pb.dilation_h - pb.pad_h;
  const std::int64_t pad_w = (pb.S - 1) * pb.dilation_w - pb.pad_w;
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  if (pad_h < 0 || pad_w < 0 || pad_h > int_max || pad_w > int_max) return out;
  Conv2dProblem& f = out.forward;
  f.N = pb.N;
  f.C = pb.M, f.H = pb.P, f.W = pb.Q;
  f.M = pb.C, f.R = pb.R, f.S = pb.S;
  f.P = pb.H, f.Q = pb.W;
  f.stride_h = f.stride_w = 1;
  f.pad_h = static_cast<int>(pad_h), f.pad_w = static_cast<int>(pad_w);
  f.dilation_h = pb.dilation_h, f.dilation_w = pb.dilation_w;
  f.layout = pb.layout;
  f.math = pb.math;
  f.workspace_limit_bytes = pb.workspace_limit_bytes;
  out.ok = true;
  return out;
}

/// Runs conv2d_backward_data's problem `pb` on the register-blocked host kernel where it
/// serves it (see the file comment) and returns true; returns false, having written
/// nothing, where it does not. Views: the kernel views of conv2d_backward_data.
template <class ExecSpace, class DYView, class WView, class DXView>
bool conv2d_backward_data_direct(const ExecSpace& space, const DYView& dy, const WView& w,
                                 const DXView& dx, const Conv2dProblem& pb) {
  using T = view_scalar_t<DXView>;
  if constexpr (!runs_on_host_v<ExecSpace> || !tiled_host_simd_types_v<T>) {
    return false;
  } else {
    const BackwardDataAsForward as = backward_data_as_forward(pb);
    if (!as.ok) return false;
    const bool nchw = pb.layout == Layout::NCHW;
    const auto strides = [&](const auto& v) {
      return nchw ? logical_strides<Layout::NCHW>(v) : logical_strides<Layout::NHWC>(v);
    };
    const LogicalStrides dys = strides(dy);
    if (!tiled_host_simd_applies<T>(as.forward, dys.c) ||
        tiled_host_simd_workspace_bytes<T>(as.forward) > pb.workspace_limit_bytes)
      return false;
    // w (M, C, R, S) read as w' (C, M, R, S) from its last tap backwards.
    const LogicalStrides ws = strides(w);
    const LogicalStrides rotated{ws.c, ws.n, -ws.h, -ws.w};
    const T* const last_tap = w.data() + (pb.R - 1) * ws.h + (pb.S - 1) * ws.w;
    const TiledHostSimdOperands<T, T, T, T> op{dy.data(), dys, last_tap,  rotated,
                                               nullptr,   0,   dx.data(), strides(dx)};
    conv2d_tiled_host_simd_operands(space, op, as.forward, LaunchMode::Run);
    return true;
  }
}

}  // namespace kcnn::Impl
