// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/element_traits.hpp
/// \brief Element types: the storage type of x, w and y, the accumulator type sums are
///        kept in, the compute type the multiply-adds run in, their names and the
///        vector widths that follow from the storage size.
///
/// Today storage, compute and accumulator are the same type (float or double); a
/// 16-bit type would store half or bfloat16 and accumulate in float. Kernels name the
/// accumulator where they sum and the storage where they load and store, so that such
/// a type joins by one specialization here (plus the kernels' tuned tiles for it).
#pragma once

#include <cstddef>
#include <type_traits>

#include "../../types.hpp"

namespace kcnn::Impl {

/// The element types by kind, for rules that depend on the precision (the Auto rules).
enum class ElementKind { Float32, Float64 };

/// Traits of storage type `T`; `supported` is false for every type kcnn has no kernels
/// for (the public API rejects them at compile time).
template <class T>
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

/// The element types kcnn supports, by name (the algorithm cache's parser).
inline constexpr const char* supported_element_names[] = {ElementTraits<float>::name,
                                                          ElementTraits<double>::name};

/// Whether math mode `math` is defined for elements of kind `kind`: Strict for every
/// kind; TF32 and TF32x3 round float factors to TF32, so float tensors only.
constexpr bool math_mode_accepts(ElementKind kind, MathMode math) {
  return math == MathMode::Strict ||
         (kind == ElementKind::Float32 && (math == MathMode::TF32 || math == MathMode::TF32x3));
}

template <class T>
inline constexpr bool is_supported_scalar_v = ElementTraits<T>::supported;

template <class T>
using accumulator_t = typename ElementTraits<T>::accumulator;

/// Bytes of one vector load or store in the kernels' staged (scratch) operands: a
/// 16-byte access is one instruction on GPUs and a quarter of an AVX-512 register.
inline constexpr std::size_t kVectorAccessBytes = 16;

/// Elements of storage type `T` in one vector access (float: 4, double: 2, half: 8).
template <class T>
inline constexpr int vector_elements_v = static_cast<int>(kVectorAccessBytes / sizeof(T));

}  // namespace kcnn::Impl
