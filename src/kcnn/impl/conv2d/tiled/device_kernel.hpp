// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/device_kernel.hpp
/// \brief ConvAlgo::Tiled on GPUs: TiledDeviceKernel, one logical thread per hardware
///        thread, the micro-tile in registers across all channel chunks.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

#include "../../arch/device_traits.hpp"
#include "epilogue.hpp"
#include "kernel_base.hpp"
#include "mainloop.hpp"
#include "staging.hpp"

namespace kcnn::Impl {

/// The GPU kernel (parameters: see TiledKernelBase): per channel chunk the team stages
/// (TiledDeviceStaging), each thread accumulates (TiledDeviceMainloop), and after the
/// last chunk each thread stores its micro-tile (TiledDeviceEpilogue), with several row
/// tiles per team where kMultiTile allows.
template <Layout L, int KR, int KS, bool Unit, TiledPooling Pooling, class Micro, class ExecSpace,
          class XView, class WView, class BView, class YView>
struct TiledDeviceKernel
    : TiledDeviceEpilogue<TiledDeviceMainloop<TiledDeviceStaging<TiledKernelBase<
          L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>>>> {
  using Base = TiledDeviceEpilogue<TiledDeviceMainloop<TiledDeviceStaging<
      TiledKernelBase<L, KR, KS, Unit, Pooling, Micro, ExecSpace, XView, WView, BView, YView>>>>;
  static_assert(!Base::on_host, "TiledDeviceKernel: a GPU execution space");
  using Base::accumulate;
  using Base::accumulate_vec;
  using Base::BH;
  using Base::block_bytes;
  using Base::BM;
  using Base::BW;
  using Base::g;
  using Base::in_tile_elems;
  using Base::kMultiTile;
  using Base::pb;
  using Base::pool_conv_tile;
  using Base::R;
  using Base::S;
  using Base::stage;
  using Base::store_conv_tile_device;
  using Base::store_device;
  using Base::store_pooled_device;
  using Base::tile_index;
  using Base::tile_origin;
  using Base::vector_loads;
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
    void* const block = team.team_scratch(0).get_shmem_aligned(block_bytes(g, R(), S()), 16);
    const ScratchView in_tile(static_cast<staged*>(block), in_elems);
    const ScratchView w_tile(static_cast<staged*>(block) + in_elems, w_elems);
    accumulator* const conv_tile = static_cast<accumulator*>(block);  // TiledPooling::Scratch

    const int logical = g.logical_threads();
    const int C = static_cast<int>(pb.C);
    // GPUs: one logical thread per hardware thread; its micro-tile stays in registers
    // across all channel chunks and is stored once. (The host path, TiledHostKernel, is
    // not even compiled for the device: its loops would push the micro-tile to local
    // memory.)
    const int t = team.team_rank();
    int tiles = 1;
    if constexpr (kMultiTile) {
      tiles = g.tiles_p - first_tile.tp < g.tiles_per_team ? g.tiles_p - first_tile.tp
                                                           : g.tiles_per_team;
    }
    for (int k = 0; k < tiles; ++k) {
      TileIndex index = first_tile;
      index.tp += k;
      const TileOrigin o = tile_origin(index);
      accumulator acc[BM][BH][BW];
      zero(acc);
      for (int c0 = 0; c0 < C; c0 += g.c_chunk) {
        const int cc = C - c0 < g.c_chunk ? C - c0 : g.c_chunk;
        // All reads of the previous chunk (or tile) are done.
        if (c0 > 0 || k > 0) team.team_barrier();
        // Several tiles per team only with one chunk: the filters stay staged.
        stage(team, in_tile, w_tile, o, c0, cc, /*with_filters=*/k == 0);
        team.team_barrier();
        if (t < logical) {
          if constexpr (vector_loads) {
            accumulate_vec(acc, in_tile, w_tile, t, cc);
          } else {
            accumulate(acc, in_tile, w_tile, t, cc);
          }
        }
      }
      if constexpr (Pooling == TiledPooling::None) {
        if (t < logical) store_device(acc, o, t);
      } else if constexpr (tiled_register_window(Pooling) > 0) {
        if (t < logical) store_pooled_device(acc, o, t);
      } else {
        team.team_barrier();  // the staged operands are read: the block is the conv tile
        if (t < logical) store_conv_tile_device(acc, o, t, conv_tile);
        team.team_barrier();
        pool_conv_tile(team, o, conv_tile);
      }
    }
  }
};

}  // namespace kcnn::Impl
