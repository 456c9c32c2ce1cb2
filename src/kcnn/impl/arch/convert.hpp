// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/convert.hpp
/// \brief Two floats rounded to a 16-bit storage type and packed into 32 bits: one
///        instruction on NVIDIA GPUs from sm_80 on (PTX `cvt.rn.bf16x2.f32`,
///        `cvt.rn.f16x2.f32`), from_compute elsewhere. Only this header names them.
///
/// Why: kcnn::bfloat16 with Kokkos 3.4 / 3.5 rounds in software (bfloat16.hpp: about six
/// integer instructions a value). In the 16-bit channel-run kernel's epilogue that was
/// most of the 163 instructions each run of 8 outputs cost, a quarter of the kernel's
/// instructions on the 64-channel ResNet layer (ncu, H200, session 25).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

#include "../common/element_traits.hpp"

namespace kcnn::Impl {

/// Whether the device code being compiled has the packed 16-bit conversions.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define KCNN_ARCH_CVT_PACKED_16BIT 1
#endif

/// lo and hi rounded to nearest, ties to even, to T (Kokkos' half_t or kcnn::bfloat16),
/// lo in the low 16 bits: the two elements as they lie in memory. The bits are those of
/// from_compute<T> for every value but a NaN, which stays a NaN (the hardware's is the
/// canonical positive one, as __float2half's is for half).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t round_and_pack_16bit(float lo, float hi) {
  static_assert(sizeof(T) == 2, "a 16-bit storage type");
#if defined(KCNN_ARCH_CVT_PACKED_16BIT)
  std::uint32_t bits;
  if constexpr (ElementTraits<T>::kind == ElementKind::BFloat16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(bits) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(bits) : "f"(hi), "f"(lo));
  return bits;
#else
  const T low = from_compute<T>(lo), high = from_compute<T>(hi);
  std::uint16_t low_bits, high_bits;
  std::memcpy(&low_bits, &low, sizeof(low_bits));
  std::memcpy(&high_bits, &high, sizeof(high_bits));
  return std::uint32_t(low_bits) | (std::uint32_t(high_bits) << 16);
#endif
}

}  // namespace kcnn::Impl
