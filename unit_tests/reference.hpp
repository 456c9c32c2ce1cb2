// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file reference.hpp
/// \brief The independent double-precision host references every check compares kcnn
///        with: convolution, pooling, their backward operations, im2col and col2im,
///        written from the definitions (flat arrays in the case's layout, every index
///        computed here from first principles). No test framework: the unit tests and
///        the fuzz target (unit_tests/fuzz) share them.
#pragma once

#include <kcnn/types.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace kcnn_test {

/// ConvAlgo::Grouped's documented workspace: its packed filters, groups x (M/groups
/// rounded up to 8, or to 4 where it is at most 4) x C/groups x R x S accumulators (float
/// for 16-bit tensors), plus 16 bytes.
template <class T>
double grouped_workspace_bytes(std::uint64_t groups, std::uint64_t group_C, std::uint64_t group_M,
                               std::uint64_t R, std::uint64_t S) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const std::uint64_t slot = group_M <= 4 ? 4 : 8;
  const double filters = double(slot) * double((group_M + slot - 1) / slot);
  return double(groups) * filters * double(group_C) * double(R) * double(S) * sizeof(Acc) + 16;
}

/// One convolution problem, described the way a user would.
struct ConvCase {
  std::string name;
  int N, C, H, W, M, R, S;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  kcnn::Layout layout = kcnn::Layout::NCHW;
  kcnn::Activation activation = kcnn::Activation::Identity;
  bool bias = false;
  kcnn::MathMode math = kcnn::MathMode::Strict;  ///< for float; double cases run Strict
  std::size_t workspace_limit_bytes = 0;         ///< 0: kcnn::workspace_limit()
  /// Conv2dParams::groups: filter m reads channels [g C/groups, (g+1) C/groups) of its
  /// group g = m / (M/groups); w holds C/groups channels.
  int groups = 1;

  kcnn::Conv2dParams params() const {
    kcnn::Conv2dParams p;
    p.workspace_limit_bytes = workspace_limit_bytes;
    p.groups = groups;
    p.stride_h = stride_h, p.stride_w = stride_w, p.pad_h = pad_h, p.pad_w = pad_w;
    p.dilation_h = dilation_h, p.dilation_w = dilation_w;
    p.layout = layout, p.activation = activation;
    p.math = math;
    return p;
  }
  // In 64 bits: padding, dilation and stride may be as large as int allows.
  int P() const { return extent(H, pad_h, dilation_h, R, stride_h); }
  int Q() const { return extent(W, pad_w, dilation_w, S, stride_w); }
  static int extent(int in, int pad, int dilation, int kernel, int stride) {
    const std::int64_t span = std::int64_t{dilation} * (kernel - 1) + 1;
    return static_cast<int>((in + 2 * std::int64_t{pad} - span) / stride + 1);
  }
  bool nhwc() const { return layout == kcnn::Layout::NHWC; }
  /// Storage extents of x, w, y in this case's layout.
  std::array<int, 4> x_extents() const {
    return nhwc() ? std::array{N, H, W, C} : std::array{N, C, H, W};
  }
  std::array<int, 4> w_extents() const {
    const int Cg = C / groups;
    return nhwc() ? std::array{M, R, S, Cg} : std::array{M, Cg, R, S};
  }
  /// The first input channel filter m reads.
  int first_channel(int m) const { return m / (M / groups) * (C / groups); }
  std::array<int, 4> y_extents() const {
    return nhwc() ? std::array{N, P(), Q(), M} : std::array{N, M, P(), Q()};
  }
};

/// One pooling problem, described the way a user would.
struct PoolCase {
  std::string name;
  int N, C, H, W;
  int window_h = 2, window_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  kcnn::PoolMode mode = kcnn::PoolMode::Max;
  bool count_include_pad = true;
  kcnn::Layout layout = kcnn::Layout::NCHW;
  kcnn::Activation activation = kcnn::Activation::Identity;
  bool bias = false;

  kcnn::Pool2dParams params() const {
    kcnn::Pool2dParams p;
    p.mode = mode;
    p.window_h = window_h, p.window_w = window_w, p.stride_h = stride_h, p.stride_w = stride_w;
    p.pad_h = pad_h, p.pad_w = pad_w;
    p.count_include_pad = count_include_pad;
    p.layout = layout, p.activation = activation;
    return p;
  }
  int P() const {
    return static_cast<int>((std::int64_t{H} + 2 * std::int64_t{pad_h} - window_h) / stride_h + 1);
  }
  int Q() const {
    return static_cast<int>((std::int64_t{W} + 2 * std::int64_t{pad_w} - window_w) / stride_w + 1);
  }
  bool nhwc() const { return layout == kcnn::Layout::NHWC; }
  std::array<int, 4> x_extents() const {
    return nhwc() ? std::array{N, H, W, C} : std::array{N, C, H, W};
  }
  std::array<int, 4> y_extents() const {
    return nhwc() ? std::array{N, P(), Q(), C} : std::array{N, C, P(), Q()};
  }
};

/// Uniform random values in [-1, 1] from a fixed seed; never all zeros.
inline std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& e : v)
    e = dist(rng);
  return v;
}

inline std::size_t product(const std::array<int, 4>& e) {
  return static_cast<std::size_t>(e[0]) * e[1] * e[2] * e[3];
}

// ---------------------------------------------------------------------------------
// Flat indices in a case's layout, and the activations
// ---------------------------------------------------------------------------------

/// The flat index of (n, ch, h, w) in a tensor of `channels` x `rows` x `cols` per image,
/// NHWC or NCHW. Every tensor of the references is indexed through it.
inline std::size_t layout_index(bool nhwc, int channels, int rows, int cols, int n, int ch, int h,
                                int w) {
  return nhwc ? ((static_cast<std::size_t>(n) * rows + h) * cols + w) * channels + ch
              : ((static_cast<std::size_t>(n) * channels + ch) * rows + h) * cols + w;
}
inline std::size_t x_index(const ConvCase& c, int n, int ch, int h, int w) {
  return layout_index(c.nhwc(), c.C, c.H, c.W, n, ch, h, w);
}
/// w's element for filter m and input channel ch (one of m's group's channels).
inline std::size_t w_index(const ConvCase& c, int m, int ch, int r, int s) {
  return layout_index(c.nhwc(), c.C / c.groups, c.R, c.S, m, ch - c.first_channel(m), r, s);
}
inline std::size_t y_index(const ConvCase& c, int n, int m, int p, int q) {
  return layout_index(c.nhwc(), c.M, c.P(), c.Q(), n, m, p, q);
}
inline std::size_t pool_x_index(const PoolCase& c, int n, int ch, int h, int w) {
  return layout_index(c.nhwc(), c.C, c.H, c.W, n, ch, h, w);
}
inline std::size_t pool_y_index(const PoolCase& c, int n, int ch, int p, int q) {
  return layout_index(c.nhwc(), c.C, c.P(), c.Q(), n, ch, p, q);
}

/// (n, ch, h, w) of flat index i in a tensor indexed as layout_index does.
inline std::array<std::int64_t, 4> layout_coordinates(bool nhwc, std::int64_t channels,
                                                      std::int64_t rows, std::int64_t cols,
                                                      std::int64_t i) {
  if (nhwc)
    return {i / channels / cols / rows, i % channels, (i / channels / cols) % rows,
            (i / channels) % cols};
  return {i / cols / rows / channels, (i / cols / rows) % channels, (i / cols) % rows, i % cols};
}

/// The activation functions, in double, from their definitions.
inline double host_activation(kcnn::Activation a, double v) {
  switch (a) {
    case kcnn::Activation::Identity:
      return v;
    case kcnn::Activation::ReLU:
      return v > 0 ? v : 0;
    case kcnn::Activation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case kcnn::Activation::Tanh:
      return std::tanh(v);
  }
  return v;
}

// ---------------------------------------------------------------------------------
// Forward operations
// ---------------------------------------------------------------------------------

/// Calls f(n, m, ch, p, q, r, s, h, w) for every multiply-add of the convolution that
/// reads a real (not padded) input cell: filter m reads its group's channels ch.
template <class F>
inline void for_each_mac(const ConvCase& c, F&& f) {
  for (int n = 0; n < c.N; ++n)
    for (int m = 0; m < c.M; ++m)
      for (int p = 0; p < c.P(); ++p)
        for (int q = 0; q < c.Q(); ++q)
          for (int ch = c.first_channel(m); ch < c.first_channel(m) + c.C / c.groups; ++ch)
            for (int r = 0; r < c.R; ++r)
              for (int s = 0; s < c.S; ++s) {
                const std::int64_t h =
                    std::int64_t{p} * c.stride_h - c.pad_h + std::int64_t{r} * c.dilation_h;
                const std::int64_t w =
                    std::int64_t{q} * c.stride_w - c.pad_w + std::int64_t{s} * c.dilation_w;
                if (h >= 0 && h < c.H && w >= 0 && w < c.W)
                  f(n, m, ch, p, q, r, s, static_cast<int>(h), static_cast<int>(w));
              }
}

/// Independent double-precision convolution on the host: act(bias[m] + the multiply-adds
/// for_each_mac lists), in the order it lists them.
inline std::vector<double> host_conv2d(const ConvCase& c, const std::vector<double>& x,
                                       const std::vector<double>& w,
                                       const std::vector<double>& bias) {
  std::vector<double> y(product(c.y_extents()), 0.0);
  if (c.bias)
    for (int n = 0; n < c.N; ++n)
      for (int m = 0; m < c.M; ++m)
        for (int p = 0; p < c.P(); ++p)
          for (int q = 0; q < c.Q(); ++q)
            y[y_index(c, n, m, p, q)] = bias[m];
  for_each_mac(c, [&](int n, int m, int ch, int p, int q, int r, int s, int h, int wc) {
    y[y_index(c, n, m, p, q)] += x[x_index(c, n, ch, h, wc)] * w[w_index(c, m, ch, r, s)];
  });
  for (auto& v : y)
    v = host_activation(c.activation, v);
  return y;
}

/// Independent double-precision pooling on the host: act(pool(x) + bias[c]). Average
/// divisors follow PyTorch's rule (window clipped to the padded input when padding
/// counts, to the real input when it does not); Max propagates NaN.
inline std::vector<double> host_pool2d(const PoolCase& c, const std::vector<double>& x,
                                       const std::vector<double>& bias) {
  const int P = c.P(), Q = c.Q();
  std::vector<double> y(static_cast<std::size_t>(c.N) * c.C * P * Q);
  for (int n = 0; n < c.N; ++n)
    for (int ch = 0; ch < c.C; ++ch)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          const std::int64_t hs = std::int64_t{p} * c.stride_h - c.pad_h,
                             ws = std::int64_t{q} * c.stride_w - c.pad_w;
          const std::int64_t padded_rows =
              std::min<std::int64_t>(hs + c.window_h, std::int64_t{c.H} + c.pad_h) - hs;
          const std::int64_t padded_cols =
              std::min<std::int64_t>(ws + c.window_w, std::int64_t{c.W} + c.pad_w) - ws;
          double max = -std::numeric_limits<double>::infinity(), sum = 0;
          std::int64_t real = 0;
          bool nan = false;
          // The window's real rows and columns (padded cells never count): loops bounded
          // by the input, whatever the window.
          for (std::int64_t h = std::max<std::int64_t>(hs, 0);
               h < std::min<std::int64_t>(hs + c.window_h, c.H); ++h)
            for (std::int64_t w = std::max<std::int64_t>(ws, 0);
                 w < std::min<std::int64_t>(ws + c.window_w, c.W); ++w) {
              const double v = x[pool_x_index(c, n, ch, static_cast<int>(h), static_cast<int>(w))];
              nan = nan || std::isnan(v);
              max = std::max(max, v);
              sum += v;
              ++real;
            }
          double v = 0;
          if (c.mode == kcnn::PoolMode::Max) {
            v = nan ? std::numeric_limits<double>::quiet_NaN() : max;
          } else {
            v = sum / (c.count_include_pad ? padded_rows * padded_cols : real);
          }
          if (c.bias) v += bias[ch];
          y[pool_y_index(c, n, ch, p, q)] = host_activation(c.activation, v);
        }
  return y;
}

// ---------------------------------------------------------------------------------
// Backward operations
// ---------------------------------------------------------------------------------

inline std::vector<double> host_backward_data(const ConvCase& c, const std::vector<double>& dy,
                                              const std::vector<double>& w) {
  std::vector<double> dx(product(c.x_extents()), 0.0);
  for_each_mac(c, [&](int n, int m, int ch, int p, int q, int r, int s, int h, int wc) {
    dx[x_index(c, n, ch, h, wc)] += dy[y_index(c, n, m, p, q)] * w[w_index(c, m, ch, r, s)];
  });
  return dx;
}

inline void host_backward_weights(const ConvCase& c, const std::vector<double>& x,
                                  const std::vector<double>& dy, std::vector<double>& dw,
                                  std::vector<double>& db) {
  dw.assign(product(c.w_extents()), 0.0);
  db.assign(c.M, 0.0);
  for_each_mac(c, [&](int n, int m, int ch, int p, int q, int r, int s, int h, int wc) {
    dw[w_index(c, m, ch, r, s)] += dy[y_index(c, n, m, p, q)] * x[x_index(c, n, ch, h, wc)];
  });
  for (int n = 0; n < c.N; ++n)
    for (int m = 0; m < c.M; ++m)
      for (int p = 0; p < c.P(); ++p)
        for (int q = 0; q < c.Q(); ++q)
          db[m] += dy[y_index(c, n, m, p, q)];
}

/// Scatters every output gradient onto its window: Max to the first strictly largest
/// real cell in row-major window order, Average dy/divisor to every real cell with
/// PyTorch's divisor (as host_pool2d).
inline std::vector<double> host_pool_backward(const PoolCase& c, const std::vector<double>& x,
                                              const std::vector<double>& dy) {
  std::vector<double> dx(product(c.x_extents()), 0.0);
  for (int n = 0; n < c.N; ++n)
    for (int ch = 0; ch < c.C; ++ch)
      for (int p = 0; p < c.P(); ++p)
        for (int q = 0; q < c.Q(); ++q) {
          const std::int64_t hs = std::int64_t{p} * c.stride_h - c.pad_h,
                             ws = std::int64_t{q} * c.stride_w - c.pad_w;
          const std::int64_t padded =
              (std::min<std::int64_t>(hs + c.window_h, std::int64_t{c.H} + c.pad_h) - hs) *
              (std::min<std::int64_t>(ws + c.window_w, std::int64_t{c.W} + c.pad_w) - ws);
          std::vector<std::size_t> cells;
          for (std::int64_t h = std::max<std::int64_t>(hs, 0);
               h < std::min<std::int64_t>(hs + c.window_h, c.H); ++h)
            for (std::int64_t w = std::max<std::int64_t>(ws, 0);
                 w < std::min<std::int64_t>(ws + c.window_w, c.W); ++w)
              cells.push_back(pool_x_index(c, n, ch, static_cast<int>(h), static_cast<int>(w)));
          const double g = dy[pool_y_index(c, n, ch, p, q)];
          if (c.mode == kcnn::PoolMode::Max) {
            std::size_t best = cells[0];
            for (std::size_t cell : cells)
              if (x[cell] > x[best]) best = cell;
            dx[best] += g;
          } else {
            const double divisor = c.count_include_pad ? padded : double(cells.size());
            for (std::size_t cell : cells)
              dx[cell] += g / divisor;
          }
        }
  return dx;
}

// ---------------------------------------------------------------------------------
// im2col / col2im
// ---------------------------------------------------------------------------------

/// Flat row-major index of the unrolled entry of (image b of the slice, channel ch,
/// filter tap (r, s), output pixel (p, q)), written out from the definition.
inline std::size_t cols_index(const ConvCase& c, int n_slice, int b, int ch, int r, int s, int p,
                              int q) {
  const std::size_t P = c.P(), Q = c.Q(), K = std::size_t(c.C) * c.R * c.S;
  const std::size_t pixel = (b * P + p) * Q + q;
  if (c.nhwc()) return pixel * K + (std::size_t(r) * c.S + s) * c.C + ch;
  const std::size_t row = (std::size_t(ch) * c.R + r) * c.S + s;
  return row * (n_slice * P * Q) + pixel;
}

/// Calls f(b, ch, r, s, p, q, h, w) for every entry of the slice's unrolled matrix.
template <class F>
inline void for_each_entry(const ConvCase& c, int n_slice, F&& f) {
  for (int b = 0; b < n_slice; ++b)
    for (int ch = 0; ch < c.C; ++ch)
      for (int r = 0; r < c.R; ++r)
        for (int s = 0; s < c.S; ++s)
          for (int p = 0; p < c.P(); ++p)
            for (int q = 0; q < c.Q(); ++q) {
              const std::int64_t h =
                  std::int64_t{p} * c.stride_h - c.pad_h + std::int64_t{r} * c.dilation_h;
              const std::int64_t w =
                  std::int64_t{q} * c.stride_w - c.pad_w + std::int64_t{s} * c.dilation_w;
              f(b, ch, r, s, p, q, h, w);
            }
}

inline bool inside(const ConvCase& c, std::int64_t h, std::int64_t w) {
  return h >= 0 && h < c.H && w >= 0 && w < c.W;
}

/// The unrolled matrix of images [b0, b0 + n), built independently on the host.
inline std::vector<double> host_im2col(const ConvCase& c, const std::vector<double>& x, int b0,
                                       int n) {
  std::vector<double> cols(std::size_t(c.C) * c.R * c.S * n * c.P() * c.Q(), -7.0);
  for_each_entry(
      c, n, [&](int b, int ch, int r, int s, int p, int q, std::int64_t h, std::int64_t w) {
        cols[cols_index(c, n, b, ch, r, s, p, q)] =
            inside(c, h, w) ? x[x_index(c, b0 + b, ch, static_cast<int>(h), static_cast<int>(w))]
                            : 0.0;
      });
  return cols;
}

/// col2im on the host: x's slice zeroed, then every entry added where im2col took it.
inline std::vector<double> host_col2im(const ConvCase& c, const std::vector<double>& cols,
                                       std::vector<double> x, int b0, int n) {
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c.C; ++ch)
      for (int h = 0; h < c.H; ++h)
        for (int w = 0; w < c.W; ++w)
          x[x_index(c, b0 + b, ch, h, w)] = 0.0;
  for_each_entry(c, n,
                 [&](int b, int ch, int r, int s, int p, int q, std::int64_t h, std::int64_t w) {
                   if (inside(c, h, w))
                     x[x_index(c, b0 + b, ch, static_cast<int>(h), static_cast<int>(w))] +=
                         cols[cols_index(c, n, b, ch, r, s, p, q)];
                 });
  return x;
}

}  // namespace kcnn_test
