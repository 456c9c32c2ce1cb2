// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file bfloat16.hpp
/// \brief kcnn::bfloat16, the one name user code writes for bfloat16 tensors, and the
///        conversions between float and the two 16-bit storage types.
///
/// bfloat16 is the upper half of an IEEE float: sign, the same 8 exponent bits, 7
/// mantissa bits. With Kokkos 3.6 or later kcnn::bfloat16 is Kokkos' own
/// `Kokkos::Experimental::bhalf_t`; older Kokkos (3.4, 3.5) has none, and kcnn::bfloat16
/// is then the class below, with the same bit layout. Either way a View of
/// kcnn::bfloat16 holds the same bytes.
///
/// Kokkos defines its 16-bit types as float in builds whose backends have no 16-bit
/// type (KOKKOS_HALF_T_IS_FLOAT / KOKKOS_BHALF_T_IS_FLOAT true, e.g. every host-only
/// build of Kokkos 3.4 and 4.x): there a View of `half_t` or `bhalf_t` is a View of
/// float, stored and computed as float, more accurate than asked.
///
/// NaNs: kcnn's own conversion keeps a NaN's sign; Kokkos' half_t conversion (CUDA's
/// __float2half) returns the canonical positive NaN. Either way a NaN stays a NaN.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace kcnn {

namespace Impl {

/// The bits of a float and back, in host and device code (memcpy: no aliasing rules
/// broken, and one register move once compiled).
KOKKOS_INLINE_FUNCTION std::uint32_t float_to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

KOKKOS_INLINE_FUNCTION float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// float -> bfloat16 bits, rounded to nearest, ties to even. A NaN stays a NaN of the
/// same sign (quiet, its upper payload bits kept); values past the largest finite
/// bfloat16 (after rounding) become infinities; subnormals round like normals (the
/// exponents line up, so the carry out of the mantissa is the right next value).
KOKKOS_INLINE_FUNCTION std::uint16_t bfloat16_bits_from_float(float f) {
  const std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t tie_to_even = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + tie_to_even) >> 16);
}

/// bfloat16 bits -> float: exact.
KOKKOS_INLINE_FUNCTION float float_from_bfloat16_bits(std::uint16_t b) {
  return bits_to_float(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace Impl

#if KOKKOS_VERSION >= 30600
using bfloat16 = Kokkos::Experimental::bhalf_t;
#define KCNN_BFLOAT16_IS_KOKKOS_BHALF 1
#else
#define KCNN_BFLOAT16_IS_KOKKOS_BHALF 0
/// bfloat16 storage for Kokkos without `bhalf_t`: 16 bits, converted to and from float
/// (implicitly from float, explicitly to it, as Kokkos' 16-bit types are). No arithmetic
/// operators: kcnn computes in float and rounds once at the store, and so should code
/// that holds these values.
class bfloat16 {
 public:
  bfloat16() = default;
  /// Rounds to nearest, ties to even (Impl::bfloat16_bits_from_float). A double goes
  /// through float first, so it can be rounded twice.
  KOKKOS_INLINE_FUNCTION bfloat16(float f) : bits_(Impl::bfloat16_bits_from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit operator float() const {
    return Impl::float_from_bfloat16_bits(bits_);
  }
  KOKKOS_INLINE_FUNCTION explicit operator double() const {
    return static_cast<double>(Impl::float_from_bfloat16_bits(bits_));
  }
  /// The value with these bits (for tests and bit-level code).
  KOKKOS_INLINE_FUNCTION static bfloat16 from_bits(std::uint16_t bits) {
    bfloat16 b;
    b.bits_ = bits;
    return b;
  }
  KOKKOS_INLINE_FUNCTION std::uint16_t bits() const { return bits_; }

 private:
  std::uint16_t bits_;
};
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2,
              "kcnn::bfloat16 must have the bit layout of bfloat16");
#endif

}  // namespace kcnn
