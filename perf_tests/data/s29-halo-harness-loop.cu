// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 29's second halo harness: perf_tests/data/s29-halo-harness.cu with its halo kernel
// wrapped the way kcnn's TensorCoreHaloKernel walks tiles: a tile loop (one iteration unless
// -DPERSIST, which launches at most the resident blocks and walks tiles a grid apart;
// -DNOLOOP: no loop, a block per tile), the stage buffers' and halo's barrier phases counted
// on across tiles (-DINC: counted incrementally; -DREINIT: barriers set up afresh per tile),
// -DFENCE the tensor maps' acquire fences per block, -DRELOAD_BAR a block barrier before each
// new channel block's halo. Mode 8: the 16 x 8 halo tile at launch bounds of 4 and 5 blocks
// per multiprocessor. Registers (ptxas, bound 4): 96 without the loop, 120-122 with it
// (PERSIST or not, INC or REINIT alike).
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a [-D...] -lcuda
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <string>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

using bf16 = __nv_bfloat16;

struct Geo {
  int N, C, H, W, M, R, S, P, Q, stride, pad;
};

// ---------------------------------------------------------------- wgmma m64nNk16 bf16 -> f32
#define WG_ACC8(b)                                                                                \
  "+f"(d[b + 0]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), \
      "+f"(d[b + 6]), "+f"(d[b + 7])
template <int N>
struct Wgmma;
template <>
struct Wgmma<32> {
  __device__ __forceinline__ static void mma(float (&d)[16], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        : WG_ACC8(0), WG_ACC8(8)
        : "l"(a), "l"(b));
  }
};
template <>
struct Wgmma<64> {
  __device__ __forceinline__ static void mma(float (&d)[32], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
        "%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : WG_ACC8(0), WG_ACC8(8), WG_ACC8(16), WG_ACC8(24)
        : "l"(a), "l"(b));
  }
};
template <>
struct Wgmma<128> {
  __device__ __forceinline__ static void mma(float (&d)[64], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
        "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,"
        "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, "
        "1, 0, 0;\n}\n"
        : WG_ACC8(0), WG_ACC8(8), WG_ACC8(16), WG_ACC8(24), WG_ACC8(32), WG_ACC8(40), WG_ACC8(48),
          WG_ACC8(56)
        : "l"(a), "l"(b));
  }
};

__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// ---------------------------------------------------------------- mbarrier and TMA
__device__ __forceinline__ void bar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void tma_im2col_4d(std::uint32_t dst, const CUtensorMap* map,
                                              std::uint32_t bar, int c, int w, int h, int n,
                                              std::uint16_t off_w, std::uint16_t off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w), "h"(off_h)
      : "memory");
}
__device__ __forceinline__ void tma_tile_2d(std::uint32_t dst, const CUtensorMap* map,
                                            std::uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int c0,
                                             int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map),
      "r"(src), "r"(c0), "r"(c1)
      : "memory");
}

// Rows of ROWB bytes in the TMA/wgmma swizzle of that width (64: 32 channels, 128: 64).
template <int ROWB>
__device__ __forceinline__ std::uint64_t make_desc(std::uint32_t smem_addr) {
  std::uint64_t d = 0;
  d |= std::uint64_t((smem_addr & 0x3FFFF) >> 4);
  d |= std::uint64_t(1) << 16;
  d |= std::uint64_t((8 * ROWB) >> 4) << 32;     // 8-row groups
  d |= std::uint64_t(ROWB == 64 ? 2 : 1) << 62;  // 64B / 128B swizzle
  return d;
}

template <int BP, int BF, int WG, int STAGES, int ROWB>
struct Cfg {
  static constexpr int threads = 128 * WG;
  static constexpr int rows_per_wg = BP / WG;
  static constexpr int m64 = rows_per_wg / 64;
  static constexpr int nacc = BF / 2;
  static constexpr int kstep = ROWB / 2;  // channels per stage
  static constexpr int a_bytes = BP * ROWB;
  static constexpr int stage_bytes = (BP + BF) * ROWB;
  static constexpr int pipe_bytes = STAGES * stage_bytes;
  // Output staging: BF/64 column blocks (32 when BF == 32) of BP rows, 128-byte swizzle.
  static constexpr int out_bytes = BP * BF * 2;
  static constexpr int data_bytes = pipe_bytes > out_bytes ? pipe_bytes : out_bytes;
  static constexpr int bar_bytes = 16 * STAGES;
  // What a Kokkos team would request as scratch: data, barriers, and the 1024-byte alignment
  // slack that the swizzle needs.
  static constexpr int smem = data_bytes + bar_bytes + 1024;
};

struct Maps {
  const bf16* w_raw;  // W_CPASYNC: the filters, [M][K]
  const CUtensorMap* x;  // im2col, NHWC (x + 3: a [J, C] matrix map)
  const CUtensorMap* w;  // tiled, [M][R*S*C]
  const CUtensorMap* y;  // tiled, [J][M]
};

// KSPLIT > 1: the K steps of a tile are split over KSPLIT neighbouring blocks; each writes its
// float partial sums (thread-interleaved float4s, so that the writes and the reads are
// coalesced without shared memory), and the last block of the tile to finish (a counter per
// tile) adds the partials in slice order, so the sum does not depend on which block is last,
// and runs the epilogue. The partials stay in L2.
template <int BP, int BF, int WG, int STAGES, int ROWB, int MINB, int KSPLIT>
__global__ void __launch_bounds__(Cfg<BP, BF, WG, STAGES, ROWB>::threads, MINB)
    conv_tma(Maps maps, const float* __restrict__ bias, Geo g, int f_blocks,
             float* __restrict__ partials, int* __restrict__ counters) {
  using C_ = Cfg<BP, BF, WG, STAGES, ROWB>;
  constexpr int KS = C_::kstep;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw0 = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t smem0 = (raw0 + 1023) & ~1023u;
  const std::uint32_t full0 = smem0 + C_::data_bytes;  // STAGES barriers: tile landed
  const std::uint32_t empty0 = full0 + 8 * STAGES;     // STAGES barriers: tile read (WG arrivals)
  const int t = threadIdx.x;
  const int tile = blockIdx.x / KSPLIT, slice = blockIdx.x % KSPLIT;
  const int fb = tile % f_blocks;
  const int pb = tile / f_blocks;
  const int f0 = fb * BF;
  const int j0 = pb * BP;
  const int PQ = g.P * g.Q;
  const int n0 = j0 / PQ, pq0 = j0 - n0 * PQ, p0 = pq0 / g.Q, q0 = pq0 - p0 * g.Q;
  const int w_base = q0 * g.stride - g.pad, h_base = p0 * g.stride - g.pad;
  const int all_steps = g.R * g.S * g.C / KS;
  const int per_slice = (all_steps + KSPLIT - 1) / KSPLIT;
  const int first = slice * per_slice;
  const int steps = min(all_steps, first + per_slice) - first;

  if (t == 0) {
    for (int s = 0; s < STAGES; ++s) {
#ifdef W_CPASYNC
      bar_init(full0 + 8 * s, 1 + C_::threads);
#else
      bar_init(full0 + 8 * s, 1);
#endif
      bar_init(empty0 + 8 * s, WG);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#ifdef HARNESS_ACQUIRE
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.x) : "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.w) : "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.y) : "memory");
#endif
  }
  __syncthreads();

  auto issue = [&](int step) {
    const int slot = step % STAGES;
    const std::uint32_t base = smem0 + slot * C_::stage_bytes;
    const int k0 = (first + step) * KS;
    const int tap = k0 / g.C, c0 = k0 - tap * g.C;
    const int r = tap / g.S, s = tap - r * g.S;
#ifndef LOAD_X
#define LOAD_X 1
#endif
#ifndef LOAD_W
#define LOAD_W 1
#endif
#ifdef W_CPASYNC
    bar_expect_tx(full0 + 8 * slot, C_::a_bytes);
#else
    bar_expect_tx(full0 + 8 * slot, (LOAD_X ? C_::a_bytes : 0) + (LOAD_W ? C_::stage_bytes - C_::a_bytes : 0));
#endif
#if LOAD_X
#ifdef X_TILED
    tma_tile_2d(base, maps.x + 3, full0 + 8 * slot, c0, j0 + (r * g.W + s));
#else
    tma_im2col_4d(base, maps.x, full0 + 8 * slot, c0, w_base, h_base, n0,
                  static_cast<std::uint16_t>(s), static_cast<std::uint16_t>(r));
#endif
#endif
#if LOAD_W && !defined(W_CPASYNC)
    tma_tile_2d(base + C_::a_bytes, maps.w, full0 + 8 * slot, k0, f0);
#endif
  };
  const int K = g.R * g.S * g.C;
  // every thread: its share of the stage's filter tile by cp.async (16-byte chunks, the
  // stage's swizzle), then an arrival on the stage barrier when they have landed
  auto issue_w = [&](int step) {
    const int slot = step % STAGES;
    const std::uint32_t wbase = smem0 + slot * C_::stage_bytes + C_::a_bytes;
    const int k0 = (first + step) * KS;
    constexpr int per_row = ROWB / 16, chunks = BF * per_row;
#pragma unroll
    for (int i = t; i < chunks; i += C_::threads) {
      const int row = i / per_row, c = i % per_row;
      const int sw = ROWB == 128 ? (row & 7) : ((row >> 1) & 3);
      const std::uint32_t dst = wbase + row * ROWB + ((c ^ sw) << 4);
      const bool ok = f0 + row < g.M;
      const bf16* src = maps.w_raw + (ok ? (long long)(f0 + row) * K + k0 + c * 8 : 0);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                   "r"(ok ? 16 : 0)
                   : "memory");
    }
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full0 + 8 * slot)
                 : "memory");
  };
  (void)issue_w;
  (void)K;
  if (t == 0)
    for (int st = 0; st < STAGES && st < steps; ++st)
      issue(st);
#ifdef W_CPASYNC
  for (int st = 0; st < STAGES && st < steps; ++st)
    issue_w(st);
#endif

  float acc[C_::m64][C_::nacc];
#pragma unroll
  for (int m = 0; m < C_::m64; ++m)
#pragma unroll
    for (int i = 0; i < C_::nacc; ++i)
      acc[m][i] = 0.f;

  const int wg = t / 128;
#ifdef SKIP_LOAD
  for (int st = 0; st < STAGES && st < steps; ++st) bar_wait(full0 + 8 * st, 0);
#endif
  for (int step = 0; step < steps; ++step) {
    const int slot = step % STAGES;
#ifndef SKIP_LOAD
    bar_wait(full0 + 8 * slot, (step / STAGES) & 1);
#endif
#ifdef W_CPASYNC
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async wrote w (generic proxy)
#endif
    const std::uint32_t a_base = smem0 + slot * C_::stage_bytes + wg * C_::rows_per_wg * ROWB;
    const std::uint32_t b_base = smem0 + slot * C_::stage_bytes + C_::a_bytes;
    wg_fence();
#ifndef SKIP_MMA
#pragma unroll
    for (int ks = 0; ks < ROWB / 32; ++ks)
#pragma unroll
      for (int m = 0; m < C_::m64; ++m)
        Wgmma<BF>::mma(acc[m], make_desc<ROWB>(a_base + m * 64 * ROWB + ks * 32),
                       make_desc<ROWB>(b_base + ks * 32));
#endif
    wg_commit();
    wg_wait<1>();
    // The previous step's wgmma has read its slot: release it, and refill it.
    if (step > 0) {
      const int prev = step - 1, pslot = prev % STAGES;
      if (t % 128 == 0) bar_arrive(empty0 + 8 * pslot);
#ifdef SKIP_LOAD
      if (false) {
#else
      if (t == 0 && prev + STAGES < steps) {
#endif
        bar_wait(empty0 + 8 * pslot, (prev / STAGES) & 1);
        issue(prev + STAGES);
      }
#ifdef W_CPASYNC
      if (prev + STAGES < steps) issue_w(prev + STAGES);
#endif
      __syncwarp();  // the issuing lane rejoins its warp before the next wgmma (.aligned)
    }
  }
  wg_wait<0>();
  if constexpr (KSPLIT > 1) {
    constexpr int per_thread = C_::m64 * C_::nacc / 4;  // float4s
    float4* mine =
        reinterpret_cast<float4*>(partials) + (long long)blockIdx.x * per_thread * C_::threads + t;
#pragma unroll
    for (int m = 0; m < C_::m64; ++m)
#pragma unroll
      for (int i = 0; i < C_::nacc / 4; ++i)
        __stcg(mine + (m * C_::nacc / 4 + i) * C_::threads,
               make_float4(acc[m][4 * i], acc[m][4 * i + 1], acc[m][4 * i + 2], acc[m][4 * i + 3]));
    __threadfence();
    __syncthreads();
    __shared__ int arrived;
    if (t == 0) {
      arrived = atomicAdd(counters + tile, 1);
      __threadfence();
    }
    __syncthreads();
    if (arrived != KSPLIT - 1) return;
    if (t == 0) counters[tile] = 0;  // ready for the next launch
      // Element by element, slices in order: the same sum whichever block is last.
#pragma unroll
    for (int m = 0; m < C_::m64; ++m)
#pragma unroll
      for (int i = 0; i < C_::nacc / 4; ++i) {
        float4 total = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int s = 0; s < KSPLIT; ++s) {
          const float4 v =
              s == slice
                  ? make_float4(acc[m][4 * i], acc[m][4 * i + 1], acc[m][4 * i + 2],
                                acc[m][4 * i + 3])
                  : __ldcg(reinterpret_cast<const float4*>(partials) +
                           (((long long)tile * KSPLIT + s) * per_thread + m * C_::nacc / 4 + i) *
                               C_::threads +
                           t);
          total.x += v.x;
          total.y += v.y;
          total.z += v.z;
          total.w += v.w;
        }
        acc[m][4 * i] = total.x;
        acc[m][4 * i + 1] = total.y;
        acc[m][4 * i + 2] = total.z;
        acc[m][4 * i + 3] = total.w;
      }
  }
  __syncthreads();  // every warpgroup is done with the pipeline buffers

  // Epilogue: bias + ReLU, bf16, staged in the 128-byte swizzle (64-byte for BF == 32), then
  // one TMA store per 64 columns; the store clips rows past J and columns past M.
  const int warp = (t % 128) / 32, lane = t % 32, gq = lane / 4, tq = lane % 4;
  constexpr int CB = BF < 64 ? BF : 64;  // columns per store box
  constexpr int RB = CB * 2;             // bytes per staged row
#pragma unroll
  for (int i = 0; i < BF / 8; ++i) {
    const int f = f0 + 8 * i + 2 * tq;
    const float2 b = f < g.M ? *reinterpret_cast<const float2*>(bias + f) : make_float2(0.f, 0.f);
    const int box = (8 * i) / CB, chunk = i % (CB / 8);
#pragma unroll
    for (int m = 0; m < C_::m64; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wg * C_::rows_per_wg + m * 64 + warp * 16 + gq + 8 * h;
        const int sw = RB == 128 ? (row & 7) : ((row >> 1) & 3);
        const std::uint32_t at = smem0 + box * BP * RB + row * RB + ((chunk ^ sw) << 4) + 4 * tq;
        __nv_bfloat162 v = __floats2bfloat162_rn(fmaxf(acc[m][4 * i + 2 * h] + b.x, 0.f),
                                                 fmaxf(acc[m][4 * i + 2 * h + 1] + b.y, 0.f));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(*reinterpret_cast<unsigned*>(&v))
                     : "memory");
      }
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  if (t == 0) {
#pragma unroll
    for (int box = 0; box < BF / CB; ++box)
      tma_store_2d(maps.y, smem0 + box * BP * RB, f0 + box * CB, j0);
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
}

// ---------------------------------------------------------------- halo kernel (session 29)
// One team: an 8 x 8 block of output pixels of one image x BF filters. Per 64-channel block,
// x's halo (10 rows x HWP columns x 64 channels, 128-byte swizzle) arrives once by a tiled
// TMA box and serves all nine taps: tap (r, s)'s A operand starts at halo row r * HWP + s,
// its 8-row groups HWP rows apart (SBO). The filters stream through WST stages as before.
__device__ __forceinline__ std::uint64_t make_desc_sbo(std::uint32_t smem_addr, std::uint32_t sbo,
                                                       int base_off) {
  std::uint64_t d = 0;
  d |= std::uint64_t((smem_addr & 0x3FFFF) >> 4);
  d |= std::uint64_t(1) << 16;
  d |= std::uint64_t(sbo >> 4) << 32;
  d |= std::uint64_t(base_off & 7) << 49;
  d |= std::uint64_t(1) << 62;  // 128B swizzle
  return d;
}
__device__ __forceinline__ void tma_tile_4d(std::uint32_t dst, const CUtensorMap* map,
                                            std::uint32_t bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, std::uint32_t src, int c0,
                                             int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

template <int HWP, int BH = 8>
struct HaloCfg {
  static constexpr int halo_bytes = (BH + 2) * HWP * 128;
  static constexpr int halo_alloc = (halo_bytes + 1023) / 1024 * 1024;
};

template <int BF, int WST, int MINB, int HWP, int BASEMODE, int BH = 8>
__global__ void __launch_bounds__(128, MINB)
    conv_halo(Maps maps, const float* __restrict__ bias, Geo g, int f_blocks, int qb_count,
              int pb_count) {
  constexpr int ROWB = 128, KC = 64;
  constexpr int W_BYTES = BF * ROWB;
  using H = HaloCfg<HWP, BH>;
  constexpr int MI = BH / 8;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw0 = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t smem0 = (raw0 + 1023) & ~1023u;
  const std::uint32_t halo = smem0;
  const std::uint32_t wbase = smem0 + H::halo_alloc;
  const std::uint32_t hbar = wbase + WST * W_BYTES;
  const std::uint32_t wbar0 = hbar + 8;
  const int t = threadIdx.x;
  const int taps = g.R * g.S, cblocks = g.C / KC, steps = taps * cblocks;
  if (t == 0) {
    bar_init(hbar, 1);
    for (int s = 0; s < WST; ++s)
      bar_init(wbar0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#ifdef FENCE
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.x) : "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.w) : "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(maps.y) : "memory");
#endif
  }
  __syncthreads();
  const int tiles = g.N * pb_count * qb_count * f_blocks;
#ifdef REINIT
  // every tile starts its barriers afresh (phase 0, buffer 0): the step arithmetic folds
  constexpr int stages_before = 0, halos_before = 0;
#else
  int stages_before = 0, halos_before = 0;
#endif
#ifdef PERSIST
#ifdef UNROLL1
#pragma unroll 1
#endif
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
#elif defined(NOLOOP)
  (void)tiles;
  {
    const int tile = blockIdx.x;
#else
  for (int tile = blockIdx.x; tile < blockIdx.x + 1; ++tile) {
#endif
  int rest = tile;
  const int fb = rest % f_blocks;
  rest /= f_blocks;
  const int qb = rest % qb_count;
  rest /= qb_count;
  const int pb = rest % pb_count;
  const int n = rest / pb_count;
  const int f0 = fb * BF, p0 = pb * BH, q0 = qb * 8;
  auto issue_w = [&](int step, int slot) {
    const int cb = step / taps, tap = step - cb * taps;
    bar_expect_tx(wbar0 + 8 * slot, W_BYTES);
    tma_tile_2d(wbase + slot * W_BYTES, maps.w, wbar0 + 8 * slot, tap * g.C + cb * KC, f0);
  };
  auto issue_halo = [&](int cb) {
    bar_expect_tx(hbar, H::halo_bytes);
    tma_tile_4d(halo, maps.x, hbar, cb * KC, q0 - g.pad, p0 - g.pad, n);
  };
  if (t == 0) {
    issue_halo(0);
    for (int st = 0; st < WST && st < steps; ++st)
      issue_w(st, (stages_before + st) % WST);
  }
  float acc[MI][BF / 2];
#pragma unroll
  for (int m = 0; m < MI; ++m)
#pragma unroll
    for (int i = 0; i < BF / 2; ++i)
      acc[m][i] = 0.f;
#ifdef INC
  int slot = stages_before % WST;
  unsigned phase = (stages_before / WST) & 1;
  int cb = 0, tap = 0, r = 0, s = 0;
#endif
  for (int step = 0; step < steps; ++step) {
#ifndef INC
    const int slot = (stages_before + step) % WST;
    const unsigned phase = ((stages_before + step) / WST) & 1;
    const int cb = step / taps, tap = step - cb * taps;
    const int r = tap / g.S, s = tap - r * g.S;
#endif
    if (tap == 0) {
      if (cb > 0) {  // every wgmma that read the previous halo is done before it is replaced
        wg_wait<0>();
#ifdef RELOAD_BAR
        __syncthreads();
#endif
        if (t == 0) issue_halo(cb);
        __syncwarp();
      }
      bar_wait(hbar, (halos_before + cb) & 1);
    }
    bar_wait(wbar0 + 8 * slot, phase);
    wg_fence();
    const std::uint32_t a0 = halo + (r * HWP + s) * ROWB;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int m = 0; m < MI; ++m) {
        const std::uint32_t a = a0 + m * 8 * HWP * ROWB + ks * 32;
        Wgmma<BF>::mma(acc[m], make_desc_sbo(a, HWP * ROWB, BASEMODE ? int((a >> 7) & 7) : 0),
                       make_desc<ROWB>(wbase + slot * W_BYTES + ks * 32));
      }
    wg_commit();
    wg_wait<1>();
    if (step > 0) {
      const int prev = step - 1;
      if (t == 0 && prev + WST < steps) issue_w(prev + WST, (slot + WST - 1) % WST);
      __syncwarp();
    }
#ifdef INC
    if (++slot == WST) { slot = 0; phase ^= 1u; }
    if (++s == g.S) { s = 0; ++r; }
    if (++tap == taps) { tap = 0; r = 0; ++cb; }
#endif
  }
  wg_wait<0>();
  __syncthreads();
  const int warp = t / 32, lane = t % 32, gq = lane / 4, tq = lane % 4;
#pragma unroll
  for (int i = 0; i < BF / 8; ++i) {
    const int f = f0 + 8 * i + 2 * tq;
    const float2 b = f < g.M ? *reinterpret_cast<const float2*>(bias + f) : make_float2(0.f, 0.f);
    const int box = i / 8, chunk = i % 8;
#pragma unroll
    for (int m = 0; m < MI; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m * 64 + warp * 16 + gq + 8 * h;
      const std::uint32_t at = smem0 + box * BH * 8 * 128 + row * 128 + ((chunk ^ (row & 7)) << 4) + 4 * tq;
      __nv_bfloat162 v = __floats2bfloat162_rn(fmaxf(acc[m][4 * i + 2 * h] + b.x, 0.f),
                                               fmaxf(acc[m][4 * i + 2 * h + 1] + b.y, 0.f));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(*reinterpret_cast<unsigned*>(&v))
                   : "memory");
    }
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  if (t == 0) {
#pragma unroll
    for (int box = 0; box < BF / 64; ++box)
      tma_store_4d(maps.y, smem0 + box * BH * 8 * 128, f0 + 64 * box, q0, p0, n);
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
#ifdef REINIT
  __syncthreads();  // every warp is past its last barrier wait
  if (t == 0) {
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(hbar) : "memory");
    for (int s = 0; s < WST; ++s)
      asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(wbar0 + 8 * s) : "memory");
    bar_init(hbar, 1);
    for (int s = 0; s < WST; ++s)
      bar_init(wbar0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
#else
  stages_before += steps;
  halos_before += cblocks;
#endif
  }
}
__global__ void conv_ref(const bf16* x, const bf16* w, const float* bias, float* y, Geo g) {
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long total = (long long)g.N * g.P * g.Q * g.M;
  if (idx >= total) return;
  const int m = idx % g.M;
  const long long j = idx / g.M;
  const int n = j / (g.P * g.Q), pq = j % (g.P * g.Q), p = pq / g.Q, q = pq % g.Q;
  float sum = 0.f;
  for (int r = 0; r < g.R; ++r)
    for (int s = 0; s < g.S; ++s) {
      const int h = p * g.stride - g.pad + r, ww = q * g.stride - g.pad + s;
      if (h < 0 || h >= g.H || ww < 0 || ww >= g.W) continue;
      const bf16* xp = x + (((long long)n * g.H + h) * g.W + ww) * g.C;
      const bf16* wp = w + (((long long)m * g.R + r) * g.S + s) * g.C;
      for (int c = 0; c < g.C; ++c)
        sum += __bfloat162float(xp[c]) * __bfloat162float(wp[c]);
    }
  y[idx] = fmaxf(sum + bias[m], 0.f);
}

// ---------------------------------------------------------------- host: tensor maps
using EncodeIm2col = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                  const cuuint64_t*, const cuuint64_t*, const int*, const int*,
                                  cuuint32_t, cuuint32_t, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion,
                                  CUtensorMapFloatOOBfill);
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static EncodeIm2col encode_im2col;
static EncodeTiled encode_tiled;

static void load_driver_entries() {
  cudaDriverEntryPointQueryResult q;
  void* f = nullptr;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &f, 12000, cudaEnableDefault, &q));
  encode_im2col = reinterpret_cast<EncodeIm2col>(f);
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
  encode_tiled = reinterpret_cast<EncodeTiled>(f);
  if (!encode_im2col || !encode_tiled) {
    std::printf("no tensor-map entry points\n");
    std::exit(1);
  }
}

static CUtensorMapSwizzle swizzle_of(int bytes) {
  return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
}

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::printf("%s failed: %d\n", what, int(r));
    std::exit(1);
  }
}

constexpr long long kPartialBytes = 64ll << 20;

struct Data {
  bf16 *x, *w, *y;
  float *bias, *ref, *partials;
  int* counters;
  CUtensorMap* maps;  // device: 3 maps
};

template <int BP, int BF, int WG, int STAGES, int ROWB, int MINB = 1, int KSPLIT = 1>
void run_case(const char* name, Geo g, const Data& d, int reps) {
  using C_ = Cfg<BP, BF, WG, STAGES, ROWB>;
  if (BF > g.M || g.C % C_::kstep != 0) return;
  const long long J = (long long)g.N * g.P * g.Q;
  const long long ys = J * g.M;
  CUtensorMap host[4];
  {
    const cuuint64_t dims[4] = {cuuint64_t(g.C), cuuint64_t(g.W), cuuint64_t(g.H), cuuint64_t(g.N)};
    const cuuint64_t strides[3] = {cuuint64_t(g.C) * 2, cuuint64_t(g.W) * g.C * 2,
                                   cuuint64_t(g.H) * g.W * g.C * 2};
    const int lower[2] = {-g.pad, -g.pad};
    const int upper[2] = {g.pad - (g.S - 1), g.pad - (g.R - 1)};
    const cuuint32_t estr[4] = {1, cuuint32_t(g.stride), cuuint32_t(g.stride), 1};
    check(encode_im2col(&host[0], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, d.x, dims, strides, lower,
                        upper, C_::kstep, BP, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(ROWB),
                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "im2col map");
  }
  {
    const int K = g.R * g.S * g.C;
    const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(g.M)};
    const cuuint64_t strides[1] = {cuuint64_t(K) * 2};
    const cuuint32_t box[2] = {cuuint32_t(C_::kstep), cuuint32_t(BF)};
    const cuuint32_t estr[2] = {1, 1};
    check(encode_tiled(&host[1], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d.w, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(ROWB),
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "filter map");
  }
  {
    constexpr int CB = BF < 64 ? BF : 64;
    const cuuint64_t dims[2] = {cuuint64_t(g.M), cuuint64_t(J)};
    const cuuint64_t strides[1] = {cuuint64_t(g.M) * 2};
    const cuuint32_t box[2] = {cuuint32_t(CB), cuuint32_t(BP)};
    const cuuint32_t estr[2] = {1, 1};
    check(encode_tiled(&host[2], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d.y, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(CB * 2),
                       CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "output map");
  }
  {
    const cuuint64_t dims[2] = {cuuint64_t(g.C), cuuint64_t((long long)g.N * g.H * g.W)};
    const cuuint64_t strides[1] = {cuuint64_t(g.C) * 2};
    const cuuint32_t box[2] = {cuuint32_t(C_::kstep), cuuint32_t(BP)};
    const cuuint32_t estr[2] = {1, 1};
    check(encode_tiled(&host[3], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d.x, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(ROWB),
                       CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "x matrix map");
  }
  CK(cudaMemcpy(d.maps, host, sizeof(host), cudaMemcpyHostToDevice));
  const Maps maps{d.w, d.maps, d.maps + 1, d.maps + 2};
  CK(cudaMemset(d.y, 0xFF, ys * 2));  // NaN poison
  const int f_blocks = (g.M + BF - 1) / BF;
  const unsigned grid = unsigned((J + BP - 1) / BP * f_blocks * KSPLIT);
  if (KSPLIT > 1 && (long long)grid * BP * BF * 4 > kPartialBytes) return;
  auto kern = conv_tma<BP, BF, WG, STAGES, ROWB, MINB, KSPLIT>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C_::smem));
  auto launch = [&] {
    kern<<<grid, C_::threads, C_::smem>>>(maps, d.bias, g, f_blocks, d.partials, d.counters);
  };
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<bf16> hy(ys);
  std::vector<float> hr(ys);
  CK(cudaMemcpy(hy.data(), d.y, ys * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), d.ref, ys * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, worst = 0;
  long long bad = 0;
  for (long long i = 0; i < ys; ++i) {
    const double a = __bfloat162float(hy[i]), b = hr[i];
    if (!std::isfinite(a)) {
      ++bad;
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
    worst = std::max(worst, std::fabs(a - b) / (std::fabs(b) + 1.0));
  }
  cudaFuncAttributes attr;
  CK(cudaFuncGetAttributes(&attr, kern));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, C_::threads, C_::smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < 5; ++i)
    launch();
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double flop = 2.0 * J * g.M * (double)g.R * g.S * g.C;
  std::printf(
      "%-8s BP%3d BF%3d WG%d S%d row%3d m%d k%d smem %6d regs %3d blocks/SM %d grid %6u: %.4f ms "
      "%6.1f TFLOP/s relerr %.2e worst %.2e nonfinite %lld\n",
      name, BP, BF, WG, STAGES, ROWB, MINB, KSPLIT, C_::smem, attr.numRegs, per_sm, grid, med,
      flop / med / 1e9, std::sqrt(num / den), worst, bad);
  std::fflush(stdout);
}

template <int BF, int WST, int MINB, int HWP, int BASEMODE, int BH = 8>
void run_case_halo(const char* name, Geo g, const Data& d, int reps) {
  using H = HaloCfg<HWP, BH>;
  if (BF > g.M || g.C % 64 != 0 || g.stride != 1 || g.R != 3 || g.S != 3) return;
  const long long J = (long long)g.N * g.P * g.Q;
  const long long ys = J * g.M;
  const int smem = H::halo_alloc + WST * BF * 128 + 8 * (1 + WST) + 1024;
  CUtensorMap host[3];
  {
    const cuuint64_t dims[4] = {cuuint64_t(g.C), cuuint64_t(g.W), cuuint64_t(g.H), cuuint64_t(g.N)};
    const cuuint64_t strides[3] = {cuuint64_t(g.C) * 2, cuuint64_t(g.W) * g.C * 2,
                                   cuuint64_t(g.H) * g.W * g.C * 2};
    const cuuint32_t box[4] = {64, cuuint32_t(HWP), cuuint32_t(BH + 2), 1};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    check(encode_tiled(&host[0], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, d.x, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "halo map");
  }
  {
    const int K = g.R * g.S * g.C;
    const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(g.M)};
    const cuuint64_t strides[1] = {cuuint64_t(K) * 2};
    const cuuint32_t box[2] = {64, cuuint32_t(BF)};
    const cuuint32_t estr[2] = {1, 1};
    check(encode_tiled(&host[1], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d.w, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "filter map");
  }
  {
    const cuuint64_t dims[4] = {cuuint64_t(g.M), cuuint64_t(g.Q), cuuint64_t(g.P), cuuint64_t(g.N)};
    const cuuint64_t strides[3] = {cuuint64_t(g.M) * 2, cuuint64_t(g.Q) * g.M * 2,
                                   cuuint64_t(g.P) * g.Q * g.M * 2};
    const cuuint32_t box[4] = {64, 8, cuuint32_t(BH), 1};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    check(encode_tiled(&host[2], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, d.y, dims, strides, box, estr,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "output map");
  }
  CK(cudaMemcpy(d.maps, host, sizeof(host), cudaMemcpyHostToDevice));
  const Maps maps{d.w, d.maps, d.maps + 1, d.maps + 2};
  CK(cudaMemset(d.y, 0xFF, ys * 2));  // NaN poison
  const int f_blocks = (g.M + BF - 1) / BF;
  const int qb = (g.Q + 7) / 8, pb = (g.P + BH - 1) / BH;
  unsigned grid = unsigned((long long)g.N * pb * qb * f_blocks);
  auto kern = conv_halo<BF, WST, MINB, HWP, BASEMODE, BH>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
#ifdef PERSIST
  {
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, 128, smem));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (grid > unsigned(per * sms)) grid = unsigned(per * sms);
  }
#endif
  auto launch = [&] { kern<<<grid, 128, smem>>>(maps, d.bias, g, f_blocks, qb, pb); };
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<bf16> hy(ys);
  std::vector<float> hr(ys);
  CK(cudaMemcpy(hy.data(), d.y, ys * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), d.ref, ys * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, worst = 0;
  long long bad = 0;
  for (long long i = 0; i < ys; ++i) {
    const double a = __bfloat162float(hy[i]), b = hr[i];
    if (!std::isfinite(a)) {
      ++bad;
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
    worst = std::max(worst, std::fabs(a - b) / (std::fabs(b) + 1.0));
  }
  cudaFuncAttributes attr;
  CK(cudaFuncGetAttributes(&attr, kern));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, 128, smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < 5; ++i)
    launch();
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double flop = 2.0 * J * g.M * (double)g.R * g.S * g.C;
  std::printf(
      "%-8s HALO BH%2d BF%3d WST%d HWP%2d base%d m%d smem %6d regs %3d blocks/SM %d grid %6u: %.4f ms "
      "%6.1f TFLOP/s relerr %.2e worst %.2e nonfinite %lld\n",
      name, BH, BF, WST, HWP, BASEMODE, MINB, smem, attr.numRegs, per_sm, grid, med, flop / med / 1e9,
      std::sqrt(num / den), worst, bad);
  std::fflush(stdout);
}
int main(int argc, char** argv) {
  // 0: every case; 1: the tiles kcnn takes; 2: the alternatives.
  const int mode = argc > 1 ? std::atoi(argv[1]) : 0;
  load_driver_entries();
  struct L {
    const char* name;
    Geo g;
  } layers[] = {
      {"c64_56", {64, 64, 56, 56, 64, 3, 3, 56, 56, 1, 1}},
      {"c128_28", {64, 128, 28, 28, 128, 3, 3, 28, 28, 1, 1}},
      {"c256_14", {64, 256, 14, 14, 256, 3, 3, 14, 14, 1, 1}},
      {"c512_7", {32, 512, 7, 7, 512, 3, 3, 7, 7, 1, 1}},
      // Odd shapes: batch 1, prime extents, a tile edge in pixels and filters.
      {"odd_c32", {1, 32, 13, 11, 96, 3, 3, 13, 11, 1, 1}},
      {"odd_c64", {3, 64, 7, 17, 64, 3, 3, 7, 17, 1, 1}},
      // Strides 2 and 3 (the im2col map's traversal stride).
      {"s2_c64", {2, 64, 15, 13, 64, 3, 3, 8, 7, 2, 1}},
      {"odd_c128", {2, 128, 9, 13, 96, 3, 3, 9, 13, 1, 1}},
      {"pad0_c64", {2, 64, 12, 11, 64, 3, 3, 10, 9, 1, 0}},
      {"s3_c32", {3, 32, 17, 19, 128, 3, 3, 6, 7, 3, 1}},
  };
  for (auto& l : layers) {
    if (std::getenv("LAYER") && std::string(std::getenv("LAYER")) != l.name) continue;
    const Geo g = l.g;
    const long long xs = (long long)g.N * g.H * g.W * g.C, ws = (long long)g.M * g.R * g.S * g.C;
    const long long ys = (long long)g.N * g.P * g.Q * g.M;
    std::vector<bf16> hx(xs), hw(ws);
    std::vector<float> hb(g.M);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : hx)
      v = __float2bfloat16(u(rng));
    for (auto& v : hw)
      v = __float2bfloat16(u(rng) * 0.1f);
    for (auto& v : hb)
      v = u(rng);
    Data d;
    CK(cudaMalloc(&d.x, xs * 2));
    CK(cudaMalloc(&d.w, ws * 2));
    CK(cudaMalloc(&d.y, ys * 2));
    CK(cudaMalloc(&d.ref, ys * 4));
    CK(cudaMalloc(&d.bias, g.M * 4));
    CK(cudaMalloc(&d.maps, 4 * sizeof(CUtensorMap)));
    CK(cudaMalloc(&d.partials, kPartialBytes));
    CK(cudaMalloc(&d.counters, 1 << 20));
    CK(cudaMemset(d.counters, 0, 1 << 20));
    CK(cudaMemcpy(d.x, hx.data(), xs * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.w, hw.data(), ws * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.bias, hb.data(), g.M * 4, cudaMemcpyHostToDevice));
    conv_ref<<<unsigned((ys + 255) / 256), 256>>>(d.x, d.w, d.bias, d.ref, g);
    CK(cudaGetLastError());
    const char* n = l.name;
    const int reps = 50;
    // Within the Kokkos team-scratch cap (<= 40 KB of data + barriers + alignment slack).
    if (mode == 8) {
      run_case_halo<64, 2, 4, 10, 0, 16>(n, g, d, reps);
      run_case_halo<64, 2, 5, 10, 0, 16>(n, g, d, reps);
    }
    if (mode == 7) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4>(n, g, d, reps);
      run_case<128, 128, 1, 2, 64, 3>(n, g, d, reps);
      run_case<64, 64, 1, 2, 128, 5, 3>(n, g, d, reps);
      run_case_halo<64, 2, 5, 10, 0>(n, g, d, reps);
      run_case_halo<64, 3, 4, 10, 0>(n, g, d, reps);
      run_case_halo<64, 2, 4, 10, 0, 16>(n, g, d, reps);
      run_case_halo<64, 2, 3, 10, 0, 16>(n, g, d, reps);
      run_case_halo<64, 3, 3, 10, 0, 16>(n, g, d, reps);
    }
    if (mode == 6) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case_halo<64, 2, 5, 16, 1>(n, g, d, reps);
      run_case_halo<64, 2, 5, 16, 0>(n, g, d, reps);
      run_case_halo<64, 3, 4, 10, 0>(n, g, d, reps);
      run_case_halo<64, 3, 4, 10, 1>(n, g, d, reps);
      run_case_halo<64, 3, 4, 16, 1>(n, g, d, reps);
      run_case_halo<64, 4, 4, 16, 1>(n, g, d, reps);
    }
    if (mode == 5) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case<64, 64, 1, 2, 128, 5, 3>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4>(n, g, d, reps);
      run_case<128, 128, 1, 2, 64, 3>(n, g, d, reps);
      run_case<64, 128, 1, 3, 64, 4>(n, g, d, reps);
      run_case<64, 128, 1, 3, 64, 4, 3>(n, g, d, reps);
    }
    if (mode == 4) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case<64, 64, 1, 2, 128, 5, 3>(n, g, d, reps);
    }
    if (mode == 3) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4>(n, g, d, reps);
      run_case<128, 128, 1, 2, 64, 3>(n, g, d, reps);
    }
    if (mode == 0 || mode == 1) {
      run_case<64, 64, 1, 2, 128, 5>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4>(n, g, d, reps);
      run_case<128, 128, 1, 2, 64, 3>(n, g, d, reps);
      run_case<64, 64, 1, 2, 128, 5, 3>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4, 3>(n, g, d, reps);
    }
    if (mode == 0 || mode == 2) {
      run_case<128, 128, 1, 2, 64, 3, 2>(n, g, d, reps);
      run_case<64, 128, 1, 3, 64, 4>(n, g, d, reps);
      run_case<64, 128, 1, 3, 64, 4, 2>(n, g, d, reps);
      run_case<64, 128, 1, 3, 64, 4, 3>(n, g, d, reps);
      run_case<64, 64, 1, 2, 128, 5, 2>(n, g, d, reps);
      run_case<128, 64, 1, 3, 64, 4, 2>(n, g, d, reps);
      run_case<64, 64, 1, 5, 64, 5>(n, g, d, reps);
      run_case<64, 64, 1, 5, 64, 5, 3>(n, g, d, reps);
    }
    if (mode == 0) {
      // Beyond the cap, for comparison.
      run_case<64, 64, 1, 3, 128, 4>(n, g, d, reps);
      run_case<128, 64, 1, 4, 128, 2>(n, g, d, reps);
    }
    cudaFree(d.x);
    cudaFree(d.w);
    cudaFree(d.y);
    cudaFree(d.ref);
    cudaFree(d.bias);
    cudaFree(d.maps);
    cudaFree(d.partials);
    cudaFree(d.counters);
  }
  return 0;
}
