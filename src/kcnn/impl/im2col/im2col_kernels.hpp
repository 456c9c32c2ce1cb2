// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/im2col/im2col_kernels.hpp
/// \brief The im2col and col2im kernels, one GPU-shaped and one host-shaped variant per
///        layout, all on raw pointers with 64-bit addresses and all indexing through
///        UnrollMap / UnrolledStorage (impl/common/unroll_map.hpp).
///
/// GPU variants: consecutive threads write consecutive addresses of the unrolled matrix
/// (coalesced); each thread decomposes its index once and then walks several taps with
/// pointer increments, so the few divisions are amortized. Bounds tests are one
/// unsigned compare per row/column and select a zero instead of branching around the
/// store. Thread indices are 32-bit when the launch provably fits (divisions in 32 bits
/// are several times cheaper on GPUs), 64-bit otherwise.
///
/// Host variants: each work item owns whole rows of the output; the valid range of
/// every row is computed up front (UnrollMap::valid_q/valid_s), so the inner loops are
/// branch-free zero-fill / copy loops over contiguous memory that the compiler
/// vectorizes.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../arch/device_traits.hpp"
#include "../arch/macros.hpp"
#include "../common/host_loops.hpp"
#include "../common/index_math.hpp"
#include "../common/tensor_access.hpp"
#include "../common/unroll_map.hpp"

namespace kcnn::Impl {

/// Which kernel variant a launch takes. Auto: the host-shaped kernels on host spaces,
/// the GPU-shaped ones on other spaces, with 32-bit thread indices where they provably
/// fit. Device32 / Device64 force the GPU-shaped kernels (on any space, so that the
/// host tests cover them too) with 32-bit (where they fit) or 64-bit indices.
enum class KernelVariant { Auto, Device32, Device64 };

// ---------------------------------------------------------------------------------
// im2col, GPU-shaped
// ---------------------------------------------------------------------------------

/// NCHW: one thread per (channel c, pixel j); it writes the R*S taps of that channel
/// for its pixel, one unrolled row apart. Thread t -> (c, j) with j fastest, so a warp
/// stores 32 consecutive columns of one row and reads (for stride 1) 32 consecutive
/// input columns.
template <class I, class T>
struct Im2colNchwDevice {
  UnrollMap<Layout::NCHW> map;
  const T* x;
  LogicalStrides xs;
  T* cols;
  UnrolledStorage cs;
  I j0, count;

  KOKKOS_INLINE_FUNCTION void operator()(const I t) const {
    const I c = t / count;
    const I j = j0 + (t - c * count);
    const Pixel<I> px = map.decompose_pixel(j);
    const std::int64_t n = px.n, p = px.p, q = px.q;
    const std::int64_t h0 = map.input_h(p, 0), w0 = map.input_w(q, 0);
    const std::int64_t x_nc = n * xs.n + std::int64_t(c) * xs.c;
    std::int64_t dst = cs.offset(std::int64_t(c) * map.k_stride_c(), n, p * map.Q + q);
    for (std::int64_t r = 0; r < map.R; ++r) {
      const std::int64_t h = h0 + r * map.dilation_h;
      const bool h_in = map.row_inside(h);
      const std::int64_t x_row = x_nc + h * xs.h;
      for (std::int64_t s = 0; s < map.S; ++s) {
        const std::int64_t w = w0 + s * map.dilation_w;
        cols[dst] = (h_in && map.col_inside(w)) ? x[x_row + w * xs.w] : T(0);
        dst += cs.k_stride;
      }
    }
  }
};

/// NHWC: one thread per (pixel j, lane v) where the lanes cover the channels (C >= 32:
/// v = c, the thread loops over r and s) or, for few channels, the contiguous run of
/// (s, c) (v = s*C + c, the thread loops over r). Thread t -> (j, v) with v fastest,
/// so a warp stores consecutive addresses of one unrolled row and reads consecutive
/// channels (and, with dilation 1, consecutive (w, c)) of the input.
template <class I, class T>
struct Im2colNhwcDevice {
  UnrollMap<Layout::NHWC> map;
  const T* x;
  LogicalStrides xs;
  T* cols;
  UnrolledStorage cs;
  I j0, count;
  I lanes;      ///< C, or S*C when fold_s
  bool fold_s;  ///< lanes cover (s, c) rather than c alone

  KOKKOS_INLINE_FUNCTION void operator()(const I t) const {
    const I jl = t / lanes;
    const I v = t - jl * lanes;
    I c = v, s_first = 0;
    if (fold_s) {
      s_first = v / static_cast<I>(map.C);
      c = v - s_first * static_cast<I>(map.C);
    }
    const std::int64_t s_begin = s_first, s_end = fold_s ? s_begin + 1 : map.S;
    const Pixel<I> px = map.decompose_pixel(static_cast<I>(j0 + jl));
    const std::int64_t n = px.n, p = px.p, q = px.q;
    const std::int64_t h0 = map.input_h(p, 0), w0 = map.input_w(q, 0);
    const std::int64_t x_nc = n * xs.n + std::int64_t(c) * xs.c;
    const std::int64_t dst_c = cs.offset(c, n, p * map.Q + q);
    const std::int64_t k_s = map.k_stride_s() * cs.k_stride;
    for (std::int64_t r = 0; r < map.R; ++r) {
      const std::int64_t h = h0 + r * map.dilation_h;
      const bool h_in = map.row_inside(h);
      const std::int64_t x_row = x_nc + h * xs.h;
      std::int64_t dst = dst_c + (r * map.k_stride_r() + s_begin * map.k_stride_s()) * cs.k_stride;
      for (std::int64_t s = s_begin; s < s_end; ++s) {
        const std::int64_t w = w0 + s * map.dilation_w;
        cols[dst] = (h_in && map.col_inside(w)) ? x[x_row + w * xs.w] : T(0);
        dst += k_s;
      }
    }
  }
};

// ---------------------------------------------------------------------------------
// im2col, host-shaped
// ---------------------------------------------------------------------------------

/// NCHW: a work item is one tap k and a block of output rows (n, p); for each row it
/// zero-fills the padding columns and copies the valid run of the input row (stride
/// step stride_w) into the unrolled row. The unrolled matrix's pq_stride is 1.
template <class T>
struct Im2colNchwHost {
  UnrollMap<Layout::NCHW> map;
  const T* x;
  LogicalStrides xs;
  T* cols;
  UnrolledStorage cs;
  std::int64_t j0, count;
  std::int64_t row_first, rows, rows_per_item, items_per_k;

  KCNN_HOST_ALIGN_HOT void operator()(const std::int64_t item) const {
    const std::int64_t k = item / items_per_k;
    const std::int64_t g_begin = row_first + (item - k * items_per_k) * rows_per_item;
    const std::int64_t g_end = std::min(row_first + rows, g_begin + rows_per_item);
    const std::int64_t n = g_begin / map.P;
    unroll_rows<true>(k, map.decompose_k(k), g_begin, g_end, n, g_begin - n * map.P);
  }

  /// Tap k = (c, r, s) over output rows [g_begin, g_end), the first of them (n, p): the
  /// work item without its divisions, for callers that carry the tap and the row (the
  /// ImplicitGemm host kernel unrolls every tap of one pixel range). FullRowsOutOfLine:
  /// whether contiguous runs of full rows go through a call (full_rows_out_of_line says
  /// why).
  template <bool FullRowsOutOfLine, class I>
  KCNN_HOST_FORCEINLINE void unroll_rows(const std::int64_t k, const Tap<I>& tap,
                                         const std::int64_t g_begin, const std::int64_t g_end,
                                         std::int64_t n, std::int64_t p) const {
    const std::int64_t dh = map.row_offset(tap.r), dw = map.col_offset(tap.s);
    const IndexRange valid = map.valid_q(tap.s);
    const std::int64_t step = map.stride_w * xs.w, Q = map.Q;
    const T* x_c = x + std::int64_t(tap.c) * xs.c;
    // Columns [qa, qb) of output row (n, p): zeros, the valid run, zeros.
    auto row = [&](std::int64_t n, std::int64_t p, std::int64_t qa, std::int64_t qb, T* dst) {
      const std::int64_t h = p * map.stride_h + dh;
      if (!map.row_inside(h)) {
        host_zero(dst, qb - qa);
        return;
      }
      const std::int64_t lo = std::clamp(valid.begin, qa, qb);
      const std::int64_t hi = std::clamp(valid.end, lo, qb);
      host_zero(dst, lo - qa);
      if (hi > lo)
        host_copy_strided(dst + (lo - qa),
                          x_c + (n * xs.n + h * xs.h + (lo * map.stride_w + dw) * xs.w), hi - lo,
                          step);
      host_zero(dst + (hi - qa), qb - hi);
    };
    for (std::int64_t g = g_begin; g < g_end;) {
      // The part of output row g inside the pixel range [j0, j0 + count): only the
      // chunk's first and last rows are partial.
      const std::int64_t qa = std::max<std::int64_t>(0, j0 - g * Q);
      const std::int64_t qb = std::min<std::int64_t>(Q, j0 + count - g * Q);
      T* dst = cols + cs.offset(k, n, p * Q + qa);  // dst[q - qa]: pq_stride is 1
      if (qa != 0 || qb != Q) {
        row(n, p, qa, qb, dst);
        ++g;
        if (++p == map.P) p = 0, ++n;
        continue;
      }
      // Full rows up to the end of the item, the image or the chunk: consecutive in the
      // unrolled row, each one [zeros | valid run | zeros] with the same split.
      const std::int64_t run = std::min({g_end - g, map.P - p, (j0 + count) / Q - g});
      const std::int64_t lo = std::clamp<std::int64_t>(valid.begin, 0, Q);
      const std::int64_t hi = std::clamp<std::int64_t>(valid.end, lo, Q);
      const std::int64_t h = p * map.stride_h + dh;
      // x's offset of the run's first valid column in image n, without the input row's
      // term (full_rows adds it for rows inside the image only); none without valid
      // columns, where lo may be past the input's last column.
      const std::int64_t src = hi > lo ? n * xs.n + (lo * map.stride_w + dw) * xs.w : 0;
      if (FullRowsOutOfLine && step == 1)
        full_rows_out_of_line(dst, x_c, src, run, h, lo, hi, step);
      else
        full_rows(dst, x_c, src, run, h, lo, hi, step);
      g += run;
      p += run;
      if (p == map.P) p = 0, ++n;
    }
  }

  /// `run` consecutive full output rows of one tap, the first reading input row h: each
  /// [zeros | valid run [lo, hi) | zeros], the run at x_c + src + h x xs.h. The input is
  /// addressed by offset, and the offset and a pointer formed only for rows inside the
  /// image: rows in the padding may lie far outside x's allocation, where even forming
  /// the pointer is undefined (the fuzz target's UBSan found one wrap past the address
  /// space, session 31), and their offsets past int64 (stepped by stride_h x xs.h from
  /// row to row: an overflow UBSan found in session 43).
  KCNN_HOST_FORCEINLINE void full_rows(T* dst, const T* x_c, const std::int64_t src,
                                       const std::int64_t run, std::int64_t h,
                                       const std::int64_t lo, const std::int64_t hi,
                                       const std::int64_t step) const {
    const std::int64_t Q = map.Q;
    for (std::int64_t i = 0; i < run; ++i, dst += Q, h += map.stride_h) {
      if (!map.row_inside(h)) {
        host_zero(dst, Q);
        continue;
      }
      host_zero(dst, lo);
      if (hi > lo) host_copy_strided(dst + lo, x_c + (src + h * xs.h), hi - lo, step);
      host_zero(dst + hi, Q - hi);
    }
  }

  /// full_rows behind a call, for the im2col's own work items over contiguous input runs
  /// (unroll_rows<true>, stride_w 1): inlined there, GCC 12 kept the walker's indices
  /// spilled inside the copy blocks, and LeNet C3's NCHW Im2colGemm ran 6-8% slower than
  /// before the refactor. Strided runs (gathers) and the ImplicitGemm panel inline it: with
  /// the call, LeNet C3 stride 2 NCHW ran 24-25% slower in both algorithms (EPYC, per-row
  /// alternation, session 15).
  KCNN_HOST_NOINLINE KCNN_HOST_ALIGN_HOT void full_rows_out_of_line(
      T* dst, const T* x_c, const std::int64_t src, const std::int64_t run, std::int64_t h,
      const std::int64_t lo, const std::int64_t hi, const std::int64_t step) const {
    full_rows(dst, x_c, src, run, h, lo, hi, step);
  }
};

/// NHWC: a work item is one output row (n, p); for each pixel and filter row it writes
/// the contiguous (s, c) run of the unrolled row: zeros for the padding taps, the valid
/// taps copied from the input (one contiguous run when dilation_w is 1 and the input's
/// (w, c) are contiguous, else one channel run per tap). The k_stride is 1.
template <class T>
struct Im2colNhwcHost {
  UnrollMap<Layout::NHWC> map;
  const T* x;
  LogicalStrides xs;
  T* cols;
  UnrolledStorage cs;
  std::int64_t j0, count;
  std::int64_t row_first;

  KCNN_HOST_ALIGN_HOT void operator()(const std::int64_t item) const {
    const std::int64_t g = row_first + item;
    const std::int64_t n = g / map.P, p = g - n * map.P;
    const std::int64_t qa = std::max<std::int64_t>(0, j0 - g * map.Q);
    const std::int64_t qb = std::min<std::int64_t>(map.Q, j0 + count - g * map.Q);
    const std::int64_t C = map.C, SC = map.S * map.C;
    const bool runs = map.dilation_w == 1 && xs.c == 1 && xs.w == C;
    for (std::int64_t q = qa; q < qb; ++q) {
      T* dst = cols + cs.offset(0, n, p * map.Q + q);
      const IndexRange sv = map.valid_s(q);
      const std::int64_t w0 = map.input_w(q, 0);
      for (std::int64_t r = 0; r < map.R; ++r, dst += SC) {
        const std::int64_t h = map.input_h(p, r);
        if (!map.row_inside(h) || sv.empty()) {
          host_zero(dst, SC);
          continue;
        }
        host_zero(dst, sv.begin * C);
        const std::int64_t x_row = n * xs.n + h * xs.h;
        if (runs) {
          host_copy(dst + sv.begin * C, x + x_row + (w0 + sv.begin) * xs.w, sv.size() * C);
        } else {
          for (std::int64_t s = sv.begin; s < sv.end; ++s)
            host_copy_strided(dst + s * C, x + x_row + (w0 + s * map.dilation_w) * xs.w, C, xs.c);
        }
        host_zero(dst + sv.end * C, (map.S - sv.end) * C);
      }
    }
  }
};

// ---------------------------------------------------------------------------------
// col2im: x(n, c, h, w) = sum of the unrolled entries that im2col copies from it.
// Gather form: every x element is written by exactly one work item, no atomics, and
// the result is deterministic. Elements no window covers become 0.
// ---------------------------------------------------------------------------------

/// GPU-shaped, both layouts: one thread per x element, enumerated in the layout's
/// natural order (w fastest in NCHW, c fastest in NHWC) so that stores coalesce. The sum
/// in the accumulator type, rounded once (16-bit types: float). Cols: the unrolled
/// matrix's type (T, or float: a 16-bit backward pass's float gradient columns).
template <Layout L, class I, class T, class Cols = T>
struct Col2imDevice {
  UnrollMap<L> map;
  const Cols* cols;
  UnrolledStorage cs;
  T* x;
  LogicalStrides xs;
  I n0;

  KOKKOS_INLINE_FUNCTION void operator()(const I t) const {
    I rest = t, c, h, w;
    const I C = static_cast<I>(map.C), H = static_cast<I>(map.H), W = static_cast<I>(map.W);
    if constexpr (L == Layout::NCHW) {
      w = rest % W, rest /= W;
      h = rest % H, rest /= H;
      c = rest % C, rest /= C;
    } else {
      c = rest % C, rest /= C;
      w = rest % W, rest /= W;
      h = rest % H, rest /= H;
    }
    const std::int64_t n = std::int64_t(n0) + rest;
    accumulator_t<T> acc = 0;
    for (std::int64_t r = 0; r < map.R; ++r) {
      const std::int64_t p = map.output_p(h, r);
      if (p < 0) continue;
      for (std::int64_t s = 0; s < map.S; ++s) {
        const std::int64_t q = map.output_q(w, s);
        if (q < 0) continue;
        acc += to_compute(cols[cs.offset(map.compose_k(c, r, s), n, p * map.Q + q)]);
      }
    }
    x[xs.offset(n, c, h, w)] = from_compute<T>(acc);
  }
};

/// Host NCHW: a work item is one input row (n, c, h): zero it, then add every unrolled
/// row segment that reads it (contiguous in the unrolled matrix, step stride_w in x).
template <class T>
struct Col2imNchwHost {
  UnrollMap<Layout::NCHW> map;
  const T* cols;
  UnrolledStorage cs;
  T* x;
  LogicalStrides xs;
  std::int64_t n0;

  void operator()(const std::int64_t item) const {
    std::int64_t rest = item;
    const std::int64_t h = rest % map.H;
    rest /= map.H;
    const std::int64_t c = rest % map.C;
    const std::int64_t n = n0 + rest / map.C;
    T* row = x + (n * xs.n + c * xs.c + h * xs.h);
    host_zero_strided(row, map.W, xs.w);
    const std::int64_t step = map.stride_w * xs.w;
    for (std::int64_t r = 0; r < map.R; ++r) {
      const std::int64_t p = map.output_p(h, r);
      if (p < 0) continue;
      for (std::int64_t s = 0; s < map.S; ++s) {
        const IndexRange qv = map.valid_q(s);
        if (qv.empty()) continue;
        const T* src = cols + cs.offset(map.compose_k(c, r, s), n, p * map.Q + qv.begin);
        T* dst = row + map.input_w(qv.begin, s) * xs.w;
        host_add_strided(dst, step, src, qv.size());
      }
    }
  }
};

/// Host NHWC: a work item is one input row (n, h) of W*C elements: zero it, then add
/// the channel runs of every unrolled row that reads it.
template <class T>
struct Col2imNhwcHost {
  UnrollMap<Layout::NHWC> map;
  const T* cols;
  UnrolledStorage cs;
  T* x;
  LogicalStrides xs;
  std::int64_t n0;

  void operator()(const std::int64_t item) const {
    const std::int64_t h = item % map.H;
    const std::int64_t n = n0 + item / map.H;
    T* row = x + (n * xs.n + h * xs.h);
    if (xs.c == 1 && xs.w == map.C) {
      host_zero(row, map.W * map.C);
    } else {
      for (std::int64_t w = 0; w < map.W; ++w)
        host_zero_strided(row + w * xs.w, map.C, xs.c);
    }
    for (std::int64_t r = 0; r < map.R; ++r) {
      const std::int64_t p = map.output_p(h, r);
      if (p < 0) continue;
      for (std::int64_t s = 0; s < map.S; ++s) {
        const IndexRange qv = map.valid_q(s);
        const std::int64_t k = map.compose_k(0, r, s);
        for (std::int64_t q = qv.begin; q < qv.end; ++q) {
          const T* src = cols + cs.offset(k, n, p * map.Q + q);
          host_add_strided(row + map.input_w(q, s) * xs.w, xs.c, src, map.C);
        }
      }
    }
  }
};

// ---------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------

/// The host-shaped im2col of the pixels [j0, j0 + count) (see im2col_launch); `serial`:
/// shaped for HostJob::run_serial (fewer, larger work items).
template <Layout L, class T>
auto im2col_host_job(const UnrollMap<L>& map, const T* x, const LogicalStrides& xs, T* cols,
                     const UnrolledStorage& cs, std::int64_t j0, std::int64_t count,
                     bool serial = false) {
  const std::int64_t row_first = j0 / map.Q;
  const std::int64_t rows = count <= 0 ? 0 : (j0 + count - 1) / map.Q - row_first + 1;
  if constexpr (L == Layout::NCHW) {
    // Parallel: about 2K elements per work item, enough to amortize the item's setup,
    // small enough for load balance. Serial: all rows of a tap in one item.
    const std::int64_t rows_per_item =
        serial ? std::max<std::int64_t>(1, rows) : std::max<std::int64_t>(1, 2048 / map.Q);
    const std::int64_t items_per_k = (rows + rows_per_item - 1) / rows_per_item;
    return HostJob<Im2colNchwHost<T>>{
        {map, x, xs, cols, cs, j0, count, row_first, rows, rows_per_item, items_per_k},
        map.taps() * items_per_k};
  } else {
    return HostJob<Im2colNhwcHost<T>>{{map, x, xs, cols, cs, j0, count, row_first}, rows};
  }
}

/// Fills every tap of the pixels [j0, j0 + count) of the unrolled matrix `cols`
/// (addressed by `cs`) from x. Asynchronous on `space`. The host-shaped kernels need
/// cs.pq_stride == 1 (NCHW) or cs.k_stride == 1 (NHWC), as every UnrolledStorage
/// factory gives.
template <Layout L, class ExecSpace, class T>
void im2col_launch(const ExecSpace& space, const UnrollMap<L>& map, const T* x,
                   const LogicalStrides& xs, T* cols, const UnrolledStorage& cs, std::int64_t j0,
                   std::int64_t count, KernelVariant variant = KernelVariant::Auto) {
  if (count <= 0) return;
  if constexpr (runs_on_host_v<ExecSpace>) {
    if (variant == KernelVariant::Auto) {
      const auto job = im2col_host_job(map, x, xs, cols, cs, j0, count);
      Kokkos::parallel_for(
          L == Layout::NCHW ? "kcnn::im2col::nchw_host" : "kcnn::im2col::nhwc_host",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, job.items),
          job.functor);
      return;
    }
  }
  // Channel lanes (NHWC) when a warp's worth of channels exists, else (s, c) lanes.
  const bool fold_s = L == Layout::NHWC && map.C < kWarpSize;
  const std::int64_t lanes = fold_s ? map.S * map.C : map.C;
  auto launch = [&](auto index_tag) {
    using I = decltype(index_tag);
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;
    if constexpr (L == Layout::NCHW) {
      Kokkos::parallel_for("kcnn::im2col::nchw", Policy(space, 0, I(lanes * count)),
                           Im2colNchwDevice<I, T>{map, x, xs, cols, cs, I(j0), I(count)});
    } else {
      Kokkos::parallel_for(
          "kcnn::im2col::nhwc", Policy(space, 0, I(lanes * count)),
          Im2colNhwcDevice<I, T>{map, x, xs, cols, cs, I(j0), I(count), I(lanes), fold_s});
    }
  };
  if (variant != KernelVariant::Device64 && fits_int32(lanes * count) && fits_int32(j0 + count)) {
    launch(std::int32_t());
  } else {
    launch(std::int64_t());
  }
}

/// Overwrites the images [n0, n0 + count) of x with the sum of their entries in the
/// unrolled matrix `cols` (addressed by `cs`). Asynchronous on `space`. 16-bit types run
/// the gather kernel on hosts too: the host kernels add into x's rows, which would round
/// at every addition.
template <Layout L, class ExecSpace, class Cols, class T>
void col2im_launch(const ExecSpace& space, const UnrollMap<L>& map, const Cols* cols,
                   const UnrolledStorage& cs, T* x, const LogicalStrides& xs, std::int64_t n0,
                   std::int64_t count, KernelVariant variant = KernelVariant::Auto) {
  // An empty image writes nothing; the host kernels' rows (N*H or N*C*H) need not be
  // empty then (W = 0 with H = 2^32 ran for minutes).
  if (count <= 0 || map.C == 0 || map.H == 0 || map.W == 0) return;
  if constexpr (runs_on_host_v<ExecSpace> && !is_16bit_storage_v<T> && std::is_same_v<Cols, T>) {
    if (variant == KernelVariant::Auto) {
      using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
      if constexpr (L == Layout::NCHW) {
        Kokkos::parallel_for("kcnn::col2im::nchw_host", Policy(space, 0, count * map.C * map.H),
                             Col2imNchwHost<T>{map, cols, cs, x, xs, n0});
      } else {
        Kokkos::parallel_for("kcnn::col2im::nhwc_host", Policy(space, 0, count * map.H),
                             Col2imNhwcHost<T>{map, cols, cs, x, xs, n0});
      }
      return;
    }
  }
  const std::int64_t total = count * map.C * map.H * map.W;
  auto launch = [&](auto index_tag) {
    using I = decltype(index_tag);
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;
    Kokkos::parallel_for(L == Layout::NCHW ? "kcnn::col2im::nchw" : "kcnn::col2im::nhwc",
                         Policy(space, 0, I(total)),
                         Col2imDevice<L, I, T, Cols>{map, cols, cs, x, xs, I(n0)});
  };
  if (variant != KernelVariant::Device64 && fits_int32(total) && fits_int32(n0 + count)) {
    launch(std::int32_t());
  } else {
    launch(std::int64_t());
  }
}

}  // namespace kcnn::Impl
