// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_harness.hpp
/// \brief The fuzz harness's machinery: choices drawn from the fuzzer's bytes (Draw),
///        operands in several storages, the documented validity rules (Verdict) and
///        the judgement of one call (judge). See fuzz_public_api.cpp for what is checked.
#pragma once

///    of the K terms of each output (u the unit roundoff of the element type), plus 8 u
///    of the result for the activation; im2col is a copy and must be exact.
/// Anything else calls std::abort(), which libFuzzer reports with the input.
#include <fuzzer/FuzzedDataProvider.h>

#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../reference.hpp"

namespace kcnn_fuzz {

using Space = Kokkos::DefaultHostExecutionSpace;
template <class T>
using Tensor = Kokkos::View<T****, Kokkos::LayoutStride, Kokkos::HostSpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using Vector = Kokkos::View<T*, Kokkos::LayoutStride, Kokkos::HostSpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Tensors above this many elements are not built (the input is skipped): every run
/// stays fast, and the references' int extents cannot overflow.
inline constexpr std::uint64_t kMaxElements = 2048;
/// Multiply-adds above which an input is skipped (the reference is a direct loop).
inline constexpr double kMaxWork = 2e5;

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  std::fprintf(stderr, "\nkcnn fuzz failure in %s: %s\n", op, what.c_str());
  std::abort();
}

/// Reads choices from the fuzzer's bytes. Most values come from small ranges; `rarely`
/// (1 in 16) switches to the edges where validation code breaks.
class Draw {
 public:
  explicit Draw(FuzzedDataProvider& in) : in_(in) {}
  bool rarely() { return in_.ConsumeIntegralInRange<int>(0, 15) == 15; }
  bool flag() { return in_.ConsumeBool(); }
  int small(int lo, int hi) { return in_.ConsumeIntegralInRange<int>(lo, hi); }
  std::uint32_t seed() { return in_.ConsumeIntegral<std::uint32_t>(); }

  /// An extent in [0, max], or rarely one past a 32- or 64-bit limit. `rank4`: as a
  /// rank-4 View keeps it (Kokkos 3.x stores those extents in 32 bits).
  std::uint64_t extent(int max, bool rank4 = true) {
    static constexpr std::uint64_t edges[] = {
        (1ULL << 31) - 1, 1ULL << 31,       1ULL << 32, 3037000500ULL /* ~sqrt(2^63) */,
        1ULL << 62,       (1ULL << 63) - 1, 1ULL << 63, ~0ULL};
    if (!rarely()) return static_cast<std::uint64_t>(small(0, max));
    const std::uint64_t e = edges[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
    if (!rank4) return e == ~0ULL ? e - 1 : e;  // Kokkos reads ~0 as "no extent given"
    using Probe = Kokkos::View<char****, Kokkos::LayoutStride, Kokkos::HostSpace,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    return Probe(nullptr, Kokkos::LayoutStride(e, 1, 1, 1, 1, 1, 1, 1)).extent(0);
  }
  /// A stride, padding, dilation or window value in [lo, hi], or rarely an int edge.
  int param(int lo, int hi) {
    static constexpr int edges[] = {INT_MIN, -1, 0, 1 << 29, INT_MAX - 1, INT_MAX};
    if (rarely()) return edges[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
    return small(lo, hi);
  }
  /// One of an enum's `count` values, or rarely a value outside them.
  template <class E>
  E enumeration(int count) {
    if (rarely()) return static_cast<E>(flag() ? -1 : count + small(0, 3));
    return static_cast<E>(small(0, count - 1));
  }

 private:
  FuzzedDataProvider& in_;
};

/// What the harness concludes about a call from the documented rules; `why` names the
/// first rule broken.
struct Verdict {
  bool valid = true;
  std::string why;
  void require(bool rule, const char* what) {
    if (!rule && valid) valid = false, why = what;
  }
};

inline bool valid_layout(kcnn::Layout l) {
  return l == kcnn::Layout::NCHW || l == kcnn::Layout::NHWC;
}
inline bool valid_activation(kcnn::Activation a) {
  const int v = static_cast<int>(a);
  return v >= 0 && v <= 3;
}
inline bool valid_pool_mode(kcnn::PoolMode m) {
  return m == kcnn::PoolMode::Max || m == kcnn::PoolMode::Average;
}

/// Output extent of a window, in 128 bits so that no parameter overflows it; < 1 when
/// the window does not fit.
inline __int128 window_output(std::uint64_t in, std::uint64_t kernel, int stride, int pad,
                              int dilation) {
  const __int128 span = __int128(dilation) * (__int128(kernel) - 1) + 1;
  const __int128 room = __int128(in) + 2 * __int128(pad) - span;
  return room < 0 ? 0 : room / stride + 1;
}

/// The unit roundoff of T.
template <class T>
double unit_roundoff() {
  return std::ldexp(1.0, -std::numeric_limits<T>::digits);
}

// ---------------------------------------------------------------------------------
// Tensors: memory, a View of it in one of several storages, and logical values
// ---------------------------------------------------------------------------------

/// A rank-4 operand. `extents` are in storage order (the layout's); `values` are the
/// logical contents in row-major order of those extents, as stored (rounded to T).
template <class T>
struct Operand {
  std::array<std::uint64_t, 4> extents{};
  std::shared_ptr<std::vector<T>> memory;
  Tensor<T> view;
  std::vector<double> values;
  bool representable = true;  ///< every extent and the element count fit int64
  bool contiguous = true;     ///< Kokkos' definition: span() == size()
  std::uint64_t count = 0;

  std::size_t bytes() const { return memory->size() * sizeof(T); }
};

/// Whether the product of the non-zero values is below 2^63 (kcnn's documented size
/// rule: a product of sizes that are not zero must fit int64, whatever the order).
inline bool nonzero_product_fits(std::initializer_list<__int128> values) {
  __int128 n = 1;
  for (__int128 v : values) {
    if (v == 0) continue;
    n *= v;
    if (v < 0 || n > INT64_MAX) return false;
  }
  return true;
}

/// The element count of `e` into `count`; false when an extent or the product of the
/// non-zero extents does not fit int64 (an operand kcnn must refuse).
inline bool element_count(const std::array<std::uint64_t, 4>& e, std::uint64_t& count) {
  bool fits = true;
  for (std::uint64_t x : e)
    fits = fits && x <= static_cast<std::uint64_t>(INT64_MAX);
  fits = fits && nonzero_product_fits({e[0], e[1], e[2], e[3]});
  count = 1;
  for (std::uint64_t x : e)
    count = fits ? count * x : 0;
  return fits;
}

enum class Storage { RowMajor, ColumnMajor, Gapped };

/// Builds an operand of extents `e` with random values (or NaN when `poisoned`); returns
/// false when it is representable but larger than kMaxElements (the input is skipped).
/// An unrepresentable operand is a View with row-major strides (wrapped, as Kokkos
/// computes them) over 16 NaN elements: a call must refuse it before touching memory.
template <class T>
bool make_operand(Operand<T>& op, const std::array<std::uint64_t, 4>& e, Storage storage,
                  bool poisoned, std::uint32_t seed) {
  op.extents = e;
  op.representable = element_count(e, op.count);
  if (op.representable && op.count > kMaxElements) return false;
  std::array<std::uint64_t, 4> stride{};
  if (!op.representable || storage == Storage::RowMajor) {
    stride = {e[1] * e[2] * e[3], e[2] * e[3], e[3], 1};
  } else if (storage == Storage::ColumnMajor) {
    stride = {1, e[0], e[0] * e[1], e[0] * e[1] * e[2]};
  } else {  // a gap after every row of the last extent
    stride = {e[1] * e[2] * (e[3] + 1), e[2] * (e[3] + 1), e[3] + 1, 1};
  }
  std::uint64_t kokkos_span = 0, true_span = 1;
  for (int i = 0; i < 4; ++i) {
    kokkos_span = std::max(kokkos_span, e[i] * stride[i]);
    if (op.representable && e[i] > 0) true_span += (e[i] - 1) * stride[i];
  }
  if (op.count == 0) kokkos_span = 0;
  op.contiguous = kokkos_span == op.count;
  const std::size_t size = op.representable && op.count > 0 ? std::max(kokkos_span, true_span) : 16;
  op.memory = std::make_shared<std::vector<T>>(size, T(std::numeric_limits<double>::quiet_NaN()));
  op.view = Tensor<T>(op.memory->data(), Kokkos::LayoutStride(e[0], stride[0], e[1], stride[1],
                                                              e[2], stride[2], e[3], stride[3]));
  if (!op.representable || op.count == 0) return true;  // (an extent may still be huge)
  op.values.assign(op.count, std::numeric_limits<double>::quiet_NaN());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::size_t i = 0;
  for (std::uint64_t a = 0; a < e[0]; ++a)
    for (std::uint64_t b = 0; b < e[1]; ++b)
      for (std::uint64_t c = 0; c < e[2]; ++c)
        for (std::uint64_t d = 0; d < e[3]; ++d, ++i) {
          if (poisoned) continue;
          const T v = static_cast<T>(dist(rng));
          op.view(a, b, c, d) = v;
          op.values[i] = static_cast<double>(v);
        }
  return true;
}

/// An output View over the memory of `input` (an aliasing call): row-major, starting
/// `offset` elements in; false when it does not fit there.
template <class T>
bool make_alias(Operand<T>& out, const std::array<std::uint64_t, 4>& e, const Operand<T>& input,
                std::size_t offset) {
  out.extents = e;
  // (An empty input's memory block is not its View's: writing it is no overlap.)
  if (!element_count(e, out.count) || out.count == 0 || input.count == 0) return false;
  if (offset + out.count > input.memory->size()) return false;
  out.memory = input.memory;
  out.contiguous = true;
  out.view = Tensor<T>(
      input.memory->data() + offset,
      Kokkos::LayoutStride(e[0], e[1] * e[2] * e[3], e[1], e[2] * e[3], e[2], e[3], e[3], 1));
  return true;
}

/// Reads an operand's logical contents (row-major over its extents).
template <class T>
std::vector<double> read(const Operand<T>& op) {
  std::vector<double> v;
  if (op.count == 0) return v;
  v.reserve(op.count);
  const auto& e = op.extents;
  for (std::uint64_t a = 0; a < e[0]; ++a)
    for (std::uint64_t b = 0; b < e[1]; ++b)
      for (std::uint64_t c = 0; c < e[2]; ++c)
        for (std::uint64_t d = 0; d < e[3]; ++d)
          v.push_back(static_cast<double>(op.view(a, b, c, d)));
  return v;
}

inline std::vector<double> magnitudes(std::vector<double> v) {
  for (auto& e : v)
    e = std::abs(e);
  return v;
}

/// The bytes of every distinct memory block, to show that a call left them as they were.
class Snapshot {
 public:
  template <class... Ops>
  explicit Snapshot(const Ops&... ops) {
    (add(ops.memory->data(), ops.bytes()), ...);
  }
  void add(const void* p, std::size_t bytes) {
    for (const auto& b : blocks_)
      if (b.first == p) return;
    const auto* c = static_cast<const unsigned char*>(p);
    blocks_.emplace_back(p, std::vector<unsigned char>(c, c + bytes));
  }
  bool unchanged() const {
    for (const auto& b : blocks_)
      if (!b.second.empty() && std::memcmp(b.first, b.second.data(), b.second.size()) != 0)
        return false;
    return true;
  }

 private:
  std::vector<std::pair<const void*, std::vector<unsigned char>>> blocks_;
};

/// Whether two operands' Views share memory (Kokkos spans, as the documentation means;
/// in 128 bits, since an unrepresentable View's span is meaningless).
template <class T>
bool views_overlap(const Operand<T>& a, const Operand<T>& b) {
  const unsigned __int128 a_bytes = __int128(a.view.span()) * sizeof(T);
  const unsigned __int128 b_bytes = __int128(b.view.span()) * sizeof(T);
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = static_cast<unsigned __int128>(reinterpret_cast<std::uintptr_t>(a.view.data()));
  const auto pb = static_cast<unsigned __int128>(reinterpret_cast<std::uintptr_t>(b.view.data()));
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

/// Compares `got` with `want` element by element within `bound`; NaN is expected only
/// where `want` holds NaN.
inline void compare(const char* op, const char* name, const std::vector<double>& got,
                    const std::vector<double>& want, const std::vector<double>& bound) {
  if (got.size() != want.size()) fail(op, std::string(name) + ": size mismatch");
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i])
                        ? std::isnan(got[i])
                        : got[i] == want[i] || std::abs(got[i] - want[i]) <= bound[i];
    if (!ok) {
      char text[200];
      std::snprintf(text, sizeof text, "%s[%zu] = %.17g, reference %.17g, bound %.3g", name, i,
                    got[i], want[i], bound[i]);
      fail(op, text);
    }
  }
}

/// Runs `call` and judges it: see the file comment. `inputs` and `outputs` are
/// snapshots taken before; `check` compares the results of an accepted call.
template <class Call, class Check>
void judge(const char* op, const Verdict& verdict, bool must_serve, const Snapshot& inputs,
           const Snapshot& outputs, Call&& call, Check&& check) {
  bool refused = false;
  std::string message;
  try {
    call();
    Space().fence();
  } catch (const kcnn::Error& e) {
    refused = true;
    message = e.what();
  } catch (const std::exception& e) {
    fail(op, std::string("threw something other than kcnn::Error: ") + e.what());
  } catch (...) {
    fail(op, "threw something other than a std::exception");
  }
  if (refused) {
    if (!outputs.unchanged()) fail(op, "a refused call wrote its output: " + message);
    if (!inputs.unchanged()) fail(op, "a refused call wrote an input: " + message);
    if (verdict.valid && must_serve) fail(op, "refused a valid call: " + message);
    return;
  }
  if (!verdict.valid) fail(op, "accepted an invalid call (" + verdict.why + ")");
  if (!inputs.unchanged()) fail(op, "an accepted call wrote an input");
  check();
}

/// Whether the references can run: every extent of a valid call is small except those of
/// tensors without elements (H = 2^32 - 1 with W = 0, N = 2^31 with M = 0, ...), which
/// the references' int extents and loops cannot take. Those calls still run under the
/// sanitizers; only their values go unchecked.
inline bool reference_fits(std::initializer_list<std::uint64_t> extents) {
  for (std::uint64_t e : extents)
    if (e > kMaxElements) return false;
  return true;
}

/// The convolution geometry of the harness' draws, for the reference.
inline kcnn_test::ConvCase conv_case(std::uint64_t N, std::uint64_t C, std::uint64_t H,
                                     std::uint64_t W, std::uint64_t M, std::uint64_t R,
                                     std::uint64_t S, const kcnn::Conv2dParams& p) {
  kcnn_test::ConvCase c{"fuzz",  int(N),  int(C),       int(H),      int(W),
                        int(M),  int(R),  int(S),       p.stride_h,  p.stride_w,
                        p.pad_h, p.pad_w, p.dilation_h, p.dilation_w};
  c.layout = p.layout;
  c.activation = p.activation;
  c.groups = p.groups;
  return c;
}

inline std::array<std::uint64_t, 4> in_layout(kcnn::Layout l, std::uint64_t n, std::uint64_t c,
                                              std::uint64_t h, std::uint64_t w) {
  return l == kcnn::Layout::NHWC ? std::array{n, h, w, c} : std::array{n, c, h, w};
}

/// Draws the window parameters shared by the convolutions and im2col.
inline kcnn::Conv2dParams draw_conv_params(Draw& d) {
  kcnn::Conv2dParams p;
  p.stride_h = d.param(1, 3), p.stride_w = d.param(1, 3);
  p.pad_h = d.param(0, 3), p.pad_w = d.param(0, 3);
  p.dilation_h = d.param(1, 3), p.dilation_w = d.param(1, 3);
  p.layout = d.enumeration<kcnn::Layout>(2);
  p.activation = d.enumeration<kcnn::Activation>(4);
  p.algo = d.enumeration<kcnn::ConvAlgo>(9);  // Auto .. Grouped
  p.math = d.enumeration<kcnn::MathMode>(3);
  if (d.rarely()) p.workspace_limit_bytes = static_cast<std::size_t>(d.small(1, 8192));
  return p;
}

inline kcnn::Pool2dParams draw_pool_params(Draw& d, kcnn::Layout layout) {
  kcnn::Pool2dParams q;
  q.mode = d.enumeration<kcnn::PoolMode>(2);
  q.window_h = d.param(1, 3), q.window_w = d.param(1, 3);
  q.stride_h = d.param(1, 3), q.stride_w = d.param(1, 3);
  q.pad_h = d.param(0, 1), q.pad_w = d.param(0, 1);
  q.count_include_pad = d.flag();
  q.layout = d.rarely() ? d.enumeration<kcnn::Layout>(2) : layout;
  q.activation = d.enumeration<kcnn::Activation>(4);
  return q;
}

inline void require_window_params(Verdict& v, const kcnn::Conv2dParams& p) {
  v.require(p.stride_h >= 1 && p.stride_w >= 1, "stride < 1");
  v.require(p.dilation_h >= 1 && p.dilation_w >= 1, "dilation < 1");
  v.require(p.pad_h >= 0 && p.pad_w >= 0, "padding < 0");
  v.require(valid_layout(p.layout), "unknown layout");
  v.require(valid_activation(p.activation), "unknown activation");
}

inline void require_pool_params(Verdict& v, const kcnn::Pool2dParams& q) {
  v.require(valid_pool_mode(q.mode), "unknown pool mode");
  v.require(q.window_h >= 1 && q.window_w >= 1, "pool window < 1");
  v.require(q.stride_h >= 1 && q.stride_w >= 1, "pool stride < 1");
  v.require(q.pad_h >= 0 && q.pad_w >= 0, "pool padding < 0");
  v.require(__int128(q.window_h) * q.window_w < (__int128(1) << 31), "pool window area >= 2^31");
  v.require(q.pad_h < q.window_h && q.pad_w < q.window_w, "pool padding >= window");
  v.require(valid_layout(q.layout), "unknown pool layout");
  v.require(valid_activation(q.activation), "unknown pool activation");
}

/// A standalone pooling's geometry: its rules, and P, Q (-1 when a rule already failed).
inline void pool_geometry(Verdict& v, const kcnn::Pool2dParams& q, std::uint64_t H, std::uint64_t W,
                          __int128& P, __int128& Q) {
  require_pool_params(v, q);
  v.require(H >= 1 && W >= 1, "x without rows or columns");
  P = Q = -1;
  if (!v.valid) return;
  P = window_output(H, q.window_h, q.stride_h, q.pad_h, 1);
  Q = window_output(W, q.window_w, q.stride_w, q.pad_w, 1);
  v.require(P >= 1 && Q >= 1, "the window does not fit the padded input");
}

/// The reference's description of pooling `q` over an (N, C, H, W) input.
inline kcnn_test::PoolCase pool_case(std::uint64_t N, std::uint64_t C, std::uint64_t H,
                                     std::uint64_t W, const kcnn::Pool2dParams& q) {
  kcnn_test::PoolCase pc{"fuzz", int(N), int(C), int(H), int(W)};
  pc.window_h = q.window_h, pc.window_w = q.window_w, pc.stride_h = q.stride_h;
  pc.stride_w = q.stride_w, pc.pad_h = q.pad_h, pc.pad_w = q.pad_w, pc.mode = q.mode;
  pc.count_include_pad = q.count_include_pad, pc.layout = q.layout;
  pc.activation = q.activation;
  return pc;
}

/// kcnn's size rule for a convolution: N*M*P*Q and N*P*Q*C*R*S (non-zero factors)
/// below 2^63.
inline void require_problem_size(Verdict& v, __int128 N, __int128 C, __int128 M, __int128 R,
                                 __int128 S, __int128 P, __int128 Q) {
  v.require(nonzero_product_fits({N, M, P, Q}) && nonzero_product_fits({N, P, Q, C, R, S}),
            "a problem with 2^63 or more outputs or unrolled entries");
}

/// Draws an output extent: the derived one, or now and then a wrong one.
inline std::uint64_t output_extent(Draw& d, __int128 derived) {
  if (derived >= 0 && derived <= INT32_MAX && !d.rarely())
    return static_cast<std::uint64_t>(derived);
  return d.extent(6);
}

inline Storage draw_storage(Draw& d) {
  if (!d.rarely()) return Storage::RowMajor;
  return d.flag() ? Storage::ColumnMajor : Storage::Gapped;
}

/// The bound of a sum of K terms whose magnitudes sum to `magnitude`.
inline double sum_bound(double u, double K, double magnitude) {
  return 2 * (K + 2) * u * magnitude;
}

/// A bound for ConvAlgo::Winograd's F(4x4, 3x3), whose output mixes its tile's whole 6x6
/// input patch: sum_bound over `magnitude` = sum_c max|x_c| * sum_rs |w_mc| (at least the
/// window's sum |w x|), times 64 for the transforms' constants. Measured errors on random
/// inputs stay below 2^-16 of the window's sum |w x| (conv2d.hpp), 6x inside this at 9
/// terms and far inside it beyond.
inline double winograd_bound(double u, double K, double magnitude) {
  return 64 * sum_bound(u, K, magnitude);
}

/// One fuzzed call of an operation in element type T (fuzz_operations.hpp; instantiated
/// for float and double in their own translation units, so that the build of the
/// harness, the heaviest instrumented compile, splits across cores).
template <class T>
int fuzz_one(Draw& d);

}  // namespace kcnn_fuzz
