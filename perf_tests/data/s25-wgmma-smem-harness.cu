// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stand-alone harness of session 25 (perf_tests/data/h100-2026-11-28-s25-wgmma-smem.txt): not
// part of the build. Question it answers: how fast does the channel-run design (gathers by
// cp.async into swizzled K-major rows, wgmma bf16 with float sums, ReLU, staged 16-byte stores)
// get when a block may use more than the 48 KB that Kokkos' TeamPolicy allows (rows of 128
// bytes with the 128-byte swizzle, larger tiles, deeper pipelines), against cuDNN in the same
// call. Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o h s25-wgmma-smem-harness.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e = (x);                                                                    \
    if (e != cudaSuccess) {                                                                 \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

using bf16 = __nv_bfloat16;

struct Geo {
  int N, C, H, W, M, R, S, P, Q, stride, pad;
};

template <int N>
struct Wgmma;
template <>
struct Wgmma<64> {
  __device__ __forceinline__ static void mma(float (&d)[32], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b));
  }
};

template <>
struct Wgmma<128> {
  __device__ __forceinline__ static void mma(float (&d)[64], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b));
  }
};

template <>
struct Wgmma<256> {
  __device__ __forceinline__ static void mma(float (&d)[128], std::uint64_t a, std::uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b));
  }
};

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void cp16(std::uint32_t dst, const void* src, bool valid, bool l1) {
  const int n = valid ? 16 : 0;
  if (l1)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rows of ROWB bytes (64: 32 channels, 64-byte swizzle; 128: 64 channels, 128-byte swizzle).
template <int ROWB>
__device__ __forceinline__ std::uint32_t swz(int row, int chunk) {
  if (ROWB == 64) return row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4);
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}
template <int ROWB>
__device__ __forceinline__ std::uint64_t make_desc(std::uint32_t smem_addr) {
  std::uint64_t d = 0;
  d |= std::uint64_t((smem_addr & 0x3FFFF) >> 4);
  d |= std::uint64_t(1) << 16;
  d |= std::uint64_t((8 * ROWB) >> 4) << 32;       // 8-row groups
  d |= std::uint64_t(ROWB == 64 ? 2 : 1) << 62;    // 64B / 128B swizzle
  return d;
}

template <int BP, int BF, int WG, int STAGES, int ROWB>
struct Cfg {
  static constexpr int nacc = BF / 2;
  static constexpr int threads = 128 * WG;
  static constexpr int rows_per_wg = BP / WG;
  static constexpr int m64 = rows_per_wg / 64;
  static constexpr int kstep = ROWB / 2;  // channels per stage
  static constexpr int chunks = ROWB / 16;
  static constexpr int stage_bytes = (BP + BF) * ROWB;
  static constexpr int pipe_bytes = STAGES * stage_bytes;
  static constexpr int epi_bytes = BP * (BF + 8) * 2;
  static constexpr int smem = (pipe_bytes > epi_bytes ? pipe_bytes : epi_bytes) + 1024;
  static constexpr int rows_step = threads / chunks;
  static constexpr int x_copies = BP / rows_step;
  static constexpr int w_copies = (BF + rows_step - 1) / rows_step;
};

// KSPLIT > 1: blockIdx.y takes a contiguous range of the K steps, raw float sums to part.
template <int BP, int BF, int WG, int STAGES, int ROWB, int MINB, int KSPLIT>
__global__ void __launch_bounds__(Cfg<BP, BF, WG, STAGES, ROWB>::threads, MINB)
    conv_wgmma(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y,
               float* __restrict__ part, Geo g, int f_blocks) {
  using C_ = Cfg<BP, BF, WG, STAGES, ROWB>;
  constexpr int KS = C_::kstep;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw0 = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t smem0 = (raw0 + 1023) & ~1023u;
  const int t = threadIdx.x;
  const int fb = blockIdx.x % f_blocks;
  const long long block = blockIdx.x / f_blocks;
  const int f0 = fb * BF;
  const long long j0 = block * BP;
  const long long J = (long long)g.N * g.P * g.Q;
  const int K = g.R * g.S * g.C;

  const int chunk = t % C_::chunks;
  const int copy_c = chunk * 8, row0 = t / C_::chunks;
  const bf16* x_row[C_::x_copies];
  int h_row[C_::x_copies], w_col[C_::x_copies];
  std::uint32_t x_at[C_::x_copies];
#pragma unroll
  for (int i = 0; i < C_::x_copies; ++i) {
    const int row = row0 + i * C_::rows_step;
    const long long j = j0 + row;
    x_at[i] = swz<ROWB>(row, chunk);
    if (j < J) {
      const int n = int(j / (g.P * g.Q));
      const int pq = int(j - (long long)n * g.P * g.Q);
      const int p = pq / g.Q, q = pq - p * g.Q;
      h_row[i] = p * g.stride - g.pad;
      w_col[i] = q * g.stride - g.pad;
      x_row[i] = x + (((long long)n * g.H + h_row[i]) * g.W + w_col[i]) * g.C + copy_c;
    } else {
      h_row[i] = -(1 << 29);
      w_col[i] = 0;
      x_row[i] = x;
    }
  }
  const bf16* w_row[C_::w_copies];
  bool w_in[C_::w_copies];
  std::uint32_t w_at[C_::w_copies];
#pragma unroll
  for (int i = 0; i < C_::w_copies; ++i) {
    const int row = row0 + i * C_::rows_step;
    w_in[i] = row < BF && f0 + row < g.M;
    w_row[i] = w + (w_in[i] ? (long long)(f0 + row) * K : 0) + copy_c;
    w_at[i] = BP * ROWB + swz<ROWB>(row, chunk);
  }
  const int all_steps = K / KS;
  const int per_slice = (all_steps + KSPLIT - 1) / KSPLIT;
  const int first = KSPLIT > 1 ? blockIdx.y * per_slice : 0;
  const int steps = KSPLIT > 1 ? min(all_steps, first + per_slice) - first : all_steps;
  // Tap walker from step `first`.
  const int k_first = first * KS;
  const int tap = k_first / g.C;
  int c0 = k_first - tap * g.C, s = tap % g.S, dh = tap / g.S, dw = s;
  long long x_delta = ((long long)dh * g.W + dw) * g.C + c0;
  int w_k = k_first;
  auto issue = [&](int step, int buf) {
    if (step < steps) {
      const std::uint32_t base = smem0 + buf * C_::stage_bytes;
#pragma unroll
      for (int i = 0; i < C_::x_copies; ++i) {
        const bool inside = (unsigned)(h_row[i] + dh) < (unsigned)g.H &&
                            (unsigned)(w_col[i] + dw) < (unsigned)g.W;
        cp16(base + x_at[i], inside ? x_row[i] + x_delta : x, inside, true);
      }
#pragma unroll
      for (int i = 0; i < C_::w_copies; ++i) {
        if (BF % C_::rows_step != 0 && row0 + i * C_::rows_step >= BF) break;
        cp16(base + w_at[i], w_row[i] + w_k, w_in[i], false);
      }
      w_k += KS;
      c0 += KS;
      if (c0 < g.C) {
        x_delta += KS;
      } else {
        c0 = 0;
        if (++s < g.S) {
          dw += 1;
          x_delta += KS;  // next tap: + C, minus the C - KS advanced
        } else {
          s = 0;
          dw = 0;
          dh += 1;
          x_delta += (long long)g.W * g.C - (long long)(g.S - 1) * g.C - (g.C - KS);
        }
      }
    }
    cp_commit();
  };

  float acc[C_::m64][C_::nacc];
#pragma unroll
  for (int m = 0; m < C_::m64; ++m)
#pragma unroll
    for (int i = 0; i < C_::nacc; ++i) acc[m][i] = 0.f;

  const int wg = t / 128;
  constexpr int DIST = STAGES - 1;
#pragma unroll
  for (int st = 0; st < DIST; ++st) issue(st, st);
  int rbuf = 0, wbuf = DIST;
  for (int step = 0; step < steps; ++step) {
    cp_wait<DIST - 1>();
    fence_proxy_async();
    __syncthreads();
    issue(step + DIST, wbuf);
    wbuf = wbuf + 1 == STAGES ? 0 : wbuf + 1;
    const std::uint32_t a_base = smem0 + rbuf * C_::stage_bytes + wg * C_::rows_per_wg * ROWB;
    const std::uint32_t b_base = smem0 + rbuf * C_::stage_bytes + BP * ROWB;
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < ROWB / 32; ++ks)
#pragma unroll
      for (int m = 0; m < C_::m64; ++m)
        Wgmma<BF>::mma(acc[m], make_desc<ROWB>(a_base + m * 64 * ROWB + ks * 32),
                       make_desc<ROWB>(b_base + ks * 32));
    wg_commit();
    wg_wait<0>();
    rbuf = rbuf + 1 == STAGES ? 0 : rbuf + 1;
  }
  cp_wait<0>();
  const int warp = (t % 128) / 32, lane = t % 32, gq = lane / 4, tq = lane % 4;
  if (KSPLIT > 1) {
    float* out = part + (long long)blockIdx.y * J * g.M;
#pragma unroll
    for (int m = 0; m < C_::m64; ++m)
#pragma unroll
      for (int i = 0; i < BF / 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = wg * C_::rows_per_wg + m * 64 + warp * 16 + gq + 8 * h;
          const long long j = j0 + row;
          const int f = f0 + 8 * i + 2 * tq;
          if (j < J && f < g.M)
            *reinterpret_cast<float2*>(out + j * g.M + f) =
                make_float2(acc[m][4 * i + 2 * h], acc[m][4 * i + 2 * h + 1]);
        }
    return;
  }
  __syncthreads();
  constexpr int pitch = BF + 8;
  bf16* staged = reinterpret_cast<bf16*>(smem_raw + (smem0 - raw0));
#pragma unroll
  for (int m = 0; m < C_::m64; ++m)
#pragma unroll
    for (int i = 0; i < BF / 8; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wg * C_::rows_per_wg + m * 64 + warp * 16 + gq + 8 * h;
        *reinterpret_cast<__nv_bfloat162*>(staged + row * pitch + 8 * i + 2 * tq) =
            __floats2bfloat162_rn(fmaxf(acc[m][4 * i + 2 * h], 0.f),
                                  fmaxf(acc[m][4 * i + 2 * h + 1], 0.f));
      }
  __syncthreads();
  constexpr int runs = BF / 8;
  for (int item = t; item < BP * runs; item += C_::threads) {
    const int row = item / runs, c = (item % runs) * 8;
    const long long j = j0 + row;
    if (j < J && f0 + c < g.M)
      *reinterpret_cast<uint4*>(y + j * g.M + f0 + c) =
          *reinterpret_cast<const uint4*>(staged + row * pitch + c);
  }
}

__global__ void reduce_slices(const float* __restrict__ part, bf16* __restrict__ y, long long n,
                              int slices) {
  const long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  if (i >= n) return;
  float4 s = *reinterpret_cast<const float4*>(part + i);
  for (int k = 1; k < slices; ++k) {
    const float4 v = *reinterpret_cast<const float4*>(part + k * n + i);
    s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
  }
  __nv_bfloat162 a = __floats2bfloat162_rn(fmaxf(s.x, 0.f), fmaxf(s.y, 0.f));
  __nv_bfloat162 b = __floats2bfloat162_rn(fmaxf(s.z, 0.f), fmaxf(s.w, 0.f));
  uint2 o;
  o.x = *reinterpret_cast<unsigned*>(&a);
  o.y = *reinterpret_cast<unsigned*>(&b);
  *reinterpret_cast<uint2*>(y + i) = o;
}

__global__ void conv_ref(const bf16* x, const bf16* w, float* y, Geo g) {
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
      for (int c = 0; c < g.C; ++c) sum += __bfloat162float(xp[c]) * __bfloat162float(wp[c]);
    }
  y[idx] = fmaxf(sum, 0.f);
}

struct Data {
  bf16 *x, *w, *y;
  float *ref, *part;
};

template <int BP, int BF, int WG, int STAGES, int ROWB, int MINB = 1, int KSPLIT = 1>
void run_case(const char* name, Geo g, const Data& d, int reps) {
  using C_ = Cfg<BP, BF, WG, STAGES, ROWB>;
  if (g.M % BF != 0 && BF > g.M) return;
  const long long ys = (long long)g.N * g.P * g.Q * g.M;
  CK(cudaMemset(d.y, 0xFF, ys * 2));  // NaN poison
  const int f_blocks = (g.M + BF - 1) / BF;
  const long long J = (long long)g.N * g.P * g.Q;
  const dim3 grid(unsigned((J + BP - 1) / BP * f_blocks), KSPLIT);
  auto kern = conv_wgmma<BP, BF, WG, STAGES, ROWB, MINB, KSPLIT>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C_::smem));
  auto launch = [&] {
    kern<<<grid, C_::threads, C_::smem>>>(d.x, d.w, d.y, d.part, g, f_blocks);
    if (KSPLIT > 1) reduce_slices<<<unsigned((ys / 4 + 255) / 256), 256>>>(d.part, d.y, ys, KSPLIT);
  };
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<bf16> hy(ys);
  std::vector<float> hr(ys);
  CK(cudaMemcpy(hy.data(), d.y, ys * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), d.ref, ys * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  long long bad = 0;
  for (long long i = 0; i < ys; ++i) {
    const double a = __bfloat162float(hy[i]), b = hr[i];
    if (!std::isfinite(a)) {
      ++bad;
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
  }
  cudaFuncAttributes attr;
  CK(cudaFuncGetAttributes(&attr, kern));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, C_::threads, C_::smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < 5; ++i) launch();
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  const double flop = 2.0 * J * g.M * (double)g.R * g.S * g.C;
  std::printf(
      "%-8s BP%3d BF%3d WG%d S%d row%3d m%d k%d smem %6d regs %3d blocks/SM %d grid %6u: %.4f ms "
      "%6.1f TFLOP/s relerr %.2e nonfinite %lld\n",
      name, BP, BF, WG, STAGES, ROWB, MINB, KSPLIT, C_::smem, attr.numRegs, per_sm,
      grid.x * grid.y, med, flop / med / 1e9, std::sqrt(num / den), bad);
  std::fflush(stdout);
}

int main() {
  struct L {
    const char* name;
    Geo g;
  } layers[] = {
      {"c64_56", {64, 64, 56, 56, 64, 3, 3, 56, 56, 1, 1}},
      {"c128_28", {64, 128, 28, 28, 128, 3, 3, 28, 28, 1, 1}},
      {"c256_14", {64, 256, 14, 14, 256, 3, 3, 14, 14, 1, 1}},
      {"c512_7", {32, 512, 7, 7, 512, 3, 3, 7, 7, 1, 1}},
  };
  for (auto& l : layers) {
    const Geo g = l.g;
    const long long xs = (long long)g.N * g.H * g.W * g.C, ws = (long long)g.M * g.R * g.S * g.C;
    const long long ys = (long long)g.N * g.P * g.Q * g.M;
    std::vector<bf16> hx(xs), hw(ws);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : hx) v = __float2bfloat16(u(rng));
    for (auto& v : hw) v = __float2bfloat16(u(rng) * 0.1f);
    Data d;
    CK(cudaMalloc(&d.x, xs * 2));
    CK(cudaMalloc(&d.w, ws * 2));
    CK(cudaMalloc(&d.y, ys * 2));
    CK(cudaMalloc(&d.ref, ys * 4));
    CK(cudaMalloc(&d.part, ys * 4 * 4));
    CK(cudaMemcpy(d.x, hx.data(), xs * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.w, hw.data(), ws * 2, cudaMemcpyHostToDevice));
    conv_ref<<<unsigned((ys + 255) / 256), 256>>>(d.x, d.w, d.ref, g);
    CK(cudaGetLastError());
    const char* n = l.name;
    // Within Kokkos' cap (<= 40 KB of team scratch): session 24's tiles.
    run_case<128, 64, 1, 3, 64, 4>(n, g, d, 50);
    if (g.M >= 128) run_case<128, 128, 1, 2, 64, 2>(n, g, d, 50);
    // 128-byte rows (64 channels per stage), still <= 48 KB.
    run_case<64, 64, 1, 2, 128, 4>(n, g, d, 50);
    // Beyond the cap.
    run_case<128, 64, 1, 3, 128, 3>(n, g, d, 50);
    run_case<128, 64, 1, 4, 128, 2>(n, g, d, 50);
    if (g.M >= 128) {
      run_case<128, 128, 1, 3, 128, 2>(n, g, d, 50);
      run_case<128, 128, 1, 4, 128, 1>(n, g, d, 50);
      run_case<128, 128, 2, 4, 128, 1>(n, g, d, 50);
      run_case<256, 128, 2, 3, 128, 1>(n, g, d, 50);
      run_case<128, 128, 1, 3, 64, 2>(n, g, d, 50);
    }
    if (g.M >= 256) {
      run_case<128, 256, 2, 3, 128, 1>(n, g, d, 50);
      run_case<128, 256, 2, 4, 128, 1>(n, g, d, 50);
    }
    if (g.M >= 512) {
      run_case<128, 64, 1, 3, 64, 4, 2>(n, g, d, 50);
      run_case<128, 128, 1, 4, 128, 1, 2>(n, g, d, 50);
      run_case<128, 128, 1, 4, 128, 1, 3>(n, g, d, 50);
      run_case<128, 256, 2, 4, 128, 1, 2>(n, g, d, 50);
    }
    cudaFree(d.x);
    cudaFree(d.w);
    cudaFree(d.y);
    cudaFree(d.ref);
    cudaFree(d.part);
  }
  return 0;
}
