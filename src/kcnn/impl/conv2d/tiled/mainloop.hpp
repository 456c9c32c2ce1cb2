// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/mainloop.hpp
/// \brief ConvAlgo::Tiled, second phase of a channel chunk: the staged chunk's
///        multiply-adds into a logical thread's register micro-tile (TiledMainloop:
///        scalar scratch reads, both backends; TiledDeviceMainloop adds the GPU's
///        16-byte vector reads).
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "../../arch/host_simd.hpp"
#include "../../arch/macros.hpp"
#include "kernel_base.hpp"

namespace kcnn::Impl {

/// The scalar main loop, a mixin over TiledKernelBase (see kernel_base.hpp).
template <class Base>
struct TiledMainloop : Base {
  using Base::BH;
  using Base::BM;
  using Base::BW;
  using Base::dil_h;
  using Base::dil_w;
  using Base::g;
  using Base::R;
  using Base::S;
  using Base::stride_h;
  using Base::stride_w;
  using typename Base::accumulator;
  using typename Base::ScratchView;
  using typename Base::staged;

  /// Adds the staged chunk's contribution to logical thread t's micro-tile (16-bit
  /// values are staged as float: to_compute is the identity here).
  KOKKOS_FORCEINLINE_FUNCTION void accumulate(accumulator (&acc)[BM][BH][BW],
                                              const ScratchView& in_tile, const ScratchView& w_tile,
                                              int t, int cc) const {
    const int tq = t % g.threads_q;
    const int tp = (t / g.threads_q) % g.threads_p;
    const int tmi = t / (g.threads_q * g.threads_p);
    const int r_extent = R(), s_extent = S();
    const int in_plane = g.in_plane(), pitch = g.in_pitch;
    const int sh = stride_h(), sw = stride_w(), dh = dil_h(), dw = dil_w();
    const staged* in_base = in_tile.data() + (tp * BH * sh) * pitch + tq * BW * sw;
    const staged* w_base = w_tile.data() + tmi * BM;
    for (int c = 0; c < cc; ++c) {
      const staged* in_c = in_base + c * in_plane;
      const staged* w_c = w_base + c * r_extent * s_extent * g.tile_m;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < r_extent; ++r) {
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < s_extent; ++s) {
          const staged* w_rs = w_c + (r * s_extent + s) * g.tile_m;
          KCNN_DEVICE_UNROLL
          for (int bh = 0; bh < BH; ++bh) {
            const staged* row = in_c + (bh * sh + r * dh) * pitch + s * dw;
            KCNN_DEVICE_UNROLL
            for (int bm = 0; bm < BM; ++bm) {
              const accumulator wv = to_compute(w_rs[bm]);
              // Innermost over output columns: contiguous in scratch for unit stride,
              // so it is one SIMD multiply-add on CPUs.
              KCNN_DEVICE_UNROLL
              KCNN_HOST_SIMD
              for (int bw = 0; bw < BW; ++bw)
                acc[bm][bh][bw] += to_compute(row[bw * sw]) * wv;
            }
          }
        }
      }
    }
  }
};

/// CPUs: TiledMainloop, with the unit-stride case written in the host's vectors
/// (HostVector): the micro-tile's BM x BH x BW sums live in BM x BH x BW / lanes vector
/// registers for the whole chunk, and each tap row costs BW / lanes unaligned loads of
/// the staged input plus BM weight broadcasts for BM x BW / lanes FMAs. The scalar loop
/// leaves this to the vectorizer, which kept the 8 x 1 x 16 micro-tile in registers but
/// not larger ones: with 16 x 1 x 16, LeNet C3 (NCHW, 7x7, batch 1,000, one core) took
/// 299 ms scalar and 129 ms here, and the faster tiles of geometry.hpp need 16 vectors.
template <class Base>
struct TiledHostMainloop : TiledMainloop<Base> {
  using Scalar = TiledMainloop<Base>;
  using Base::BH;
  using Base::BM;
  using Base::BW;
  using Base::g;
  using Base::R;
  using Base::S;
  using typename Base::accumulator;
  using typename Base::ScratchView;
  using typename Base::staged;
  using Vector = HostVector<accumulator>;
  using V = typename Vector::type;
  static constexpr int lanes = Vector::lanes;
  static constexpr int NV = BW / lanes;
  /// The vector path: unit stride and dilation, whole vectors of output columns, the
  /// sums and staged values of one type, and the ISA's intrinsics.
  static constexpr bool kVectorPath = Base::on_host && Base::Unit && BW % lanes == 0 &&
                                      std::is_same_v<staged, accumulator> && kHostVectorIntrinsics;
  /// Where a tap's BM weight broadcasts fit in registers beside the sums and one row of
  /// input vectors: broadcast once per tap and held (keep_in_register), each input vector
  /// loaded once. Left to itself GCC broadcast the weights into registers and folded the
  /// unaligned input loads into every FMA, BM loads per input vector, most of them split
  /// across cache lines: LeNet C1 (4 x 4 x 16, NCHW, batch 1,000, 2 cores) 30.9 -> 20.6
  /// ms, with its 2x2 max 31.5 -> 21.5; C3 (8 x 2 x 16) 41.1 -> 42.2, 24.1 -> 24.3 (no
  /// change). Where they do not fit (AVX2's 8 x 1 x 8: 8 + 8 + 1 > 16 registers; held
  /// anyway it spilled, C3 67.8 -> 151 ms), the weights are broadcast per row.
  static constexpr bool kWeightsInRegisters = BM + BM * BH * NV + NV <= kHostVectorRegisters;

  KOKKOS_FORCEINLINE_FUNCTION void accumulate(accumulator (&acc)[BM][BH][BW],
                                              const ScratchView& in_tile, const ScratchView& w_tile,
                                              int t, int cc) const {
    if constexpr (!kVectorPath) {
      Scalar::accumulate(acc, in_tile, w_tile, t, cc);
    } else {
      const int tq = t % g.threads_q;
      const int tp = (t / g.threads_q) % g.threads_p;
      const int tmi = t / (g.threads_q * g.threads_p);
      const int r_extent = R(), s_extent = S(), tile_m = g.tile_m;
      const int in_plane = g.in_plane(), pitch = g.in_pitch;
      const staged* in_base = in_tile.data() + (tp * BH) * pitch + tq * BW;
      const staged* w_base = w_tile.data() + tmi * BM;
      V sum[BM][BH][NV];
      for (int bm = 0; bm < BM; ++bm)
        for (int bh = 0; bh < BH; ++bh)
          for (int v = 0; v < NV; ++v)
            sum[bm][bh][v] = Vector::load_unaligned(&acc[bm][bh][v * lanes]);
      for (int c = 0; c < cc; ++c) {
        const staged* in_c = in_base + c * in_plane;
        const staged* w_c = w_base + c * r_extent * s_extent * tile_m;
        for (int r = 0; r < r_extent; ++r) {
          for (int s = 0; s < s_extent; ++s) {
            const staged* w_rs = w_c + (r * s_extent + s) * tile_m;
            // Held: broadcast once per tap; else per row, as each is needed.
            V held[kWeightsInRegisters ? BM : 1];
            if constexpr (kWeightsInRegisters) {
              for (int bm = 0; bm < BM; ++bm) {
                held[bm] = Vector::broadcast(w_rs + bm);
                Vector::keep_in_register(held[bm]);
              }
            }
            for (int bh = 0; bh < BH; ++bh) {
              const staged* row = in_c + (bh + r) * pitch + s;
              V in[NV];
              for (int v = 0; v < NV; ++v) {
                in[v] = Vector::load_unaligned(row + v * lanes);
                if constexpr (kWeightsInRegisters) Vector::keep_in_register(in[v]);
              }
              for (int bm = 0; bm < BM; ++bm) {
                V wv;
                if constexpr (kWeightsInRegisters) {
                  wv = held[bm];
                } else {
                  wv = Vector::broadcast(w_rs + bm);
                }
                for (int v = 0; v < NV; ++v)
                  sum[bm][bh][v] = Vector::fma(in[v], wv, sum[bm][bh][v]);
              }
            }
          }
        }
      }
      for (int bm = 0; bm < BM; ++bm)
        for (int bh = 0; bh < BH; ++bh)
          for (int v = 0; v < NV; ++v)
            Vector::store_unaligned(&acc[bm][bh][v * lanes], sum[bm][bh][v]);
    }
  }
};

/// GPUs: TiledMainloop plus the vector_loads main loop (accumulate_vec).
template <class Base>
struct TiledDeviceMainloop : TiledMainloop<Base> {
  using Base::BH;
  using Base::BM;
  using Base::BW;
  using Base::g;
  using Base::KR;
  using Base::KS;
  using typename Base::accumulator;
  using typename Base::scalar;
  using typename Base::ScratchView;
  using typename Base::staged;
  using StagedVec4 = AlignedVec4<staged>;

  /// accumulate() for the vector_loads case: per filter row, each micro-tile row's
  /// BW + KS - 1 input columns come into registers with (BW + KS + 2) / 4 vector loads
  /// (the halo row's pitch is a multiple of 4, so the over-read stays inside the row),
  /// and each tap's BM weights with BM / 4.
  KOKKOS_FORCEINLINE_FUNCTION void accumulate_vec(accumulator (&acc)[BM][BH][BW],
                                                  const ScratchView& in_tile,
                                                  const ScratchView& w_tile, int t, int cc) const {
    const int tq = t % g.threads_q;
    const int tp = (t / g.threads_q) % g.threads_p;
    const int tmi = t / (g.threads_q * g.threads_p);
    const int pitch = g.in_pitch, in_plane = g.in_plane(), w_chunk = KR * KS * g.tile_m;
    const staged* in_base = in_tile.data() + tp * BH * pitch + tq * BW;
    const staged* w_base = w_tile.data() + tmi * BM;
    for (int c = 0; c < cc; ++c) {
      const staged* in_c = in_base + c * in_plane;
      const staged* w_c = w_base + c * w_chunk;
      // Filter rows: unrolled only for 64-accumulator micro-tiles with small filters
      // (kUnrollFilterRows). Measured on the H100, LeNet at batch 10,000: C1 (32
      // accumulators) ran 1.71 -> 1.55 ms with the rows kept a loop. C3 (64 accumulators,
      // 7x7) ran 4.13 -> 4.39 ms as a loop before the launch bound, because the loop
      // needed 144 registers instead of 121 and halved the resident warps; unrolled
      // under the bound (124 registers) half of its stall cycles were instruction
      // fetches (Nsight Compute): 49 taps x 64 multiply-adds overflow the instruction
      // cache.
      if constexpr (kUnrollFilterRows) {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < KR; ++r)
          accumulate_vec_row(acc, in_c, w_c, r, pitch);
      } else {
        KCNN_DEVICE_NO_UNROLL
        for (int r = 0; r < KR; ++r)
          accumulate_vec_row(acc, in_c, w_c, r, pitch);
      }
    }
  }

  /// Unrolled filter rows: only where the whole unrolled body (KR x KS taps x the
  /// micro-tile's multiply-adds) stays near the instruction cache (3x3 filters of the
  /// 64-accumulator tiles: 576 multiply-adds) and the micro-tile needs the registers
  /// the loop would cost.
  static constexpr bool kUnrollFilterRows = BM * BH * BW >= 64 && KR * KS <= 9;

  /// One filter row r of accumulate_vec: the micro-tile rows' input windows into
  /// registers, then every tap of the row.
  KOKKOS_FORCEINLINE_FUNCTION void accumulate_vec_row(accumulator (&acc)[BM][BH][BW],
                                                      const staged* in_c, const staged* w_c, int r,
                                                      int pitch) const {
    constexpr int kWindow = BW + KS - 1;
    constexpr int kVecs = (kWindow + 3) / 4;
    staged window[BH][kVecs * 4];
    KCNN_DEVICE_UNROLL
    for (int bh = 0; bh < BH; ++bh) {
      const StagedVec4* row = reinterpret_cast<const StagedVec4*>(in_c + (bh + r) * pitch);
      KCNN_DEVICE_UNROLL
      for (int v = 0; v < kVecs; ++v) {
        const StagedVec4 f = row[v];
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 4; ++e)
          window[bh][4 * v + e] = f.v[e];
      }
    }
    KCNN_DEVICE_UNROLL
    for (int s = 0; s < KS; ++s) {
      staged wv[BM];
      const StagedVec4* w_rs = reinterpret_cast<const StagedVec4*>(w_c + (r * KS + s) * g.tile_m);
      KCNN_DEVICE_UNROLL
      for (int v = 0; v < BM / 4; ++v) {
        const StagedVec4 f = w_rs[v];
        KCNN_DEVICE_UNROLL
        for (int e = 0; e < 4; ++e)
          wv[4 * v + e] = f.v[e];
      }
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh)
        KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int bw = 0; bw < BW; ++bw)
        acc[bm][bh][bw] += window[bh][bw + s] * wv[bm];
    }
  }
};

}  // namespace kcnn::Impl
