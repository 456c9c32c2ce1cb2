// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/channels_last.hpp
/// \brief TensorCoreGemm's NCHW problems staged channels-last: x (and double's w) copied
///        into the workspace in NHWC order, so that they run on the NHWC kernel.
///
/// Why: in NCHW the GEMM's k runs over a pixel's taps, which lie H*W elements apart for
/// consecutive channels, so the NCHW kernel gathers x one element per copy (a warp copies
/// 8 pixels x 4 taps). In NHWC a tap's channels are contiguous: 16-byte copies, a quarter
/// of the instructions. Copying x once costs a read and a write of it, which the main
/// loop more than repays on 3x3 layers (H100, session 14, ResNet 3x3 NCHW, TensorCoreGemm
/// alone, two calls: the NCHW kernel TF32 64 / 128 / 256 channels 0.393 / 0.286 / 0.315 ms,
/// double 128 channels 0.692; staged 0.320 / 0.215 / 0.208 and 0.479, and in the staged
/// run's call the same layers in NHWC, with no copy: 0.217 / 0.162 / 0.166), not on 1x1
/// layers (launch.hpp, tensor_core_stages_channels_last: measured in one call).
/// y is written in place, through its own strides.
///
/// ChannelsLastCopy moves x(n, c, h, w) to out[((n H + h) W + w) C + c] in tiles of 32
/// channels x 32 pixels through team scratch: reads run along the pixels (NCHW's
/// contiguous dimension for packed x), writes along the channels. ChannelsLastWeights
/// reorders double's w into the NHWC kernel's k order (r, s, c), so that its 16-byte A
/// copies apply; float's w is packed for the MMAs from any layout (packed_weights.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "../../common/index_math.hpp"
#include "../../common/tensor_access.hpp"

namespace kcnn::Impl {

template <class T, class ExecSpace>
struct ChannelsLastCopy {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int tile = 32;          ///< channels and pixels per team
  static constexpr int rows_per_pass = 8;  ///< threads = tile * rows_per_pass
  static constexpr int threads = tile * rows_per_pass;
  static constexpr int pitch = tile + 1;  ///< scratch row pitch: conflict-free transposed reads

  const T* x;
  LogicalStrides xs;
  T* out;
  std::int64_t C, H, W;
  std::int64_t channel_tiles, pixel_tiles;

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return sizeof(T) * tile * pitch;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t teams_per_image() const {
    return channel_tiles * pixel_tiles;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    T* const buffer = static_cast<T*>(team.team_scratch(0).get_shmem(scratch_bytes()));
    const std::int64_t rank = team.league_rank();
    const std::int64_t n = rank / teams_per_image();
    const std::int64_t in_image = rank - n * teams_per_image();
    const std::int64_t c0 = (in_image / pixel_tiles) * tile;
    const std::int64_t p0 = (in_image % pixel_tiles) * tile;
    const int t = team.team_rank(), lane = t % tile, row = t / tile;
    const std::int64_t HW = H * W;
    {  // read: lane = pixel, row = channel
      const std::int64_t p = p0 + lane;
      const std::int64_t h = p / W, w = p - h * W;
      for (int i = row; i < tile; i += rows_per_pass) {
        const std::int64_t c = c0 + i;
        if (p < HW && c < C)
          buffer[i * pitch + lane] = x[n * xs.n + c * xs.c + h * xs.h + w * xs.w];
      }
    }
    team.team_barrier();
    // write: lane = channel, row = pixel
    for (int i = row; i < tile; i += rows_per_pass) {
      const std::int64_t p = p0 + i, c = c0 + lane;
      if (p < HW && c < C) out[(n * HW + p) * C + c] = buffer[lane * pitch + i];
    }
  }
};

/// out[m K + (r S + s) C + c] = w(m, c, r, s): the NHWC kernel's k order.
template <class T>
struct ChannelsLastWeights {
  const T* w;
  LogicalStrides ws;
  T* out;
  std::int64_t C, R, S;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const std::int64_t K = C * R * S;
    const std::int64_t m = i / K, k = i - m * K;
    const std::int64_t rs = k / C, c = k - rs * C;
    const std::int64_t r = rs / S, s = rs - r * S;
    out[i] = w[ws.offset(m, c, r, s)];
  }
};

}  // namespace kcnn::Impl
