// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/device_fused.hpp
/// \brief ConvAlgo::Winograd on GPUs: one kernel for F(2x2, 3x3) whose tile loader
///        transforms the input patches and whose epilogue transforms the products
///        (bias, activation, stores): no transform-domain value of x or y in global
///        memory, only the transformed filters (WinogradFilterTransform, before it).
///
/// A team computes BK filters x BN output tiles for all 16 transform-domain positions
/// xi: 16 GEMMs Z[xi](k, t) = sum_c U[xi](c, k) V[xi](c, t) of BK x BN, over the
/// channels in steps of BC, through two scratch buffers (one barrier a step):
///  - Loader, per step, for the next one while the team multiplies this one: the
///    16 x BC x BK transformed filters go straight to scratch (16-byte asynchronous
///    copies); the BC x BN input patches (4 x 4) are transformed on their way: four
///    threads share a patch, each the row a of B^T d (two input rows: 8 loads) times B,
///    the positions xi = 4 a .. 4 a + 3 of V.
///  - Multiply-adds: warp w owns the positions xi = 2w, 2w + 1; a lane owns 8 filters
///    (two runs of four, 32 apart) x 8 tiles (two runs of four, 16 apart) of both: 128
///    sums, fed per channel by four 16-byte scratch loads per position (the CUTLASS
///    SIMT layout: the runs make the loads vectors, their spacing keeps a quarter warp's
///    loads on distinct banks).
///  - Epilogue, in eight passes of 8 filters (one of each lane's filter runs' four
///    places): the 16 positions of each (filter, tile) meet in scratch, a thread
///    transforms one (A^T Z A), adds the bias, applies the activation and stores the
///    2 x 2 outputs (NCHW: directly, neighbouring threads own neighbouring tiles; NHWC:
///    through a scratch block of 32 filters x 32 tiles x 4 pixels, stored as runs of 32
///    channels).
///
/// Level-0 team scratch is 40 KB on the H100 (Kokkos' scratch_size_max(0)): two buffers
/// of BC = 2 channels (28 KB) fit, the epilogue's blocks (36 KB) reuse them.
///
/// Float tensors (winograd_fusable, winograd.hpp, says why the others are staged).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../../types.hpp"
#include "../../arch/async_copy.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "kernels.hpp"
#include "transforms.hpp"

namespace kcnn::Impl {

/// The fused kernel's team shape (see the file comment).
struct WinogradFusedShape {
  static constexpr int alpha = 4, positions = 16;  ///< F(2x2, 3x3)
  static constexpr int BK = 64;                    ///< filters per team
  static constexpr int BN = 32;                    ///< output tiles per team
  static constexpr int BC = 2;                     ///< channels per step
  /// Two positions a warp (8 warps, 224 registers a thread, one team per multiprocessor)
  /// against one (16 warps, 126 registers): ResNet's NCHW 3x3 layers in 0.346 / 0.312 /
  /// 0.273 / 0.230 ms against 0.361 / 0.322 / 0.291 / 0.237 (H200, session 35): the
  /// second form's loader work falls on half the warps, which the others wait for.
  static constexpr int positions_per_warp = 2;
  static constexpr int threads = 32 * positions / positions_per_warp;
  /// The loader's tasks a step: a row of B^T d for each of BC x BN patches (the first
  /// threads), and U's 16 x BC x BK values as 16-byte copies (the other threads, or all
  /// of them when the tasks take all threads).
  static constexpr int x_tasks = 4 * BC * BN;
  static constexpr int u_copiers = threads > x_tasks ? threads - x_tasks : threads;
  static constexpr int u_copies = positions * BC * BK / 4 / u_copiers;
  static_assert(x_tasks <= threads && u_copies * u_copiers * 4 == positions * BC * BK,
                "the loader's tasks fill the team");
  /// V's rows: tiles, padded so that NHWC's loader (2 channels x 16 tiles per warp)
  /// stores to 32 distinct banks.
  static constexpr int v_pitch = BN + 16;
  static constexpr int v_floats = positions * BC * v_pitch;
  static constexpr int u_floats = positions * BC * BK;
  static constexpr int stage_floats = v_floats + u_floats;  ///< one buffer
  /// Epilogue: Z of 16 positions x 8 filters x BN tiles (rows padded for the lanes'
  /// 16-byte stores), NHWC's output block [tile][pixel][32 filters] (padded so that
  /// the lanes' tiles fall on distinct banks), the tiles' output offsets.
  static constexpr int z_pitch = BN + 4;
  static constexpr int z_floats = positions * 8 * z_pitch;
  static constexpr int y_pixel_pitch = 33, y_tile_pitch = 4 * y_pixel_pitch + 1;
  static constexpr int y_floats = BN * y_tile_pitch;
  static constexpr int mainloop_floats = 2 * stage_floats;
  static constexpr int epilogue_floats = z_floats + y_floats;
  static constexpr int scratch_floats =
      mainloop_floats > epilogue_floats ? mainloop_floats : epilogue_floats;
  static constexpr std::size_t scratch_bytes =
      sizeof(float) * scratch_floats + BN * (sizeof(std::int64_t) + 2 * sizeof(int)) + 16;
};

/// Rows (filters) and columns (channels) of the fused kernel's transformed filters:
/// U[xi](c, k) at u[xi * plane + c * filters_pad + k], zero past C and M.
struct WinogradFusedFilterLayout {
  std::int64_t channels_pad = 0, filters_pad = 0, plane = 0;
  static WinogradFusedFilterLayout of(std::int64_t C, std::int64_t M) {
    WinogradFusedFilterLayout f;
    f.channels_pad =
        (C + WinogradFusedShape::BC - 1) / WinogradFusedShape::BC * WinogradFusedShape::BC;
    f.filters_pad =
        (M + WinogradFusedShape::BK - 1) / WinogradFusedShape::BK * WinogradFusedShape::BK;
    f.plane = winograd_plane(f.channels_pad * f.filters_pad);
    return f;
  }
};

/// UnitColumns: x's columns are adjacent (xs.w == 1, every NCHW tensor kcnn allocates):
/// a patch row's four loads then take immediate offsets from one address.
template <Layout L, bool UnitColumns, class ExecSpace, class T, class Bias, class Y>
struct WinogradFusedKernel {
  using Shape = WinogradFusedShape;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Transform = WinogradTransform2D<WinogradF3<2>>;
  using Vec = AlignedVec4<float>;
  static_assert(std::is_same<compute_t<T>, float>::value, "the fused kernel computes in float");
  static constexpr int BK = Shape::BK, BN = Shape::BN, BC = Shape::BC;

  const T* x;
  LogicalStrides xs;
  const float* u;  ///< WinogradFusedFilterLayout
  std::int64_t u_plane, filters_pad;
  Y* y;
  LogicalStrides ys;
  const Bias* bias;  ///< nullptr: none
  std::int64_t bias_stride;
  WinogradTileGrid grid;
  std::int64_t tiles;  ///< over the batch
  int C, H, W, M, P, Q, pad_h, pad_w;
  int m_blocks;  ///< the league walks the filter blocks fastest: teams reading the same
                 ///< patches run together and share them in L2
  Activation activation;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank();
    const int m0 = (team.league_rank() % m_blocks) * BK;
    const std::int64_t t0 = std::int64_t(team.league_rank() / m_blocks) * BN;

    float* const scratch =
        static_cast<float*>(team.team_scratch(0).get_shmem_aligned(Shape::scratch_bytes - 16, 16));
    // Buffer b: V [xi][c][v_pitch] at b * stage_floats, U [xi][c][BK] after it.
    auto v_buffer = [&](int b) { return scratch + b * Shape::stage_floats; };
    auto u_buffer = [&](int b) { return scratch + b * Shape::stage_floats + Shape::v_floats; };
    std::int64_t* const tile_y = reinterpret_cast<std::int64_t*>(scratch + Shape::scratch_floats);
    int* const tile_p = reinterpret_cast<int*>(tile_y + BN);
    int* const tile_q = tile_p + BN;

    // --- The loader's share of this thread: row a of B^T d for channel cl of tile tl,
    // and two 16-byte runs of U. NCHW: neighbouring lanes take neighbouring tiles
    // (neighbouring columns of x); NHWC: neighbouring channels, then tiles.
    const bool x_task = t < Shape::x_tasks;  // the same for a warp
    const int a = (t % Shape::x_tasks) / (Shape::x_tasks / 4);
    const int tl = L == Layout::NCHW ? t % BN : (t / BC) % BN;
    const int cl = L == Layout::NCHW ? (t / BN) % BC : t % BC;
    const int u_copier = Shape::threads > Shape::x_tasks ? t - Shape::x_tasks : t;
    // B^T's row a: a=0: d0 - d2, 1: d1 + d2, 2: d2 - d1, 3: d1 - d3.
    const float sign0 = a == 2 ? -1.0f : 1.0f, sign1 = a == 1 || a == 2 ? 1.0f : -1.0f;
    // x offsets of the two rows' first columns at this step's channel (advanced by
    // BC channels a step), and which of the 2 x 4 values lie inside x (bit 4 r + s).
    std::int64_t x_row[2] = {0, 0};
    unsigned inside = 0;
    if (x_task && t0 + tl < tiles) {
      std::int64_t n, p0, q0;
      grid.locate(t0 + tl, n, p0, q0);
      const std::int64_t h0 = p0 - pad_h, w0 = q0 - pad_w;
      const int rows[2] = {a == 0 ? 0 : 1, a == 3 ? 3 : 2};
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < 2; ++r) {
        const std::int64_t h = h0 + rows[r];
        x_row[r] = n * xs.n + h * xs.h + w0 * xs.w + std::int64_t(cl) * xs.c;
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < 4; ++s)
          if (h >= 0 && h < H && w0 + s >= 0 && w0 + s < W) inside |= 1u << (4 * r + s);
      }
    }
    const std::int64_t x_step = BC * xs.c;
    // U: this thread's two 16-byte runs, at channel c of the step (advanced by BC rows).
    const float* u_run[Shape::u_copies];
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < Shape::u_copies; ++i) {
      const int f = (u_copier < 0 ? 0 : u_copier) + i * Shape::u_copiers;  // [xi][c][BK / 4]
      const int row = f / (BK / 4), xi = row / BC, c_row = row % BC;
      u_run[i] = u + xi * u_plane + std::int64_t(c_row) * filters_pad + m0 + 4 * (f % (BK / 4));
    }
    const std::int64_t u_step = BC * filters_pad;
    if (t < BN) {                          // the output tiles' places, for the epilogue
      std::int64_t n = 0, p0 = P, q0 = Q;  // past the edge: nothing stored
      if (t0 + t < tiles) grid.locate(t0 + t, n, p0, q0);
      tile_y[t] = n * ys.n + p0 * ys.h + q0 * ys.w;
      tile_p[t] = static_cast<int>(p0);
      tile_q[t] = static_cast<int>(q0);
    }

    float d[2][4];    // the two input rows of the next step
    int c_next = cl;  // the channel those rows are of
    // Loads the next step's input rows and starts its filters' copies into buffer buf.
    auto load_x = [&]() {
      const unsigned live = c_next < C ? inside : 0u;
      KCNN_DEVICE_UNROLL
      for (int r = 0; r < 2; ++r) {
        const T* row = x + x_row[r];
        KCNN_DEVICE_UNROLL
        for (int s = 0; s < 4; ++s) {
          const std::int64_t column = UnitColumns ? s : s * xs.w;
          d[r][s] = live & (1u << (4 * r + s)) ? to_compute(row[column]) : 0.0f;
        }
        x_row[r] += x_step;
      }
      c_next += BC;
    };
    auto load = [&](auto buf) {
      if (x_task) load_x();
      if (u_copier >= 0) {
        float* const us = u_buffer(decltype(buf)::value);
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < Shape::u_copies; ++i) {
          scratch_copy_async_16(us + 4 * (u_copier + i * Shape::u_copiers), u_run[i], true);
          u_run[i] += u_step;
        }
      }
    };
    auto store = [&](auto buf) {  // (B^T d)[a] B into V
      if (!x_task) return;
      float row[4], v[4];
      KCNN_DEVICE_UNROLL
      for (int s = 0; s < 4; ++s)
        row[s] = sign0 * d[0][s] + sign1 * d[1][s];
      WinogradF3<2>::input(row, v);
      float* const vs = v_buffer(decltype(buf)::value) + cl * Shape::v_pitch + tl;
      KCNN_DEVICE_UNROLL
      for (int b = 0; b < 4; ++b)
        vs[(4 * a + b) * BC * Shape::v_pitch] = v[b];
    };

    // --- Multiply-adds: positions 2 warp + {0, 1}; filters {4 fm .. 4 fm + 3} and
    // {32 + 4 fm ..}, tiles {4 ft ..} and {16 + 4 ft ..}.
    const int warp = t / 32, lane = t % 32;
    const int fm = lane % 8, ft = lane / 8;
    constexpr int PW = Shape::positions_per_warp;
    float acc[PW][8][8];
    KCNN_DEVICE_UNROLL
    for (int p = 0; p < PW; ++p)
      KCNN_DEVICE_UNROLL
    for (int i = 0; i < 8; ++i)
      KCNN_DEVICE_UNROLL
    for (int j = 0; j < 8; ++j)
      acc[p][i][j] = 0.0f;
    auto multiply = [&](auto buf) {
      const float* const us = u_buffer(decltype(buf)::value) + 4 * fm;
      const float* const vs = v_buffer(decltype(buf)::value) + 4 * ft;
      KCNN_DEVICE_UNROLL
      for (int c = 0; c < BC; ++c) {
        KCNN_DEVICE_UNROLL
        for (int p = 0; p < PW; ++p) {
          const int xi = PW * warp + p;
          const float* ur = us + (xi * BC + c) * BK;
          const float* vr = vs + (xi * BC + c) * Shape::v_pitch;
          const Vec a0 = *reinterpret_cast<const Vec*>(ur);
          const Vec a1 = *reinterpret_cast<const Vec*>(ur + 32);
          const Vec b0 = *reinterpret_cast<const Vec*>(vr);
          const Vec b1 = *reinterpret_cast<const Vec*>(vr + 16);
          const float av[8] = {a0.v[0], a0.v[1], a0.v[2], a0.v[3],
                               a1.v[0], a1.v[1], a1.v[2], a1.v[3]};
          const float bv[8] = {b0.v[0], b0.v[1], b0.v[2], b0.v[3],
                               b1.v[0], b1.v[1], b1.v[2], b1.v[3]};
          KCNN_DEVICE_UNROLL
          for (int i = 0; i < 8; ++i)
            KCNN_DEVICE_UNROLL
          for (int j = 0; j < 8; ++j)
            acc[p][i][j] += av[i] * bv[j];
        }
      }
    };
    // One step: multiply buffer `buf` while loading the next step into the other.
    const int steps = (C + BC - 1) / BC;
    auto step = [&](auto buf, bool more) {
      constexpr int other = 1 - decltype(buf)::value;
      if (more) load(std::integral_constant<int, other>{});
      multiply(buf);
      if (more) store(std::integral_constant<int, other>{});
      scratch_copies_wait();
      team.team_barrier();
    };

    using First = std::integral_constant<int, 0>;
    using Second = std::integral_constant<int, 1>;
    load(First{});
    store(First{});
    scratch_copies_wait();
    team.team_barrier();
    // Two steps an iteration, so that each one's buffers are compile-time addresses.
    for (int s = 0; s < steps; s += 2) {
      step(First{}, s + 1 < steps);
      if (s + 1 < steps) step(Second{}, s + 2 < steps);
    }
    epilogue(team, acc, scratch, tile_y, tile_p, tile_q, m0, t0);
  }

  /// Passes (g, j): the filters m0 + 32 g + 4 i + j, i < 8.
  KOKKOS_INLINE_FUNCTION void epilogue(const member_type& team,
                                       const float (&acc)[Shape::positions_per_warp][8][8],
                                       float* scratch, const std::int64_t* tile_y,
                                       const int* tile_p, const int* tile_q, int m0,
                                       std::int64_t t0) const {
    const int t = team.team_rank(), warp = t / 32, lane = t % 32;
    const int fm = lane % 8, ft = lane / 8;
    float* const zs = scratch;                          // [xi][8][z_pitch]
    float* const ys_block = scratch + Shape::z_floats;  // NHWC: [tile][pixel][32]
    // The thread's output transform in each pass: filter row fi, tile tt.
    const int fi = t / BN, tt = t % BN;
    const bool tile_in = t0 + tt < tiles;
    KCNN_DEVICE_UNROLL
    for (int g = 0; g < 2; ++g) {
      KCNN_DEVICE_UNROLL
      for (int j = 0; j < 4; ++j) {
        KCNN_DEVICE_UNROLL
        for (int p = 0; p < Shape::positions_per_warp; ++p) {
          float* row = zs + ((Shape::positions_per_warp * warp + p) * 8 + fm) * Shape::z_pitch;
          const float* sums = acc[p][4 * g + j];
          *reinterpret_cast<Vec*>(row + 4 * ft) = Vec{{sums[0], sums[1], sums[2], sums[3]}};
          *reinterpret_cast<Vec*>(row + 16 + 4 * ft) = Vec{{sums[4], sums[5], sums[6], sums[7]}};
        }
        team.team_barrier();
        // 8 x BN transforms a pass: the first 256 threads.
        if (t < 8 * BN) {
          const int m_local = 32 * g + 4 * fi + j, m = m0 + m_local;
          float zt[4][4], out[2][2];
          KCNN_DEVICE_UNROLL
          for (int a = 0; a < 4; ++a)
            KCNN_DEVICE_UNROLL
          for (int b = 0; b < 4; ++b)
            zt[a][b] = zs[((a * 4 + b) * 8 + fi) * Shape::z_pitch + tt];
          Transform::output(zt, out);
          const float b = bias && m < M ? to_compute(bias[m * bias_stride]) : 0.0f;
          KCNN_DEVICE_UNROLL
          for (int a = 0; a < 2; ++a)
            KCNN_DEVICE_UNROLL
          for (int c = 0; c < 2; ++c)
            out[a][c] = apply_activation(activation, out[a][c] + b);
          if constexpr (L == Layout::NCHW) {
            if (tile_in && m < M) {
              Y* dst = y + tile_y[tt] + std::int64_t(m) * ys.c;
              const int rows = P - tile_p[tt] < 2 ? P - tile_p[tt] : 2;
              const int cols = Q - tile_q[tt] < 2 ? Q - tile_q[tt] : 2;
              KCNN_DEVICE_UNROLL
              for (int a = 0; a < 2; ++a)
                KCNN_DEVICE_UNROLL
              for (int c = 0; c < 2; ++c)
                if (a < rows && c < cols) dst[a * ys.h + c * ys.w] = from_compute<Y>(out[a][c]);
            }
          } else {
            KCNN_DEVICE_UNROLL
            for (int a = 0; a < 2; ++a)
              KCNN_DEVICE_UNROLL
            for (int c = 0; c < 2; ++c)
              ys_block[tt * Shape::y_tile_pitch + (2 * a + c) * Shape::y_pixel_pitch + 4 * fi + j] =
                  out[a][c];
          }
        }
        team.team_barrier();  // zs is rewritten by the next pass
      }
      if constexpr (L == Layout::NHWC) {
        // 32 tiles x 4 pixels, each a run of 32 filters: a warp stores one run per row.
        const int m = m0 + 32 * g + lane;
        constexpr int rows_per_warp = BN * 4 / (Shape::threads / 32);
        // A loop (unrolled, its addresses took registers the live sums of the second g
        // need: 104 bytes of spills).
        KCNN_DEVICE_NO_UNROLL
        for (int r = 0; r < rows_per_warp; ++r) {
          const int row = warp * rows_per_warp + r, tile = row / 4, px = row % 4;
          const int a = px / 2, c = px % 2;
          if (t0 + tile < tiles && m < M && tile_p[tile] + a < P && tile_q[tile] + c < Q)
            y[tile_y[tile] + a * ys.h + c * ys.w + std::int64_t(m) * ys.c] = from_compute<Y>(
                ys_block[tile * Shape::y_tile_pitch + px * Shape::y_pixel_pitch + lane]);
        }
        team.team_barrier();  // the block is rewritten by the next g
      }
    }
  }
};

}  // namespace kcnn::Impl
