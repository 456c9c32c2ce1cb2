// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/device_fused.hpp
/// \brief ConvAlgo::Winograd on CUDA: one kernel for F(2x2, 3x3) whose tile loader
///        transforms the input patches and whose epilogue transforms the products
///        (bias, activation, stores): no transform-domain value of x or y in global
///        memory, only the transformed filters (WinogradFilterTransform, before it).
///
/// A team computes BK filters x BN output tiles for all 16 transform-domain positions
/// xi: 16 GEMMs Z[xi](k, t) = sum_c U[xi](c, k) V[xi](c, t) of BK x BN, over the
/// channels in steps of BC. A step:
///  1. the team multiplies the step's V and U (two scratch buffers each), while the
///     asynchronous copies of the step after the next land: U as 16-byte runs, the raw
///     input patches as 16-byte channel runs (NHWC, channel counts of whole vectors) or
///     element by element, zeros where a patch crosses the padding;
///  2. barrier; two threads a raw patch of the next step transform it into V (each two
///     rows of B^T d, times B); barrier; the copies for the step after it start.
/// Two barriers a step of BC = 8 channels; the copies have a whole step's multiply-adds
/// to land. The multiply-adds: warp w owns the position xi = w; a lane owns 8 filters
/// (two runs of four, 32 apart) x 8 tiles (two runs of four, 16 apart): 64 sums, fed per
/// channel by four 16-byte scratch loads (the CUTLASS SIMT layout: the runs make the
/// loads vectors, their spacing keeps a quarter warp's loads on distinct banks).
///
/// The epilogue: every sum into scratch at once (Z[xi][k][t], t's 16-byte chunks
/// swizzled by k so that the lanes' vector stores and the transforms' reads both find
/// distinct banks), one barrier, then each thread transforms 4 (filter, tile) pairs
/// (A^T Z A), adds the bias, applies the activation and stores the 2 x 2 outputs: NCHW
/// directly (neighbouring threads own neighbouring tiles), NHWC through a scratch block
/// [tile][pixel][filter] stored as runs of filters.
///
/// The scratch (161 KB) is past the 40 KB a Kokkos team may ask for on CUDA
/// (TeamPolicy::scratch_size_max(0), Kokkos 3.4 to 4.x): the kernel is launched by
/// launch_grid_constant_teams (arch/grid_constant_launch.hpp), which sets the kernel's
/// shared-memory limit. Measured on the H200 (session 35, ResNet's four 3x3 layers, ms,
/// NCHW / NHWC, the filter transform included):
///   within 40 KB: 2 channels a step, 16 barriers in the epilogue   0.347 0.310 0.268 0.198
///                                                                  0.530 0.450 0.421 0.264
///   8 channels a step, 8 warps of two positions (255 registers)     0.309 0.276 0.257 0.176
///                                                                  0.314 0.260 0.227 0.158
///   8 channels a step, 16 warps of one position (128 registers)     0.293 0.266 0.251 0.174
///                                                                  0.289 0.247 0.227 0.159
///   NCHW's raw patches skewed by tile / 8 (session 36; same call:   0.279 0.249 0.231 0.157
///   0.287 0.261 0.242 0.162 without; rotating the copies' columns
///   instead spilled: 0.303 0.281 0.263 0.175 against 0.290 0.264
///   0.247 0.164)
///
/// Float tensors (winograd_fusable, winograd.hpp, says why the others are staged).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../../types.hpp"
#include "../../arch/async_copy.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "kernels.hpp"
#include "transforms.hpp"

namespace kcnn::Impl {

/// The fused kernel's team shape and scratch layout (see the file comment).
struct WinogradFusedShape {
  static constexpr int alpha = 4, positions = 16;  ///< F(2x2, 3x3)
  static constexpr int BK = 64;                    ///< filters per team
  static constexpr int BN = 32;                    ///< output tiles per team
  static constexpr int BC = 8;                     ///< channels per step
  static constexpr int positions_per_warp = 1;     ///< the file comment's measurements
  static constexpr int threads = 32 * positions / positions_per_warp;
  /// Threads sharing a raw patch's copies and transform (rows of B^T d).
  static constexpr int patch_share = threads / (BC * BN);
  static_assert(patch_share * BC * BN == threads && (patch_share == 1 || patch_share == 2),
                "one or two threads transform each raw patch of a step");

  // Raw patches of a step: NCHW [c][tile][raw_patch_pitch], tile t's patch shifted by
  // t / 8 (a warp's 32 tiles of one channel: its 4-byte copies and the transform's loads
  // of one pixel meet 32 distinct banks; unshifted, 4-way conflicts on the copies: ncu,
  // session 36), NHWC [tile][pixel][BC] at raw_tile_pitch (16-byte channel runs; the
  // transform's lanes, 8 channels x 4 tiles, on distinct banks).
  static constexpr int raw_patch_pitch = 20;
  static constexpr int raw_tile_pitch = 16 * BC + 8;
  static constexpr int raw_floats =
      BC * BN * raw_patch_pitch > BN* raw_tile_pitch ? BC* BN* raw_patch_pitch : BN* raw_tile_pitch;
  static_assert((BC * BN - 1) * raw_patch_pitch + (BN - 1) / 8 + 16 <= raw_floats,
                "NCHW's last patch, skewed by its tile / 8, ends inside the raw buffer");
  /// V's rows [xi][c] of tiles: padded so that NHWC's transform stores (8 channels x 4
  /// tiles per warp) find distinct banks.
  static constexpr int v_pitch = BN + 4;
  static constexpr int v_floats = positions * BC * v_pitch;
  static constexpr int u_floats = positions * BC * BK;
  static constexpr int mainloop_floats = raw_floats + 2 * (v_floats + u_floats);
  /// Epilogue: Z [xi][k][BN] (swizzled chunks), NHWC's output block [tile][pixel][k].
  static constexpr int z_floats = positions * BK * BN;
  static constexpr int y_pixel_pitch = BK + 1, y_tile_pitch = 4 * y_pixel_pitch + 1;
  static constexpr int y_floats = BN * y_tile_pitch;
  static constexpr int epilogue_floats = z_floats + y_floats;
  static constexpr int scratch_floats =
      mainloop_floats > epilogue_floats ? mainloop_floats : epilogue_floats;
  /// Teams for M filters over the N x ceil(P / 2) x ceil(Q / 2) output tiles (the
  /// planner's, the launch's and Auto's count).
  static constexpr std::int64_t teams(std::int64_t M, std::int64_t N, std::int64_t P,
                                      std::int64_t Q) {
    return (M + BK - 1) / BK * ((N * ((P + 1) / 2) * ((Q + 1) / 2) + BN - 1) / BN);
  }
  /// Bytes: the floats, the tiles' output places, 16 of alignment slack.
  static constexpr std::size_t scratch_bytes =
      sizeof(float) * scratch_floats + BN * (sizeof(std::int64_t) + 2 * sizeof(int)) + 16;
};

/// Rows (filters) and columns (channels) of the fused kernel's transformed filters:
/// U[xi](c, k) at u[xi * plane + c * filters_pad + k], zero past C and M.
struct WinogradFusedFilterLayout {
  std::int64_t channels_pad = 0, filters_pad = 0, plane = 0;
  static WinogradFusedFilterLayout of(std::int64_t C, std::int64_t M) {
    using Shape = WinogradFusedShape;
    WinogradFusedFilterLayout f;
    f.channels_pad = (C + Shape::BC - 1) / Shape::BC * Shape::BC;
    f.filters_pad = (M + Shape::BK - 1) / Shape::BK * Shape::BK;
    f.plane = winograd_plane(f.channels_pad * f.filters_pad);
    return f;
  }
};

/// The filter transform into WinogradFusedFilterLayout (Transform: WinogradFilterTransform
/// in NHWC's order, filters_pad a multiple of 8, channels_pad of 4): a warp takes
/// 8 filters x 4 channels, so that its stores to each plane are four full 32-byte runs of
/// filters and its reads of w four channels of each filter (with one (m, c) a thread,
/// filters fastest, NHWC's w was read a sector per value: the 512-channel layer's
/// transform took 25 us, H200, session 35).
template <class Transform>
struct WinogradFusedFilterTransform {
  Transform transform;
  std::int64_t items() const { return transform.m_pad * transform.c_pad; }
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const std::int64_t group = i / 32, filter_groups = transform.m_pad / 8;
    const int lane = static_cast<int>(i % 32);
    const std::int64_t cg = group / filter_groups, mg = group - cg * filter_groups;
    transform.transform(mg * 8 + lane / 4, cg * 4 + lane % 4);
  }
};

/// The grid-constant parameter of the launch: the kernel needs none.
struct WinogradFusedNoConstants {};

/// Copies: VectorCopies: x's channels are adjacent, C a multiple of 4 and x 16-byte
/// aligned (NHWC): a patch pixel's BC channels are two 16-byte copies. Else a thread
/// copies its own patch element by element; UnitColumns: xs.w == 1 (every NCHW tensor
/// kcnn allocates), a patch row's four elements at immediate offsets.
template <Layout L, bool VectorCopies, bool UnitColumns, class T, class Bias, class Y>
struct WinogradFusedKernel {
  using Shape = WinogradFusedShape;
  using Transform = WinogradTransform2D<WinogradF3<2>>;
  using Vec = AlignedVec4<float>;
  static_assert(std::is_same<T, float>::value, "the fused kernel copies float tensors");
  static_assert(!VectorCopies || L == Layout::NHWC, "channel runs are NHWC's");
  static constexpr int BK = Shape::BK, BN = Shape::BN, BC = Shape::BC;
  static constexpr int vector_copies = BN * 16 * (BC / 4) / Shape::threads;
  static constexpr int u_copies = Shape::u_floats / 4 / Shape::threads;

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

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(const Team& team, const WinogradFusedNoConstants&) const {
    const int t = team.team_rank();
    const int m0 = (team.league_rank() % m_blocks) * BK;
    const std::int64_t t0 = std::int64_t(team.league_rank() / m_blocks) * BN;

    float* const scratch = reinterpret_cast<float*>(team.scratch_aligned(16));
    float* const raw = scratch;
    auto v_buffer = [&](int b) { return scratch + Shape::raw_floats + b * Shape::v_floats; };
    auto u_buffer = [&](int b) {
      return scratch + Shape::raw_floats + 2 * Shape::v_floats + b * Shape::u_floats;
    };
    std::int64_t* const tile_y = reinterpret_cast<std::int64_t*>(scratch + Shape::scratch_floats);
    int* const tile_p = reinterpret_cast<int*>(tile_y + BN);
    int* const tile_q = tile_p + BN;
    if (t < BN) {                          // the output tiles' places, for the epilogue
      std::int64_t n = 0, p0 = P, q0 = Q;  // past the edge: nothing stored
      if (t0 + t < tiles) grid.locate(t0 + t, n, p0, q0);
      tile_y[t] = n * ys.n + p0 * ys.h + q0 * ys.w;
      tile_p[t] = static_cast<int>(p0);
      tile_q[t] = static_cast<int>(q0);
    }

    // --- The transform's patch (channel tc of tile tt): NCHW neighbouring lanes take
    // neighbouring tiles; NHWC 8 channels x 4 tiles a warp.
    constexpr int share = Shape::patch_share, rows_per = 4 / share;
    const int pt = t % (BC * BN), half = t / (BC * BN);  // half: the same for a warp
    const int tc = L == Layout::NCHW ? pt / BN : pt % BC;
    const int tt = L == Layout::NCHW ? pt % BN : pt / BC;
    auto raw_at = [&](int c, int tile, int pixel) {
      return L == Layout::NCHW ? (c * BN + tile) * Shape::raw_patch_pitch + tile / 8 + pixel
                               : tile * Shape::raw_tile_pitch + pixel * BC + c;
    };

    // --- The copies' state, advanced by BC channels a step. Element copies: the
    // transform's own patch (rows' x offsets at its channel, which of the 16 lie inside
    // x). Vector copies: 4 pixels' channel runs (x offsets, inside or not).
    std::int64_t x_at[rows_per > vector_copies ? rows_per : vector_copies] = {};
    unsigned inside = 0;
    int c_next = 0;  // the first channel of the step the next copies are for
    auto locate_patch = [&](std::int64_t tile, std::int64_t& h0, std::int64_t& w0,
                            std::int64_t& n) {
      std::int64_t p0, q0;
      grid.locate(tile, n, p0, q0);
      h0 = p0 - pad_h, w0 = q0 - pad_w;
    };
    if constexpr (VectorCopies) {
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < vector_copies; ++i) {
        const int f = t + i * Shape::threads;  // [tile][pixel][run]
        const int tile = f / 32, pixel = (f / 2) % 16, run = f % 2;
        if (t0 + tile < tiles) {
          std::int64_t h0, w0, n;
          locate_patch(t0 + tile, h0, w0, n);
          const std::int64_t h = h0 + pixel / 4, w = w0 + pixel % 4;
          if (h >= 0 && h < H && w >= 0 && w < W) inside |= 1u << i;
          x_at[i] = n * xs.n + h * xs.h + w * xs.w + 4 * run;
        }
      }
    } else {
      if (t0 + tt < tiles) {
        std::int64_t h0, w0, n;
        locate_patch(t0 + tt, h0, w0, n);
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < rows_per; ++r) {  // the patch's rows half * rows_per + r
          const std::int64_t h = h0 + half * rows_per + r;
          x_at[r] = n * xs.n + h * xs.h + w0 * xs.w + std::int64_t(tc) * xs.c;
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < 4; ++s)
            if (h >= 0 && h < H && w0 + s >= 0 && w0 + s < W) inside |= 1u << (4 * r + s);
        }
      }
    }
    // U: u_copies 16-byte runs of channel u_row % BC of the step, u_xi_stride apart.
    const int u_row = t / (BK / 4), u_col = t % (BK / 4);
    const float* u_next =
        u + (u_row / BC) * u_plane + std::int64_t(u_row % BC) * filters_pad + m0 + 4 * u_col;
    const std::int64_t u_xi_stride = (Shape::threads / (BK / 4) / BC) * u_plane;

    auto issue_copies = [&](float* us) {
      if constexpr (VectorCopies) {
        KCNN_DEVICE_UNROLL
        for (int i = 0; i < vector_copies; ++i) {
          const int f = t + i * Shape::threads;
          const int tile = f / 32, pixel = (f / 2) % 16, run = f % 2;
          // C % 4 == 0: a run is whole or past C
          const bool valid = c_next + 4 * run < C && (inside >> i & 1u);
          scratch_copy_async_16(raw + raw_at(4 * run, tile, pixel), valid ? x + x_at[i] : x, valid);
          x_at[i] += BC;
        }
      } else {
        const unsigned live = c_next + tc < C ? inside : 0u;
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < rows_per; ++r) {
          // One address a row, its elements at offsets from it (immediate ones for unit
          // columns): the row's first element may lie left of x's row (padding), so
          // the address is formed as an integer; elements outside x are zero-filled,
          // never read.
          const std::uintptr_t row = live >> (4 * r) & 0xFu
                                         ? reinterpret_cast<std::uintptr_t>(x) +
                                               static_cast<std::uintptr_t>(x_at[r]) * sizeof(T)
                                         : reinterpret_cast<std::uintptr_t>(x);
          KCNN_DEVICE_UNROLL
          for (int s = 0; s < 4; ++s) {
            const std::int64_t column = UnitColumns ? s : s * xs.w;
            scratch_copy_async(raw + raw_at(tc, tt, 4 * (half * rows_per + r) + s),
                               reinterpret_cast<const T*>(row + column * sizeof(T)),
                               live >> (4 * r + s) & 1u);
          }
          x_at[r] += BC * xs.c;
        }
      }
      c_next += BC;
      KCNN_DEVICE_UNROLL
      for (int i = 0; i < u_copies; ++i)
        scratch_copy_async_16(us + 4 * (t + i * Shape::threads), u_next + i * u_xi_stride, true);
      u_next += BC * filters_pad;
    };
    // raw -> V: rows 2 half, 2 half + 1 of B^T d (two threads a patch), or all four, times B.
    auto transform_patch = [&](float* vs) {
      constexpr int rows_in = share == 1 ? 4 : 3, rows_out = 4 / share;
      const int first = share == 1 ? 0 : half;  // B^T's rows 0-1 read rows 0-2, 2-3 1-3
      float d[rows_in][4];
      if constexpr (L == Layout::NCHW) {
        const float* p = raw + raw_at(tc, tt, 4 * first);
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < rows_in; ++r)
          KCNN_DEVICE_UNROLL
        for (int s = 0; s < 4; ++s)
          d[r][s] = p[4 * r + s];
      } else {
        KCNN_DEVICE_UNROLL
        for (int r = 0; r < rows_in; ++r)
          KCNN_DEVICE_UNROLL
        for (int s = 0; s < 4; ++s)
          d[r][s] = raw[raw_at(tc, tt, 4 * (first + r) + s)];
      }
      float rows[rows_out][4];
      KCNN_DEVICE_UNROLL
      for (int s = 0; s < 4; ++s) {
        if constexpr (share == 1) {
          float column[4] = {d[0][s], d[1][s], d[2][s], d[3][s]}, out[4];
          WinogradF3<2>::input(column, out);
          KCNN_DEVICE_UNROLL
          for (int a = 0; a < 4; ++a)
            rows[a][s] = out[a];
        } else if (half == 0) {  // d: rows 0-2
          rows[0][s] = d[0][s] - d[2][s];
          rows[1][s] = d[1][s] + d[2][s];
        } else {  // d: rows 1-3
          rows[0][s] = d[1][s] - d[0][s];
          rows[1][s] = d[0][s] - d[2][s];
        }
      }
      KCNN_DEVICE_UNROLL
      for (int a = 0; a < rows_out; ++a) {
        float v[4];
        WinogradF3<2>::input(rows[a], v);
        const int xi_row = (share == 1 ? 0 : 2 * half) + a;
        KCNN_DEVICE_UNROLL
        for (int b = 0; b < 4; ++b)
          vs[((xi_row * 4 + b) * BC + tc) * Shape::v_pitch + tt] = v[b];
      }
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
    auto multiply = [&](const float* vs, const float* us) {
      vs += 4 * ft;
      us += 4 * fm;
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

    const int steps = (C + BC - 1) / BC;
    issue_copies(u_buffer(0));
    scratch_copies_wait();
    team.team_barrier();
    transform_patch(v_buffer(0));
    team.team_barrier();
    if (steps > 1) issue_copies(u_buffer(1));
    for (int step = 0; step < steps; ++step) {
      const int buf = step % 2;
      multiply(v_buffer(buf), u_buffer(buf));
      if (step + 1 < steps) {
        scratch_copies_wait();
        team.team_barrier();  // step + 1's copies landed; this step's buffers read
        transform_patch(v_buffer(buf ^ 1));
        team.team_barrier();  // its V written; the raw patches free
        if (step + 2 < steps) issue_copies(u_buffer(buf));
      }
    }
    team.team_barrier();  // the epilogue reuses the operands' scratch
    epilogue(t, team, acc, scratch, tile_y, tile_p, tile_q, m0, t0);
  }

  /// Z[xi][k][t]'s place: rows of BN tiles in 16-byte chunks, chunk j of row k at
  /// j ^ (k / 4 % 8): a lane's vector stores (8 lanes of a quarter warp: k = 4 fm + i)
  /// and a transform's reads (32 lanes: neighbouring tiles of one k) meet no conflicts.
  KOKKOS_FORCEINLINE_FUNCTION static int z_at(int xi, int k, int tile) {
    return (xi * BK + k) * BN + 4 * ((tile / 4) ^ ((k / 4) % 8)) + tile % 4;
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void epilogue(int t, const Team& team,
                                       const float (&acc)[Shape::positions_per_warp][8][8],
                                       float* scratch, const std::int64_t* tile_y,
                                       const int* tile_p, const int* tile_q, int m0,
                                       std::int64_t t0) const {
    const int warp = t / 32, lane = t % 32;
    const int fm = lane % 8, ft = lane / 8;
    float* const zs = scratch;
    float* const ys_block = scratch + Shape::z_floats;  // NHWC: [tile][pixel][k]
    KCNN_DEVICE_UNROLL
    for (int p = 0; p < Shape::positions_per_warp; ++p)
      KCNN_DEVICE_UNROLL
    for (int i = 0; i < 8; ++i) {
      const int k = i < 4 ? 4 * fm + i : 32 + 4 * fm + i - 4;
      const int xi = Shape::positions_per_warp * warp + p;
      const float* sums = acc[p][i];
      *reinterpret_cast<Vec*>(zs + z_at(xi, k, 4 * ft)) = Vec{{sums[0], sums[1], sums[2], sums[3]}};
      *reinterpret_cast<Vec*>(zs + z_at(xi, k, 16 + 4 * ft)) =
          Vec{{sums[4], sums[5], sums[6], sums[7]}};
    }
    team.team_barrier();

    // Thread t transforms tile t % BN of filters per (t / BN) .. + per - 1.
    constexpr int per = BK * BN / Shape::threads;
    const int tile = t % BN;
    const bool tile_in = t0 + tile < tiles;
    KCNN_DEVICE_UNROLL
    for (int kk = 0; kk < per; ++kk) {
      const int k = per * (t / BN) + kk, m = m0 + k;
      float zt[4][4], out[2][2];
      KCNN_DEVICE_UNROLL
      for (int a = 0; a < 4; ++a)
        KCNN_DEVICE_UNROLL
      for (int b = 0; b < 4; ++b)
        zt[a][b] = zs[z_at(a * 4 + b, k, tile)];
      Transform::output(zt, out);
      const float b = bias && m < M ? to_compute(bias[m * bias_stride]) : 0.0f;
      KCNN_DEVICE_UNROLL
      for (int a = 0; a < 2; ++a)
        KCNN_DEVICE_UNROLL
      for (int c = 0; c < 2; ++c)
        out[a][c] = apply_activation(activation, out[a][c] + b);
      if constexpr (L == Layout::NCHW) {
        if (tile_in && m < M) {
          Y* dst = y + tile_y[tile] + std::int64_t(m) * ys.c;
          const int rows = P - tile_p[tile] < 2 ? P - tile_p[tile] : 2;
          const int cols = Q - tile_q[tile] < 2 ? Q - tile_q[tile] : 2;
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
          ys_block[tile * Shape::y_tile_pitch + (2 * a + c) * Shape::y_pixel_pitch + k] = out[a][c];
      }
    }
    if constexpr (L == Layout::NHWC) {
      team.team_barrier();
      // BN tiles x 4 pixels, each a run of BK filters: a warp stores two runs of 32 a row.
      constexpr int rows_per_warp = BN * 4 / (Shape::threads / 32);
      KCNN_DEVICE_NO_UNROLL
      for (int r = 0; r < rows_per_warp; ++r) {
        const int row = warp * rows_per_warp + r, rt = row / 4, px = row % 4;
        const int a = px / 2, c = px % 2;
        if (t0 + rt >= tiles || tile_p[rt] + a >= P || tile_q[rt] + c >= Q) continue;
        Y* dst = y + tile_y[rt] + a * ys.h + c * ys.w;
        const float* src = ys_block + rt * Shape::y_tile_pitch + px * Shape::y_pixel_pitch;
        KCNN_DEVICE_UNROLL
        for (int h = 0; h < BK / 32; ++h) {
          const int k = 32 * h + lane;
          if (m0 + k < M) dst[std::int64_t(m0 + k) * ys.c] = from_compute<Y>(src[k]);
        }
      }
    }
  }
};

}  // namespace kcnn::Impl
