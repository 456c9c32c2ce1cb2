// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/view_checks.hpp
/// \brief Compile-time checks on the View types a public operation receives, and the
///        run-time checks on Views (contiguity, aliasing) that every operation shares.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "../../types.hpp"
#include "element_traits.hpp"

namespace kcnn::Impl {

/// The element type of a View without const: float, double or a 16-bit type.
template <class View>
using view_scalar_t = std::remove_const_t<typename View::value_type>;

/// True when `ExecSpace` may dereference the memory of `View`.
template <class ExecSpace, class View>
inline constexpr bool is_accessible_from_v =
    Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible;

/// Static checks shared by every operation for one tensor argument.
/// `Rank` is the required rank, `Writable` whether the operation writes it.
template <class ExecSpace, class View, int Rank, bool Writable>
constexpr void static_check_tensor() {
  static_assert(Kokkos::is_view<View>::value, "kcnn: tensor arguments must be Kokkos::View");
  static_assert(static_cast<int>(View::rank) == Rank,
                "kcnn: wrong View rank (activations and weights are rank 4, bias is rank 1)");
  static_assert(is_supported_scalar_v<view_scalar_t<View>>,
                "kcnn: View value type must be float, double, Kokkos::Experimental::half_t or "
                "kcnn::bfloat16 (const allowed for inputs)");
  static_assert(!Writable || !std::is_const_v<typename View::value_type>,
                "kcnn: the output View must not have a const value type");
  static_assert(is_accessible_from_v<ExecSpace, View>,
                "kcnn: a View's memory space is not accessible from the execution space "
                "(e.g. a host View passed with Kokkos::Cuda): deep_copy it to the device first");
}

/// Builds a message with stream syntax: `msg("x has C=", c)`.
template <class... Parts>
std::string msg(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

/// Throws kcnn::Error with `op: what` when `condition` holds. The message is built only
/// then: every call validates its arguments with these, so the parts are cheap values
/// or lazy texts (ExtentsText, LazyText) rather than strings built up front (session 29:
/// a 16-bit conv2d_forward on CUDA spent 4 us of its ~11 us of host time building
/// messages it never threw).
template <class... Parts>
void throw_if(bool condition, const char* op, const Parts&... what) {
  if (condition) throw Error(msg(op, ": ", what...));
}

/// A View's extents, written as "(a, b, c, d)" when streamed into a message.
struct ExtentsText {
  std::size_t extent[8] = {};
  int rank = 0;
};
inline std::ostream& operator<<(std::ostream& out, const ExtentsText& e) {
  out << '(';
  for (int i = 0; i < e.rank; ++i)
    out << (i ? ", " : "") << e.extent[i];
  return out << ')';
}

/// The extents of `v` for a message (see ExtentsText).
template <class View>
ExtentsText extents_text(const View& v) {
  ExtentsText e;
  e.rank = static_cast<int>(View::rank);
  for (int i = 0; i < e.rank && i < 8; ++i)
    e.extent[i] = static_cast<std::size_t>(v.extent(i));
  return e;
}

/// A message part that `write` streams when the message is built: `lazy_text([&](auto&
/// out) { out << ...; })`, for parts that would cost work to format on every call.
template <class Write>
struct LazyText {
  Write write;
};
template <class Write>
std::ostream& operator<<(std::ostream& out, const LazyText<Write>& text) {
  text.write(out);
  return out;
}
template <class Write>
LazyText<Write> lazy_text(Write write) {
  return {write};
}

/// Whether the product of the non-zero values fits std::int64_t (all values >= 0).
/// Zeros are skipped so that a size computed in any order (C*R*S*P*Q before a zero
/// batch multiplies it) cannot wrap either.
inline bool nonzero_product_fits(std::initializer_list<std::int64_t> values) {
  std::int64_t product = 1;
  for (const std::int64_t v : values) {
    if (v == 0) continue;
    if (v < 0 || product > std::numeric_limits<std::int64_t>::max() / v) return false;
    product *= v;
  }
  return true;
}

/// Throws unless every extent of `v` and the product of its non-zero extents fit
/// std::int64_t, the type of every size and offset kcnn computes. Kokkos keeps extents
/// as size_t and does not check their product, so an unmanaged View can carry extents
/// whose element count wraps; every operation calls this before reading extents.
template <class View>
void check_extents_fit(const char* op, const char* name, const View& v) {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::int64_t product = 1;
  bool fits = true;
  for (int i = 0; i < static_cast<int>(View::rank); ++i) {
    const auto e = static_cast<std::uint64_t>(v.extent(i));
    if (e > max) {
      fits = false;
    } else if (e != 0) {
      const auto extent = static_cast<std::int64_t>(e);
      fits = fits && product <= std::numeric_limits<std::int64_t>::max() / extent;
      if (fits) product *= extent;
    }
  }
  throw_if(!fits, op, name, " has extents ", extents_text(v),
           ": an extent or the product of the non-zero extents is 2^63 or more");
}

/// Byte range [begin, end) a View's elements occupy; empty for an empty View.
struct ByteSpan {
  std::uintptr_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
  bool overlaps(const ByteSpan& o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
};

template <class View>
ByteSpan byte_span(const View& v) {
  if (v.span() == 0 || v.data() == nullptr) return {};
  const auto begin = reinterpret_cast<std::uintptr_t>(v.data());
  return {begin, begin + v.span() * sizeof(typename View::value_type)};
}

/// Throws unless the View's elements are contiguous in memory (kcnn's kernels and the
/// aliasing check rely on it).
template <class View>
void check_contiguous(const char* op, const char* name, const View& v) {
  throw_if(v.span() != 0 && !v.span_is_contiguous(), op, name,
           " must be contiguous in memory (a View with padding or a strided subview "
           "is not supported); extents ",
           extents_text(v));
}

/// Throws if the output View shares memory with an input View.
template <class OutView, class InView>
void check_no_overlap(const char* op, const char* out_name, const OutView& out, const char* in_name,
                      const InView& in) {
  throw_if(byte_span(out).overlaps(byte_span(in)), op, out_name, " overlaps ", in_name,
           " in memory; the output must not alias an input");
}

/// The View type kernels see for a tensor argument: unmanaged, LayoutStride, in the
/// execution space's memory space. Converting once at the API boundary means each
/// kernel is compiled once per backend and scalar type, however many View types callers
/// pass (const or not, managed or not, LayoutRight or LayoutLeft, other memory traits);
/// with CUDA every extra instantiation of the unrolled kernels costs minutes of build.
/// The strides stay runtime values; kernels that want unit-stride inner loops stage
/// through scratch, where they choose the layout.
template <class ExecSpace, class Value>
using kernel_view_t = Kokkos::View<Value, Kokkos::LayoutStride, typename ExecSpace::memory_space,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <class ExecSpace, class T>
using kernel_input4_t = kernel_view_t<ExecSpace, const T****>;
template <class ExecSpace, class T>
using kernel_output4_t = kernel_view_t<ExecSpace, T****>;
template <class ExecSpace, class T>
using kernel_input1_t = kernel_view_t<ExecSpace, const T*>;

/// Whether a View's elements are stored row-major in its index order (LayoutRight, or
/// any layout where that holds, e.g. extents of 1).
template <class View>
bool is_row_major(const View& v) {
  std::int64_t expect = 1;
  for (int i = static_cast<int>(View::rank) - 1; i >= 0; --i) {
    if (v.extent(i) > 1 && static_cast<std::int64_t>(v.stride(i)) != expect) return false;
    expect *= static_cast<std::int64_t>(v.extent(i));
  }
  return true;
}

/// A tensor argument as its kernel View: rank 4 or 1, const elements for inputs.
template <class ExecSpace, bool Writable, class View>
auto as_kernel_view(const View& v) {
  using T = view_scalar_t<View>;
  if constexpr (static_cast<int>(View::rank) == 4) {
    using Out =
        std::conditional_t<Writable, kernel_output4_t<ExecSpace, T>, kernel_input4_t<ExecSpace, T>>;
    return Out(v.data(), Kokkos::LayoutStride(v.extent(0), v.stride(0), v.extent(1), v.stride(1),
                                              v.extent(2), v.stride(2), v.extent(3), v.stride(3)));
  } else {
    static_assert(!Writable, "kcnn: rank-1 kernel Views are inputs");
    return kernel_input1_t<ExecSpace, T>(v.data(), Kokkos::LayoutStride(v.extent(0), v.stride(0)));
  }
}

}  // namespace kcnn::Impl
