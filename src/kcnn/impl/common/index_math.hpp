// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/common/index_math.hpp
/// \brief Integer index arithmetic shared by the kernels: rounding, 32-bit range tests,
///        division by run-time constants without a divide instruction, and grid walkers
///        that step a multi-dimensional position with carries instead of divisions.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace kcnn::Impl {

/// a / b rounded up, for positive extents whose quotient fits int.
inline int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

/// a rounded up to a multiple of b.
KOKKOS_INLINE_FUNCTION constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b * b;
}

/// Whether a non-negative index fits a 32-bit signed int.
inline bool fits_int32(std::int64_t v) {
  return v <= std::numeric_limits<std::int32_t>::max();
}

/// Scratch parts start on this boundary.
inline constexpr std::size_t kScratchAlign = 256;

inline std::size_t align_up(std::size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

/// Quotient and remainder of a non-negative 32-bit index by a run-time constant with a
/// wide multiply, an add and a shift instead of a division (the round-up method of
/// Granlund and Montgomery): integer division would be the flat kernel's main ALU cost.
/// Exact for every dividend in [0, 2^32) and divisor in [1, 2^31].
struct FastDivmod32 {
  std::uint32_t divisor = 1, multiplier = 1;
  int shift = 0;

  FastDivmod32() = default;
  explicit FastDivmod32(std::int64_t d) : divisor(static_cast<std::uint32_t>(d < 1 ? 1 : d)) {
    while ((std::uint64_t(1) << shift) < divisor)
      ++shift;
    // ceil-free form: floor(2^32 * (2^shift - d) / d) + 1 < 2^32
    multiplier = static_cast<std::uint32_t>(
        ((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - divisor)) / divisor + 1);
  }
  KOKKOS_FORCEINLINE_FUNCTION void operator()(int n, int& quotient, int& remainder) const {
    const std::uint64_t un = static_cast<std::uint32_t>(n);
    const std::uint64_t q = (((un * multiplier) >> 32) + un) >> shift;
    quotient = static_cast<int>(q);
    remainder = static_cast<int>(un - q * divisor);
  }
};

/// The same with 64-bit indices, by division (only for tensors of 2^31 elements or more).
struct Divmod64 {
  std::int64_t divisor = 1;

  Divmod64() = default;
  explicit Divmod64(std::int64_t d) : divisor(d < 1 ? 1 : d) {}
  KOKKOS_FORCEINLINE_FUNCTION void operator()(std::int64_t n, std::int64_t& quotient,
                                              std::int64_t& remainder) const {
    quotient = n / divisor;
    remainder = n - quotient * divisor;
  }
};

/// A position (a, b, c) in a grid whose two fast extents are (B, C), c fastest, moved by
/// a fixed step with carries instead of a division per element. Every step's c and b
/// parts are below C and B, so one carry each suffices.
struct GridWalker {
  int a, b, c;
  int step_a, step_b, step_c;
  int B, C;
  KOKKOS_INLINE_FUNCTION GridWalker(int start, int step, int C_, int B_) : B(B_), C(C_) {
    c = start % C;
    b = (start / C) % B;
    a = start / (C * B);
    step_c = step % C;
    step_b = (step / C) % B;
    step_a = step / (C * B);
  }
  KOKKOS_INLINE_FUNCTION void advance() {
    c += step_c;
    int carry = c >= C ? 1 : 0;
    c -= carry * C;
    b += step_b + carry;
    carry = b >= B ? 1 : 0;
    b -= carry * B;
    a += step_a + carry;
  }
};

/// A GridWalker over a grid that also lies linearly in two tensors: the position
/// (a, b, c) sits at src = base + a * src_a + b * src_b + c * src_c of a source and at
/// dst = a * dst_a + b * dst_b + c * dst_c of a destination. Both offsets move with the
/// walker's carries (a constant per step, plus one correction per carry), where
/// recomputing them from the coordinates took two chains of multiply-adds per element:
/// most of the 43 instructions per element that LeNet C1's staging loop executed
/// (Nsight Compute, H100). Offset: an unsigned type, so that positions outside the
/// source (padding cells, never read) wrap instead of overflowing.
template <class Offset>
struct LinearGridWalker {
  GridWalker pos;
  Offset src;
  int dst;
  Offset src_step, src_carry_c, src_carry_b;  ///< per step; when c wraps; when b wraps
  int dst_step, dst_carry_c, dst_carry_b;

  /// strides: {a, b, c} of the source (src_strides) and of the destination.
  KOKKOS_INLINE_FUNCTION LinearGridWalker(int start, int step, int C, int B, Offset src_base,
                                          const Offset (&src_strides)[3],
                                          const int (&dst_strides)[3])
      : pos(start, step, C, B) {
    src = src_base + Offset(pos.a) * src_strides[0] + Offset(pos.b) * src_strides[1] +
          Offset(pos.c) * src_strides[2];
    src_step = Offset(pos.step_a) * src_strides[0] + Offset(pos.step_b) * src_strides[1] +
               Offset(pos.step_c) * src_strides[2];
    src_carry_c = src_strides[1] - Offset(C) * src_strides[2];
    src_carry_b = src_strides[0] - Offset(B) * src_strides[1];
    dst = pos.a * dst_strides[0] + pos.b * dst_strides[1] + pos.c * dst_strides[2];
    dst_step =
        pos.step_a * dst_strides[0] + pos.step_b * dst_strides[1] + pos.step_c * dst_strides[2];
    dst_carry_c = dst_strides[1] - C * dst_strides[2];
    dst_carry_b = dst_strides[0] - B * dst_strides[1];
  }
  KOKKOS_INLINE_FUNCTION void advance() {
    pos.c += pos.step_c;
    const bool carry_c = pos.c >= pos.C;
    if (carry_c) pos.c -= pos.C;
    pos.b += pos.step_b + (carry_c ? 1 : 0);
    const bool carry_b = pos.b >= pos.B;
    if (carry_b) pos.b -= pos.B;
    pos.a += pos.step_a + (carry_b ? 1 : 0);
    src += src_step + (carry_c ? src_carry_c : Offset(0)) + (carry_b ? src_carry_b : Offset(0));
    dst += dst_step + (carry_c ? dst_carry_c : 0) + (carry_b ? dst_carry_b : 0);
  }
};

}  // namespace kcnn::Impl
