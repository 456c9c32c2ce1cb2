// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/kernel_base.hpp
/// \brief ConvAlgo::Tiled: the state and helpers that the host and the device kernel
///        share (data members, tile indexing, scratch sizing, filter accessors).
///
/// The phases (staging.hpp, mainloop.hpp, epilogue.hpp) are mixins: class templates
/// `template <class Base> struct X : Base` stacked on TiledKernelBase, each importing
/// the names it uses from its (dependent) base with using-declarations. The kernels
/// (device_kernel.hpp, host_kernel.hpp) stack the phases of their backend; all data
/// members live here, so the functor passed to parallel_for keeps exactly these.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "geometry.hpp"

namespace kcnn::Impl {

/// The kernel. KR/KS: compile-time filter extents (0: runtime). Unit: stride and
/// dilation are 1 (scratch offsets become compile-time constants). Pooling: how the
/// fused pooling (pb.has_pool) is applied; a template parameter so that the kernels
/// without it keep their registers and code size.
///
/// The template parameters are also members (L, KR, KS, Unit, Pooling) so that the
/// phase mixins, which see the kernel only as their Base, can import them.
template <Layout L_, int KR_, int KS_, bool Unit_, TiledPooling Pooling_, class Micro,
          class ExecSpace, class XView, class WView, class BView, class YView>
struct TiledKernelBase {
  static constexpr Layout L = L_;
  static constexpr int KR = KR_, KS = KS_;
  static constexpr bool Unit = Unit_;
  static constexpr TiledPooling Pooling = Pooling_;
  static constexpr bool Pooled = Pooling != TiledPooling::None;
  static constexpr bool on_host = runs_on_host_v<ExecSpace>;
  using scalar = view_scalar_t<YView>;  ///< the storage type of x, w and y
  /// The micro-tile's sums, and a fused pooling's conv tile.
  using accumulator = accumulator_t<scalar>;
  /// The staged operands' element type: the accumulator's (16-bit values converted while
  /// staging, so that the main loop's multiply-adds read float rows: SIMD on CPUs, the
  /// 16-byte vector loads on GPUs). Staging 16-bit values on GPUs instead (half the
  /// scratch, converted as the main loop read them) ran LeNet's stack in bfloat16 at
  /// 4.4 ms against 2.8 in float (H100, session 18).
  using staged = std::conditional_t<on_host || is_16bit_storage_v<scalar>, accumulator, scalar>;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using ScratchView = Kokkos::View<staged*, typename ExecSpace::scratch_memory_space,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int BM = Micro::BM, BH = Micro::BH, BW = Micro::BW;
  /// Hosts, 16-bit types, several channel chunks: the partial sums between chunks stay
  /// in float in a level-1 tile (as a fused pooling's conv tile does), not in y, so that
  /// y is rounded once.
  static constexpr bool kFloatPartials = on_host && is_16bit_storage_v<scalar>;

  XView x;
  WView w;
  BView bias;
  YView y;
  Conv2dProblem pb;
  TiledGeometry g;
  /// GPU staging: 32-bit element offsets (set by the launch; x's only where they fit).
  bool x_offsets_fit_int = false;
  LogicalStrides32 x_strides32{}, w_strides32{};
  LogicalStrides x_strides{};  ///< x's 64-bit strides, for inputs beyond 32-bit offsets
  bool w_taps_linear = false;  ///< tap (r, s) of the filters at (r * S + s) * w_strides32.w

  /// Where a team's tile starts: image, first output channel/row/column, and the
  /// input coordinate its halo tile starts at (may be negative: padding).
  struct TileOrigin {
    std::int64_t n;
    int m0, p0, q0;  ///< first conv output (p0, q0 < 0 for a fused pooling's padding)
    std::int64_t h0, w0;
    int pp0 = 0, pq0 = 0;  ///< fused pooling: first pooled output
  };

  /// The tile of team `league_rank` (its first, with several row tiles per team):
  /// (image, channel tile, row tile, column tile), columns fastest. With a fused pooling the row
  /// and column tiles are pooled ones and the conv tile starts where their first window does. (The
  /// league size fits int, see conv2d_tiled_launch: 32-bit divisions, where 64-bit ones are
  /// emulated on GPUs with dozens of instructions each.)
  struct TileIndex {
    int n, tm, tp, tq;  ///< image, channel tile, (first) row tile, column tile
  };
  KOKKOS_INLINE_FUNCTION TileIndex tile_index(int league_rank) const {
    int rest = league_rank;
    const int tq = rest % g.tiles_q;
    rest /= g.tiles_q;
    const int tp = (rest % g.row_groups) * g.tiles_per_team;
    rest /= g.row_groups;
    const int tm = rest % g.tiles_m;
    return {rest / g.tiles_m, tm, tp, tq};
  }
  KOKKOS_INLINE_FUNCTION TileOrigin tile_origin(const TileIndex& i) const {
    const int tm = i.tm, tp = i.tp, tq = i.tq;
    TileOrigin o{i.n, tm * g.tile_m, tp * g.tile_p, tq * g.tile_q, 0, 0};
    if constexpr (Pooled) {
      o.pp0 = tp * g.pool_p;
      o.pq0 = tq * g.pool_q;
      o.p0 = o.pp0 * pb.pool.stride_h - pb.pool.pad_h;
      o.q0 = o.pq0 * pb.pool.stride_w - pb.pool.pad_w;
    }
    o.h0 = std::int64_t(o.p0) * pb.stride_h - pb.pad_h;
    o.w0 = std::int64_t(o.q0) * pb.stride_w - pb.pad_w;
    return o;
  }

  /// Scratch elements (staged) of the halo tile (padded to the weights' 16-byte
  /// alignment) and of the weights.
  static std::size_t KOKKOS_INLINE_FUNCTION in_tile_elems(const TiledGeometry& geo) {
    return static_cast<std::size_t>(
        round_up(std::int64_t(geo.c_chunk) * geo.in_plane(), kScratchRowAlign));
  }
  static std::size_t KOKKOS_INLINE_FUNCTION w_tile_elems(const TiledGeometry& geo, int r, int s) {
    return static_cast<std::size_t>(geo.c_chunk) * r * s * geo.tile_m;
  }
  /// Level-0 scratch bytes: the staged operands, or on GPUs with a fused pooling the
  /// conv tile (accumulators) if it is larger (it takes the block over after the last
  /// chunk).
  static std::size_t KOKKOS_INLINE_FUNCTION block_bytes(const TiledGeometry& geo, int r, int s) {
    const std::size_t operands = sizeof(staged) * (in_tile_elems(geo) + w_tile_elems(geo, r, s));
    const std::size_t conv = !on_host && Pooling == TiledPooling::Scratch
                                 ? sizeof(accumulator) * geo.conv_tile_elems()
                                 : 0;
    return operands > conv ? operands : conv;
  }

  KOKKOS_INLINE_FUNCTION int R() const { return KR > 0 ? KR : static_cast<int>(pb.R); }
  KOKKOS_INLINE_FUNCTION int S() const { return KS > 0 ? KS : static_cast<int>(pb.S); }
  KOKKOS_INLINE_FUNCTION int stride_h() const { return Unit ? 1 : pb.stride_h; }
  KOKKOS_INLINE_FUNCTION int stride_w() const { return Unit ? 1 : pb.stride_w; }
  KOKKOS_INLINE_FUNCTION int dil_h() const { return Unit ? 1 : pb.dilation_h; }
  KOKKOS_INLINE_FUNCTION int dil_w() const { return Unit ? 1 : pb.dilation_w; }

  /// GPU kernels with 32-accumulator micro-tiles may take several row tiles per team
  /// (TiledGeometry::tiles_per_team, set at launch when the input is staged in one
  /// channel chunk and teams stay plentiful): the filters are staged once, and the team's
  /// setup and index arithmetic are paid once per group of tiles. In LeNet C1's kernels
  /// (one input channel) those were about a fifth of the instructions (Nsight Compute,
  /// H100). Not for the scratch pooling, whose conv tile overwrites the staged filters.
  static constexpr bool kMultiTile =
      !on_host && BM * BH * BW <= 32 && Pooling != TiledPooling::Scratch;

  /// Whether the GPU kernel reads staged inputs and weights with 16-byte vector loads
  /// (accumulate_vec): 4 elements per 16-byte access (float), unit stride and dilation,
  /// compile-time filter, BW and BM multiples of 4. A warp's lanes then read consecutive 16-byte
  /// words of a scratch row (no bank conflicts, where 4-float steps between lanes' scalar loads
  /// give 2- to 4-way conflicts), and one load brings 4 values instead of 1.
  static constexpr bool vector_loads = !on_host && Unit && KR > 0 && KS > 0 &&
                                       vector_elements_v<staged> == 4 && BW % 4 == 0 && BM % 4 == 0;

  using Vec4 = AlignedVec4<scalar>;

  KOKKOS_FORCEINLINE_FUNCTION static void zero(accumulator (&acc)[BM][BH][BW]) {
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm)
      KCNN_DEVICE_UNROLL
    for (int bh = 0; bh < BH; ++bh)
      KCNN_DEVICE_UNROLL
    for (int bw = 0; bw < BW; ++bw)
      acc[bm][bh][bw] = accumulator(0);
  }

  /// Output coordinates of logical thread t's micro-tile origin.
  KOKKOS_FORCEINLINE_FUNCTION void micro_origin(const TileOrigin& o, int t, int& m, int& p,
                                                int& q) const {
    q = o.q0 + (t % g.threads_q) * BW;
    p = o.p0 + ((t / g.threads_q) % g.threads_p) * BH;
    m = o.m0 + (t / (g.threads_q * g.threads_p)) * BM;
  }

  // --- fused pooling ---------------------------------------------------------------

  /// The conv tile: [tile_m][tile_p][tile_q], conv output (m, p, q) of the team at
  /// (m - m0, p - p0, q - q0).
  KOKKOS_INLINE_FUNCTION int conv_tile_plane() const { return g.tile_p * g.tile_q; }
  KOKKOS_INLINE_FUNCTION int conv_tile_offset(const TileOrigin& o, int m, int p, int q) const {
    return (m - o.m0) * conv_tile_plane() + (p - o.p0) * g.tile_q + (q - o.q0);
  }
};

}  // namespace kcnn::Impl
