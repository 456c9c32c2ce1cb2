// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/element_traits.hpp
/// \brief Element types: the storage type of x, w and y, the accumulator type sums are
///        kept in, the compute type the multiply-adds run in, their names and the
///        vector widths that follow from the storage size.
///
/// float and double are stored, computed and accumulated in their own type. The 16-bit
/// types (Kokkos' half_t, kcnn::bfloat16) are stored in 16 bits and computed and
/// accumulated in float: kernels convert at the load (to_compute) and round once at the
/// store (from_compute). Where Kokkos defines a 16-bit type as float (host-only builds,
/// see bfloat16.hpp) it is float here too.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

#include "../../bfloat16.hpp"
#include "../../types.hpp"

namespace kcnn::Impl {

/// The element types by kind, for rules that depend on the precision (the Auto rules).
enum class ElementKind { Float32, Float64, Float16, BFloat16 };

/// Whether T is one of the 16-bit storage types as a type of its own (not float).
template <class T>
inline constexpr bool is_16bit_storage_v =
    !std::is_same_v<T, float> &&
    (std::is_same_v<T, Kokkos::Experimental::half_t> || std::is_same_v<T, kcnn::bfloat16>);

/// Traits of storage type `T`; `supported` is false for every type kcnn has no kernels
/// for (the public API rejects them at compile time).
template <class T, class Enable = void>
struct ElementTraits {
  static constexpr bool supported = false;
};

template <>
struct ElementTraits<float> {
  static constexpr bool supported = true;
  using storage = float;
  using compute = float;
  using accumulator = float;
  static constexpr ElementKind kind = ElementKind::Float32;
  static constexpr const char* name = "float";  ///< algorithm cache, messages
};

template <>
struct ElementTraits<double> {
  static constexpr bool supported = true;
  using storage = double;
  using compute = double;
  using accumulator = double;
  static constexpr ElementKind kind = ElementKind::Float64;
  static constexpr const char* name = "double";
};

/// 16-bit storage: products and sums in float (a product of two 16-bit values is exact
/// in float), one rounding at the store.
template <class T>
struct ElementTraits<T, std::enable_if_t<is_16bit_storage_v<T>>> {
  static constexpr bool supported = true;
  using storage = T;
  using compute = float;
  using accumulator = float;
  static constexpr bool is_half = std::is_same_v<T, Kokkos::Experimental::half_t>;
  static constexpr ElementKind kind = is_half ? ElementKind::Float16 : ElementKind::BFloat16;
  static constexpr const char* name = is_half ? "half" : "bfloat16";
};

/// The element types kcnn supports, by name (the algorithm cache's parser).
/// (The 16-bit names are listed even where Kokkos makes the type float: a cache file
/// may come from another build.)
inline constexpr const char* supported_element_names[] = {
    ElementTraits<float>::name, ElementTraits<double>::name, "half", "bfloat16"};

/// Whether math mode `math` is defined for elements of kind `kind`: Strict for every
/// kind; TF32 and TF32x3 round float factors to TF32, so float tensors only (16-bit
/// factors multiply exactly in float: Strict is their only mode).
constexpr bool math_mode_accepts(ElementKind kind, MathMode math) {
  return math == MathMode::Strict ||
         (kind == ElementKind::Float32 && (math == MathMode::TF32 || math == MathMode::TF32x3));
}

template <class T>
inline constexpr bool is_supported_scalar_v = ElementTraits<T>::supported;

template <class T>
using accumulator_t = typename ElementTraits<T>::accumulator;

template <class T>
using compute_t = typename ElementTraits<T>::compute;

/// A stored value in the type kernels compute in (exact: every 16-bit value is a float).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION compute_t<T> to_compute(const T& v) {
  return static_cast<compute_t<T>>(v);
}

/// A computed value rounded once to storage type T (round to nearest even).
template <class T, class V>
KOKKOS_FORCEINLINE_FUNCTION T from_compute(const V& v) {
  return T(static_cast<compute_t<T>>(v));
}

/// Bytes of one vector load or store in the kernels' staged (scratch) operands: a
/// 16-byte access is one instruction on GPUs and a quarter of an AVX-512 register.
inline constexpr std::size_t kVectorAccessBytes = 16;

/// Elements of storage type `T` in one vector access (float: 4, double: 2, half: 8).
template <class T>
inline constexpr int vector_elements_v = static_cast<int>(kVectorAccessBytes / sizeof(T));

}  // namespace kcnn::Impl
