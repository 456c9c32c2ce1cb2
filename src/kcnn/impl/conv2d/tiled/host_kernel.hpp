// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/host_kernel.hpp
/// \brief ConvAlgo::Tiled on CPUs: TiledHostKernel, one OpenMP thread per team that
///        walks all logical threads of its tile.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

#include "../../arch/device_traits.hpp"
#include "epilogue.hpp"
#include "kernel_base.hpp"
#include "mainloop.hpp"
#include "staging.hpp"

namespace kcnn::Impl {

/// The CPU kernel (parameters: see TiledKernelBase): per channel chunk the team stages
/// (TiledHostStaging), then walks its micro-tiles, accumulating (TiledHostMainloop) and
/// storing each (TiledHostEpilogue).
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
struct TiledHostKernel
    : TiledHostEpilogue<TiledHostMainloop<TiledHostStaging<TiledKernelBase<
          L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>>>> {
  using Base = TiledHostEpilogue<TiledHostMainloop<TiledHostStaging<
      TiledKernelBase<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>>>>;
  static_assert(Base::on_host, "TiledHostKernel: a host execution space");
  using Base::accumulate;
  using Base::BH;
  using Base::block_bytes;
  using Base::BM;
  using Base::BW;
  using Base::g;
  using Base::in_tile_elems;
  using Base::kFloatPartials;
  using Base::load_partial;
  using Base::pb;
  using Base::pool_conv_tile;
  using Base::Pooled;
  using Base::R;
  using Base::S;
  using Base::stage;
  using Base::store;
  using Base::tile_index;
  using Base::tile_origin;
  using Base::w_tile_elems;
  using Base::zero;
  using typename Base::accumulator;
  using typename Base::member_type;
  using typename Base::scalar;
  using typename Base::ScratchView;
  using typename Base::staged;
  using typename Base::TileIndex;
  using typename Base::TileOrigin;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const TileIndex first_tile = tile_index(team.league_rank());

    // One scratch block: the halo tile, then (16-byte aligned) the weights. On GPUs a
    // fused pooling's conv tile reuses the block once the last chunk has been read.
    const std::size_t in_elems = in_tile_elems(g);
    const std::size_t w_elems = w_tile_elems(g, R(), S());
    auto* block =
        static_cast<staged*>(team.team_scratch(0).get_shmem_aligned(block_bytes(g, R(), S()), 16));
    const ScratchView in_tile(block, in_elems);
    const ScratchView w_tile(block + in_elems, w_elems);

    const int logical = g.logical_threads();
    const int C = static_cast<int>(pb.C);
    const TileOrigin o = tile_origin(first_tile);
    // CPUs: few hardware threads walk many micro-tiles. With one chunk (the usual
    // case: the host scratch budget is sized for it) each micro-tile is computed and
    // stored once; with several, partial sums go to the outputs (y, or a tile in level-1
    // scratch: a fused pooling's conv tile, or the float partials of 16-bit types;
    // cache-resident either way: the team's outputs are a few KB) and the last chunk
    // applies bias and activation. (The tile is followed by two rows for the pooling
    // phase.)
    accumulator* const conv_tile =
        Pooled || (kFloatPartials && g.c_chunk < C)
            ? static_cast<accumulator*>(team.team_scratch(1).get_shmem_aligned(
                  (g.conv_tile_elems() + 2 * g.tile_q) * sizeof(accumulator), 64))
            : nullptr;
    for (int c0 = 0; c0 < C; c0 += g.c_chunk) {
      const int cc = C - c0 < g.c_chunk ? C - c0 : g.c_chunk;
      const bool first = c0 == 0, last = c0 + cc >= C;
      if (!first) team.team_barrier();
      stage(team, in_tile, w_tile, o, c0, cc, true);
      team.team_barrier();
      for (int t = team.team_rank(); t < logical; t += team.team_size()) {
        accumulator acc[BM][BH][BW];
        if (first) {
          zero(acc);
        } else {
          load_partial(acc, o, t, conv_tile);
        }
        accumulate(acc, in_tile, w_tile, t, cc);
        store(acc, o, t, last, conv_tile);
      }
    }
    if constexpr (Pooled) {
      team.team_barrier();
      pool_conv_tile(team, o, conv_tile);
    }
  }
};

}  // namespace kcnn::Impl
