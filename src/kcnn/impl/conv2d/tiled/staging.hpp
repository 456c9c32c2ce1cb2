// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/staging.hpp
/// \brief ConvAlgo::Tiled, first phase of a channel chunk: the halo tile and the
///        filter taps into team scratch (TiledDeviceStaging: the team's threads with
///        asynchronous copies; TiledHostStaging: one thread, plain loops).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "../../arch/async_copy.hpp"
#include "../../arch/macros.hpp"
#include "../../common/index_math.hpp"
#include "../../common/tensor_access.hpp"
#include "kernel_base.hpp"

namespace kcnn::Impl {

/// GPU staging, a mixin over TiledKernelBase (see kernel_base.hpp).
template <class Base>
struct TiledDeviceStaging : Base {
  using Base::g;
  using Base::L;
  using Base::pb;
  using Base::R;
  using Base::S;
  using Base::w;
  using Base::w_strides32;
  using Base::w_taps_linear;
  using Base::x;
  using Base::x_offsets_fit_int;
  using Base::x_strides;
  using Base::x_strides32;
  using typename Base::member_type;
  using typename Base::scalar;
  using typename Base::ScratchView;
  using typename Base::staged;
  using typename Base::TileOrigin;

  /// Stages input channels [c0, c0 + cc) of the halo tile and (with_filters) their
  /// filter taps.
  KOKKOS_INLINE_FUNCTION void stage(const member_type& team, const ScratchView& in_tile,
                                    const ScratchView& w_tile, const TileOrigin& o, int c0, int cc,
                                    bool with_filters) const {
    stage_device(team, in_tile, w_tile, o, c0, cc, with_filters);
  }

  /// GPUs: all threads of the team stride through the tile in global-memory order (NCHW:
  /// columns fastest; NHWC: channels fastest), so a warp reads consecutive addresses.
  /// Each thread decomposes its first index once and then steps its position by the team
  /// size with carries (GridWalker): integer divisions per staged element were the
  /// largest part of LeNet C1's instructions (Nsight Compute: the integer pipe busier
  /// than the FMA pipe).
  KOKKOS_INLINE_FUNCTION void stage_device(const member_type& team, const ScratchView& in_tile,
                                           const ScratchView& w_tile, const TileOrigin& o, int c0,
                                           int cc, bool with_filters) const {
    const int t = team.team_rank(), T = team.team_size();
    // 32-bit offsets where they fit (the 64-bit chains and bounds tests were most of the
    // staging instructions, which weigh on LeNet C1 with its 49 multiply-adds per output).
    if (x_offsets_fit_int) {
      stage_input<std::uint32_t>(t, T, in_tile, o, c0, cc, x_strides32);
    } else {
      stage_input<std::uint64_t>(t, T, in_tile, o, c0, cc, x_strides);
    }
    // Weights, stored [c][r][s][m] so a thread's BM channels are adjacent: the grid
    // (channel, tap, filter). (Filters always fit 32-bit offsets, checked at launch.)
    const int taps = R() * S(), w_total = cc * taps * g.tile_m;
    const int s_extent = S(), tile_m = g.tile_m;
    const scalar* const w_any = w.data();
    if (!with_filters) {
      // staged already
    } else if (w_taps_linear) {
      // Tap (r, s) at offset (r * S + s) * w.w: the usual OIHW / OHWI filters.
      using U = std::uint32_t;
      LinearGridWalker<U> it(
          t, T, tile_m, taps, U(o.m0) * U(w_strides32.n) + U(c0) * U(w_strides32.c),
          {U(w_strides32.c), U(w_strides32.w), U(w_strides32.n)}, {taps * tile_m, tile_m, 1});
      for (int i = t; i < w_total; i += T, it.advance()) {
        const bool inside = o.m0 + it.pos.c < pb.M;
        stage_element(w_tile.data() + it.dst, inside ? w_any + it.src : w_any, inside);
      }
    } else {
      copy_to_scratch(
          t, T, w_total, GridWalker(t, T, tile_m, taps), w_tile.data(),
          [&](const GridWalker& pos, bool& inside) {
            inside = o.m0 + pos.c < pb.M;
            return inside ? w.data() + w_strides32.offset(o.m0 + pos.c, c0 + pos.a,
                                                          pos.b / s_extent, pos.b % s_extent)
                          : w_any;
          },
          [&](const GridWalker& pos) { return (pos.a * taps + pos.b) * tile_m + pos.c; });
    }
    scratch_copies_wait();  // the caller's barrier then publishes the staged tile
  }

  /// The input part of stage_device: element offsets in the unsigned type Offset, x's
  /// logical strides `xs`. Threads stride through the halo tile in x's memory order
  /// (NCHW: (channel, row, column); NHWC: (row, column, channel)), so a warp reads
  /// consecutive addresses; cells outside the image are zero-filled.
  template <class Offset, class Strides>
  KOKKOS_FORCEINLINE_FUNCTION void stage_input(int t, int T, const ScratchView& in_tile,
                                               const TileOrigin& o, int c0, int cc,
                                               const Strides& xs) const {
    using U = Offset;
    const int in_plane = g.in_plane(), total = cc * g.in_h * g.in_w;
    // Image coordinates as unsigned: negative ones (padding) wrap above the extent, so
    // one comparison per coordinate tests both ends.
    const U H = U(pb.H), W = U(pb.W), h0 = U(o.h0), w0 = U(o.w0);
    const U base = U(o.n) * U(xs.n) + U(c0) * U(xs.c) + h0 * U(xs.h) + w0 * U(xs.w);
    const scalar* const x0 = x.data();  // also the (unread) source of zero-filled cells
    staged* const dst = in_tile.data();
    if constexpr (L == Layout::NCHW) {
      LinearGridWalker<U> it(t, T, g.in_w, g.in_h, base, {U(xs.c), U(xs.h), U(xs.w)},
                             {in_plane, g.in_pitch, 1});
      for (int i = t; i < total; i += T, it.advance()) {
        const bool inside = h0 + U(it.pos.b) < H && w0 + U(it.pos.c) < W;
        stage_element(dst + it.dst, inside ? x0 + it.src : x0, inside);
      }
    } else {
      LinearGridWalker<U> it(t, T, cc, g.in_w, base, {U(xs.h), U(xs.w), U(xs.c)},
                             {g.in_pitch, 1, in_plane});
      for (int i = t; i < total; i += T, it.advance()) {
        const bool inside = h0 + U(it.pos.a) < H && w0 + U(it.pos.b) < W;
        stage_element(dst + it.dst, inside ? x0 + it.src : x0, inside);
      }
    }
  }

  /// dst[offset(pos)] = *source(pos, inside), or 0 where !inside (source then returns
  /// any valid address of the tensor), for the elements t, t + T, ... below `total` of a
  /// GridWalker grid, as asynchronous copies (stage_element; the caller waits for
  /// them). Element by element with plain loads, every staged element
  /// cost a whole memory latency (the compiler cannot move a load above the previous
  /// element's scratch store), and the team's warps then waited at the barrier: LeNet
  /// C3 on the H100 spent 27% of its stall samples on those loads and that barrier
  /// (Nsight Compute).
  template <class Source, class Offset>
  KOKKOS_FORCEINLINE_FUNCTION static void copy_to_scratch(int t, int T, int total, GridWalker pos,
                                                          staged* dst, const Source& source,
                                                          const Offset& offset) {
    for (int i = t; i < total; i += T, pos.advance()) {
      bool inside = false;
      const scalar* src = source(pos, inside);
      stage_element(dst + offset(pos), src, inside);
    }
  }

  /// *dst = *src, or 0 where !inside: an asynchronous copy where the staged type is the
  /// stored one (the caller waits for it, scratch_copies_wait); 16-bit values converted
  /// to float with a plain load (cp.async moves 4 bytes at least).
  KOKKOS_FORCEINLINE_FUNCTION static void stage_element(staged* dst, const scalar* src,
                                                        bool inside) {
    if constexpr (std::is_same_v<staged, scalar>) {
      scratch_copy_async(dst, src, inside);
    } else {
      *dst = inside ? to_compute(*src) : staged(0);
    }
  }
};

/// CPU staging, a mixin over TiledKernelBase (see kernel_base.hpp).
template <class Base>
struct TiledHostStaging : Base {
  using Base::g;
  using Base::L;
  using Base::pb;
  using Base::R;
  using Base::S;
  using Base::w;
  using Base::x;
  using typename Base::member_type;
  using typename Base::scalar;
  using typename Base::ScratchView;
  using typename Base::staged;
  using typename Base::TileOrigin;

  /// Stages input channels [c0, c0 + cc) of the halo tile and their filter taps (the
  /// host always restages the filters: with_filters is the device kernel's).
  KOKKOS_INLINE_FUNCTION void stage(const member_type& /*team*/, const ScratchView& in_tile,
                                    const ScratchView& w_tile, const TileOrigin& o, int c0, int cc,
                                    bool /*with_filters*/) const {
    stage_host(in_tile, w_tile, o, c0, cc);
  }

  /// CPUs: one thread per team, so plain nested loops without index division, and
  /// pointer steps by the Views' strides instead of View indexing: the index arithmetic
  /// of one View access per staged value (four multiplies for a LayoutStride View) was a
  /// quarter of LeNet C3's kernel time (NCHW, perf). The in-image part of each staged
  /// row is a contiguous copy where x's columns are (NCHW with unit column stride).
  /// Values are staged in the compute type (16-bit types: converted to float here, once
  /// per team).
  KOKKOS_INLINE_FUNCTION void stage_host(const ScratchView& in_tile, const ScratchView& w_tile,
                                         const TileOrigin& o, int c0, int cc) const {
    const int in_plane = g.in_plane();
    // Columns of the halo row that fall inside the image: [iw_lo, iw_hi).
    const int iw_lo = static_cast<int>(o.w0 < 0 ? -o.w0 : 0);
    const int iw_hi = static_cast<int>(o.w0 + g.in_w > pb.W ? pb.W - o.w0 : g.in_w);
    // x's strides along its logical (n, c, h, w) dimensions.
    const std::int64_t xc = L == Layout::NCHW ? x.stride(1) : x.stride(3);
    const std::int64_t xh = L == Layout::NCHW ? x.stride(2) : x.stride(1);
    const std::int64_t xw = L == Layout::NCHW ? x.stride(3) : x.stride(2);
    const auto* x_image = x.data() + o.n * std::int64_t(x.stride(0)) + c0 * xc;
    for (int ih = 0; ih < g.in_h; ++ih) {
      const std::int64_t h = o.h0 + ih;
      const bool row_inside = h >= 0 && h < pb.H;
      for (int c = 0; c < cc; ++c) {
        staged* dst = in_tile.data() + c * in_plane + ih * g.in_pitch;
        if (!row_inside || iw_lo >= iw_hi) {
          for (int iw = 0; iw < g.in_w; ++iw)
            dst[iw] = staged(0);
          continue;
        }
        for (int iw = 0; iw < iw_lo; ++iw)
          dst[iw] = staged(0);
        // From the first column inside the image (the tile's origin may lie in the
        // padding, before x's first element).
        const auto* src = x_image + c * xc + h * xh + (o.w0 + iw_lo) * xw;
        staged* const inside = dst + iw_lo;
        const int count = iw_hi - iw_lo;
        if (xw == 1) {
          KCNN_HOST_SIMD
          for (int i = 0; i < count; ++i)
            inside[i] = to_compute(src[i]);
        } else {
          for (int i = 0; i < count; ++i)
            inside[i] = to_compute(src[i * xw]);
        }
        for (int iw = iw_hi; iw < g.in_w; ++iw)
          dst[iw] = staged(0);
      }
    }
    // The filters as [c][r][s][m], the missing filters of the last block as zeros; w's
    // strides along its logical (m, c, r, s) dimensions.
    const int r_extent = R(), s_extent = S();
    const std::int64_t wm = w.stride(0);
    const std::int64_t wc = L == Layout::NCHW ? w.stride(1) : w.stride(3);
    const std::int64_t wr = L == Layout::NCHW ? w.stride(2) : w.stride(1);
    const std::int64_t ws = L == Layout::NCHW ? w.stride(3) : w.stride(2);
    const int m_count = pb.M - o.m0 < g.tile_m ? static_cast<int>(pb.M - o.m0) : g.tile_m;
    staged* wdst = w_tile.data();
    const auto* w_block = w.data() + o.m0 * wm + c0 * wc;
    for (int c = 0; c < cc; ++c)
      for (int r = 0; r < r_extent; ++r)
        for (int s = 0; s < s_extent; ++s, wdst += g.tile_m) {
          const auto* src = w_block + c * wc + r * wr + s * ws;
          for (int m = 0; m < m_count; ++m)
            wdst[m] = to_compute(src[m * wm]);
          for (int m = m_count; m < g.tile_m; ++m)
            wdst[m] = staged(0);
        }
  }
};

}  // namespace kcnn::Impl
