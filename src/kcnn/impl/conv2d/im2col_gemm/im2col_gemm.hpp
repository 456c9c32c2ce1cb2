// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/im2col_gemm/im2col_gemm.hpp
/// \brief ConvAlgo::Im2colGemm: unroll a chunk of the batch into a scratch matrix
///        (im2col), multiply it with the weights (KokkosBlas::gemm, which reaches cuBLAS
///        on CUDA and the host BLAS, OpenBLAS here, on the host), then one fused pass for
///        bias + activation (+ the layout fix-up where the GEMM could not write y).
///
/// GEMM formulations (K = C*R*S; the weights, stored (M, C, R, S) or (M, R, S, C), are
/// the row-major (M, K) matrix W because the unrolled tap order follows them):
///  - NHWC: y viewed as (pixels, M) = cols (pixels, K) * W^T. The GEMM writes straight
///    into y; the epilogue (if any) is bias + activation in place.
///  - NCHW, large images ("per image"): image b's block of y is the row-major (M, P*Q)
///    matrix W * cols_b, cols_b = (K, P*Q); the chunk's cols are stored image-blocked so
///    that every cols_b is a row-major matrix, and one GEMM per image writes into y.
///  - NCHW, small images: one GEMM per chunk, (M, pixels) = W * cols (K, pixels), into
///    scratch; the epilogue moves it into y's (n, m, p, q) order with bias + activation.
///    Per-image GEMMs on small images would be dominated by launch/call overhead.
///  - 1x1 filter, stride 1, no padding, row-major x: x already is the unrolled matrix
///    (NHWC: (pixels, C); NCHW: (C, P*Q) per image); no im2col, no scratch for it.
///  - Weights not stored row-major (a LayoutLeft View) are packed into scratch once.
///  - 16-bit tensors (half_t, kcnn::bfloat16): products and sums in float, the GEMM's
///    float result in scratch, rounded once by the epilogue (never GEMMs into y, never
///    per image). On CUDA the GEMM takes the 16-bit operands themselves (cuBLAS'
///    cublasGemmEx, impl/blas/gemm.hpp); on hosts, whose BLAS has no 16-bit GEMM, each
///    chunk's unrolled matrix is converted to float after the im2col and the weights once
///    per call (Im2colGemmOperandBytes).
///
/// Every GEMM operand is an unmanaged LayoutRight rank-2 View of ExecSpace's memory
/// space, the types Kokkos Kernels' TPL specializations take (gemm_uses_tpl_v checks).
///
/// Memory: the batch is processed in chunks of pixels whose scratch (unrolled matrix,
/// GEMM output where needed, packed weights) stays within the budget
/// (Conv2dParams::workspace_limit_bytes, else kcnn::workspace_limit()); the scratch is
/// the cached per-instance workspace of impl/common/workspace_cache.hpp. BLAS takes 32-bit
/// dimensions, so chunks are also capped at 2^31 - 1 rows/columns; all index
/// arithmetic outside BLAS is 64-bit.
///
/// Execution:
///  - Device backends: per chunk, im2col kernel -> cuBLAS GEMM -> epilogue kernel, all
///    on the space's stream (impl/blas/gemm.hpp), no fence.
///  - Host backends with several threads and a host BLAS TPL, when there are at least as
///    many chunks as threads: one parallel_for over the chunks; each thread unrolls its
///    chunk into its own slot of the scratch, calls the host BLAS itself, single-threaded
///    (impl/blas/host_blas.hpp: no Kokkos call inside the parallel region), and applies
///    the epilogue (host-shaped kernels run serially inside). Chunks stay cache-sized and nothing
///    waits between steps. Letting OpenBLAS' pthreads parallelize each GEMM instead
///    would alternate two thread pools on the same cores: the OpenMP workers keep
///    spinning after each Kokkos kernel (GOMP_SPINCOUNT) while OpenBLAS' threads start,
///    and OpenBLAS' threads keep spinning after each GEMM while the next Kokkos kernel
///    runs; on 2 cores that more than halved the speed. OpenBLAS is therefore set to
///    one thread while the pipeline runs (see with_single_threaded_host_blas).
///  - Otherwise (one host thread, fewer chunks than threads, e.g. one image, or no host
///    BLAS TPL): per chunk, parallel im2col kernel -> KokkosBlas::gemm -> parallel
///    epilogue.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../blas/gemm.hpp"
#include "../../blas/host_blas.hpp"
#include "../../common/host_loops.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/unroll_map.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "../../im2col/im2col_kernels.hpp"

namespace kcnn::Impl {

// ---------------------------------------------------------------------------------
// Plan: formulation and chunk size
// ---------------------------------------------------------------------------------

struct Im2colGemmPlan {
  bool unroll = true;             ///< false: x is its own unrolled matrix (1x1, stride 1, no pad)
  bool per_image = false;         ///< NCHW: one GEMM per image, straight into y
  bool gemm_into_y = true;        ///< else into scratch, moved into y by the epilogue
  bool pack_w = false;            ///< weights not row-major: packed into scratch
  bool epilogue = true;           ///< false: the GEMM's result is final (identity, no bias)
  bool concurrent = false;        ///< host: chunks run concurrently, one per thread
  int slots = 1;                  ///< chunk buffers (the host threads when concurrent)
  std::int64_t chunk_pixels = 0;  ///< pixels per chunk (a multiple of P*Q when per_image)
  std::int64_t chunks = 0;
  std::size_t w_bytes = 0;                    ///< packed weights (shared), aligned
  std::size_t cols_bytes = 0, out_bytes = 0;  ///< one chunk's buffers, aligned
  std::size_t cols_copy_offset = 0;  ///< converting operands: the float copy of the unrolled chunk

  std::size_t slot_bytes() const { return cols_bytes + out_bytes; }
  std::size_t workspace_bytes() const { return w_bytes + std::size_t(slots) * slot_bytes(); }
};

/// Tuning knobs of the plan (defaults are the library's choice; tests override them to
/// force each formulation on small problems).
struct Im2colGemmTuning {
  /// NCHW: per-image GEMMs when one image's GEMM has at least this many flops. Host: a
  /// BLAS call costs microseconds, small next to 64 MFLOP, and per-image GEMMs save the
  /// epilogue's extra pass over y. GPU: a launch and a small grid are costly, so only
  /// very large images go per image; the rest take one GEMM per chunk plus the fix-up
  /// pass.
  double per_image_min_flops_host = 64e6;
  double per_image_min_flops_device = 2e9;
  /// Host chunks (per thread, when concurrent) stay near the last-level cache, so that
  /// the GEMM reads the unrolled matrix from cache rather than memory.
  std::size_t host_chunk_target_bytes = std::size_t(8) << 20;
  /// Host backends with several threads: run whole chunks concurrently, one per thread,
  /// each with single-threaded BLAS (see conv2d_im2col_gemm_layout), when there are at
  /// least as many chunks as threads.
  bool host_concurrent = true;
  /// Auto: host-shaped kernels on host backends; Device32/Device64 force the GPU-shaped
  /// ones (the host tests cover the GPU kernels' indexing this way; never concurrent).
  KernelVariant kernels = KernelVariant::Auto;
};

/// The element sizes of Im2colGemm's matrices. float and double: all the storage type.
/// 16-bit storage: the GEMM's result is float (gemm_out = 4: in scratch, rounded once by
/// the epilogue); where the GEMM cannot take 16-bit operands (host BLAS) they are float
/// copies (gemm_in = 4: the unrolled chunk converted after the im2col, the weights once).
struct Im2colGemmOperandBytes {
  std::size_t storage;   ///< x, w, y and the unrolled matrix as im2col writes it
  std::size_t gemm_in;   ///< the GEMM's A and B
  std::size_t gemm_out;  ///< the GEMM's C
  constexpr bool converts_operands() const { return gemm_in != storage; }
  constexpr bool float_result() const { return gemm_out != storage; }
};

/// Chooses the formulation, the chunk size and the host concurrency for a problem under
/// a scratch budget. `host_threads` is the host backend's concurrency (1 on devices).
/// Throws kcnn::Error when the budget cannot hold even one pixel's worth of scratch.
inline Im2colGemmPlan plan_im2col_gemm(const char* op, const Conv2dProblem& pb,
                                       Im2colGemmOperandBytes bytes, std::size_t limit_bytes,
                                       bool x_row_major, bool w_row_major, bool y_row_major,
                                       bool host, int host_threads,
                                       const Im2colGemmTuning& tuning = {}) {
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  const std::int64_t K = pb.C * pb.R * pb.S, PQ = pb.P * pb.Q, NPQ = pb.N * PQ;
  throw_if(K > int_max || pb.M > int_max || PQ > int_max, op,
           "ConvAlgo::Im2colGemm: a GEMM extent exceeds BLAS' 32-bit limit (C*R*S=", K,
           ", M=", pb.M, ", P*Q=", PQ, ")");
  const bool convert = bytes.converts_operands();
  // Bytes per unrolled element (with its float copy) and per GEMM output.
  const auto T = static_cast<std::int64_t>(bytes.storage + (convert ? bytes.gemm_in : 0));
  const auto Tout = static_cast<std::int64_t>(bytes.gemm_out);

  Im2colGemmPlan base;
  base.pack_w = !w_row_major || convert;
  base.w_bytes = base.pack_w ? align_up(static_cast<std::size_t>(pb.M * K) * bytes.gemm_in) : 0;
  const bool one_by_one = pb.R == 1 && pb.S == 1 && pb.stride_h == 1 && pb.stride_w == 1 &&
                          pb.pad_h == 0 && pb.pad_w == 0;
  base.unroll = !(one_by_one && x_row_major) || convert;
  if (pb.layout == Layout::NHWC) {
    base.gemm_into_y = y_row_major && !bytes.float_result();
  } else {
    const double image_flops = 2.0 * double(pb.M) * double(K) * double(PQ);
    base.per_image =
        y_row_major && !bytes.float_result() &&
        image_flops >= (host ? tuning.per_image_min_flops_host : tuning.per_image_min_flops_device);
    base.gemm_into_y = base.per_image;
    if (!base.per_image) base.unroll = true;  // x is (C, P*Q) per image, not across images
  }
  base.epilogue = !(base.gemm_into_y && pb.activation == Activation::Identity && !pb.has_bias);

  // The packed weights and each slot's alignment allowance come off the budget first.
  const std::size_t parts_per_slot = convert ? 3 : 2;  // unrolled chunk, (float copy,) output
  auto fixed = [&](int slots) {
    return base.w_bytes + parts_per_slot * kScratchAlign * std::size_t(slots);
  };

  // Sizes the chunks for `slots` buffers of the budget; false if not even one pixel (or,
  // with `need_slots_busy`, not one chunk per slot) fits.
  auto size_chunks = [&](Im2colGemmPlan& plan, int slots, bool need_slots_busy) {
    plan.slots = slots;
    const std::size_t budget = std::min<std::size_t>(
        limit_bytes > fixed(slots) ? limit_bytes - fixed(slots) : 0, std::size_t(1) << 62);
    const auto avail = static_cast<std::int64_t>(budget / std::size_t(slots));
    const auto preferred =
        host ? std::min<std::int64_t>(avail,
                                      static_cast<std::int64_t>(tuning.host_chunk_target_bytes))
             : avail;
    auto per_pixel = [&] {
      return (plan.unroll ? K * T : 0) + (plan.gemm_into_y ? 0 : pb.M * Tout);
    };
    // Units of `unit` bytes per chunk: >= 1 if one fits, at most `most`.
    auto units = [&](std::int64_t unit, std::int64_t most) {
      if (unit == 0) return most;
      if (unit > avail) return std::int64_t(0);
      return std::clamp<std::int64_t>(preferred / unit, 1, most);
    };
    if (plan.per_image) {
      // Concurrent chunks: no more images per chunk than keeps every slot busy.
      const std::int64_t most = slots > 1 ? (pb.N + slots - 1) / slots : pb.N;
      const std::int64_t images = units(per_pixel() * PQ, most);
      if (images >= 1) {
        plan.chunk_pixels = std::min(images, std::max<std::int64_t>(1, int_max / PQ)) * PQ;
      } else {  // one image does not fit: pixel chunks with the fix-up pass
        plan.per_image = plan.gemm_into_y = false;
        plan.unroll = true;
        plan.epilogue = true;
      }
    }
    if (!plan.per_image) {
      const std::int64_t most = slots > 1 ? (NPQ + slots - 1) / slots : NPQ;
      plan.chunk_pixels = std::min(units(per_pixel(), std::max<std::int64_t>(1, most)), int_max);
      if (plan.chunk_pixels < 1) return false;
    }
    plan.chunks = (NPQ + plan.chunk_pixels - 1) / plan.chunk_pixels;
    // The unrolled chunk as im2col writes it, then (converting) its float copy.
    plan.cols_copy_offset =
        plan.unroll ? align_up(static_cast<std::size_t>(plan.chunk_pixels * K) * bytes.storage) : 0;
    plan.cols_bytes =
        plan.cols_copy_offset +
        (plan.unroll && convert
             ? align_up(static_cast<std::size_t>(plan.chunk_pixels * K) * bytes.gemm_in)
             : 0);
    plan.out_bytes =
        plan.gemm_into_y ? 0 : align_up(static_cast<std::size_t>(plan.chunk_pixels * pb.M * Tout));
    return !need_slots_busy || plan.chunks >= slots;
  };

  // The concurrent pipeline's threads call the host BLAS directly (a Kokkos Kernels call
  // inside a parallel region is forbidden): only with a BLAS TPL.
  if (host_blas_available && host && host_threads > 1 && tuning.host_concurrent &&
      tuning.kernels == KernelVariant::Auto) {
    Im2colGemmPlan plan = base;
    if (size_chunks(plan, host_threads, true)) {
      plan.concurrent = true;
      return plan;
    }
  }
  Im2colGemmPlan plan = base;
  if (!size_chunks(plan, 1, false)) {
    const std::int64_t pp = (plan.unroll ? K * T : 0) + (plan.gemm_into_y ? 0 : pb.M * Tout);
    throw_if(true, op, "ConvAlgo::Im2colGemm: the workspace limit of ", limit_bytes,
             " bytes is too small; this problem needs at least ", fixed(1) + std::size_t(pp),
             " bytes (", pp, " per output pixel", plan.pack_w ? " plus the packed weights" : "",
             ")");
  }
  return plan;
}

// ---------------------------------------------------------------------------------
// Kernels: weight packing and the epilogue
// ---------------------------------------------------------------------------------

/// out (M, K) row-major = w with its taps in the unrolled order (Out: w's type, or float
/// for the float copy of 16-bit weights).
template <Layout L, class T, class Out = T>
struct PackWeights {
  UnrollMap<L> map;
  const T* w;
  LogicalStrides ws;
  Out* out;
  std::int64_t K;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t t) const {
    const std::int64_t m = t / K;
    const Tap<std::int64_t> tap = map.decompose_k(t - m * K);
    out[t] = Out(to_compute(w[ws.offset(m, tap.c, tap.r, tap.s)]));
  }
};

/// dst[i] = src[i] in the compute type: the float copy of a 16-bit unrolled chunk.
template <class T>
struct ConvertToCompute {
  const T* src;
  compute_t<T>* dst;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    dst[i] = to_compute(src[i]);
  }
};

/// What the epilogue reads and writes: y(n, m, p, q) = act(G(m, pixel) + bias(m)) for
/// the pixels [j0, j0 + count). G is addressed like an unrolled matrix with the output
/// channel in place of the tap: offset(m, n, pq) (it may be y itself: in place). T: the
/// tensors' storage type (the bias'); G: the GEMM result's (T, or float for 16-bit T);
/// Y: y's (T, or float for the unpooled output of a two-pass pooling). Rounded once here.
template <class T, class G = T, class Y = T>
struct EpilogueArgs {
  const G* g;
  UnrolledStorage gs;
  Y* y;
  LogicalStrides ys;
  const T* bias;  ///< nullptr: no bias
  std::int64_t bias_stride;
  std::int64_t j0, count, M, PQ, Q;
  bool m_fastest;    ///< G and y keep m contiguous (NHWC): enumerate m innermost
  bool y_pq_linear;  ///< y's (p, q) is one run: offset pq * ys.w
};

/// GPU-shaped: one thread per output element, m or pixel innermost as the storage wants.
template <Activation A, class I, class T, class G, class Y>
struct EpilogueDevice {
  using Acc = accumulator_t<T>;
  EpilogueArgs<T, G, Y> a;

  KOKKOS_INLINE_FUNCTION void operator()(const I t) const {
    I m, jl;
    if (a.m_fastest) {
      jl = t / I(a.M);
      m = t - jl * I(a.M);
    } else {
      m = t / I(a.count);
      jl = t - m * I(a.count);
    }
    const I j = I(a.j0) + jl;
    const I n = j / I(a.PQ);
    const I pq = j - n * I(a.PQ);
    Acc v = to_compute(a.g[a.gs.offset(m, n, pq)]);
    if (a.bias) v += to_compute(a.bias[m * a.bias_stride]);
    std::int64_t yo = std::int64_t(n) * a.ys.n + std::int64_t(m) * a.ys.c;
    if (a.y_pq_linear) {
      yo += std::int64_t(pq) * a.ys.w;
    } else {
      const I p = pq / I(a.Q);
      yo += std::int64_t(p) * a.ys.h + std::int64_t(pq - p * I(a.Q)) * a.ys.w;
    }
    a.y[yo] = from_compute<Y>(apply_activation(A, v));
  }
};

/// Host, m innermost (NHWC): a work item is a block of pixels; per pixel one
/// contiguous run over the output channels.
template <Activation A, class T, class G, class Y>
struct EpiloguePixelsHost {
  using Acc = accumulator_t<T>;
  EpilogueArgs<T, G, Y> a;
  std::int64_t pixels_per_item;

  void operator()(const std::int64_t item) const {
    const std::int64_t jb = item * pixels_per_item;
    const std::int64_t je = std::min(a.count, jb + pixels_per_item);
    const bool unit = a.ys.c == 1 && a.gs.k_stride == 1 && (!a.bias || a.bias_stride == 1);
    for (std::int64_t jl = jb; jl < je; ++jl) {
      const std::int64_t j = a.j0 + jl, n = j / a.PQ, pq = j - n * a.PQ;
      const std::int64_t p = pq / a.Q, q = pq - p * a.Q;
      const G* g = a.g + a.gs.offset(0, n, pq);
      Y* y = a.y + (n * a.ys.n + p * a.ys.h + q * a.ys.w);
      if (unit && a.bias) {
        for (std::int64_t m = 0; m < a.M; ++m)
          y[m] = from_compute<Y>(apply_activation(A, to_compute(g[m]) + to_compute(a.bias[m])));
      } else if (unit) {
        for (std::int64_t m = 0; m < a.M; ++m)
          y[m] = from_compute<Y>(apply_activation(A, to_compute(g[m])));
      } else {
        for (std::int64_t m = 0; m < a.M; ++m) {
          const Acc b = a.bias ? to_compute(a.bias[m * a.bias_stride]) : Acc(0);
          y[m * a.ys.c] =
              from_compute<Y>(apply_activation(A, to_compute(g[m * a.gs.k_stride]) + b));
        }
      }
    }
  }
};

/// Host, pixels innermost (NCHW): a work item is one (output channel, image) pair;
/// one contiguous run over the image's pixels inside the chunk.
template <Activation A, class T, class G, class Y>
struct EpilogueRowsHost {
  using Acc = accumulator_t<T>;
  EpilogueArgs<T, G, Y> a;
  std::int64_t n_first, images;

  void operator()(const std::int64_t item) const {
    const std::int64_t m = item / images, n = n_first + (item - m * images);
    const std::int64_t pa = std::max<std::int64_t>(0, a.j0 - n * a.PQ);
    const std::int64_t pb = std::min<std::int64_t>(a.PQ, a.j0 + a.count - n * a.PQ);
    const G* g = a.g + a.gs.offset(m, n, pa);  // g[pq - pa]: pq_stride is 1
    const Acc b = a.bias ? to_compute(a.bias[m * a.bias_stride]) : Acc(0);
    if (a.y_pq_linear && a.ys.w == 1) {
      Y* y = a.y + (n * a.ys.n + m * a.ys.c + pa);
      for (std::int64_t i = 0; i < pb - pa; ++i)
        y[i] = from_compute<Y>(apply_activation(A, to_compute(g[i]) + b));
    } else {
      Y* y = a.y + (n * a.ys.n + m * a.ys.c);
      for (std::int64_t pq = pa; pq < pb; ++pq) {
        const std::int64_t p = pq / a.Q, q = pq - p * a.Q;
        y[p * a.ys.h + q * a.ys.w] =
            from_compute<Y>(apply_activation(A, to_compute(g[pq - pa]) + b));
      }
    }
  }
};

/// Calls f(job) with the host-shaped epilogue job for `a` (its functor type depends on
/// whether m or the pixels run innermost).
template <Activation A, class T, class G, class Y, class F>
void with_epilogue_host_job(const EpilogueArgs<T, G, Y>& a, F&& f) {
  if (a.m_fastest) {
    const std::int64_t ppi = std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, a.M));
    f(HostJob<EpiloguePixelsHost<A, T, G, Y>>{{a, ppi}, (a.count + ppi - 1) / ppi});
  } else {
    const std::int64_t n_first = a.j0 / a.PQ;
    const std::int64_t images = (a.j0 + a.count - 1) / a.PQ - n_first + 1;
    f(HostJob<EpilogueRowsHost<A, T, G, Y>>{{a, n_first, images}, a.M * images});
  }
}

template <class ExecSpace, class T, class G, class Y>
void epilogue_launch(const ExecSpace& space, const EpilogueArgs<T, G, Y>& a, Activation activation,
                     KernelVariant variant) {
  with_activation(activation, [&](auto act) {
    constexpr Activation A = decltype(act)::value;
    if constexpr (runs_on_host_v<ExecSpace>) {
      if (variant == KernelVariant::Auto) {
        with_epilogue_host_job<A>(a, [&](const auto& job) {
          Kokkos::parallel_for(
              "kcnn::conv2d::im2col_gemm::epilogue_host",
              Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, job.items),
              job.functor);
        });
        return;
      }
    }
    const std::int64_t total = a.M * a.count;
    auto launch = [&](auto index_tag) {
      using I = decltype(index_tag);
      Kokkos::parallel_for("kcnn::conv2d::im2col_gemm::epilogue",
                           Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>(space, 0, I(total)),
                           EpilogueDevice<A, I, T, G, Y>{a});
    };
    if (variant != KernelVariant::Device64 && fits_int32(total) && fits_int32(a.j0 + a.count)) {
      launch(std::int32_t());
    } else {
      launch(std::int64_t());
    }
  });
}

// ---------------------------------------------------------------------------------
// The algorithm
// ---------------------------------------------------------------------------------

/// Everything one chunk needs, and the chunk's three steps: unroll, GEMM, epilogue.
/// run() either launches each step on the execution space (parallel kernels,
/// multi-threaded BLAS) or, `serial`, does the whole chunk on the calling thread (the
/// concurrent host pipeline: one chunk per thread).
template <Layout L, class ExecSpace, class T, class Y = T>
struct Im2colGemmChunks {
  /// 16-bit storage: float results (GemmOut), rounded once by the epilogue; the GEMM's
  /// operands are the 16-bit values on cuBLAS, float copies elsewhere (GemmIn). float
  /// and double: both T.
  static constexpr bool kSixteenBit = is_16bit_storage_v<T>;
  static constexpr bool kConvertOperands = kSixteenBit && !gemm_16bit_available_v<ExecSpace>;
  using GemmOut = accumulator_t<T>;
  using GemmIn = std::conditional_t<kConvertOperands, GemmOut, T>;
  using Matrix = GemmMatrix<ExecSpace, GemmOut>;
  using ConstMatrix = GemmMatrix<ExecSpace, const GemmIn>;
  /// The element sizes plan_im2col_gemm sizes the scratch with.
  static constexpr Im2colGemmOperandBytes operand_bytes{sizeof(T), sizeof(GemmIn), sizeof(GemmOut)};
  /// Chunks run concurrently on host threads only where those threads can call the host
  /// BLAS themselves (see plan_im2col_gemm).
  static constexpr bool host_pipeline_possible = runs_on_host_v<ExecSpace> && host_blas_available;

  UnrollMap<L> map;
  const T* x;
  LogicalStrides xs;
  const GemmIn* w_matrix;  ///< (M, K) row-major
  Y* y;  ///< T, or float for the unpooled output of a two-pass pooling (dispatch.hpp)
  EpilogueArgs<T, GemmOut, Y> ep;  ///< y, its strides, bias, extents; j0/count/g/gs per chunk
  Im2colGemmPlan plan;
  Activation activation;
  GemmMath math = GemmMath::Strict;  ///< the cuBLAS math mode bound for each GEMM
  KernelVariant kernels;
  std::int64_t K, M, PQ;

  /// C (m x n) = op(A) op(B), all three row-major and packed (each row stride is the
  /// stored column count). `serial` (a thread of the concurrent host pipeline, inside a
  /// parallel region): the host BLAS on this thread, no Kokkos call; else Impl::gemm on
  /// space's stream.
  void multiply(const ExecSpace& space, bool serial, char trans_a, char trans_b, std::int64_t m,
                std::int64_t n, std::int64_t k, const GemmIn* a, const GemmIn* b,
                GemmOut* c) const {
    const std::int64_t a_cols = trans_a == 'N' ? k : m, b_cols = trans_b == 'N' ? n : k;
    if constexpr (!std::is_same_v<GemmIn, GemmOut>) {
      // 16-bit operands, float products and sums: cuBLAS (never the host pipeline)
      gemm_16bit_float(space, trans_a, trans_b, int(m), int(n), int(k), a, int(a_cols), b,
                       int(b_cols), c, int(n));
    } else {
      if constexpr (host_pipeline_possible) {
        if (serial) {
          host_gemm_row_major(trans_a, trans_b, int(m), int(n), int(k), GemmOut(1), a, int(a_cols),
                              b, int(b_cols), GemmOut(0), c, int(n));
          return;
        }
      }
      const char ta[2] = {trans_a, 0}, tb[2] = {trans_b, 0};
      gemm(space, ta, tb, GemmOut(1), ConstMatrix(a, trans_a == 'N' ? m : k, a_cols),
           ConstMatrix(b, trans_b == 'N' ? k : n, b_cols), GemmOut(0), Matrix(c, m, n), math);
    }
  }

  /// One chunk: `cols` receives the unrolled chunk as stored, `cols_copy` its float copy
  /// (kConvertOperands), `out` the GEMM's result where it does not go to y.
  void run(const ExecSpace& space, bool serial, std::int64_t j0, std::int64_t count, T* cols,
           GemmIn* cols_copy, GemmOut* out) const {
    // Unrolls into cols and returns the GEMM's operand: cols, or its float copy.
    auto unroll = [&](const UnrolledStorage& cs) -> const GemmIn* {
      const std::int64_t elems = count * K;
      if constexpr (runs_on_host_v<ExecSpace>) {
        if (serial) {
          im2col_host_job(map, x, xs, cols, cs, j0, count, true).run_serial();
          if constexpr (kConvertOperands) {
            KCNN_HOST_SIMD
            for (std::int64_t i = 0; i < elems; ++i)
              cols_copy[i] = to_compute(cols[i]);
          }
          return operand(cols, cols_copy);
        }
      }
      im2col_launch(space, map, x, xs, cols, cs, j0, count, kernels);
      if constexpr (kConvertOperands) {
        Kokkos::parallel_for(
            "kcnn::conv2d::im2col_gemm::to_float",
            Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, elems),
            ConvertToCompute<T>{cols, cols_copy});
      }
      return operand(cols, cols_copy);
    };
    EpilogueArgs<T, GemmOut, Y> e = ep;
    e.j0 = j0, e.count = count;
    if constexpr (L == Layout::NHWC) {
      // y (pixels, M) = cols (pixels, K) * W^T
      const GemmIn* a = nullptr;
      if (plan.unroll) {
        a = unroll(UnrolledStorage::nhwc_rows(K, PQ, j0));
      } else if constexpr (std::is_same_v<GemmIn, T>) {
        a = x + j0 * K;  // 1x1/stride 1/no padding: x's rows are the pixels
      }
      GemmOut* c = out;
      if constexpr (std::is_same_v<GemmOut, Y>) {
        if (plan.gemm_into_y) c = y + j0 * M;
      }
      multiply(space, serial, 'N', 'T', count, M, K, a, w_matrix, c);
      e.g = c;  // (pixels, M) row-major, y itself or scratch
      e.gs = UnrolledStorage::nhwc_rows(M, PQ, j0);
    } else if (plan.per_image) {
      // y_b (M, P*Q) = W * cols_b (K, P*Q), image by image (never for 16-bit tensors: their
      // GEMM results are float)
      if constexpr (std::is_same_v<GemmOut, Y> && std::is_same_v<GemmIn, T>) {
        const std::int64_t n0 = j0 / PQ, images = count / PQ;
        if (plan.unroll) unroll(UnrolledStorage::nchw_image_blocks(K, PQ, n0));
        for (std::int64_t b = 0; b < images; ++b) {
          const T* cols_b = plan.unroll ? cols + b * K * PQ : x + (n0 + b) * K * PQ;
          multiply(space, serial, 'N', 'N', M, PQ, K, w_matrix, cols_b, y + (n0 + b) * M * PQ);
        }
        e.g = y;  // in place: G's (m, n, pq) is y's
        e.gs = UnrolledStorage{0, PQ, M * PQ, 1};
      }
    } else {
      // scratch (M, pixels) = W * cols (K, pixels); the epilogue reorders it into y
      const GemmIn* b = unroll(UnrolledStorage::nchw_columns(count, PQ, j0));
      multiply(space, serial, 'N', 'N', M, count, K, w_matrix, b, out);
      e.g = out;
      e.gs = UnrolledStorage::nchw_columns(count, PQ, j0);
    }
    if (!plan.epilogue) return;
    if constexpr (runs_on_host_v<ExecSpace>) {
      if (serial) {
        with_activation(activation, [&](auto act) {
          with_epilogue_host_job<decltype(act)::value>(e,
                                                       [](const auto& job) { job.run_serial(); });
        });
        return;
      }
    }
    epilogue_launch(space, e, activation, kernels);
  }

  /// The GEMM's operand among the unrolled chunk and its float copy.
  static const GemmIn* operand(const T* cols, const GemmIn* cols_copy) {
    if constexpr (kConvertOperands) {
      (void)cols;
      return cols_copy;
    } else {
      (void)cols_copy;
      return cols;
    }
  }
};

/// The concurrent host pipeline: chunk i runs on whichever thread takes it, in that
/// thread's slot of the scratch.
template <Layout L, class ExecSpace, class T, class Y>
struct Im2colGemmHostPipeline {
  using GemmIn = typename Im2colGemmChunks<L, ExecSpace, T, Y>::GemmIn;
  using GemmOut = typename Im2colGemmChunks<L, ExecSpace, T, Y>::GemmOut;
  Im2colGemmChunks<L, ExecSpace, T, Y> chunks;
  ExecSpace space;
  Kokkos::Experimental::UniqueToken<ExecSpace> token;
  unsigned char* slots;
  std::size_t slot_bytes;
  std::int64_t NPQ;

  void operator()(const std::int64_t i) const {
    const int slot = token.acquire();
    unsigned char* base = slots + std::size_t(slot) * slot_bytes;
    const std::size_t cols_copy_offset = chunks.plan.cols_copy_offset;
    const std::int64_t j0 = i * chunks.plan.chunk_pixels;
    chunks.run(space, true, j0, std::min(chunks.plan.chunk_pixels, NPQ - j0),
               reinterpret_cast<T*>(base), reinterpret_cast<GemmIn*>(base + cols_copy_offset),
               reinterpret_cast<GemmOut*>(base + chunks.plan.cols_bytes));
    token.release(slot);
  }
};

template <Layout L, class ExecSpace, class XView, class WView, class BView, class YView>
void conv2d_im2col_gemm_layout(const ExecSpace& space, const XView& x, const WView& w,
                               const BView& bias, const YView& y, const Conv2dProblem& pb,
                               const Im2colGemmPlan& plan, const Im2colGemmTuning& tuning) {
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  using Chunks = Im2colGemmChunks<L, ExecSpace, T, Y>;
  using GemmIn = typename Chunks::GemmIn;
  using GemmOut = typename Chunks::GemmOut;
  const auto map = UnrollMap<L>::from(pb);
  const std::int64_t K = map.taps(), M = pb.M, PQ = map.pixels_per_image();
  const std::int64_t NPQ = pb.N * PQ;

  // Scratch: [packed w][slot 0: unrolled chunk, GEMM output chunk][slot 1: ...], each
  // part aligned.
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, plan.workspace_bytes());
  unsigned char* base = lease.data();
  unsigned char* slots = base + plan.w_bytes;

  // The weights as the GEMM's (M, K) row-major operand: w itself, or packed (stored
  // otherwise, or converted to float for a host GEMM on 16-bit tensors).
  const GemmIn* w_matrix = nullptr;
  if constexpr (std::is_same_v<GemmIn, T>) w_matrix = w.data();
  if (plan.pack_w) {
    GemmIn* w_packed = reinterpret_cast<GemmIn*>(base);
    Kokkos::parallel_for(
        "kcnn::conv2d::im2col_gemm::pack_weights",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, M * K),
        PackWeights<L, T, GemmIn>{map, w.data(), logical_strides<L>(w), w_packed, K});
    w_matrix = w_packed;
  }

  Chunks chunks{};
  chunks.map = map;
  chunks.x = x.data();
  chunks.xs = logical_strides<L>(x);
  chunks.w_matrix = w_matrix;
  chunks.y = y.data();
  chunks.ep.y = y.data();
  chunks.ep.ys = logical_strides<L>(y);
  chunks.ep.bias = pb.has_bias ? bias.data() : nullptr;
  chunks.ep.bias_stride = static_cast<std::int64_t>(bias.stride(0));
  chunks.ep.M = M, chunks.ep.PQ = PQ, chunks.ep.Q = pb.Q;
  chunks.ep.m_fastest = L == Layout::NHWC;
  chunks.ep.y_pq_linear = chunks.ep.ys.h == pb.Q * chunks.ep.ys.w;
  chunks.plan = plan;
  chunks.activation = pb.activation;
  chunks.math = gemm_math(pb.math);
  chunks.kernels = tuning.kernels;
  chunks.K = K, chunks.M = M, chunks.PQ = PQ;

  if constexpr (Chunks::host_pipeline_possible) {
    if (plan.concurrent) {
      Kokkos::Experimental::UniqueToken<ExecSpace> token(space);
      throw_if(token.size() > plan.slots, "kcnn::conv2d_forward",
               "internal error: Im2colGemm planned ", plan.slots, " host slots for ", token.size(),
               " threads");
      using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>,
                                         Kokkos::IndexType<std::int64_t>>;
      with_single_threaded_host_blas([&] {
        Kokkos::parallel_for("kcnn::conv2d::im2col_gemm::host_pipeline",
                             Policy(space, 0, plan.chunks).set_chunk_size(1),
                             Im2colGemmHostPipeline<L, ExecSpace, T, Y>{chunks, space, token, slots,
                                                                        plan.slot_bytes(), NPQ});
      });
      return;
    }
  }
  T* cols = reinterpret_cast<T*>(slots);
  GemmIn* cols_copy = reinterpret_cast<GemmIn*>(slots + plan.cols_copy_offset);
  GemmOut* out = reinterpret_cast<GemmOut*>(slots + plan.cols_bytes);
  for (std::int64_t j0 = 0; j0 < NPQ; j0 += plan.chunk_pixels)
    chunks.run(space, false, j0, std::min(plan.chunk_pixels, NPQ - j0), cols, cols_copy, out);
}

/// The concurrency the host pipeline would use on `space` (1 on device backends).
template <class ExecSpace>
int host_pipeline_threads(const ExecSpace& space) {
  if constexpr (runs_on_host_v<ExecSpace>) {
    return Kokkos::Experimental::UniqueToken<ExecSpace>(space).size();
  } else {
    (void)space;
    return 1;
  }
}

/// The plan conv2d_im2col_gemm follows for these Views (tests and diagnostics).
template <class ExecSpace, class XView, class WView, class BView, class YView>
Im2colGemmPlan plan_im2col_gemm(const ExecSpace& space, const XView& x, const WView& w,
                                const BView&, const YView& y, const Conv2dProblem& pb,
                                std::size_t limit_bytes, const Im2colGemmTuning& tuning = {}) {
  using Chunks =
      Im2colGemmChunks<Layout::NCHW, ExecSpace, view_scalar_t<XView>, view_scalar_t<YView>>;
  return plan_im2col_gemm("kcnn::conv2d_forward", pb, Chunks::operand_bytes, limit_bytes,
                          is_row_major(x), is_row_major(w), is_row_major(y),
                          runs_on_host_v<ExecSpace>, host_pipeline_threads(space), tuning);
}

/// Runs ConvAlgo::Im2colGemm (with LaunchMode::Check: only plans, which tests its
/// limits); `pb` has been validated against the Views. Returns the workspace bytes the
/// run takes.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_im2col_gemm(const ExecSpace& space, const XView& x, const WView& w,
                               const BView& bias, const YView& y, const Conv2dProblem& pb,
                               std::size_t limit_bytes, const Im2colGemmTuning& tuning = {},
                               LaunchMode mode = LaunchMode::Run) {
  const Im2colGemmPlan plan = plan_im2col_gemm(space, x, w, bias, y, pb, limit_bytes, tuning);
  if (mode == LaunchMode::Check) return plan.workspace_bytes();
  if (pb.layout == Layout::NCHW) {
    conv2d_im2col_gemm_layout<Layout::NCHW>(space, x, w, bias, y, pb, plan, tuning);
  } else {
    conv2d_im2col_gemm_layout<Layout::NHWC>(space, x, w, bias, y, pb, plan, tuning);
  }
  return plan.workspace_bytes();
}

}  // namespace kcnn::Impl
