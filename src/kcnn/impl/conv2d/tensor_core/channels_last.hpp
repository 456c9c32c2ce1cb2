// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/channels_last.hpp
/// \brief TensorCoreGemm's NCHW problems staged channels-last: x (and double's and 16-bit
///        channel runs' w) copied into the workspace in NHWC order, so that they run on
///        the NHWC kernel.
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
/// y is written in place, through its own strides, except on Hopper's TMA kernel
/// (16-bit channel runs), which stores whole NHWC tiles: it writes a packed NHWC copy of
/// y in the workspace, moved into y afterwards.
///
/// ChannelsLastCopy moves x(n, c, h, w) to out[((n H + h) W + w) C + c] in tiles of 32
/// channels x 32 pixels through team scratch: reads run along the pixels (NCHW's
/// contiguous dimension for packed x), writes along the channels. 16-bit tensors with
/// channels a multiple of 8 move by ChannelsLastTranspose16 instead, 16 bytes per access,
/// both ways (x in, y's copy out). ChannelsLastWeights
/// reorders double's w into the NHWC kernel's k order (r, s, c), so that its 16-byte A
/// copies apply; float's w is packed for the MMAs from any layout (packed_weights.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

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

/// 16-bit tensors between NCHW and packed NHWC, both ways, at the copy bandwidth: the x
/// copy of a staged NCHW call (ToChannelsLast) and the TMA kernel's NHWC result moved
/// into an NCHW y (ToChannelsFirst). ChannelsLastCopy moves 2 bytes per thread and access,
/// which left the 64-channel ResNet layer's bf16 copy at about a third of the copy
/// bandwidth (H100, session 26: x copy, TMA kernel and a y copy 0.213 ms against the
/// kernel's 0.088 ms alone). Here a team moves a tile of 64 channels x 64 pixels of one
/// image: the NHWC side 16 bytes (8 channels) per access, the NCHW side PixelVec pixels
/// per access (8 where the pixels of an image are contiguous and their count and the
/// tensor's strides are multiples of 8; 4, 2, else 1 through the NCHW strides).
///
/// Scratch holds the tile channel-major, [c][p], in 16-byte chunks of 8 pixels whose
/// order within a channel's 128-byte row is XOR-ed with c / 8: a warp's NHWC-side
/// accesses (4 pixels x 8 chunks of 8 channels, each thread 8 channels of one pixel)
/// then read or write 16 distinct banks with the pairs of a 4-byte word together, and
/// the NCHW side's chunks stay whole.
/// Needs C a multiple of 8 and the NHWC side packed and 16-byte aligned.
template <class T, class ExecSpace, int PixelVec, bool ToChannelsLast>
struct ChannelsLastTranspose16 {
  static_assert(sizeof(T) == 2, "ChannelsLastTranspose16 moves 16-bit elements");
  static_assert(PixelVec == 1 || PixelVec == 2 || PixelVec == 4 || PixelVec == 8,
                "PixelVec: pixels per NCHW-side access, a power of two up to a 16-byte chunk");
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int tile = 64;  ///< channels and pixels per team
  static constexpr int chunk = 8;  ///< elements per 16-byte access
  static constexpr int threads = 256;

  const T* src;
  T* dst;
  LogicalStrides nchw;  ///< the NCHW side's element strides (n, c, h, w)
  int C, HW;            ///< channels, pixels per image (within 32 bits: the launch checks)
  /// Team -> (image, tile of the image), tile -> (channel tile, pixel tile), and pixel ->
  /// (row, column) for PixelVec 1: 32-bit divisions by run-time constants as a multiply
  /// and a shift (64-bit divisions here had made the copy instruction-bound).
  FastDivmod32 per_image, pixel_tiles, width;

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return sizeof(T) * tile * tile;
  }
  /// Scratch element of channel c, pixel p (c a multiple of 8 plus i: + i * tile).
  KOKKOS_INLINE_FUNCTION static int slot(int c, int p) {
    return c * tile + ((((p >> 3) ^ (c >> 3)) & 7) << 3) + (p & 7);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    using Pixels = AlignedVec<T, PixelVec>;
    using Channels = AlignedVec<T, chunk>;
    T* const buffer = static_cast<T*>(team.team_scratch(0).get_shmem(scratch_bytes()));
    int n, in_image, channel_tile, pixel_tile;
    per_image(team.league_rank(), n, in_image);
    pixel_tiles(in_image, channel_tile, pixel_tile);
    const int c0 = channel_tile * tile, p0 = pixel_tile * tile;
    const int t = team.team_rank();
    // The team's corner on each side; the offsets below are from it.
    const std::int64_t nchw_corner = std::int64_t(n) * nchw.n + std::int64_t(c0) * nchw.c;
    const std::int64_t nhwc_corner = (std::int64_t(n) * HW + p0) * C + c0;
    // The NCHW side's offset of tile element (c, p).
    auto nchw_at = [&](int c, int p) {
      if constexpr (PixelVec > 1) {  // pixels contiguous (checked at the launch)
        return nchw_corner + std::int64_t(c) * nchw.c + (p0 + p);
      } else {
        int h, w;
        width(p0 + p, h, w);
        return nchw_corner + std::int64_t(c) * nchw.c + std::int64_t(h) * nchw.h +
               std::int64_t(w) * nchw.w;
      }
    };
    constexpr int row_vectors = tile / PixelVec;
    // NCHW side: consecutive threads along a channel's pixels.
    auto nchw_side = [&](auto&& move) {
      for (int id = t; id < tile * row_vectors; id += threads) {
        const int c = id / row_vectors, p = (id % row_vectors) * PixelVec;
        if (c0 + c < C && p0 + p < HW) move(c, p, nchw_at(c, p));
      }
    };
    // NHWC side: consecutive threads along a pixel's channels.
    auto nhwc_side = [&](auto&& move) {
      for (int id = t; id < tile * (tile / chunk); id += threads) {
        const int p = id / (tile / chunk), c = (id % (tile / chunk)) * chunk;
        if (c0 + c < C && p0 + p < HW) move(c, p, nhwc_corner + std::int64_t(p) * C + c);
      }
    };
    if constexpr (ToChannelsLast) {
      nchw_side([&](int c, int p, std::int64_t at) {
        *reinterpret_cast<Pixels*>(buffer + slot(c, p)) =
            *reinterpret_cast<const Pixels*>(src + at);
      });
      team.team_barrier();
      nhwc_side([&](int c, int p, std::int64_t at) {
        const T* const column = buffer + slot(c, p);
        Channels v;
        for (int i = 0; i < chunk; ++i)
          v.v[i] = column[i * tile];
        *reinterpret_cast<Channels*>(dst + at) = v;
      });
    } else {
      nhwc_side([&](int c, int p, std::int64_t at) {
        const Channels v = *reinterpret_cast<const Channels*>(src + at);
        T* const column = buffer + slot(c, p);
        for (int i = 0; i < chunk; ++i)
          column[i * tile] = v.v[i];
      });
      team.team_barrier();
      nchw_side([&](int c, int p, std::int64_t at) {
        *reinterpret_cast<Pixels*>(dst + at) =
            *reinterpret_cast<const Pixels*>(buffer + slot(c, p));
      });
    }
  }
};

/// The pixels per NCHW-side access of ChannelsLastTranspose16 for an NCHW tensor at
/// `data` with strides `s` and H x W images: the largest of 8, 4, 2 that divides the
/// pixel count, the channel and image strides and the address, where an image's pixels
/// are contiguous; else 1.
template <class T>
int channels_last_pixel_vector(const T* data, const LogicalStrides& s, std::int64_t H,
                               std::int64_t W) {
  if (s.w != 1 || s.h != W) return 1;
  for (int v = 8; v > 1; v /= 2)
    if ((H * W) % v == 0 && s.c % v == 0 && s.n % v == 0 &&
        reinterpret_cast<std::uintptr_t>(data) % (sizeof(T) * v) == 0)
      return v;
  return 1;
}

/// Whether ChannelsLastTranspose16 takes N images of C channels and H x W pixels: C a
/// multiple of 8, C and H * W within 32 bits and a team count that fits a launch.
inline bool channels_last_transpose16_fits(std::int64_t N, std::int64_t C, std::int64_t H,
                                           std::int64_t W) {
  constexpr std::int64_t tile = 64, int_max = std::numeric_limits<int>::max();
  return C % 8 == 0 && C <= int_max && H * W <= int_max &&
         N * ((C + tile - 1) / tile) * ((H * W + tile - 1) / tile) <= int_max;
}

/// Enqueues ChannelsLastTranspose16 on `space`: `src` NCHW with strides `s` to packed
/// NHWC `dst` (ToChannelsLast), or packed NHWC `src` to NCHW `dst` with strides `s`. N
/// images of C channels and H x W pixels (channels_last_transpose16_fits); the NHWC side
/// 16-byte aligned.
template <bool ToChannelsLast, class ExecSpace, class T>
void channels_last_transpose16(const ExecSpace& space, const T* src, T* dst,
                               const LogicalStrides& s, std::int64_t N, std::int64_t C,
                               std::int64_t H, std::int64_t W) {
  const T* const nchw = ToChannelsLast ? src : dst;
  const int vec = channels_last_pixel_vector(nchw, s, H, W);
  auto launch = [&](auto pixel_vec) {
    using Copy = ChannelsLastTranspose16<T, ExecSpace, decltype(pixel_vec)::value, ToChannelsLast>;
    constexpr std::int64_t tile = Copy::tile;
    const std::int64_t channel_tiles = (C + tile - 1) / tile;
    const std::int64_t pixel_tiles = (H * W + tile - 1) / tile;
    const Copy copy{src,
                    dst,
                    s,
                    static_cast<int>(C),
                    static_cast<int>(H * W),
                    FastDivmod32(channel_tiles * pixel_tiles),
                    FastDivmod32(pixel_tiles),
                    FastDivmod32(W)};
    Kokkos::parallel_for(
        ToChannelsLast ? "kcnn::conv2d::channels_last" : "kcnn::conv2d::channels_first",
        Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(N * channel_tiles * pixel_tiles),
                                      Copy::threads)
            .set_scratch_size(0, Kokkos::PerTeam(Copy::scratch_bytes())),
        copy);
  };
  switch (vec) {
    case 8:
      return launch(std::integral_constant<int, 8>{});
    case 4:
      return launch(std::integral_constant<int, 4>{});
    case 2:
      return launch(std::integral_constant<int, 2>{});
    default:
      return launch(std::integral_constant<int, 1>{});
  }
}

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
