// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file fuzz_public_api.cpp
/// \brief libFuzzer target over kcnn's public operations: conv2d_forward (every
///        algorithm, with and without the fused pooling), pool2d_forward, im2col, col2im,
///        conv2d_backward_data, conv2d_backward_weights, pool2d_backward and
///        activation_backward, in float and double on the host backend.
///
/// The fuzzer's bytes choose the operation, the extents (mostly small, now and then one
/// near 2^31, 2^32, 2^62, 2^63 or 2^64), the parameters (mostly small, now and then an
/// int edge such as INT_MIN or INT_MAX), the enum values (now and then one outside the
/// declared ones), each tensor's storage (row-major, column-major, with gaps, or, when
/// its element count does not fit 64 bits, a View whose extents lie about its memory),
/// aliasing between an output and an input, wrong output or bias extents, and a
/// workspace budget. The harness decides on its own, from the documented rules, whether
/// the call is valid, and then:
///  - a call that throws must throw kcnn::Error and leave every output byte and every
///    input byte as it was; an operation that documents no limit of its own (Auto,
///    Reference, ImplicitGemm, Im2colGemm within the default budget, pooling, im2col,
///    the backward operations within the default budget) must not refuse a valid call;
///  - a call that returns must have been valid, must leave its inputs as they were, and
///    its outputs must match the double-precision references of ../reference.hpp within
///    a bound derived from the arithmetic: 2 (K + 2) u times the sum of the magnitudes
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

namespace {

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
constexpr std::uint64_t kMaxElements = 2048;
/// Multiply-adds above which an input is skipped (the reference is a direct loop).
constexpr double kMaxWork = 2e5;

[[noreturn]] void fail(const char* op, const std::string& what) {
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

bool valid_layout(kcnn::Layout l) {
  return l == kcnn::Layout::NCHW || l == kcnn::Layout::NHWC;
}
bool valid_activation(kcnn::Activation a) {
  const int v = static_cast<int>(a);
  return v >= 0 && v <= 3;
}
bool valid_pool_mode(kcnn::PoolMode m) {
  return m == kcnn::PoolMode::Max || m == kcnn::PoolMode::Average;
}

/// Output extent of a window, in 128 bits so that no parameter overflows it; < 1 when
/// the window does not fit.
__int128 window_output(std::uint64_t in, std::uint64_t kernel, int stride, int pad, int dilation) {
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
bool nonzero_product_fits(std::initializer_list<__int128> values) {
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
bool element_count(const std::array<std::uint64_t, 4>& e, std::uint64_t& count) {
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

std::vector<double> magnitudes(std::vector<double> v) {
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
void compare(const char* op, const char* name, const std::vector<double>& got,
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
bool reference_fits(std::initializer_list<std::uint64_t> extents) {
  for (std::uint64_t e : extents)
    if (e > kMaxElements) return false;
  return true;
}

/// The convolution geometry of the harness' draws, for the reference.
kcnn_test::ConvCase conv_case(std::uint64_t N, std::uint64_t C, std::uint64_t H, std::uint64_t W,
                              std::uint64_t M, std::uint64_t R, std::uint64_t S,
                              const kcnn::Conv2dParams& p) {
  kcnn_test::ConvCase c{"fuzz",  int(N),  int(C),       int(H),      int(W),
                        int(M),  int(R),  int(S),       p.stride_h,  p.stride_w,
                        p.pad_h, p.pad_w, p.dilation_h, p.dilation_w};
  c.layout = p.layout;
  c.activation = p.activation;
  return c;
}

std::array<std::uint64_t, 4> in_layout(kcnn::Layout l, std::uint64_t n, std::uint64_t c,
                                       std::uint64_t h, std::uint64_t w) {
  return l == kcnn::Layout::NHWC ? std::array{n, h, w, c} : std::array{n, c, h, w};
}

/// Draws the window parameters shared by the convolutions and im2col.
kcnn::Conv2dParams draw_conv_params(Draw& d) {
  kcnn::Conv2dParams p;
  p.stride_h = d.param(1, 3), p.stride_w = d.param(1, 3);
  p.pad_h = d.param(0, 3), p.pad_w = d.param(0, 3);
  p.dilation_h = d.param(1, 3), p.dilation_w = d.param(1, 3);
  p.layout = d.enumeration<kcnn::Layout>(2);
  p.activation = d.enumeration<kcnn::Activation>(4);
  p.algo = d.enumeration<kcnn::ConvAlgo>(6);
  p.math = d.enumeration<kcnn::MathMode>(3);
  if (d.rarely()) p.workspace_limit_bytes = static_cast<std::size_t>(d.small(1, 8192));
  return p;
}

kcnn::Pool2dParams draw_pool_params(Draw& d, kcnn::Layout layout) {
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

void require_window_params(Verdict& v, const kcnn::Conv2dParams& p) {
  v.require(p.stride_h >= 1 && p.stride_w >= 1, "stride < 1");
  v.require(p.dilation_h >= 1 && p.dilation_w >= 1, "dilation < 1");
  v.require(p.pad_h >= 0 && p.pad_w >= 0, "padding < 0");
  v.require(valid_layout(p.layout), "unknown layout");
  v.require(valid_activation(p.activation), "unknown activation");
}

void require_pool_params(Verdict& v, const kcnn::Pool2dParams& q) {
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
void pool_geometry(Verdict& v, const kcnn::Pool2dParams& q, std::uint64_t H, std::uint64_t W,
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
kcnn_test::PoolCase pool_case(std::uint64_t N, std::uint64_t C, std::uint64_t H, std::uint64_t W,
                              const kcnn::Pool2dParams& q) {
  kcnn_test::PoolCase pc{"fuzz", int(N), int(C), int(H), int(W)};
  pc.window_h = q.window_h, pc.window_w = q.window_w, pc.stride_h = q.stride_h;
  pc.stride_w = q.stride_w, pc.pad_h = q.pad_h, pc.pad_w = q.pad_w, pc.mode = q.mode;
  pc.count_include_pad = q.count_include_pad, pc.layout = q.layout;
  pc.activation = q.activation;
  return pc;
}

/// kcnn's size rule for a convolution: N*M*P*Q and N*P*Q*C*R*S (non-zero factors)
/// below 2^63.
void require_problem_size(Verdict& v, __int128 N, __int128 C, __int128 M, __int128 R, __int128 S,
                          __int128 P, __int128 Q) {
  v.require(nonzero_product_fits({N, M, P, Q}) && nonzero_product_fits({N, P, Q, C, R, S}),
            "a problem with 2^63 or more outputs or unrolled entries");
}

/// Draws an output extent: the derived one, or now and then a wrong one.
std::uint64_t output_extent(Draw& d, __int128 derived) {
  if (derived >= 0 && derived <= INT32_MAX && !d.rarely())
    return static_cast<std::uint64_t>(derived);
  return d.extent(6);
}

Storage draw_storage(Draw& d) {
  if (!d.rarely()) return Storage::RowMajor;
  return d.flag() ? Storage::ColumnMajor : Storage::Gapped;
}

/// The bound of a sum of K terms whose magnitudes sum to `magnitude`.
double sum_bound(double u, double K, double magnitude) {
  return 2 * (K + 2) * u * magnitude;
}

// ---------------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------------

/// conv2d_forward, with params.pool when `fused`.
template <class T>
int fuzz_conv2d_forward(Draw& d, bool fused) {
  constexpr const char* op = "conv2d_forward";
  kcnn::Conv2dParams p = draw_conv_params(d);
  if (fused) p.pool = draw_pool_params(d, p.layout);
  const std::uint64_t N = d.extent(3), C = d.extent(4), H = d.extent(10), W = d.extent(10),
                      M = d.extent(4), R = d.extent(4), S = d.extent(4);
  const std::uint64_t wC = d.rarely() ? d.extent(4) : C;

  Verdict v;
  require_window_params(v, p);
  const bool known_math = p.math == kcnn::MathMode::Strict || p.math == kcnn::MathMode::TF32 ||
                          p.math == kcnn::MathMode::TF32x3;
  v.require(known_math, "unknown math mode");
  v.require(p.math == kcnn::MathMode::Strict || std::is_same_v<T, float>,
            "a TF32 math mode with non-float tensors");
  const int algo = static_cast<int>(p.algo);
  v.require(algo >= 0 && algo <= 5, "unknown algorithm");
  if (fused) require_pool_params(v, *p.pool), v.require(p.pool->layout == p.layout, "pool layout");
  v.require(C >= 1, "C < 1");
  v.require(wC == C, "channel mismatch");
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
  const bool must_serve = p.algo == kcnn::ConvAlgo::Auto || p.algo == kcnn::ConvAlgo::Reference ||
                          (p.algo == kcnn::ConvAlgo::ImplicitGemm && gather_fits) ||
                          (p.algo == kcnn::ConvAlgo::Im2colGemm && p.workspace_limit_bytes == 0);
  judge(
      op, v, must_serve, Snapshot(x, w, bias), Snapshot(y),
      [&] { kcnn::conv2d_forward(Space(), x.view, w.view, bias_view, y.view, p); },
      [&] {
        if (y.count == 0) return;
        if (!reference_fits({N, C, H, W, M, R, S})) return;
        auto c = conv_case(N, C, H, W, M, R, S, p);
        c.bias = B != 0;
        const double u = unit_roundoff<T>(), K = double(C) * R * S;
        const auto conv = kcnn_test::host_conv2d(c, x.values, w.values, bias.values);
        auto unbiased = c;
        unbiased.activation = kcnn::Activation::Identity, unbiased.bias = false;
        auto bound =
            kcnn_test::host_conv2d(unbiased, magnitudes(x.values), magnitudes(w.values), {});
        const std::size_t PQ = std::size_t(P * Q);
        for (std::size_t i = 0; i < bound.size(); ++i) {
          const std::size_t m = c.nhwc() ? i % M : (i / PQ) % M;
          bound[i] = sum_bound(u, K, bound[i] + (c.bias ? std::abs(bias.values[m]) : 0.0)) +
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
                      M = d.extent(4), R = d.extent(4), S = d.extent(4);
  Verdict v;
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
  const std::uint64_t wC = d.rarely() ? d.extent(4) : C;
  v.require(wC == C, "channel mismatch");
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

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // libFuzzer's options (-max_total_time=...) are not Kokkos'; Kokkos sees none.
  (void)argc, (void)argv;
  int kokkos_argc = 1;
  char name[] = "kcnn_fuzz_public_api";
  char* kokkos_argv[] = {name, nullptr};
  Kokkos::initialize(kokkos_argc, kokkos_argv);
  // libFuzzer ends with exit(): finalize Kokkos (which frees kcnn's cached workspaces)
  // in an exit handler, after the static destructors of everything used later.
  std::atexit([] { Kokkos::finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Draw d(in);
  return d.flag() ? fuzz_one<float>(d) : fuzz_one<double>(d);
}
