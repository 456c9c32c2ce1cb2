// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/view_checks.hpp
/// \brief Compile-time checks on the View types a public operation receives, and the
///        run-time checks on Views (contiguity, aliasing) that every operation shares.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

#include "../types.hpp"

namespace kcnn::Impl {

/// The element type of a View without const: float or double.
template <class View>
using view_scalar_t = std::remove_const_t<typename View::value_type>;

template <class T>
inline constexpr bool is_supported_scalar_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

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
                "kcnn: View value type must be float or double (const allowed for inputs)");
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

/// Throws kcnn::Error with `op: what` when `condition` holds.
template <class... Parts>
void throw_if(bool condition, const char* op, const Parts&... what) {
  if (condition) throw Error(msg(op, ": ", what...));
}

/// Extents of a rank-4 View as "(a, b, c, d)", for messages.
template <class View>
std::string extents_string(const View& v) {
  std::ostringstream out;
  out << '(';
  for (int i = 0; i < static_cast<int>(View::rank); ++i)
    out << (i ? ", " : "") << v.extent(i);
  out << ')';
  return out.str();
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
           extents_string(v));
}

/// Throws if the output View shares memory with an input View.
template <class OutView, class InView>
void check_no_overlap(const char* op, const char* out_name, const OutView& out, const char* in_name,
                      const InView& in) {
  throw_if(byte_span(out).overlaps(byte_span(in)), op, out_name, " overlaps ", in_name,
           " in memory; the output must not alias an input");
}

/// The View type kernels see for a tensor argument: unmanaged, in the execution space's
/// memory space, LayoutRight when the caller's View is LayoutRight (the common case, and
/// the one whose innermost index is known to be contiguous) and LayoutStride otherwise.
/// Converting once at the API boundary means each kernel is compiled once per backend,
/// scalar and tensor layout, however many View types callers pass (const or not,
/// managed or not, other memory traits, subviews).
template <class ExecSpace, class View, class Value>
using kernel_view_t = Kokkos::View<
    Value,
    std::conditional_t<std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>,
                       Kokkos::LayoutRight, Kokkos::LayoutStride>,
    typename ExecSpace::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// Rank-4 input (const elements) or output (mutable elements) as its kernel View.
template <class ExecSpace, bool Writable, class View>
auto as_kernel_view(const View& v) {
  using T = view_scalar_t<View>;
  using Value = std::conditional_t<static_cast<int>(View::rank) == 4,
                                   std::conditional_t<Writable, T****, const T****>,
                                   std::conditional_t<Writable, T*, const T*>>;
  using Out = kernel_view_t<ExecSpace, View, Value>;
  if constexpr (std::is_same_v<typename Out::array_layout, Kokkos::LayoutRight>) {
    if constexpr (static_cast<int>(View::rank) == 4) {
      return Out(v.data(), v.extent(0), v.extent(1), v.extent(2), v.extent(3));
    } else {
      return Out(v.data(), v.extent(0));
    }
  } else {
    if constexpr (static_cast<int>(View::rank) == 4) {
      return Out(v.data(),
                 Kokkos::LayoutStride(v.extent(0), v.stride(0), v.extent(1), v.stride(1),
                                      v.extent(2), v.stride(2), v.extent(3), v.stride(3)));
    } else {
      return Out(v.data(), Kokkos::LayoutStride(v.extent(0), v.stride(0)));
    }
  }
}

}  // namespace kcnn::Impl
