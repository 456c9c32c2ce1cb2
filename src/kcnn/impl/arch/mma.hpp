// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/mma.hpp
/// \brief Warp-level matrix multiply-accumulate on NVIDIA tensor cores (sm_80 on):
///        the PTX `mma.sync` shapes kcnn uses, TF32 rounding and the 3xTF32 split
///        (model: CUTLASS include/cutlass/arch/mma_sm80.h). Only this header names them.
///
/// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k8" and ".m8n8k4" f64):
/// with g = lane / 4 and t = lane % 4,
///  - m16n8k8 TF32: A (16x8, row) a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
///    B (8x8, col) b0 (t, g), b1 (t+4, g); C/D (16x8) c0 (g, 2t), c1 (g, 2t+1),
///    c2 (g+8, 2t), c3 (g+8, 2t+1).
///  - m8n8k4 f64: A (8x4) a0 (g, t); B (4x8) b0 (t, g); C/D (8x8) c0 (g, 2t), c1 (g, 2t+1).
///  - m16n8k8 f64 (sm_90): as m16n8k8 TF32 with 64-bit elements.
///  - m16n8k16 f16 / bf16: two 16-bit elements per 32-bit register, the lower k in the
///    low half: A a0 (g, 2t..2t+1), a1 (g+8, 2t..2t+1), a2 (g, 2t+8..2t+9),
///    a3 (g+8, 2t+8..2t+9); B b0 (2t..2t+1, g), b1 (2t+8..2t+9, g); C/D as m16n8k8.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kcnn::Impl {

/// Whether the device code being compiled has the sm_80 mma.sync shapes (TF32, f64).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define KCNN_ARCH_MMA_SM80 1
#endif
/// Whether it has sm_90's larger fp64 shapes (m16n8k4/k8/k16, PTX ISA 7.8).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define KCNN_ARCH_MMA_SM90 1
#endif

/// Whether the GPU architecture Kokkos builds for has the sm_80 tensor-core shapes
/// (host-side question, for can_implement: a kernel compiled for an older GPU has an
/// empty body there).
inline constexpr bool kBuildHasTensorCoresSm80 =
#if defined(KOKKOS_ARCH_AMPERE80) || defined(KOKKOS_ARCH_AMPERE86) || \
    defined(KOKKOS_ARCH_ADA89) || defined(KOKKOS_ARCH_HOPPER90) ||    \
    defined(KOKKOS_ARCH_BLACKWELL100) || defined(KOKKOS_ARCH_BLACKWELL120)
    true;
#else
    false;
#endif

/// Whether ExecSpace's kernels can use the sm_80 tensor-core shapes: CUDA, built for
/// such a GPU.
template <class ExecSpace>
inline constexpr bool has_tensor_cores_v =
#if defined(KOKKOS_ENABLE_CUDA)
    std::is_same_v<ExecSpace, Kokkos::Cuda>&& kBuildHasTensorCoresSm80;
#else
    false;
#endif

/// Shape of one warp-level MMA instruction: D (M x N) += A (M x K) * B (K x N).
template <int M_, int N_, int K_>
struct MmaShape {
  static constexpr int M = M_, N = N_, K = K_;
};

/// `x` rounded to TF32 (10 explicit mantissa bits, round to nearest, ties away from
/// zero: cvt.rna), as the 32-bit pattern mma.sync reads. Elsewhere: the bits of x with
/// the 13 low mantissa bits rounded off the same way, so host tests can model it.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t tf32_round(float x) {
  std::uint32_t bits;
#if defined(KCNN_ARCH_MMA_SM80)
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
#else
  __builtin_memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
#endif
  return bits;
}

/// The 32-bit pattern of a float that is already a TF32 value (tf32_round'ed earlier),
/// as mma.sync reads it.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t tf32_bits(float x) {
  std::uint32_t bits;
  __builtin_memcpy(&bits, &x, sizeof(bits));
  return bits;
}

/// The float a TF32 pattern stands for.
KOKKOS_FORCEINLINE_FUNCTION float tf32_value(std::uint32_t bits) {
  float x;
  __builtin_memcpy(&x, &bits, sizeof(x));
  return x;
}

/// 3xTF32 split: x ~ big + small, both TF32; big = tf32(x), small = tf32(x - big). The
/// pair carries about 21 mantissa bits, so the three products big*big + big*small +
/// small*big reproduce a float product to within float rounding.
KOKKOS_FORCEINLINE_FUNCTION void tf32_split(float x, std::uint32_t& big, std::uint32_t& small) {
  big = tf32_round(x);
  small = tf32_round(x - tf32_value(big));
}

/// d += a * b, m16n8k8, TF32 factors (already rounded: tf32_round), float sums.
KOKKOS_FORCEINLINE_FUNCTION void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
#if defined(KCNN_ARCH_MMA_SM80)
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d, (void)a, (void)b;  // never called where the instruction does not exist
#endif
}

/// d += a * b, m8n8k4, IEEE fp64 products and sums (DMMA).
KOKKOS_FORCEINLINE_FUNCTION void mma_m8n8k4_f64(double (&d)[2], double a, double b) {
#if defined(KCNN_ARCH_MMA_SM80)
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
#else
  (void)d, (void)a, (void)b;
#endif
}

/// d += a * b, m16n8k8, IEEE fp64 products and sums: rows g of D in `top` (c0, c1), rows
/// g + 8 in `bottom` (c2, c3); A {a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)}, B
/// {b0 (t, g), b1 (t+4, g)}. One instruction on sm_90, whose fp64 tensor cores run this
/// shape at twice m8n8k4's rate per multiprocessor (H100: m8n8k4 tops out near 33
/// TFLOP/s, half the 67 of its fp64 peak; Nsight Compute showed kcnn's DMMA kernel at 78%
/// of the Tensor (DP) pipe at 25 TFLOP/s while cuBLAS' dgemm ran 60.7); four m8n8k4 on
/// sm_80-sm_89, which have no larger fp64 shape.
KOKKOS_FORCEINLINE_FUNCTION void mma_m16n8k8_f64(double (&top)[2], double (&bottom)[2],
                                                 const double (&a)[4], const double (&b)[2]) {
#if defined(KCNN_ARCH_MMA_SM90)
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+d"(top[0]), "+d"(top[1]), "+d"(bottom[0]), "+d"(bottom[1])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
  mma_m8n8k4_f64(top, a[0], b[0]);  // k = t
  mma_m8n8k4_f64(bottom, a[1], b[0]);
  mma_m8n8k4_f64(top, a[2], b[1]);  // k = t + 4
  mma_m8n8k4_f64(bottom, a[3], b[1]);
#endif
}

/// The 16-bit factor formats of mma.sync m16n8k16 (float sums).
enum class Mma16BitFormat { Half, BFloat16 };

/// d += a * b, m16n8k16, 16-bit factors in format F (exact products), float sums.
template <Mma16BitFormat F>
KOKKOS_FORCEINLINE_FUNCTION void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4],
                                              const std::uint32_t b0, const std::uint32_t b1) {
#if defined(KCNN_ARCH_MMA_SM80)
  if constexpr (F == Mma16BitFormat::BFloat16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#else
  (void)d, (void)a, (void)b0, (void)b1;
#endif
}

/// Four 8 x 8 matrices of 16-bit elements from team scratch (ldmatrix .x4): lanes 8q..8q+7
/// give the addresses of matrix q's rows 0..7 (16 bytes each, 16-byte aligned); lane
/// (g = lane / 4, t = lane % 4) receives in r[q] row g, elements 2t and 2t + 1 of matrix
/// q: an m16n8k16 fragment's register (B: rows are the columns n, k contiguous). `row`:
/// the lane's row as a shared-window address (scratch_address).
KOKKOS_FORCEINLINE_FUNCTION void ldmatrix_x4_at(std::uint32_t (&r)[4], std::uint32_t row) {
#if defined(KCNN_ARCH_MMA_SM80)
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
#else
  (void)r, (void)row;
#endif
}
/// ldmatrix_x4_at with a generic pointer to the lane's row.
KOKKOS_FORCEINLINE_FUNCTION void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
#if defined(KCNN_ARCH_MMA_SM80)
  ldmatrix_x4_at(r, static_cast<std::uint32_t>(__cvta_generic_to_shared(row)));
#else
  (void)r, (void)row;
#endif
}

}  // namespace kcnn::Impl
