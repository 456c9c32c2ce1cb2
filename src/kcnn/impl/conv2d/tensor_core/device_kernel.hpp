// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/device_kernel.hpp
/// \brief ConvAlgo::TensorCoreGemm on CUDA: TensorCoreDeviceKernel, the implicit GEMM
///        of the convolution on warp-level mma.sync, fed by a cp.async pipeline.
///
/// The GEMM view is ImplicitGemm's (operands.hpp): rows m are the filters (A = w, M x K,
/// k contiguous), columns j the output pixels (B = the gathered x, K x J), K = C*R*S.
/// Each team computes a BM x BN block of y; each warp a (BM / WarpsM) x (BN / WarpsN)
/// warp tile of mma.sync instructions. Per K step of BK taps the team gathers both
/// operand tiles into team scratch, k contiguous in every row (A: [BM][pitch], B:
/// [BN][pitch]), with cp.async copies that do not wait for their loads; Stages buffers
/// are in flight, so the gathers of the next steps overlap this step's MMAs.
///
/// Gathers: NHWC with C a multiple of 16 bytes' worth of elements (Vec) moves 16 bytes
/// per copy (a run of channels of one tap: same padding test for all); otherwise one
/// element per copy, taps along k for NHWC and for the weights, pixels along j for NCHW
/// x (so a warp's loads are consecutive pixels: coalesced).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../arch/async_copy.hpp"
#include "../../arch/macros.hpp"
#include "../../arch/mma.hpp"
#include "../../common/unroll_map.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../implicit_gemm/operands.hpp"
#include "tile_shapes.hpp"

namespace kcnn::Impl {

template <Layout L, class Tile, TensorCoreMath Math, bool Vec, class ExecSpace>
struct TensorCoreDeviceKernel {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using T = typename TensorCoreOp<Math>::element;
  using Shape = typename TensorCoreOp<Math>::shape;
  using Acc = accumulator_t<T>;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, S = Tile::Stages;
  static constexpr int pitch = Tile::pitch, threads = Tile::threads;
  static constexpr int WM = BM / Tile::WarpsM, WN = BN / Tile::WarpsN;
  static constexpr int MI = WM / Shape::M, NI = WN / Shape::N;  ///< MMAs per warp tile
  static constexpr int kAcc = TensorCoreOp<Math>::accumulators;
  /// Elements per copy and copies per thread and stage, A and B.
  static constexpr int width = Vec ? vector_elements_v<T> : 1;
  static constexpr int groups_per_row = BK / width;  ///< copies along k per row
  static constexpr int a_copies = (BM * groups_per_row + threads - 1) / threads;
  static constexpr int b_copies = (BN * groups_per_row + threads - 1) / threads;
  /// NCHW x without Vec: threads walk pixels (j) fastest, each keeps one pixel.
  static constexpr bool b_pixel_major = L == Layout::NCHW && !Vec;
  static_assert(WM % Shape::M == 0 && WN % Shape::N == 0 && BK % Shape::K == 0, "MMA tiling");
  static_assert(threads % groups_per_row == 0,
                "every thread copies the same k position (of one or more rows)");
  static_assert(!b_pixel_major || (threads % BN == 0 && BN * BK % threads == 0),
                "pixel-major gathers: each thread keeps one pixel");
  static_assert(!Vec || L == Layout::NHWC, "16-byte gathers of x need channels contiguous");

  ImplicitGemmOperands<L, T> op;
  int m_blocks;  ///< ceil(M / BM): the league walks the M blocks fastest (x reuse in L2)

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return sizeof(T) * std::size_t(S) * (BM + BN) * pitch + 16;  // + get_shmem_aligned's slack
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank();
    const int mb = team.league_rank() % m_blocks;
    const std::int64_t block = team.league_rank() / m_blocks;
    const int m0 = mb * BM;
    const std::int64_t j0 = block * BN;

    T* const a_tiles = static_cast<T*>(
        team.team_scratch(0).get_shmem_aligned(sizeof(T) * std::size_t(S) * (BM + BN) * pitch, 16));
    T* const b_tiles = a_tiles + S * BM * pitch;

    // This thread's copies: k position `kpos` of rows a_row0 + i * rows_step (A) and,
    // k-major B, of pixel rows b_row0 + i * rows_step; pixel-major B: pixel b_pixel,
    // k positions b_k0 + i * b_k_step.
    const int kpos = (t % groups_per_row) * width;
    const int row0 = t / groups_per_row;
    constexpr int rows_step = threads / groups_per_row;
    const int b_pixel = t % BN, b_k0 = t / BN;
    constexpr int b_k_step = threads / BN > 0 ? threads / BN : 1;

    constexpr int kPixels = b_pixel_major ? 1 : b_copies;
    GatherPixel pix[kPixels];
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < kPixels; ++i)
      pix[i] =
          op.template gather_pixel<false>(j0 + (b_pixel_major ? b_pixel : row0 + i * rows_step));

    const int steps = (op.K + BK - 1) / BK;
    auto issue = [&](int step) {  // the copies of K step `step` into buffer step % S
      if (step < steps) {
        const int k0 = step * BK;
        T* const a = a_tiles + (step % S) * BM * pitch;
        T* const b = b_tiles + (step % S) * BN * pitch;
        const GatherTap tap = op.gather_tap(k0 + kpos);
        const bool real_tap = tap.dh != kGatherOutside;
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < a_copies; ++i) {
          const int row = row0 + i * rows_step, m = m0 + row;
          if (row >= BM) break;  // more threads than copies
          const bool valid = real_tap && m < op.M;
          const T* src = valid ? op.w + std::int64_t(m) * op.ws.n + tap.w_offset : op.w;
          copy(a + row * pitch + kpos, src, valid);
        }
        if constexpr (b_pixel_major) {
          KCNN_DEVICE_UNROLL
          for (int i = 0; i < b_copies; ++i) {
            const int kk = b_k0 + i * b_k_step;
            const GatherTap tk = op.gather_tap(k0 + kk);
            const bool valid = op.map.gathers_inside(pix[0], tk);
            const T* src = valid ? op.x + pix[0].x_offset + tk.x_offset : op.x;
            scratch_copy_async(b + b_pixel * pitch + kk, src, valid);
          }
        } else {
          KCNN_DEVICE_UNROLL
          for (int i = 0; i < b_copies; ++i) {
            const int row = row0 + i * rows_step;
            if (row >= BN) break;
            const bool valid = op.map.gathers_inside(pix[i], tap);
            const T* src = valid ? op.x + pix[i].x_offset + tap.x_offset : op.x;
            copy(b + row * pitch + kpos, src, valid);
          }
        }
      }
      scratch_copies_commit();  // also when empty: the group count stays one per step
    };

    Acc acc[MI][NI][kAcc];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int r = 0; r < kAcc; ++r)
      acc[mi][ni][r] = Acc(0);

    const int warp = t / 32, lane = t % 32, g = lane / 4, tig = lane % 4;
    const int wm0 = (warp / Tile::WarpsN) * WM, wn0 = (warp % Tile::WarpsN) * WN;

    KCNN_DEVICE_UNROLL
    for (int s = 0; s < S - 1; ++s)
      issue(s);
    for (int step = 0; step < steps; ++step) {
      scratch_copies_wait_groups<S - 2>();  // this thread's copies of `step` have landed
      team.team_barrier();  // everyone's have; everyone is done with step - 1's buffer
      issue(step + S - 1);  // into step - 1's buffer
      const T* a = a_tiles + (step % S) * BM * pitch + (wm0 + g) * pitch + tig;
      const T* b = b_tiles + (step % S) * BN * pitch + (wn0 + g) * pitch + tig;
      KCNN_DEVICE_UNROLL
      for (int ks = 0; ks < BK; ks += Shape::K)
        mma_step(acc, a + ks, b + ks);
    }
    epilogue(acc, m0 + wm0 + g, j0 + wn0 + 2 * tig);
  }

  /// One copy of `width` elements (16 bytes or one element) from global to scratch.
  KOKKOS_FORCEINLINE_FUNCTION static void copy(T* dst, const T* src, bool valid) {
    if constexpr (Vec) {
      scratch_copy_async_16(dst, src, valid);
    } else {
      scratch_copy_async(dst, src, valid);
    }
  }

  /// The warp tile's MMAs over Shape::K taps: a, b point at this lane's first fragment
  /// element (row g, column tig) of the warp's first A and B rows.
  KOKKOS_FORCEINLINE_FUNCTION static void mma_step(Acc (&acc)[MI][NI][kAcc], const T* a,
                                                   const T* b) {
    if constexpr (Math == TensorCoreMath::F64) {
      double af[MI], bf[NI];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        af[mi] = a[mi * Shape::M * pitch];
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        bf[ni] = b[ni * Shape::N * pitch];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        mma_m8n8k4_f64(acc[mi][ni], af[mi], bf[ni]);
    } else {
      constexpr bool three = Math == TensorCoreMath::TF32x3;
      std::uint32_t a_big[MI][4], b_big[NI][2];
      [[maybe_unused]] std::uint32_t a_small[three ? MI : 1][4], b_small[three ? NI : 1][2];
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi) {
        const T* p = a + mi * Shape::M * pitch;
        const float v[4] = {p[0], p[8 * pitch], p[4], p[8 * pitch + 4]};
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < 4; ++r) {
          if constexpr (three) {
            tf32_split(v[r], a_big[mi][r], a_small[mi][r]);
          } else {
            a_big[mi][r] = tf32_round(v[r]);
          }
        }
      }
      KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni) {
        const T* p = b + ni * Shape::N * pitch;
        const float v[2] = {p[0], p[4]};
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < 2; ++r) {
          if constexpr (three) {
            tf32_split(v[r], b_big[ni][r], b_small[ni][r]);
          } else {
            b_big[ni][r] = tf32_round(v[r]);
          }
        }
      }
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int ni = 0; ni < NI; ++ni) {
        if constexpr (three) {  // the small terms first: they are the smaller sums
          mma_m16n8k8_tf32(acc[mi][ni], a_small[mi], b_big[ni]);
          mma_m16n8k8_tf32(acc[mi][ni], a_big[mi], b_small[ni]);
        }
        mma_m16n8k8_tf32(acc[mi][ni], a_big[mi], b_big[ni]);
      }
    }
  }

  /// bias + activation and the stores of this lane's accumulators: element r of MMA
  /// (mi, ni) is row m_lane + mi * Shape::M + (r / 2) * 8, column j_lane + ni * 8 + r % 2.
  KOKKOS_INLINE_FUNCTION void epilogue(Acc (&acc)[MI][NI][kAcc], int m_lane,
                                       std::int64_t j_lane) const {
    T bias[MI][kAcc / 2];
    KCNN_DEVICE_UNROLL
    for (int mi = 0; mi < MI; ++mi)
      KCNN_DEVICE_UNROLL
    for (int h = 0; h < kAcc / 2; ++h) {
      const int m = m_lane + mi * Shape::M + h * 8;
      bias[mi][h] = op.bias && m < op.M ? op.bias[m] : T(0);
    }
    KCNN_DEVICE_UNROLL
    for (int ni = 0; ni < NI; ++ni)
      KCNN_DEVICE_UNROLL
    for (int c = 0; c < 2; ++c) {
      const std::int64_t j = j_lane + ni * Shape::N + c;
      if (j >= op.J) continue;
      T* const y_pixel = op.y + op.y_offset(op.pixel(j));
      KCNN_DEVICE_UNROLL
      for (int mi = 0; mi < MI; ++mi)
        KCNN_DEVICE_UNROLL
      for (int h = 0; h < kAcc / 2; ++h) {
        const int m = m_lane + mi * Shape::M + h * 8;
        if (m < op.M)
          y_pixel[std::int64_t(m) * op.ys.c] =
              apply_activation(op.activation, static_cast<T>(acc[mi][ni][2 * h + c]) + bias[mi][h]);
      }
    }
  }
};

}  // namespace kcnn::Impl
