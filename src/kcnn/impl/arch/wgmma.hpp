// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/wgmma.hpp
/// \brief Warpgroup-level matrix multiply-accumulate on Hopper tensor cores (sm_90a):
///        the PTX `wgmma.mma_async` shapes kcnn uses, their shared-memory matrix
///        descriptors, and the fences around them (model: CUTLASS
///        include/cute/arch/mma_sm90_gmma.hpp and mma_sm90_desc.hpp). Only this header
///        names them.
///
/// A warpgroup is 4 consecutive warps whose first warp index is a multiple of 4. One
/// m64nNk16 instruction multiplies a 64 x 16 tile of A by a 16 x N tile of B, both read
/// by the tensor cores straight from team scratch, and adds the product to 64 x N float
/// accumulators spread over the warpgroup's registers: warp w of the group holds rows
/// 16w .. 16w + 15, and its lane (g = lane / 4, t = lane % 4) holds, for every n8 column
/// block i, d[4i] (row 16w + g, column 8i + 2t), d[4i + 1] (the next column), d[4i + 2]
/// and d[4i + 3] (row 16w + g + 8). That is, warp by warp, the C/D fragment of N / 8
/// mma.sync m16n8k16 instructions (arch/mma.hpp), so a kernel can fall back to those
/// where wgmma does not exist and keep its epilogue.
///
/// Both operands are K-major rows of 16-bit values: 64-byte rows of 32 in the 64-byte
/// swizzle (chunk c of row r at chunk c ^ ((r / 2) % 4): TensorCoreScratchRows), 8-row
/// groups 512 bytes apart, tiles on 512-byte boundaries; or 128-byte rows of 64 in the
/// 128-byte swizzle (chunk c ^ (r % 8)), 8-row groups 1,024 bytes apart, tiles on 1,024-byte
/// boundaries. The k16 slice of a row a k-step reads starts 32 bytes per k-step into it:
/// the hardware applies the swizzle to the address bits.
///
/// The instructions exist only for the architecture-specific target sm_90a (nvcc
/// `-gencode=arch=compute_90a,code=sm_90a`): a plain sm_90 pass compiles none of them,
/// and KCNN_ARCH_WGMMA stays undefined there.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "mma.hpp"

namespace kcnn::Impl {

/// Whether the device code being compiled has the sm_90a warpgroup instructions.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KCNN_ARCH_WGMMA 1
#endif

/// Whether the code being compiled also has an sm_90a device pass, for a Hopper build of
/// Kokkos: KCNN_WGMMA_PASS, which kcnn's CMake defines for the units it compiles with
/// -gencode=arch=compute_90a,code=sm_90a (code that includes kcnn defines it beside that
/// flag). Host code then picks the warpgroup tiles, which need wgmma to pay; without it,
/// the tiles tuned for mma.sync.
inline constexpr bool kBuildHasWgmmaPass =
#if defined(KCNN_WGMMA_PASS) && defined(KOKKOS_ARCH_HOPPER90)
    true;
#else
    false;
#endif

/// The 64-bit shared-memory matrix descriptor of a K-major tile of 64-byte rows in the
/// 64-byte swizzle starting at shared-window address `start` (512-byte aligned, plus the
/// k-step's 0 or 32 bytes): start >> 4 in bits 0-13, the leading-dimension offset (unused
/// by swizzled K-major layouts; 1 by convention) in bits 16-29, the 512 bytes between
/// 8-row groups >> 4 in bits 32-45, swizzle mode 2 (64 bytes) in bits 62-63.
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t wgmma_descriptor_sw64(std::uint32_t start) {
  return std::uint64_t((start & 0x3FFFFu) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(512 >> 4) << 32) | (std::uint64_t(2) << 62);
}

/// The same for 128-byte rows in the 128-byte swizzle (1,024-byte aligned start plus the
/// k-step's 32-byte multiple): 1,024 bytes between 8-row groups, swizzle mode 1.
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t wgmma_descriptor_sw128(std::uint32_t start) {
  return std::uint64_t((start & 0x3FFFFu) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

/// The 128-byte swizzle's descriptor for a K-major operand whose 8-row groups lie
/// `group_bytes` apart (a multiple of 128) rather than packed: the halo kernel's pixels,
/// where tap (r, s)'s 64 rows are eight runs of 8 pixels, one halo row apart. The start
/// may be any 128-byte row: the hardware takes each row's swizzle phase from its address
/// (measured, session 29: with the descriptor's base-offset field set per row phase the
/// products were wrong, with it left 0 they matched the reference on every shape).
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t wgmma_descriptor_sw128_groups(std::uint32_t start,
                                                                        std::uint32_t group_bytes) {
  return std::uint64_t((start & 0x3FFFFu) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t((group_bytes >> 4) & 0x3FFFu) << 32) | (std::uint64_t(1) << 62);
}

/// The descriptor of a tile of RowBytes-byte rows (64 or 128) in their swizzle.
template <int RowBytes>
KOKKOS_FORCEINLINE_FUNCTION std::uint64_t wgmma_descriptor(std::uint32_t start) {
  static_assert(RowBytes == 64 || RowBytes == 128, "64- or 128-byte rows");
  if constexpr (RowBytes == 64)
    return wgmma_descriptor_sw64(start);
  else
    return wgmma_descriptor_sw128(start);
}

/// Orders this thread's earlier ordinary (generic-proxy) writes of team scratch, cp.async
/// copies included, before later reads of it by the tensor cores (the async proxy). Each
/// writing thread issues it after its writes have landed and before the team barrier
/// that publishes them.
KOKKOS_FORCEINLINE_FUNCTION void fence_scratch_for_tensor_cores() {
#if defined(KCNN_ARCH_WGMMA)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Makes the accumulator registers' earlier writes visible to the next wgmma (before the
/// first wgmma of a batch).
KOKKOS_FORCEINLINE_FUNCTION void wgmma_fence() {
#if defined(KCNN_ARCH_WGMMA)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// Closes the batch of wgmma instructions issued since the last commit.
KOKKOS_FORCEINLINE_FUNCTION void wgmma_commit() {
#if defined(KCNN_ARCH_WGMMA)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Waits until at most `Pending` committed batches are in flight: their accumulators are
/// then final and their scratch operands free to overwrite.
template <int Pending>
KOKKOS_FORCEINLINE_FUNCTION void wgmma_wait() {
#if defined(KCNN_ARCH_WGMMA)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

/// d (64 x 64 floats, the layout above) += A (64 x 16, descriptor a) * B (16 x 64, K-major
/// rows of the 64 columns, descriptor b), 16-bit factors in format F. Issued by all 128
/// threads of a warpgroup; completes asynchronously (wgmma_commit, wgmma_wait).
template <Mma16BitFormat F>
KOKKOS_FORCEINLINE_FUNCTION void wgmma_m64n64k16(float (&d)[32], std::uint64_t a, std::uint64_t b) {
#if defined(KCNN_ARCH_WGMMA)
#define KCNN_WGMMA_M64N64K16(TYPE)                                                                 \
  asm volatile(                                                                                    \
      "{\n.reg .pred add;\nsetp.ne.b32 add, 1, 0;\n"                                               \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                  \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,"               \
      "%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, add, 1, 1, 0, 0;\n}\n"              \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                         \
      : "l"(a), "l"(b))
  if constexpr (F == Mma16BitFormat::BFloat16) {
    KCNN_WGMMA_M64N64K16("bf16");
  } else {
    KCNN_WGMMA_M64N64K16("f16");
  }
#undef KCNN_WGMMA_M64N64K16
#else
  (void)d, (void)a, (void)b;  // never called where the instruction does not exist
#endif
}

/// d (64 x 128 floats: the layout above with 16 n8 column blocks) += A (64 x 16,
/// descriptor a) * B (16 x 128, K-major rows of the 128 columns, descriptor b). As
/// wgmma_m64n64k16: B's rows are read once per instruction for twice the columns.
template <Mma16BitFormat F>
KOKKOS_FORCEINLINE_FUNCTION void wgmma_m64n128k16(float (&d)[64], std::uint64_t a,
                                                  std::uint64_t b) {
#if defined(KCNN_ARCH_WGMMA)
#define KCNN_WGMMA_M64N128K16(TYPE)                                                                \
  asm volatile(                                                                                    \
      "{\n.reg .pred add;\nsetp.ne.b32 add, 1, 0;\n"                                               \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                 \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,"               \
      "%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,"           \
      "%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,"           \
      "%61,%62,%63}, %64, %65, add, 1, 1, 0, 0;\n}\n"                                              \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63])                                                                                \
      : "l"(a), "l"(b))
  if constexpr (F == Mma16BitFormat::BFloat16) {
    KCNN_WGMMA_M64N128K16("bf16");
  } else {
    KCNN_WGMMA_M64N128K16("f16");
  }
#undef KCNN_WGMMA_M64N128K16
#else
  (void)d, (void)a, (void)b;  // never called where the instruction does not exist
#endif
}

/// wgmma_m64n64k16 or wgmma_m64n128k16 by the column count N.
template <Mma16BitFormat F, int N>
KOKKOS_FORCEINLINE_FUNCTION void wgmma_m64nk16(float (&d)[N / 2], std::uint64_t a,
                                               std::uint64_t b) {
  static_assert(N == 64 || N == 128, "m64n64k16 or m64n128k16");
  if constexpr (N == 64)
    wgmma_m64n64k16<F>(d, a, b);
  else
    wgmma_m64n128k16<F>(d, a, b);
}

}  // namespace kcnn::Impl
