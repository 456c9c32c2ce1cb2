// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/epilogue.hpp
/// \brief ConvAlgo::Tiled, last phase: bias, activation and the stores of a micro-tile
///        into y, or with a fused pooling into the conv tile (then pooled from there)
///        or pooled in registers (TiledDeviceEpilogue: GPUs; TiledHostEpilogue: CPUs,
///        with the partial sums of the multi-chunk path).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/macros.hpp"
#include "../../common/tensor_access.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../epilogue/pool_window.hpp"
#include "kernel_base.hpp"

namespace kcnn::Impl {

/// GPU epilogue, a mixin over TiledKernelBase (see kernel_base.hpp).
template <class Base>
struct TiledDeviceEpilogue : Base {
  using Base::BH;
  using Base::bias;
  using Base::BM;
  using Base::BW;
  using Base::conv_tile_offset;
  using Base::conv_tile_plane;
  using Base::g;
  using Base::L;
  using Base::micro_origin;
  using Base::pb;
  using Base::Pooling;
  using Base::y;
  using typename Base::accumulator;
  using typename Base::member_type;
  using typename Base::scalar;
  using typename Base::TileOrigin;
  using typename Base::Vec4;

  /// GPU: bias + activation of the micro-tile into the conv tile (accumulators: the
  /// pooling reads unrounded values), with compile-time indices into acc only (see
  /// store_device).
  KOKKOS_FORCEINLINE_FUNCTION void store_conv_tile_device(const accumulator (&acc)[BM][BH][BW],
                                                          const TileOrigin& o, int t,
                                                          accumulator* conv_tile) const {
    with_activation(pb.activation, [&](auto act) {
      store_conv_tile_device_as<decltype(act)::value>(acc, o, t, conv_tile);
    });
  }
  template <Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_conv_tile_device_as(const accumulator (&acc)[BM][BH][BW],
                                                             const TileOrigin& o, int t,
                                                             accumulator* conv_tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    accumulator* dst = conv_tile + conv_tile_offset(o, m_first, p_first, q_first);
    const int plane = conv_tile_plane();
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm) {
      const int m = m_first + bm;
      const accumulator b = m < pb.M && pb.has_bias ? to_compute(bias(m)) : accumulator(0);
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh)
        KCNN_DEVICE_UNROLL
      for (int bw = 0; bw < BW; ++bw)
        dst[bm * plane + bh * g.tile_q + bw] = apply_activation(Act, acc[bm][bh][bw] + b);
    }
  }

  /// GPU, TiledPooling::Registers2x2 / Registers4x4: bias + activation, then each
  /// window of the micro-tile reduced in registers (PoolReduce), the pooling's
  /// activation, and the stores (vector runs as in store_device). Windows taller than
  /// the micro-tile (4x4 with BH = 2) combine the halves of two vertically adjacent
  /// threads; the upper one stores.
  KOKKOS_FORCEINLINE_FUNCTION void store_pooled_device(const accumulator (&acc)[BM][BH][BW],
                                                       const TileOrigin& o, int t) const {
    with_activation(pb.activation, [&](auto act) {
      constexpr Activation Act = decltype(act)::value;
      if (pb.pool.mode == PoolMode::Max) {
        store_pooled_device<PoolMode::Max, Act>(acc, o, t);
      } else {
        store_pooled_device<PoolMode::Average, Act>(acc, o, t);
      }
    });
  }
  template <PoolMode Mode, Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_pooled_device(const accumulator (&acc)[BM][BH][BW],
                                                       const TileOrigin& o, int t) const {
    using Op = PoolReduce<Mode, accumulator>;
    constexpr int Win = tiled_register_window(Pooling);
    constexpr bool kPair = BH < Win;  // the window's lower half: the thread below
    static_assert(BW % Win == 0 && (BH % Win == 0 || 2 * BH == Win),
                  "register pooling: whole windows in the micro-tile or in a thread pair");
    constexpr int PH = kPair ? 1 : BH / Win, PW = BW / Win, rows = kPair ? BH : Win;
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    // The conv tile starts on a window (no pooling padding), so these are exact.
    const int pp_first = p_first / Win, pq_first = q_first / Win;
    const int m_valid = static_cast<int>(pb.M - m_first);
    const int pq_valid = static_cast<int>(pb.Q_pooled - pq_first);
    accumulator pooled[BM][PH][PW];
    KCNN_DEVICE_UNROLL
    for (int bm = 0; bm < BM; ++bm) {
      const accumulator b =
          bm < m_valid && pb.has_bias ? to_compute(bias(m_first + bm)) : accumulator(0);
      KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw) {
        accumulator v = Op::init();
        KCNN_DEVICE_UNROLL
        for (int dh = 0; dh < rows; ++dh)
          KCNN_DEVICE_UNROLL
        for (int dw = 0; dw < Win; ++dw)
          v = Op::add(v, apply_activation(Act, acc[bm][rows * ph + dh][Win * pw + dw] + b));
        if constexpr (kPair) v = Op::add(v, warp_shuffle_down(v, g.threads_q));
        pooled[bm][ph][pw] = Op::finish(v, Win * Win);
      }
    }
    // Pairs: the lower thread (odd row of threads) has nothing to store.
    if (kPair && (t / g.threads_q) % 2 != 0) return;
    with_activation(pb.pool.activation, [&](auto pool_act) {
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw)
        pooled[bm][ph][pw] = pool_output(decltype(pool_act)::value, pooled[bm][ph][pw]);
    });
    const auto run_stride = static_cast<std::int64_t>(y.stride(3));  // q (NCHW) or m (NHWC)
    if constexpr (L == Layout::NCHW) {
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph) {
        const int pp = pp_first + ph;
        if (bm < m_valid && pp < pb.P_pooled && pq_valid > 0)
          store_run<PW>(&at<L>(y, o.n, m_first + bm, pp, pq_first), run_stride, pooled[bm][ph],
                        pq_valid);
      }
    } else {
      KCNN_DEVICE_UNROLL
      for (int ph = 0; ph < PH; ++ph)
        KCNN_DEVICE_UNROLL
      for (int pw = 0; pw < PW; ++pw) {
        accumulator column[BM];
        KCNN_DEVICE_UNROLL
        for (int bm = 0; bm < BM; ++bm)
          column[bm] = pooled[bm][ph][pw];
        const int pp = pp_first + ph, pq = pq_first + pw;
        if (pp < pb.P_pooled && pq < pb.Q_pooled && m_valid > 0)
          store_run<BM>(&at<L>(y, o.n, m_first, pp, pq), run_stride, column, m_valid);
      }
    }
  }

  /// The team's pooled outputs from its conv tile, into y. Threads take consecutive
  /// pooled columns (NCHW) or channels (NHWC): y's contiguous dimension.
  KOKKOS_INLINE_FUNCTION void pool_conv_tile(const member_type& team, const TileOrigin& o,
                                             const accumulator* conv_tile) const {
    const int count = g.tile_m * g.pool_p * g.pool_q;
    for (int e = team.team_rank(); e < count; e += team.team_size()) {
      int ml, pl, ql;
      if constexpr (L == Layout::NCHW) {
        ql = e % g.pool_q;
        pl = (e / g.pool_q) % g.pool_p;
        ml = e / (g.pool_q * g.pool_p);
      } else {
        ml = e % g.tile_m;
        ql = (e / g.tile_m) % g.pool_q;
        pl = e / (g.tile_m * g.pool_q);
      }
      const int m = o.m0 + ml, pp = o.pp0 + pl, pq = o.pq0 + ql;
      if (m >= pb.M || pp >= pb.P_pooled || pq >= pb.Q_pooled) continue;
      const PoolWindow<int> win =
          pool_window(pb.pool, static_cast<int>(pb.P), static_cast<int>(pb.Q), pp, pq);
      const accumulator* plane = conv_tile + ml * conv_tile_plane();
      const accumulator v = pool_reduce_dynamic<accumulator>(pb.pool.mode, win, [&](int h, int w) {
        return plane[(h - o.p0) * g.tile_q + (w - o.q0)];
      });
      at<L>(y, o.n, m, pp, pq) = from_compute<scalar>(pool_output(pb.pool.activation, v));
    }
  }

  struct alignas(8) Vec2 {
    scalar v[2];
  };

  /// Stores `Count` outputs (accumulators, rounded once here) that are `stride` elements
  /// apart in y, starting at dst, up to `valid` of them: with vector stores when all are
  /// in range, they are adjacent (stride 1, LayoutRight) and dst is aligned (float: 16 or
  /// 8 bytes; 16-bit types: 4 elements in 8 bytes), else one by one. A warp's lanes then
  /// write whole 32-byte sectors instead of every 4th element of them.
  template <int Count>
  KOKKOS_FORCEINLINE_FUNCTION static void store_run(scalar* dst, std::int64_t stride,
                                                    const accumulator (&out)[Count], int valid) {
    if constexpr (sizeof(scalar) == 2 && Count % 4 == 0) {
      if (stride == 1 && valid >= Count && reinterpret_cast<std::uintptr_t>(dst) % 8 == 0) {
        KCNN_DEVICE_UNROLL
        for (int v = 0; v < Count / 4; ++v)
          reinterpret_cast<Vec4*>(dst)[v] =
              Vec4{{from_compute<scalar>(out[4 * v]), from_compute<scalar>(out[4 * v + 1]),
                    from_compute<scalar>(out[4 * v + 2]), from_compute<scalar>(out[4 * v + 3])}};
        return;
      }
    }
    if constexpr (vector_elements_v<scalar> == 4 && Count % 2 == 0) {
      if (stride == 1 && valid >= Count) {
        const auto addr = reinterpret_cast<std::uintptr_t>(dst);
        if constexpr (Count % 4 == 0) {
          if (addr % 16 == 0) {
            KCNN_DEVICE_UNROLL
            for (int v = 0; v < Count / 4; ++v)
              reinterpret_cast<Vec4*>(dst)[v] =
                  Vec4{{out[4 * v], out[4 * v + 1], out[4 * v + 2], out[4 * v + 3]}};
            return;
          }
        }
        if (addr % 8 == 0) {
          KCNN_DEVICE_UNROLL
          for (int v = 0; v < Count / 2; ++v)
            reinterpret_cast<Vec2*>(dst)[v] = Vec2{{out[2 * v], out[2 * v + 1]}};
          return;
        }
      }
    }
    KCNN_DEVICE_UNROLL
    for (int i = 0; i < Count; ++i)
      if (i < valid) dst[i * stride] = from_compute<scalar>(out[i]);
  }

  /// GPU store: every loop has a compile-time trip count and indexes the micro-tile
  /// with constants only, so the accumulators stay in registers (a loop with an early
  /// exit or a pointer to a row of them sends the whole array to local memory). NCHW
  /// stores runs of BW columns, NHWC runs of BM channels (store_run): y's last index.
  KOKKOS_FORCEINLINE_FUNCTION void store_device(const accumulator (&acc)[BM][BH][BW],
                                                const TileOrigin& o, int t) const {
    with_activation(pb.activation,
                    [&](auto act) { store_device_as<decltype(act)::value>(acc, o, t); });
  }
  template <Activation Act>
  KOKKOS_FORCEINLINE_FUNCTION void store_device_as(const accumulator (&acc)[BM][BH][BW],
                                                   const TileOrigin& o, int t) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    const auto run_stride = static_cast<std::int64_t>(y.stride(3));  // q (NCHW) or m (NHWC)
    if constexpr (L == Layout::NCHW) {
      const int q_valid = static_cast<int>(pb.Q - q_first);
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm) {
        const int m = m_first + bm;
        const bool m_ok = m < pb.M;
        const accumulator b = m_ok && pb.has_bias ? to_compute(bias(m)) : accumulator(0);
        KCNN_DEVICE_UNROLL
        for (int bh = 0; bh < BH; ++bh) {
          const int p = p_first + bh;
          accumulator out[BW];
          KCNN_DEVICE_UNROLL
          for (int bw = 0; bw < BW; ++bw)
            out[bw] = apply_activation(Act, acc[bm][bh][bw] + b);
          if (m_ok && p < pb.P && q_valid > 0)
            store_run<BW>(&at<L>(y, o.n, m, p, q_first), run_stride, out, q_valid);
        }
      }
    } else {
      const int m_valid = static_cast<int>(pb.M - m_first);
      accumulator b[BM];
      KCNN_DEVICE_UNROLL
      for (int bm = 0; bm < BM; ++bm)
        b[bm] = bm < m_valid && pb.has_bias ? to_compute(bias(m_first + bm)) : accumulator(0);
      KCNN_DEVICE_UNROLL
      for (int bh = 0; bh < BH; ++bh) {
        const int p = p_first + bh;
        KCNN_DEVICE_UNROLL
        for (int bw = 0; bw < BW; ++bw) {
          const int q = q_first + bw;
          accumulator out[BM];
          KCNN_DEVICE_UNROLL
          for (int bm = 0; bm < BM; ++bm)
            out[bm] = apply_activation(Act, acc[bm][bh][bw] + b[bm]);
          if (p < pb.P && q < pb.Q && m_valid > 0)
            store_run<BM>(&at<L>(y, o.n, m_first, p, q), run_stride, out, m_valid);
        }
      }
    }
  }
};

/// CPU epilogue, a mixin over TiledKernelBase (see kernel_base.hpp).
template <class Base>
struct TiledHostEpilogue : Base {
  using Base::BH;
  using Base::bias;
  using Base::BM;
  using Base::BW;
  using Base::conv_tile_offset;
  using Base::conv_tile_plane;
  using Base::g;
  using Base::L;
  using Base::micro_origin;
  using Base::pb;
  using Base::Pooled;
  using Base::y;
  using typename Base::accumulator;
  using typename Base::member_type;
  using typename Base::scalar;
  using typename Base::TileOrigin;

  /// Stores the micro-tile (host): with `final`, bias and activation applied;
  /// otherwise the raw partial sums (multi-chunk path). Into y, masked at the problem's
  /// edges, or whole into the team's tile (`tile`: a fused pooling's conv tile, or the
  /// float partial sums of kFloatPartials, which the last chunk stores to y).
  KOKKOS_INLINE_FUNCTION void store(const accumulator (&acc)[BM][BH][BW], const TileOrigin& o,
                                    int t, bool final, accumulator* tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    const Activation activation = final ? pb.activation : Activation::Identity;
    if (tile && (Pooled || !final)) {
      accumulator* dst = tile + conv_tile_offset(o, m_first, p_first, q_first);
      for (int bm = 0; bm < BM; ++bm) {
        const int m = m_first + bm;
        const accumulator b =
            final && pb.has_bias && m < pb.M ? to_compute(bias(m)) : accumulator(0);
        for (int bh = 0; bh < BH; ++bh)
          bias_activation_row<BW>(activation, acc[bm][bh], b,
                                  dst + bm * conv_tile_plane() + bh * g.tile_q);
      }
      return;
    }
    const int q_count = static_cast<int>(pb.Q - q_first < BW ? pb.Q - q_first : BW);
    for (int bm = 0; bm < BM; ++bm) {
      const int m = m_first + bm;
      if (m >= pb.M) break;
      const accumulator b = final && pb.has_bias ? to_compute(bias(m)) : accumulator(0);
      for (int bh = 0; bh < BH; ++bh) {
        const int p = p_first + bh;
        if (p >= pb.P) break;
        // Epilogue on the whole row first (vectorizes), then the masked store.
        accumulator out[BW];
        bias_activation_row<BW>(activation, acc[bm][bh], b, out);
        KCNN_HOST_SIMD
        for (int bw = 0; bw < q_count; ++bw)
          at<L>(y, o.n, m, p, q_first + bw) = from_compute<scalar>(out[bw]);
      }
    }
  }

  /// The team's pooled outputs from its conv tile, into y (one thread per team).
  KOKKOS_INLINE_FUNCTION void pool_conv_tile(const member_type& /*team*/, const TileOrigin& o,
                                             accumulator* conv_tile) const {
    // One thread per team: nested loops without index divisions, vectorized across a
    // row of windows (see pool_conv_tile_host).
    if (pb.pool.mode == PoolMode::Max) {
      pool_conv_tile_host<PoolMode::Max>(o, conv_tile);
    } else {
      pool_conv_tile_host<PoolMode::Average>(o, conv_tile);
    }
  }

  /// pool_conv_tile for CPUs (one thread per team), with the mode at compile time.
  template <PoolMode Mode>
  KOKKOS_INLINE_FUNCTION void pool_conv_tile_host(const TileOrigin& o,
                                                  accumulator* conv_tile) const {
    using Op = PoolReduce<Mode, accumulator>;
    const Pool2dParams& pool = pb.pool;
    const int P = static_cast<int>(pb.P), Q = static_cast<int>(pb.Q);
    const auto at_most = [](std::int64_t a, std::int64_t b) {
      return static_cast<int>(a < b ? a : b);
    };
    const int m_count = at_most(g.tile_m, pb.M - o.m0);
    const int p_count = at_most(g.pool_p, pb.P_pooled - o.pp0);
    const int q_count = at_most(g.pool_q, pb.Q_pooled - o.pq0);
    if (pool.pad_h == 0 && pool.pad_w == 0) {
      // Windows without padding never leave the conv output (floor mode), overlapping or
      // not: no clipping, the full divisor, fixed offsets. Per row of pooled outputs, the
      // windows' rows are reduced first along the contiguous conv row, then each window's
      // columns, a window cell at a time across the row: every loop vectorizes, and Max
      // becomes compare-and-blend. (Window by window, the maximum was a scalar compare and
      // branch per cell, mispredicted on real data: LeNet C1 + ReLU + 2x2 max, batch 1,000,
      // 2 cores, 101 -> 52 ms, the convolution alone 46-54 ms.)
      const int wh = pool.window_h, ww = pool.window_w, sh = pool.stride_h, sw = pool.stride_w;
      const auto y_step = static_cast<std::int64_t>(L == Layout::NCHW ? y.stride(3) : y.stride(2));
      const int cols = (q_count - 1) * sw + ww;  // conv columns the row's windows read
      accumulator* const rows_reduced = conv_tile + g.conv_tile_elems();
      accumulator* const pooled = rows_reduced + g.tile_q;
      for (int ml = 0; ml < m_count; ++ml) {
        const accumulator* plane = conv_tile + ml * conv_tile_plane();
        for (int pl = 0; pl < p_count; ++pl) {
          const int pp = o.pp0 + pl;
          const accumulator* first = plane + (pp * sh - o.p0) * g.tile_q + (o.pq0 * sw - o.q0);
          KCNN_HOST_SIMD
          for (int c = 0; c < cols; ++c)
            rows_reduced[c] = Op::init();
          for (int dh = 0; dh < wh; ++dh) {
            const accumulator* row = first + dh * g.tile_q;
            KCNN_HOST_SIMD
            for (int c = 0; c < cols; ++c)
              rows_reduced[c] = Op::add(rows_reduced[c], row[c]);
          }
          KCNN_HOST_SIMD
          for (int ql = 0; ql < q_count; ++ql)
            pooled[ql] = Op::init();
          for (int dw = 0; dw < ww; ++dw) {
            KCNN_HOST_SIMD
            for (int ql = 0; ql < q_count; ++ql)
              pooled[ql] = Op::add(pooled[ql], rows_reduced[ql * sw + dw]);
          }
          KCNN_HOST_SIMD
          for (int ql = 0; ql < q_count; ++ql)
            pooled[ql] = pool_output(pool.activation, Op::finish(pooled[ql], wh * ww));
          scalar* out = &at<L>(y, o.n, o.m0 + ml, pp, o.pq0);
          for (int ql = 0; ql < q_count; ++ql)
            out[ql * y_step] = from_compute<scalar>(pooled[ql]);
        }
      }
      return;
    }
    // Any other window: clipped by pool_window, reduced by pool_reduce (the definitions
    // pool2d_forward uses).
    for (int ml = 0; ml < m_count; ++ml) {
      const accumulator* plane = conv_tile + ml * conv_tile_plane();
      for (int pl = 0; pl < p_count; ++pl)
        for (int ql = 0; ql < q_count; ++ql) {
          const int pp = o.pp0 + pl, pq = o.pq0 + ql;
          const PoolWindow<int> win = pool_window(pool, P, Q, pp, pq);
          const accumulator v = pool_reduce<Mode, accumulator>(
              win, [&](int h, int w) { return plane[(h - o.p0) * g.tile_q + (w - o.q0)]; });
          at<L>(y, o.n, o.m0 + ml, pp, pq) = from_compute<scalar>(pool_output(pool.activation, v));
        }
    }
  }

  /// Reloads partial sums stored by a previous chunk (host multi-chunk path): from y,
  /// or from the team's tile (see store).
  KOKKOS_INLINE_FUNCTION void load_partial(accumulator (&acc)[BM][BH][BW], const TileOrigin& o,
                                           int t, const accumulator* conv_tile) const {
    int m_first, p_first, q_first;
    micro_origin(o, t, m_first, p_first, q_first);
    for (int bm = 0; bm < BM; ++bm)
      for (int bh = 0; bh < BH; ++bh)
        for (int bw = 0; bw < BW; ++bw) {
          const int m = m_first + bm, p = p_first + bh, q = q_first + bw;
          if (conv_tile) {
            acc[bm][bh][bw] = conv_tile[conv_tile_offset(o, m, p, q)];
          } else {
            acc[bm][bh][bw] = (m < pb.M && p < pb.P && q < pb.Q)
                                  ? to_compute(at<L>(y, o.n, m, p, q))
                                  : accumulator(0);
          }
        }
  }
};

}  // namespace kcnn::Impl
