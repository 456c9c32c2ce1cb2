// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/arch/tma.hpp
/// \brief Hopper's tensor memory accelerator (TMA, sm_90) and the shared-memory barriers
///        that count its bytes (mbarrier): the PTX kcnn uses, and the host side that
///        encodes a tensor map (CUtensorMap) through the CUDA driver (model: CUTLASS
///        include/cute/arch/copy_sm90_tma.hpp, copy_sm90_desc.hpp). Only this header names
///        them.
///
/// A tensor map is a 128-byte descriptor of a global tensor (address, extents, byte
/// strides), of the box one copy moves, and of the swizzle the box takes in shared memory.
/// One thread issues a copy; the hardware moves the whole box and, for loads, adds its
/// bytes to a transaction count on an mbarrier in team scratch, which completes the
/// barrier's phase once the expected bytes have landed. Two load modes serve a
/// convolution: tiled (a box of a 2-D matrix, the filters) and im2col (for NHWC
/// activations: `pixels` consecutive output pixels, walked through the padded image with
/// the convolution's stride, each with `channels` channels read at a filter tap's
/// offset; taps that fall in the padding read zeros). Stores take a box from shared memory
/// to a tiled map and clip it at the tensor's edges.
///
/// The hardware reads a tensor map from global (or constant, or kernel-parameter) memory
/// at a 64-byte aligned address. kcnn's maps are kernel parameters: members of a functor
/// launched as a grid-constant parameter (arch/grid_constant_launch.hpp), which needs no
/// fence before the copies (maps written to global memory by ordinary stores would need
/// fence.proxy.tensormap::generic.acquire in every team).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace kcnn::Impl {

/// Whether the device code being compiled has TMA and transaction-count mbarriers.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define KCNN_ARCH_TMA 1
#endif

/// Whether this build's device pass is sm_90 (Kokkos' HOPPER90 architecture), whose GPUs
/// all have the TMA unit: host code launches TMA kernels only then (a pass for an older
/// GPU compiles the PTX above out).
inline constexpr bool kBuildHasTma =
#if defined(KOKKOS_ARCH_HOPPER90)
    true;
#else
    false;
#endif

/// A tensor map's 128 bytes (CUtensorMap's size and alignment), copyable on every
/// backend.
struct alignas(128) TmaDescriptor {
  std::uint64_t words[16];
};

/// A kernel's three tensor maps (its input, filters and output), the grid-constant
/// parameter of its launch (arch/grid_constant_launch.hpp): their addresses are the
/// parameter's.
struct TmaMaps {
  TmaDescriptor x, w, y;
};

// ---------------------------------------------------------------- device side

/// Initializes the mbarrier at scratch address `bar` for `arrivals` arrivals per phase.
/// One thread; tma_fence_barrier_init and a team barrier publish it.
KOKKOS_FORCEINLINE_FUNCTION void tma_barrier_init(std::uint32_t bar, int arrivals) {
#if defined(KCNN_ARCH_TMA)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
#else
  (void)bar, (void)arrivals;
#endif
}

/// Makes the initialized barriers visible to the TMA unit (the async proxy).
KOKKOS_FORCEINLINE_FUNCTION void tma_fence_barrier_init() {
#if defined(KCNN_ARCH_TMA)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

/// Arrives on `bar` and adds `bytes` to the bytes its current phase waits for.
KOKKOS_FORCEINLINE_FUNCTION void tma_barrier_arrive_expect(std::uint32_t bar, std::uint32_t bytes) {
#if defined(KCNN_ARCH_TMA)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
#endif
}

/// Arrives on `bar`.
KOKKOS_FORCEINLINE_FUNCTION void tma_barrier_arrive(std::uint32_t bar) {
#if defined(KCNN_ARCH_TMA)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#else
  (void)bar;
#endif
}

/// Waits until the phase of `bar` with parity `parity` has completed.
KOKKOS_FORCEINLINE_FUNCTION void tma_barrier_wait(std::uint32_t bar, std::uint32_t parity) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "{\n.reg .pred done;\nKCNN_TMA_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra KCNN_TMA_WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
#endif
}

/// Ends the mbarrier at `bar` (before its scratch is reused or initialized again).
KOKKOS_FORCEINLINE_FUNCTION void tma_barrier_invalidate(std::uint32_t bar) {
#if defined(KCNN_ARCH_TMA)
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#else
  (void)bar;
#endif
}

/// Loads an im2col box of a 4-D NHWC tensor map into scratch at `dst`: the pixels from
/// window origin (w, h) of image n on, channels c.. of each, read at filter offset
/// (off_w, off_h); completes on `bar`.
KOKKOS_FORCEINLINE_FUNCTION void tma_load_im2col_4d(std::uint32_t dst, const TmaDescriptor* map,
                                                    std::uint32_t bar, int c, int w, int h, int n,
                                                    std::uint16_t off_w, std::uint16_t off_h) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w), "h"(off_h)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c, (void)w, (void)h, (void)n, (void)off_w, (void)off_h;
#endif
}

/// Loads the box of a 2-D tiled tensor map at (c0, c1) (c0 the contiguous index) into
/// scratch at `dst`; completes on `bar`.
KOKKOS_FORCEINLINE_FUNCTION void tma_load_tile_2d(std::uint32_t dst, const TmaDescriptor* map,
                                                  std::uint32_t bar, int c0, int c1) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c0, (void)c1;
#endif
}

/// Loads the box of a 4-D tiled tensor map at (c0, c1, c2, c3) (c0 the contiguous index;
/// coordinates may be negative or past the extents: those elements read zeros) into
/// scratch at `dst`; completes on `bar`.
KOKKOS_FORCEINLINE_FUNCTION void tma_load_tile_4d(std::uint32_t dst, const TmaDescriptor* map,
                                                  std::uint32_t bar, int c0, int c1, int c2,
                                                  int c3) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c0, (void)c1, (void)c2, (void)c3;
#endif
}

/// Stores scratch at `src` to the box of a 4-D tiled tensor map at (c0, c1, c2, c3),
/// clipped at the tensor's edges. Ordinary writes of `src` need tma_fence_scratch_writes
/// first.
KOKKOS_FORCEINLINE_FUNCTION void tma_store_tile_4d(const TmaDescriptor* map, std::uint32_t src,
                                                   int c0, int c1, int c2, int c3) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#else
  (void)map, (void)src, (void)c0, (void)c1, (void)c2, (void)c3;
#endif
}

/// Stores scratch at `src` to the box of a 2-D tiled tensor map at (c0, c1), clipped at
/// the tensor's edges. Ordinary writes of `src` need tma_fence_scratch_writes first.
KOKKOS_FORCEINLINE_FUNCTION void tma_store_tile_2d(const TmaDescriptor* map, std::uint32_t src,
                                                   int c0, int c1) {
#if defined(KCNN_ARCH_TMA)
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map),
      "r"(src), "r"(c0), "r"(c1)
      : "memory");
#else
  (void)map, (void)src, (void)c0, (void)c1;
#endif
}

/// Orders this thread's ordinary writes of scratch before later TMA reads of it.
KOKKOS_FORCEINLINE_FUNCTION void tma_fence_scratch_writes() {
#if defined(KCNN_ARCH_TMA)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Closes this thread's stores issued so far and waits until they have read their
/// scratch (which may then be reused or released).
KOKKOS_FORCEINLINE_FUNCTION void tma_store_commit_and_wait_read() {
#if defined(KCNN_ARCH_TMA)
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}

// ---------------------------------------------------------------- host side

/// Scratch layouts a tensor map's box can take: rows of 64 or 128 bytes in the swizzle of
/// that width (the layouts wgmma reads, arch/wgmma.hpp).
enum class TmaSwizzle { Bytes64, Bytes128 };

#if defined(KOKKOS_ENABLE_CUDA)

/// The driver's tensor-map encoders, looked up once through the runtime (no link
/// against libcuda); null where the driver has none (before CUDA 12).
struct TmaEncoders {
  using Im2col = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                              const cuuint64_t*, const cuuint64_t*, const int*, const int*,
                              cuuint32_t, cuuint32_t, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  using Tiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                             const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                             const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                             CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  Im2col im2col = nullptr;
  Tiled tiled = nullptr;

  static const TmaEncoders& get() {
    static const TmaEncoders encoders = [] {
      TmaEncoders e;
      void* im2col = nullptr;
      void* tiled = nullptr;
      cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
      if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &im2col, 12000,
                                           cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess)
        im2col = nullptr;
      if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &tiled, 12000,
                                           cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess)
        tiled = nullptr;
#elif CUDART_VERSION >= 12000
      if (cudaGetDriverEntryPoint("cuTensorMapEncodeIm2col", &im2col, cudaEnableDefault, &found) !=
              cudaSuccess ||
          found != cudaDriverEntryPointSuccess)
        im2col = nullptr;
      if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &tiled, cudaEnableDefault, &found) !=
              cudaSuccess ||
          found != cudaDriverEntryPointSuccess)
        tiled = nullptr;
#endif
      e.im2col = reinterpret_cast<Im2col>(im2col);
      e.tiled = reinterpret_cast<Tiled>(tiled);
      return e;
    }();
    return encoders;
  }
  bool available() const {
    return im2col && tiled;
  }
};

inline CUtensorMapSwizzle tma_swizzle(TmaSwizzle s) {
  return s == TmaSwizzle::Bytes128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
}

/// 16-bit element types' tensor-map type (bfloat16 or half).
template <bool BFloat16>
constexpr CUtensorMapDataType tma_16bit_type() {
  return BFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

/// An NHWC activation tensor of 16-bit elements for im2col loads: extents (C, W, H, N)
/// innermost first, byte strides of a pixel, a row and an image; the window origins the
/// loads walk are those of a convolution with padding (pad_w, pad_h), stride (stride_w,
/// stride_h) and a filter spanning (span_w, span_h) pixels ((S - 1) * dilation + 1);
/// each load moves `pixels` pixels of `channels` channels. Returns whether the driver
/// encoded it.
template <bool BFloat16>
bool tma_encode_im2col_nhwc(TmaDescriptor& out, const void* base, const std::uint64_t (&extents)[4],
                            const std::uint64_t (&byte_strides)[3], int pad_w, int pad_h,
                            int span_w, int span_h, int stride_w, int stride_h, int channels,
                            int pixels, TmaSwizzle swizzle) {
  const TmaEncoders& e = TmaEncoders::get();
  if (!e.available()) return false;
  const cuuint64_t dims[4] = {extents[0], extents[1], extents[2], extents[3]};
  const cuuint64_t strides[3] = {byte_strides[0], byte_strides[1], byte_strides[2]};
  // The box of window origins, [W, H] order: from -pad to the last origin whose window
  // still ends inside the far padding.
  const int lower[2] = {-pad_w, -pad_h};
  const int upper[2] = {pad_w - (span_w - 1), pad_h - (span_h - 1)};
  const cuuint32_t element_strides[4] = {1, cuuint32_t(stride_w), cuuint32_t(stride_h), 1};
  return e.im2col(reinterpret_cast<CUtensorMap*>(&out), tma_16bit_type<BFloat16>(), 4,
                  const_cast<void*>(base), dims, strides, lower, upper, cuuint32_t(channels),
                  cuuint32_t(pixels), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  tma_swizzle(swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// A row-major matrix of 16-bit elements (`rows` rows of `cols`, rows `row_bytes`
/// apart) for tiled loads or stores of boxes of box_rows x box_cols. Returns whether the
/// driver encoded it.
template <bool BFloat16>
bool tma_encode_matrix(TmaDescriptor& out, const void* base, std::uint64_t rows, std::uint64_t cols,
                       std::uint64_t row_bytes, int box_rows, int box_cols, TmaSwizzle swizzle) {
  const TmaEncoders& e = TmaEncoders::get();
  if (!e.available()) return false;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return e.tiled(reinterpret_cast<CUtensorMap*>(&out), tma_16bit_type<BFloat16>(), 2,
                 const_cast<void*>(base), dims, strides, box, element_strides,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(swizzle),
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// A packed NHWC tensor of 16-bit elements (extents (C, W, H, N) innermost first, byte
/// strides of a pixel, a row and an image) for tiled loads or stores of boxes of
/// box[0] channels x box[1] columns x box[2] rows of one image, in the 128-byte swizzle
/// (box[0] * 2 = 128 bytes: each pixel one scratch row). Loads read zeros outside the
/// tensor, stores clip there. Returns whether the driver encoded it.
template <bool BFloat16>
bool tma_encode_nhwc_box(TmaDescriptor& out, const void* base, const std::uint64_t (&extents)[4],
                         const std::uint64_t (&byte_strides)[3], const int (&box)[3]) {
  const TmaEncoders& e = TmaEncoders::get();
  if (!e.available()) return false;
  const cuuint64_t dims[4] = {extents[0], extents[1], extents[2], extents[3]};
  const cuuint64_t strides[3] = {byte_strides[0], byte_strides[1], byte_strides[2]};
  const cuuint32_t box_dims[4] = {cuuint32_t(box[0]), cuuint32_t(box[1]), cuuint32_t(box[2]), 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return e.tiled(reinterpret_cast<CUtensorMap*>(&out), tma_16bit_type<BFloat16>(), 4,
                 const_cast<void*>(base), dims, strides, box_dims, element_strides,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

static_assert(sizeof(TmaDescriptor) == sizeof(CUtensorMap) &&
                  alignof(TmaDescriptor) == alignof(CUtensorMap),
              "TmaDescriptor holds a CUtensorMap");

/// A float tensor of four extents (innermost first) with the byte strides of extents 1-3
/// (multiples of 16) for tiled loads of boxes `box` (each at most 256; box[0] * 4 a multiple
/// of 16 bytes) into scratch without swizzle, the box's elements in the tensor's order;
/// elements outside the tensor read zeros. Returns whether the driver encoded it.
inline bool tma_encode_float_box_4d(TmaDescriptor& out, const float* base,
                                    const std::uint64_t (&extents)[4],
                                    const std::uint64_t (&byte_strides)[3], const int (&box)[4]) {
  const TmaEncoders& e = TmaEncoders::get();
  if (!e.available()) return false;
  const cuuint64_t dims[4] = {extents[0], extents[1], extents[2], extents[3]};
  const cuuint64_t strides[3] = {byte_strides[0], byte_strides[1], byte_strides[2]};
  const cuuint32_t box_dims[4] = {cuuint32_t(box[0]), cuuint32_t(box[1]), cuuint32_t(box[2]),
                                  cuuint32_t(box[3])};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return e.tiled(reinterpret_cast<CUtensorMap*>(&out), CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
                 const_cast<float*>(base), dims, strides, box_dims, element_strides,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// Whether this process can encode tensor maps.
inline bool tma_available() {
  return TmaEncoders::get().available();
}

#else  // no CUDA: nothing encodes (the callers run on CUDA builds only)

inline bool tma_available() {
  return false;
}

template <bool BFloat16>
bool tma_encode_im2col_nhwc(TmaDescriptor&, const void*, const std::uint64_t (&)[4],
                            const std::uint64_t (&)[3], int, int, int, int, int, int, int, int,
                            TmaSwizzle) {
  return false;
}

template <bool BFloat16>
bool tma_encode_matrix(TmaDescriptor&, const void*, std::uint64_t, std::uint64_t, std::uint64_t,
                       int, int, TmaSwizzle) {
  return false;
}

template <bool BFloat16>
bool tma_encode_nhwc_box(TmaDescriptor&, const void*, const std::uint64_t (&)[4],
                         const std::uint64_t (&)[3], const int (&)[3]) {
  return false;
}

inline bool tma_encode_float_box_4d(TmaDescriptor&, const float*, const std::uint64_t (&)[4],
                                    const std::uint64_t (&)[3], const int (&)[4]) {
  return false;
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace kcnn::Impl
