// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file conv2d.hpp
/// \brief kcnn::conv2d_forward: y = activation(conv(x, w) + bias), optionally followed by
///        a pooling (Conv2dParams::pool), several algorithms behind one call.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "impl/common/problem.hpp"
#include "impl/common/profiling.hpp"
#include "impl/common/view_checks.hpp"
#include "impl/conv2d/dispatch.hpp"
#include "impl/conv2d/prebuilt_instances.hpp"
#include "impl/conv2d/select/auto_rules.hpp"
#include "types.hpp"
#include "workspace.hpp"

namespace kcnn {

template <class T, class ExecSpace>
class WinogradFilters;  // winograd_filters.hpp

namespace Impl {

template <class W>
struct is_winograd_filters : std::false_type {};
template <class T, class ExecSpace>
struct is_winograd_filters<WinogradFilters<T, ExecSpace>> : std::true_type {};

template <class ExecSpace, class XView, class WView, class BView, class YView>
constexpr void static_check_conv2d_views() {
  static_assert(!is_winograd_filters<WView>::value,
                "kcnn: WinogradFilters are taken only by the conv2d_forward overload of "
                "winograd_filters.hpp, on the execution space they were made for");
  static_check_tensor<ExecSpace, XView, 4, false>();
  static_check_tensor<ExecSpace, WView, 4, false>();
  static_check_tensor<ExecSpace, BView, 1, false>();
  static_check_tensor<ExecSpace, YView, 4, true>();
  using T = view_scalar_t<YView>;
  static_assert(std::is_same_v<view_scalar_t<XView>, T> &&
                    std::is_same_v<view_scalar_t<WView>, T> &&
                    std::is_same_v<view_scalar_t<BView>, T>,
                "kcnn::conv2d_forward: x, w, bias and y must have the same scalar type");
}

}  // namespace Impl

/// \brief 2-D convolution forward: y = activation(conv(x, w) + bias), and with
///        params.pool set y = pool.activation(pool(activation(conv(x, w) + bias))).
///
/// Asynchronous on `space`, like any Kokkos kernel: it does not fence (only growing a
/// cached scratch buffer fences, see workspace.hpp). All checks happen before anything
/// is written; on invalid input it throws kcnn::Error (a
/// std::invalid_argument) naming the offending values and leaves y untouched.
///
/// \tparam ExecSpace  Kokkos execution space the kernels run on
/// \param space  [in]  execution space instance (stream) to run on
/// \param x      [in]  input, rank 4: NCHW (N, C, H, W) or NHWC (N, H, W, C)
/// \param w      [in]  filters, rank 4: NCHW (M, C/G, R, S) or NHWC (M, R, S, C/G) for
///                     G = params.groups (1: (M, C, R, S))
/// \param bias   [in]  rank 1, extent M, or extent 0 for no bias
/// \param y      [out] output, rank 4: NCHW (N, M, P, Q) or NHWC (N, P, Q, M), with
///                     P = (H + 2*pad_h - dilation_h*(R-1) - 1)/stride_h + 1, Q likewise
/// \param params [in]  stride, padding, dilation, layout, activation, algorithm, and the
///                     optional fused pooling. `ConvAlgo::Auto` runs find_best_algo's
///                     cached winner for this exact problem if there is one (see
///                     find_algo.hpp), else the heuristic Impl::select_conv2d_algo
///                     (impl/conv2d/select/auto_rules.hpp) picks.
///
/// With params.pool set, y has the pooled extents (N, M, P', Q') (NHWC: (N, P', Q', M))
/// with P' = (P + 2*pool.pad_h - pool.window_h)/pool.stride_h + 1, Q' likewise (see
/// pool2d_forward for the pooling's semantics); pool->layout must equal params.layout.
/// Fused kernels never store the unpooled output: ConvAlgo::Tiled pools every window
/// shape in the same kernel (each team computes the conv outputs its pooled tile's
/// windows read, recomputing the few that overlapping windows share across tiles);
/// ConvAlgo::ImplicitGemm does for non-overlapping windows (stride >= window) of at most
/// 64 cells. Reference, Im2colGemm and ImplicitGemm's other poolings compute the
/// unpooled output into the instance's cached unpooled-output buffer in the execution
/// space's memory (kept for the next call; kcnn::release_workspaces() frees it) and
/// pool it into y.
///
/// ConvAlgo::Tiled on host backends runs unpooled NHWC float and double calls (x's
/// channels contiguous) on a register-blocked direct kernel whose weights it first packs
/// in blocks of output channels into the cached workspace, within the budget
/// (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit()); a budget below
/// the packed weights throws kcnn::Error (ConvAlgo::Auto then picks another algorithm).
///
/// ConvAlgo::Im2colGemm unrolls the input chunk by chunk into cached scratch memory
/// within a budget (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit();
/// see kcnn/workspace.hpp) and multiplies with KokkosBlas::gemm (cuBLAS on CUDA, on
/// `space`'s stream; the host BLAS on host backends, where kcnn's own threads may each
/// call the BLAS library directly on their chunk, with OpenBLAS set to one thread while
/// they run and restored afterwards). Its scratch allows one call at a time per
/// execution-space instance: concurrent calls from several host threads on one instance
/// take turns.
///
/// ConvAlgo::ImplicitGemm runs the GEMM view of the convolution without storing the
/// unrolled matrix: one kernel gathers each tile of it from x while loading (no scratch
/// buffer, no budget). It accepts any C, M, spatial size, stride, padding and dilation
/// except padded input extents of 2^29 or more (its window coordinates are 32-bit) and
/// C*R*S or M of 2^31 or more; those throw kcnn::Error.
///
/// ConvAlgo::TensorCoreGemm runs the same GEMM view on NVIDIA tensor cores (mma.sync;
/// CUDA builds for sm_80 or newer): float tensors with params.math = MathMode::TF32 or
/// ::TF32x3, double tensors with IEEE fp64 products (DMMA). It fuses no pooling (a
/// second pass pools) and throws kcnn::Error on host backends and for Strict float.
/// NCHW calls first copy x (and double w) channels-last into the cached workspace and
/// run the NHWC kernel, whose gathers move 16 bytes at a time, when the copies fit the
/// budget (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit()); otherwise
/// they run the NCHW kernel on x as it is. 16-bit NCHW calls on Hopper's TMA kernel also
/// write a packed channels-last copy of y in the workspace, then move it into y (where
/// that copy does not fit the budget, the NHWC kernel writes y directly). 16-bit stride-1
/// filters of up to 3x3 with C a multiple of 64, on outputs that 16 x 8 pixel blocks
/// cover with at most a quarter to spare, run the halo kernel there: per 64 channels
/// each block's input pixels are loaded once for every tap. The results are the same up
/// to the order of the sums.
///
/// ConvAlgo::Winograd computes 3x3 filters at stride 1 without dilation (any padding,
/// C, M, extents and batch; other filters, strides and dilations throw kcnn::Error naming
/// the reason) with Winograd's minimal filtering F(4x4, 3x3) (F(2x2, 3x3) past 4,096
/// channels): 36 products per 4x4 output tile and channel instead of 144. The filters
/// are transformed on every call into the cached workspace (36 M C values; a budget
/// below them plus one tile throws kcnn::Error), or once by kcnn::WinogradFilters
/// (winograd_filters.hpp), which the overload of conv2d_forward there reads. Host
/// backends run each block of tiles on one thread (input transform, 36 GEMMs on a
/// register-blocked micro-kernel, output transform with bias and activation, within its
/// caches). On CUDA, float tensors take
/// F(2x2, 3x3) (2^-19 of sum_k |w_k x_k|) in one fused kernel: the input transform in its
/// tile loader, the output transform, bias and activation in its epilogue, only the
/// transformed filters (16 M C values) in the workspace. Other GPU cases (double, 16-bit
/// tensors) run an input-transform kernel, the transform-domain GEMMs on cuBLAS (strict
/// fp32 or fp64) and an output-transform kernel per chunk of tiles in the workspace. Its
/// pooling is a second pass. Accuracy (measured on
/// random inputs): every output within 2^-16 (F(4x4); F(2x2): 2^-19) of sum_k |w_k x_k|
/// of the exact result, about 10x the rounding of a direct sum; at most 4e-5 of the
/// output's magnitude at 4,096 channels. An output's error depends on its tile's whole
/// 6x6 input patch, not only on its window, and a non-finite input value makes every
/// output of the tiles whose patches hold it non-finite (a direct convolution: only the
/// outputs whose windows hold it). 16-bit tensors transform and multiply in float.
///
/// Grouped convolutions (params.groups = G > 1; C and M multiples of G): output channel
/// m reads only the C/G input channels of its group m / (M/G) (G = C = M: depthwise).
/// ConvAlgo::Depthwise computes depthwise layers (G = C, M = k C: output channel m reads
/// input channel m / k) in one kernel, as the memory-bound stencil they are: any
/// filter, stride, padding and dilation (3x3, 5x5, 7x7 unrolled at compile time), bias
/// and activation fused, its pooling a second pass; other problems throw kcnn::Error.
/// Auto runs it on every depthwise layer. ConvAlgo::Grouped computes any grouped (or
/// ungrouped) layer in one direct-convolution kernel made for narrow groups (ResNeXt's
/// 32 groups of 4-32 channels): it packs the filters into the cached workspace (groups x
/// M/G rounded up to 8, or to 4 where it is at most 4, x C/G x R x S accumulators: float
/// for 16-bit tensors), then a thread computes 4 output pixels for 8 (or 4) filters of a
/// group; any filter, stride, padding
/// and dilation (3x3 at stride 1 and 2 unrolled), bias and activation fused, its pooling
/// a second pass. Packed filters beyond the budget (Conv2dParams::workspace_limit_bytes,
/// else kcnn::workspace_limit()) throw kcnn::Error. On GPUs Auto runs it on grouped
/// layers of at most 32 channels and 32 filters a group. The other
/// algorithms compute a grouped layer as G ungrouped convolutions of C/G channels and M/G
/// filters, one after the other on `space`, on strided slices of x, w, bias and y (no
/// copies; impl/common/groups.hpp); a fused pooling pools each group's channels. Such an
/// algorithm takes a grouped problem where it takes one group's (can_implement checks
/// every group's slices), and Auto's rules judge one group's problem (on CPUs, every
/// non-depthwise grouped layer). One launch per group: layers of many small groups are
/// launch-bound there.
///
/// params.math (MathMode) is the precision the call may give up: TF32 and TF32x3 need
/// float tensors (double tensors with them throw kcnn::Error); the algorithms without
/// tensor-core kernels (Reference, Tiled, ImplicitGemm, and every host backend) compute
/// them strictly, more accurately than asked; Im2colGemm binds cuBLAS' TF32 math mode
/// for TF32 (and computes TF32x3 strictly).
///
/// 16-bit tensors (Kokkos::Experimental::half_t, kcnn::bfloat16) are computed in float and
/// rounded once at the store, by every algorithm (TensorCoreGemm on GPUs with tensor
/// cores: m16n8k16 with float sums; Im2colGemm: cuBLAS' cublasGemmEx on CUDA, float copies
/// of the operands for the host BLAS); bias, activation and a fused pooling in float.
///
/// Views hold one element type (float, double or a 16-bit type; inputs may be const), are
/// contiguous (LayoutRight or LayoutLeft) and accessible from `ExecSpace`; y must not overlap x, w
/// or bias. An empty batch (N = 0) or no filters (M = 0) is a valid no-op. Sizes are
/// validated in 64 bits before use: a View whose extents, or the product of its non-zero
/// extents, reach 2^63 (only an unmanaged View can have them), and a problem whose
/// N*M*P*Q or N*P*Q*C*R*S does, throw kcnn::Error.
/// \throws kcnn::Error on any invalid argument; also for algorithms not implemented yet.
template <class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x, const WView& w, const BView& bias,
                    const YView& y, const Conv2dParams& params) {
  Impl::static_check_conv2d_views<ExecSpace, XView, WView, BView, YView>();
  constexpr const char* op = "kcnn::conv2d_forward";
  const Impl::Conv2dProblem pb = Impl::make_conv2d_problem(op, x, w, bias, y, params);

  const auto xk = Impl::as_kernel_view<ExecSpace, false>(x);
  const auto wk = Impl::as_kernel_view<ExecSpace, false>(w);
  const auto bk = Impl::as_kernel_view<ExecSpace, false>(bias);
  const auto yk = Impl::as_kernel_view<ExecSpace, true>(y);
  const ConvAlgo algo =
      params.algo == ConvAlgo::Auto
          ? Impl::resolve_auto_algo<ExecSpace, XView, WView, YView>(space, xk, wk, bk, yk, pb).algo
          : params.algo;
  Impl::throw_if(!Impl::is_implemented(algo), op, "ConvAlgo::", to_string(algo),
                 " is not implemented yet (available: ", Impl::implemented_conv_algo_names(),
                 ", Auto)");

  Impl::ProfilingRegion region(std::string(op) + "[" + to_string(algo) + "]");
  if (pb.empty()) return;
  Impl::conv2d_launch(space, algo, xk, wk, bk, yk, pb, Impl::LaunchMode::Run);
}

/// \brief conv2d_forward without bias: y = activation(conv(x, w)).
template <class ExecSpace, class XView, class WView, class YView>
void conv2d_forward(const ExecSpace& space, const XView& x, const WView& w, const YView& y,
                    const Conv2dParams& params) {
  using NoBias = Kokkos::View<const Impl::view_scalar_t<YView>*, typename YView::memory_space>;
  conv2d_forward(space, x, w, NoBias(), y, params);
}

}  // namespace kcnn
