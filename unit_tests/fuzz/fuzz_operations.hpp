// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_operations.hpp
/// \brief One fuzzed call of each public operation: draws the call, decides its validity
///        from the documented rules, runs it and judges it against the references.
#pragma once

#include "fuzz_harness.hpp"

namespace kcnn_fuzz {

/// A drawn groups count (Conv2dParams::groups) and what it makes of the layer.
struct DrawnGroups {
  std::uint64_t M;        ///< the filters (C or 2 C for some depthwise draws)
  std::uint64_t group_C;  ///< w's valid channel extent (C / groups where groups divide)
  std::uint64_t wC;       ///< w's channel extent as drawn (rarely not group_C)
  bool divide;            ///< groups >= 1 divides C and M
  bool depthwise;         ///< groups = C, M a multiple of C
};

/// Draws p.groups for a layer of C channels and drawn_M filters: half the calls
/// ungrouped; else a small count (0 and non-divisors are invalid) or a depthwise layer
/// (groups = C, M = C or 2 C); requires what kcnn documents of it.
inline DrawnGroups draw_groups(Draw& d, Verdict& v, kcnn::Conv2dParams& p, std::uint64_t C,
                               std::uint64_t drawn_M) {
  DrawnGroups g;
  const int group_choice = d.small(0, 3);
  p.groups = group_choice < 2    ? 1
             : group_choice == 2 ? d.small(0, 4)
                                 : static_cast<int>(std::min<std::uint64_t>(C, 1 << 20));
  g.M = group_choice == 3 && C <= 4 && !d.rarely() ? C * d.small(1, 2) : drawn_M;
  g.divide = p.groups >= 1 && C % p.groups == 0 && g.M % p.groups == 0;
  g.group_C = g.divide ? C / p.groups : C;
  g.wC = d.rarely() ? d.extent(4) : g.group_C;
  g.depthwise = p.groups >= 1 && std::uint64_t(p.groups) == C && C >= 1 && g.M % C == 0;
  v.require(p.groups >= 1, "groups < 1");
  v.require(g.divide || p.groups < 1, "groups does not divide C and M");
  v.require(g.wC == g.group_C, "channel mismatch");
  return g;
}

/// conv2d_forward, with params.pool when `fused`.
template <class T>
int fuzz_conv2d_forward(Draw& d, bool fused) {
  constexpr const char* op = "conv2d_forward";
  kcnn::Conv2dParams p = draw_conv_params(d);
  if (fused) p.pool = draw_pool_params(d, p.layout);
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10),
                      drawn_M = d.extent(4), R = d.extent(4), S = d.extent(4);
  Verdict v;
  const DrawnGroups g = draw_groups(d, v, p, C, drawn_M);
  const std::uint64_t M = g.M, group_C = g.group_C, wC = g.wC;
  const bool depthwise_layer = g.depthwise;
  require_window_params(v, p);
  const bool known_math = p.math == kcnn::MathMode::Strict || p.math == kcnn::MathMode::TF32 ||
                          p.math == kcnn::MathMode::TF32x3;
  v.require(known_math, "unknown math mode");
  v.require(p.math == kcnn::MathMode::Strict || std::is_same_v<T, float>,
            "a TF32 math mode with non-float tensors");
  const int algo = static_cast<int>(p.algo);
  v.require(algo >= 0 && algo <= 8, "unknown algorithm");
  if (fused) require_pool_params(v, *p.pool), v.require(p.pool->layout == p.layout, "pool layout");
  v.require(C >= 1, "C < 1");
  v.require(R >= 1 && S >= 1, "empty filter");
  __int128 P = -1, Q = -1, Pp = -1, Qp = -1;
  if (v.valid) {
    P = window_output(H, R, p.stride_h, p.pad_h, p.dilation_h);
    Q = window_output(W, S, p.stride_w, p.pad_w, p.dilation_w);
    v.require(P >= 1 && Q >= 1, "the filter does not fit the padded input");
    if (v.valid && fused) {
      Pp = window_output(std::uint64_t(P), p.pool->window_h, p.pool->stride_h, p.pool->pad_h, 1);
      Qp = window_output(std::uint64_t(Q), p.pool->window_w, p.pool->stride_w, p.pool->pad_w, 1);
      v.require(Pp >= 1 && Qp >= 1, "the pool window does not fit");
    }
    require_problem_size(v, N, C, M, R, S, P, Q);
  }
  const std::uint64_t yP = output_extent(d, fused ? Pp : P), yQ = output_extent(d, fused ? Qp : Q);
  const std::uint64_t yN = d.rarely() ? d.extent(3) : N, yM = d.rarely() ? d.extent(4) : M;
  v.require(
      yN == N && yM == M && __int128(yP) == (fused ? Pp : P) && __int128(yQ) == (fused ? Qp : Q),
      "wrong y extents");
  const int bias_choice = d.small(0, 7);  // 0-3: none, 4-6: M, 7: a wrong extent
  const std::uint64_t B = bias_choice < 4 ? 0 : bias_choice < 7 ? M : d.extent(5, false);
  v.require(B == 0 || B == M, "wrong bias extent");

  const kcnn::Layout layout = valid_layout(p.layout) ? p.layout : kcnn::Layout::NCHW;
  Operand<T> x, w, bias, y;
  if (!make_operand(x, in_layout(layout, N, C, H, W), draw_storage(d), false, d.seed()) ||
      !make_operand(w, in_layout(layout, M, wC, R, S), draw_storage(d), false, d.seed()) ||
      !make_operand(bias, {B, 1, 1, 1}, Storage::RowMajor, false, d.seed()))
    return -1;
  const auto ye = in_layout(layout, yN, yM, yP, yQ);
  const bool alias = d.rarely() && make_alias(y, ye, d.flag() ? x : w, d.small(0, 3));
  if (!alias && !make_operand(y, ye, draw_storage(d), true, 0)) return -1;
  for (const auto* t : {&x, &w, &bias, &y})
    v.require(t->representable, "a tensor with 2^63 or more elements");
  for (const auto* t : {&x, &w, &y})
    v.require(t->contiguous, "a non-contiguous tensor");
  v.require(!views_overlap(y, x) && !views_overlap(y, w) && !views_overlap(y, bias),
            "y overlaps an input");
  if (v.valid && double(N) * M * double(P) * double(Q) * C * R * S > kMaxWork) return -1;
  if (v.valid && fused && double(y.count) * p.pool->window_h * p.pool->window_w > kMaxWork)
    return -1;

  const Vector<T> bias_view(bias.memory->data(), Kokkos::LayoutStride(B, 1));
  // ImplicitGemm's documented limit: padded input extents below 2^29.
  const bool gather_fits = __int128(H) + 2 * __int128(p.pad_h) < (1 << 29) &&
                           __int128(W) + 2 * __int128(p.pad_w) < (1 << 29);
  const std::uint64_t G = p.groups >= 1 ? std::uint64_t(p.groups) : 1;
  const bool must_serve =
      p.algo == kcnn::ConvAlgo::Auto || p.algo == kcnn::ConvAlgo::Reference ||
      (p.algo == kcnn::ConvAlgo::ImplicitGemm && gather_fits) ||
      (p.algo == kcnn::ConvAlgo::Im2colGemm && p.workspace_limit_bytes == 0) ||
      (p.algo == kcnn::ConvAlgo::Depthwise && depthwise_layer) ||
      (p.algo == kcnn::ConvAlgo::Grouped &&
       8.0 * double(group_C) * double(R) * double(S) <= INT_MAX &&
       kcnn_test::grouped_workspace_bytes<T>(G, group_C, M / G, R, S) <=
           double(p.workspace_limit_bytes ? p.workspace_limit_bytes : kcnn::workspace_limit()));
  judge(
      op, v, must_serve, Snapshot(x, w, bias), Snapshot(y),
      [&] { kcnn::conv2d_forward(Space(), x.view, w.view, bias_view, y.view, p); },
      [&] {
        if (y.count == 0) return;
        if (!reference_fits({N, C, H, W, M, R, S})) return;
        auto c = conv_case(N, C, H, W, M, R, S, p);
        c.bias = B != 0;
        const double u = unit_roundoff<T>(), K = double(group_C) * R * S;
        const auto conv = kcnn_test::host_conv2d(c, x.values, w.values, bias.values);
        auto unbiased = c;
        unbiased.activation = kcnn::Activation::Identity, unbiased.bias = false;
        auto bound =
            kcnn_test::host_conv2d(unbiased, magnitudes(x.values), magnitudes(w.values), {});
        const std::size_t PQ = std::size_t(P * Q);
        // Winograd (asked for, or Auto's pick on its geometry) has a bound of its own.
        const bool winograd_geometry = R == 3 && S == 3 && p.stride_h == 1 && p.stride_w == 1 &&
                                       p.dilation_h == 1 && p.dilation_w == 1;
        const bool maybe_winograd = winograd_geometry && (p.algo == kcnn::ConvAlgo::Winograd ||
                                                          p.algo == kcnn::ConvAlgo::Auto);
        // Winograd's magnitude per filter: sum_c max|x_c| * sum_rs |w_mc| over its group's
        // channels c (values in the layout's order: x (N, C, H, W) or (N, H, W, C), w
        // (M, C/groups, R, S) or (M, R, S, C/groups)).
        std::vector<double> winograd_mag(maybe_winograd ? M : 0, 0.0);
        if (maybe_winograd) {
          std::vector<double> x_max(C, 0.0);
          for (std::size_t i = 0; i < x.values.size(); ++i) {
            const std::size_t ch = c.nhwc() ? i % C : (i / (H * W)) % C;
            x_max[ch] = std::max(x_max[ch], std::abs(x.values[i]));
          }
          for (std::size_t i = 0; i < w.values.size(); ++i) {
            const std::size_t m = i / (group_C * R * S);
            const std::size_t ch = c.nhwc() ? i % group_C : (i / (R * S)) % group_C;
            winograd_mag[m] += x_max[c.first_channel(int(m)) + ch] * std::abs(w.values[i]);
          }
        }
        for (std::size_t i = 0; i < bound.size(); ++i) {
          const std::size_t m = c.nhwc() ? i % M : (i / PQ) % M;
          const double b = c.bias ? std::abs(bias.values[m]) : 0.0;
          bound[i] = std::max(sum_bound(u, K, bound[i] + b),
                              maybe_winograd ? winograd_bound(u, K, winograd_mag[m] + b) : 0.0) +
                     8 * u * std::max(1.0, std::abs(conv[i]));
        }
        if (!fused) return compare(op, "y", read(y), conv, bound);
        const auto& q = *p.pool;
        const auto pc = pool_case(N, M, std::uint64_t(P), std::uint64_t(Q), q);
        const auto want = kcnn_test::host_pool2d(pc, conv, {});
        auto bound_pc = pc;  // the largest error in each window
        bound_pc.mode = kcnn::PoolMode::Max, bound_pc.activation = kcnn::Activation::Identity;
        auto pooled_bound = kcnn_test::host_pool2d(bound_pc, bound, {});
        const double cells = double(q.window_h) * q.window_w;
        for (std::size_t i = 0; i < pooled_bound.size(); ++i)
          pooled_bound[i] += sum_bound(u, cells, std::max(1.0, std::abs(want[i])));
        compare(op, "y (pooled)", read(y), want, pooled_bound);
      });
  return 0;
}

template <class T>
int fuzz_pool2d_forward(Draw& d) {
  constexpr const char* op = "pool2d_forward";
  const kcnn::Pool2dParams q = draw_pool_params(d, d.enumeration<kcnn::Layout>(2));
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10);
  if (!reference_fits({N, C})) return -1;
  Verdict v;
  __int128 P, Q;
  pool_geometry(v, q, H, W, P, Q);
  const std::uint64_t yP = output_extent(d, P), yQ = output_extent(d, Q);
  const std::uint64_t yC = d.rarely() ? d.extent(4) : C;
  v.require(__int128(yP) == P && __int128(yQ) == Q && yC == C, "wrong y extents");
  const int bias_choice = d.small(0, 7);
  const std::uint64_t B = bias_choice < 4 ? 0 : bias_choice < 7 ? C : d.extent(5, false);
  v.require(B == 0 || B == C, "wrong bias extent");

  const kcnn::Layout layout = valid_layout(q.layout) ? q.layout : kcnn::Layout::NCHW;
  Operand<T> x, bias, y;
  if (!make_operand(x, in_layout(layout, N, C, H, W), draw_storage(d), false, d.seed()) ||
      !make_operand(bias, {B, 1, 1, 1}, Storage::RowMajor, false, d.seed()))
    return -1;
  const auto ye = in_layout(layout, N, yC, yP, yQ);
  const bool alias = d.rarely() && make_alias(y, ye, x, d.small(0, 3));
  if (!alias && !make_operand(y, ye, draw_storage(d), true, 0)) return -1;
  for (const auto* t : {&x, &bias, &y})
    v.require(t->representable, "a tensor with 2^63 or more elements");
  v.require(x.contiguous && y.contiguous, "a non-contiguous tensor");
  v.require(!views_overlap(y, x) && !views_overlap(y, bias), "y overlaps an input");
  if (v.valid && double(y.count) * q.window_h * q.window_w > kMaxWork) return -1;

  const Vector<T> bias_view(bias.memory->data(), Kokkos::LayoutStride(B, 1));
  judge(
      op, v, true, Snapshot(x, bias), Snapshot(y),
      [&] { kcnn::pool2d_forward(Space(), x.view, bias_view, y.view, q); },
      [&] {
        if (y.count == 0) return;
        auto pc = pool_case(N, C, H, W, q);
        pc.bias = B != 0;
        const auto want = kcnn_test::host_pool2d(pc, x.values, bias.values);
        const double u = unit_roundoff<T>(), cells = double(q.window_h) * q.window_w;
        std::vector<double> bound(want.size(), sum_bound(u, cells + 1, 2.0));
        for (std::size_t i = 0; i < want.size(); ++i)
          bound[i] += 8 * u * std::abs(want[i]);
        compare(op, "y", read(y), want, bound);
      });
  return 0;
}

/// im2col (unroll) or col2im (fold).
template <class T>
int fuzz_unroll(Draw& d, bool fold) {
  const char* op = fold ? "col2im" : "im2col";
  const kcnn::Conv2dParams p = draw_conv_params(d);
  const int R = d.param(1, 4), S = d.param(1, 4);
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10);
  Verdict v;
  require_window_params(v, p);
  v.require(C >= 1, "C < 1");
  v.require(R >= 1 && S >= 1, "empty window");
  __int128 P = -1, Q = -1;
  if (v.valid) {
    P = window_output(H, std::uint64_t(R), p.stride_h, p.pad_h, p.dilation_h);
    Q = window_output(W, std::uint64_t(S), p.stride_w, p.pad_w, p.dilation_w);
    v.require(P >= 1 && Q >= 1, "the window does not fit the padded input");
    if (v.valid) require_problem_size(v, N, C, 0, R, S, P, Q);
  }
  const std::int64_t batch_begin =
      d.rarely() ? std::int64_t(d.extent(3)) - d.small(0, 1) * 4
                 : std::int64_t(d.small(0, int(std::min<std::uint64_t>(N, 3))));
  const std::uint64_t n = d.rarely() ? d.extent(3) : std::uint64_t(d.small(0, 3));
  v.require(batch_begin >= 0, "batch_begin < 0");
  const kcnn::Layout layout = valid_layout(p.layout) ? p.layout : kcnn::Layout::NCHW;
  const bool nchw = layout == kcnn::Layout::NCHW;
  __int128 K = __int128(C) * R * S, pixels = __int128(n) * P * Q;
  std::uint64_t rows = 0, cols_extent = 0;
  if (v.valid && !d.rarely() && K <= INT32_MAX && pixels <= INT32_MAX) {
    rows = std::uint64_t(nchw ? K : pixels), cols_extent = std::uint64_t(nchw ? pixels : K);
  } else {
    rows = d.extent(40, false), cols_extent = d.extent(40, false);
  }
  if (v.valid) {
    const __int128 k_ext = nchw ? rows : cols_extent, pix_ext = nchw ? cols_extent : rows;
    const __int128 PQ = P * Q;
    v.require(k_ext == K && pix_ext % PQ == 0, "wrong cols extents");
    if (v.valid)
      v.require(__int128(batch_begin) + pix_ext / PQ <= __int128(N), "batch slice outside x");
  }

  Operand<T> x, cols_op;
  if (!make_operand(x, in_layout(layout, N, C, H, W), draw_storage(d), fold, d.seed()) ||
      !make_operand(cols_op, {rows, cols_extent, 1, 1}, Storage::RowMajor, !fold, d.seed()))
    return -1;
  v.require(x.representable && cols_op.representable, "a tensor with 2^63 or more elements");
  v.require(x.contiguous, "a non-contiguous tensor");
  const Matrix<T> cols(cols_op.memory->data(), rows, cols_extent);

  const std::int64_t slice =
      v.valid ? std::int64_t((nchw ? cols_extent : rows) / std::uint64_t(P * Q)) : 0;
  judge(
      op, v, true, fold ? Snapshot(cols_op) : Snapshot(x), fold ? Snapshot(x) : Snapshot(cols_op),
      [&] {
        if (fold) {
          kcnn::col2im(Space(), cols, R, S, p, x.view, batch_begin);
        } else {
          kcnn::im2col(Space(), x.view, R, S, p, cols, batch_begin);
        }
      },
      [&] {
        if (!reference_fits({N, C, H, W})) return;
        auto c = conv_case(N, C, H, W, 0, std::uint64_t(R), std::uint64_t(S), p);
        if (!fold) {
          const auto want = kcnn_test::host_im2col(c, x.values, int(batch_begin), int(slice));
          return compare(op, "cols", read(cols_op), want, std::vector<double>(want.size(), 0.0));
        }
        const auto want =
            kcnn_test::host_col2im(c, cols_op.values, x.values, int(batch_begin), int(slice));
        auto bound =
            kcnn_test::host_col2im(c, magnitudes(cols_op.values), std::vector<double>(x.count, 0.0),
                                   int(batch_begin), int(slice));
        for (auto& b : bound)
          b = sum_bound(unit_roundoff<T>(), double(R) * S, b);
        compare(op, "x", read(x), want, bound);
      });
  return 0;
}

/// conv2d_backward_data (dx) or conv2d_backward_weights (dw and, when drawn, dbias).
template <class T>
int fuzz_conv2d_backward(Draw& d, bool weights) {
  const char* op = weights ? "conv2d_backward_weights" : "conv2d_backward_data";
  kcnn::Conv2dParams p = draw_conv_params(d);
  if (!d.rarely()) p.activation = kcnn::Activation::Identity;
  if (d.rarely()) p.pool = draw_pool_params(d, p.layout);
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10),
                      drawn_M = d.extent(4), R = d.extent(4), S = d.extent(4);
  Verdict v;
  // Grouped and depthwise layers (their own kernels, impl/backward/depthwise/).
  const DrawnGroups g = draw_groups(d, v, p, C, drawn_M);
  const std::uint64_t M = g.M, wC = g.wC;
  require_window_params(v, p);
  v.require(p.activation == kcnn::Activation::Identity, "a non-Identity activation");
  v.require(!p.pool, "a pool");
  v.require(p.math == kcnn::MathMode::Strict ||
                (std::is_same_v<T, float> &&
                 (p.math == kcnn::MathMode::TF32 || p.math == kcnn::MathMode::TF32x3)),
            "a math mode the type does not take");
  v.require(C >= 1, "C < 1");
  v.require(R >= 1 && S >= 1, "empty filter");
  __int128 P = -1, Q = -1;
  if (v.valid) {
    P = window_output(H, R, p.stride_h, p.pad_h, p.dilation_h);
    Q = window_output(W, S, p.stride_w, p.pad_w, p.dilation_w);
    v.require(P >= 1 && Q >= 1, "the filter does not fit the padded input");
    if (v.valid) require_problem_size(v, N, C, M, R, S, P, Q);
  }
  const std::uint64_t yP = output_extent(d, P), yQ = output_extent(d, Q);
  v.require(__int128(yP) == P && __int128(yQ) == Q, "wrong dy extents");
  const int bias_choice = weights ? d.small(0, 7) : 0;  // 0-2: no dbias, 3: extent 0, 4-6: M
  const std::uint64_t B = bias_choice < 4 ? 0 : bias_choice < 7 ? M : d.extent(5, false);
  if (weights) v.require(B == 0 || B == M, "wrong dbias extent");

  const kcnn::Layout layout = valid_layout(p.layout) ? p.layout : kcnn::Layout::NCHW;
  Operand<T> x, w, dy, dbias;
  if (!make_operand(dbias, {B, 1, 1, 1}, Storage::RowMajor, true, 0)) return -1;
  const auto xe = in_layout(layout, N, C, H, W), we = in_layout(layout, M, wC, R, S);
  if (!make_operand(dy, in_layout(layout, N, M, yP, yQ), draw_storage(d), false, d.seed()))
    return -1;
  if (weights) {
    if (!make_operand(x, xe, draw_storage(d), false, d.seed())) return -1;
    const bool alias = d.rarely() && make_alias(w, we, d.flag() ? x : dy, d.small(0, 3));
    if (!alias && !make_operand(w, we, draw_storage(d), true, 0)) return -1;
  } else {
    if (!make_operand(w, we, draw_storage(d), false, d.seed())) return -1;
    const bool alias = d.rarely() && make_alias(x, xe, d.flag() ? w : dy, d.small(0, 3));
    if (!alias && !make_operand(x, xe, draw_storage(d), true, 0)) return -1;
  }
  for (const auto* t : {&x, &w, &dy, &dbias})
    v.require(t->representable, "a tensor with 2^63 or more elements");
  v.require(x.contiguous && w.contiguous && dy.contiguous, "a non-contiguous tensor");
  if (weights) {
    v.require(!views_overlap(w, x) && !views_overlap(w, dy), "dw overlaps an input");
    v.require(!views_overlap(dbias, x) && !views_overlap(dbias, dy) && !views_overlap(dbias, w),
              "dbias overlaps");
  } else {
    v.require(!views_overlap(x, w) && !views_overlap(x, dy), "dx overlaps an input");
  }
  if (v.valid && double(N) * M * double(P) * double(Q) * C * R * S > kMaxWork) return -1;

  const Vector<T> dbias_view(dbias.memory->data(), Kokkos::LayoutStride(B, 1));
  const bool with_dbias = bias_choice >= 3;
  // The backward GEMMs' documented limits: BLAS' 32-bit extents, and one image's unrolled
  // matrix within the workspace budget (the default one always holds these).
  const bool blas_fits =
      N == 0 || (__int128(C) * R * S < INT32_MAX && M < INT32_MAX && P * Q < INT32_MAX);
  judge(
      op, v, p.workspace_limit_bytes == 0 && blas_fits, weights ? Snapshot(x, dy) : Snapshot(w, dy),
      weights ? Snapshot(w, dbias) : Snapshot(x),
      [&] {
        if (!weights) return kcnn::conv2d_backward_data(Space(), dy.view, w.view, x.view, p);
        if (with_dbias)
          return kcnn::conv2d_backward_weights(Space(), x.view, dy.view, w.view, dbias_view, p);
        kcnn::conv2d_backward_weights(Space(), x.view, dy.view, w.view, p);
      },
      [&] {
        if (!reference_fits({N, C, H, W, M, R, S})) return;
        const auto c = conv_case(N, C, H, W, M, R, S, p);
        const double u = unit_roundoff<T>();
        if (!weights) {
          const auto want = kcnn_test::host_backward_data(c, dy.values, w.values);
          auto bound =
              kcnn_test::host_backward_data(c, magnitudes(dy.values), magnitudes(w.values));
          for (auto& b : bound)
            b = sum_bound(u, double(M) * R * S, b);
          return compare(op, "dx", read(x), want, bound);
        }
        std::vector<double> dw, db, dw_mag, db_mag;
        kcnn_test::host_backward_weights(c, x.values, dy.values, dw, db);
        kcnn_test::host_backward_weights(c, magnitudes(x.values), magnitudes(dy.values), dw_mag,
                                         db_mag);
        const double K = double(N) * double(P) * double(Q);
        for (auto& b : dw_mag)
          b = sum_bound(u, K, b);
        compare(op, "dw", read(w), dw, dw_mag);
        if (B == 0) return;
        for (auto& b : db_mag)
          b = sum_bound(u, K, b);
        compare(op, "dbias", read(dbias), db, db_mag);
      });
  return 0;
}

template <class T>
int fuzz_pool2d_backward(Draw& d) {
  constexpr const char* op = "pool2d_backward";
  kcnn::Pool2dParams q = draw_pool_params(d, d.enumeration<kcnn::Layout>(2));
  if (!d.rarely()) q.activation = kcnn::Activation::Identity;
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10);
  if (!reference_fits({N, C})) return -1;
  Verdict v;
  v.require(q.activation == kcnn::Activation::Identity, "a non-Identity activation");
  __int128 P, Q;
  pool_geometry(v, q, H, W, P, Q);
  const std::uint64_t yP = output_extent(d, P), yQ = output_extent(d, Q);
  v.require(__int128(yP) == P && __int128(yQ) == Q, "wrong dy extents");
  const std::uint64_t dxH = d.rarely() ? d.extent(10) : H;
  v.require(dxH == H, "wrong dx extents");

  const kcnn::Layout layout = valid_layout(q.layout) ? q.layout : kcnn::Layout::NCHW;
  Operand<T> x, dy, dx;
  if (!make_operand(x, in_layout(layout, N, C, H, W), draw_storage(d), false, d.seed()) ||
      !make_operand(dy, in_layout(layout, N, C, yP, yQ), draw_storage(d), false, d.seed()))
    return -1;
  const auto dxe = in_layout(layout, N, C, dxH, W);
  const bool alias = d.rarely() && make_alias(dx, dxe, d.flag() ? x : dy, d.small(0, 3));
  if (!alias && !make_operand(dx, dxe, draw_storage(d), true, 0)) return -1;
  for (const auto* t : {&x, &dy, &dx})
    v.require(t->representable, "a tensor with 2^63 or more elements");
  v.require(x.contiguous && dy.contiguous && dx.contiguous, "a non-contiguous tensor");
  v.require(!views_overlap(dx, x) && !views_overlap(dx, dy), "dx overlaps an input");
  if (v.valid && double(dy.count) * q.window_h * q.window_w > kMaxWork) return -1;

  judge(
      op, v, true, Snapshot(x, dy), Snapshot(dx),
      [&] { kcnn::pool2d_backward(Space(), x.view, dy.view, dx.view, q); },
      [&] {
        if (dx.count == 0) return;
        const auto pc = pool_case(N, C, H, W, q);
        const auto want = kcnn_test::host_pool_backward(pc, x.values, dy.values);
        auto bound = kcnn_test::host_pool_backward(pc, x.values, magnitudes(dy.values));
        const double cells = double(q.window_h) * q.window_w;
        for (auto& b : bound)
          b = sum_bound(unit_roundoff<T>(), cells + 1, b);
        compare(op, "dx", read(dx), want, bound);
      });
  return 0;
}

template <class T>
int fuzz_activation_backward(Draw& d) {
  constexpr const char* op = "activation_backward";
  const auto activation = d.enumeration<kcnn::Activation>(4);
  const std::array<std::uint64_t, 4> e = {d.extent(3), d.extent(4), d.extent(5), d.extent(5)};
  Verdict v;
  v.require(valid_activation(activation), "unknown activation");
  Operand<T> y, dy, dx;
  const Storage ys = draw_storage(d), dys = d.rarely() ? draw_storage(d) : ys;
  if (!make_operand(y, e, ys, false, d.seed()) || !make_operand(dy, e, dys, false, d.seed()))
    return -1;
  // dx: its own tensor, dy itself or y itself (in place), or a partial overlap
  const int where = d.rarely() ? d.small(1, 3) : 0;
  bool in_place = false;
  if (where == 1 || where == 2) {
    const Operand<T>& same = where == 1 ? dy : y;
    dx.extents = same.extents, dx.memory = same.memory, dx.view = same.view;
    dx.representable = same.representable, dx.contiguous = same.contiguous, dx.count = same.count;
    in_place = true;
  } else if (!(where == 3 && make_alias(dx, e, dy, 1)) &&
             !make_operand(dx, e, d.rarely() ? draw_storage(d) : ys, true, 0)) {
    return -1;
  }
  for (const auto* t : {&y, &dy, &dx})
    v.require(t->representable, "a tensor with 2^63 or more elements");
  v.require(y.contiguous && dy.contiguous && dx.contiguous, "a non-contiguous tensor");
  for (int i = 0; i < 4; ++i)
    v.require(e[i] <= 1 ||
                  (dy.view.stride(i) == y.view.stride(i) && dx.view.stride(i) == y.view.stride(i)),
              "strides unlike y's");
  if (!in_place)
    v.require(!views_overlap(dx, y) && !views_overlap(dx, dy), "dx partially overlaps an input");

  const std::vector<double> yv = y.values, dyv = dy.values;
  const Snapshot inputs = where == 1 ? Snapshot(y) : where == 2 ? Snapshot(dy) : Snapshot(y, dy);
  judge(
      op, v, true, inputs, Snapshot(dx),
      [&] { kcnn::activation_backward(Space(), activation, y.view, dy.view, dx.view); },
      [&] {
        const double u = unit_roundoff<T>();
        std::vector<double> want(yv.size()), bound(yv.size());
        for (std::size_t i = 0; i < yv.size(); ++i) {
          const double s = yv[i], g = dyv[i];
          switch (activation) {
            case kcnn::Activation::Identity:
              want[i] = g;
              break;
            case kcnn::Activation::ReLU:
              want[i] = s > 0 ? g : 0;
              break;
            case kcnn::Activation::Sigmoid:
              want[i] = g * s * (1 - s);
              break;
            case kcnn::Activation::Tanh:
              want[i] = g * (1 - s * s);
              break;
          }
          bound[i] = 8 * u * std::abs(g) * (1 + std::abs(s)) * (1 + std::abs(s));
        }
        compare(op, "dx", read(dx), want, bound);
      });
  return 0;
}

template <class T>
int fuzz_one(Draw& d) {
  switch (d.small(0, 8)) {
    case 0:
      return fuzz_conv2d_forward<T>(d, false);
    case 1:
      return fuzz_conv2d_forward<T>(d, true);
    case 2:
      return fuzz_pool2d_forward<T>(d);
    case 3:
      return fuzz_unroll<T>(d, false);
    case 4:
      return fuzz_unroll<T>(d, true);
    case 5:
      return fuzz_conv2d_backward<T>(d, false);
    case 6:
      return fuzz_conv2d_backward<T>(d, true);
    case 7:
      return fuzz_pool2d_backward<T>(d);
    default:
      return fuzz_activation_backward<T>(d);
  }
}

}  // namespace kcnn_fuzz
