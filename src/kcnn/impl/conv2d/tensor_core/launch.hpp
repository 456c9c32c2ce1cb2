// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/launch.hpp
/// \brief ConvAlgo::TensorCoreGemm's launch: its limits (the backend, the math mode, the
///        index ranges), the tile and gather choice, and conv2d_tensor_core (the entry).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/mma.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../implicit_gemm/operands.hpp"
#include "../implicit_gemm/tile_choice.hpp"
#include "channel_run_kernel.hpp"
#include "channels_last.hpp"
#include "device_kernel.hpp"
#include "few_channels_launch.hpp"
#include "halo_kernel.hpp"
#include "packed_weights.hpp"
#include "split_counters.hpp"
#include "tile_shapes.hpp"
#include "tma_kernel.hpp"

namespace kcnn::Impl {

inline constexpr const char* kTensorCoreAlgoName = "ConvAlgo::TensorCoreGemm";

/// Which operands the 16-byte copies can gather (each copy a 16-byte aligned run of
/// k): A (double; float A is always packed first) when w is packed in the GEMM's k order (row m of
/// the M x K matrix at m * K) with K a multiple of 16 bytes' worth of elements; B (NHWC only) when
/// the channels are contiguous and C and every pixel stride of x are such multiples.
struct TensorCoreVectorGathers {
  bool a = false, b = false;
};

template <Layout L, class T, class Y>
TensorCoreVectorGathers tensor_core_vector_gathers(const ImplicitGemmOperands<L, T, Y>& o,
                                                   const Conv2dProblem& pb) {
  constexpr std::int64_t vec = vector_elements_v<T>;
  auto aligned = [](const T* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  TensorCoreVectorGathers v;
  const bool w_packed =
      L == Layout::NCHW
          ? o.ws.w == 1 && o.ws.h == pb.S && o.ws.c == pb.R * pb.S && o.ws.n == std::int64_t(o.K)
          : o.ws.c == 1 && o.ws.w == pb.C && o.ws.h == pb.S * pb.C && o.ws.n == std::int64_t(o.K);
  v.a = w_packed && o.K % vec == 0 && aligned(o.w);
  v.b = L == Layout::NHWC && o.xs.c == 1 && pb.C % vec == 0 && o.xs.w % vec == 0 &&
        o.xs.h % vec == 0 && o.xs.n % vec == 0 && aligned(o.x);
  return v;
}

/// What a launch hands the kernel besides the operands: the packed A (float, 16-bit),
/// the split of K and its partial sums (in the accumulator type).
template <class T>
struct TensorCoreLaunchData {
  const T* a_pack = nullptr;
  int k_slices = 1, steps_per_slice = 0;
  accumulator_t<T>* partial = nullptr;
};

/// An NCHW problem staged channels-last (channels_last.hpp): its NCHW x and w, and the
/// copies, which take the front of the workspace.
template <class T>
struct ChannelsLastStaging {
  const T* x = nullptr;
  LogicalStrides xs;
  const T* w = nullptr;
  LogicalStrides ws;
  std::int64_t N = 0, C = 0, H = 0, W = 0, M = 0, R = 0, S = 0;
  /// w reordered too: double's 16-byte A copies, 16-bit channel runs' (M, R, S, C) rows
  bool copy_w = false;

  std::size_t x_bytes() const { return align_up(sizeof(T) * std::size_t(N * C * H * W)); }
  std::size_t w_bytes() const {
    return copy_w ? align_up(sizeof(T) * std::size_t(M * C * R * S)) : 0;
  }
  std::size_t bytes() const { return x_bytes() + w_bytes(); }
  /// The x copy's tiles: along the channels, along the pixels of an image, and its teams
  /// (one per tile of each image).
  static constexpr std::int64_t copy_tile =
      ChannelsLastCopy<T, Kokkos::DefaultHostExecutionSpace>::tile;
  std::int64_t copy_channel_tiles() const { return (C + copy_tile - 1) / copy_tile; }
  std::int64_t copy_pixel_tiles() const { return (H * W + copy_tile - 1) / copy_tile; }
  std::int64_t copy_teams() const { return N * copy_channel_tiles() * copy_pixel_tiles(); }
  /// Whether the x copy's team count fits a launch.
  bool fits_launch() const { return copy_teams() <= std::numeric_limits<int>::max(); }
  /// Whether x moves by ChannelsLastTranspose16 (16-bit, channels_last_transpose16_fits).
  bool copy_16_bytes() const {
    return sizeof(T) == 2 && channels_last_transpose16_fits(N, C, H, W);
  }

  /// The NHWC kernel's operands for NCHW operands `o`: x (and w if copied) are set by run.
  template <class Y>
  ImplicitGemmOperands<Layout::NHWC, T, Y> operands(
      const ImplicitGemmOperands<Layout::NCHW, T, Y>& o, const Conv2dProblem& pb) const {
    ImplicitGemmOperands<Layout::NHWC, T, Y> s{};
    s.map = UnrollMap<Layout::NHWC>::from(pb);
    s.xs = {H * W * C, 1, W * C, C};
    s.w = o.w;
    s.ws = copy_w ? LogicalStrides{C * R * S, 1, S * C, C} : o.ws;
    s.bias = o.bias;
    s.y = o.y;
    s.ys = o.ys;
    s.M = o.M, s.K = o.K, s.J = o.J;
    s.activation = o.activation;
    s.unpadded = o.unpadded;
    s.x_fits_int = N * C * H * W <= std::numeric_limits<int>::max();
    s.pooling = o.pooling;
    s.j_fits_int = o.j_fits_int;
    return s;
  }

  /// Enqueues the copies into `base` (bytes() bytes) and points o's x (and w) at them.
  template <class ExecSpace, class Y>
  void run(const ExecSpace& space, unsigned char* base,
           ImplicitGemmOperands<Layout::NHWC, T, Y>& o) const {
    using Copy = ChannelsLastCopy<T, ExecSpace>;
    static_assert(Copy::tile == copy_tile, "one tile for the copy and its team count");
    T* const x_copy = reinterpret_cast<T*>(base);
    // copy_teams() fits int (the caller checked fits_launch), and the 16-bit copy's
    // teams are fewer (tiles of 64).
    bool copied = false;
    if constexpr (sizeof(T) == 2) {
      if (copy_16_bytes()) {
        channels_last_transpose16<true>(space, x, x_copy, xs, N, C, H, W);
        copied = true;
      }
    }
    if (!copied) {
      const Copy copy{x, xs, x_copy, C, H, W, copy_channel_tiles(), copy_pixel_tiles()};
      Kokkos::parallel_for(
          "kcnn::conv2d::tensor_core::x_channels_last",
          Kokkos::TeamPolicy<ExecSpace>(space, static_cast<int>(copy_teams()), Copy::threads)
              .set_scratch_size(0, Kokkos::PerTeam(Copy::scratch_bytes())),
          copy);
    }
    o.x = x_copy;
    if (copy_w) {
      // (Element by element: w is small beside x, and its R*S taps are too few pixels for
      // ChannelsLastTranspose16's tiles of 64; through it, the 512-channel ResNet layer's
      // NCHW call took 0.126 ms against 0.099: H200, session 27.)
      T* const w_copy = reinterpret_cast<T*>(base + x_bytes());
      Kokkos::parallel_for(
          "kcnn::conv2d::tensor_core::w_channels_last",
          Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, M * C * R * S),
          ChannelsLastWeights<T>{w, ws, w_copy, C, R, S});
      o.w = w_copy;
    }
  }
};

/// What a launch takes for channels-last staging: a ChannelsLastStaging for NHWC kernels
/// (null: none), nothing for NCHW kernels, so that staging a kernel of another layout does
/// not compile.
template <Layout L, class T>
using StagingFor =
    std::conditional_t<L == Layout::NHWC, const ChannelsLastStaging<T>*, std::nullptr_t>;

template <class Tile, TensorCoreMath Math, bool AVec, bool BVec, Layout L, class ExecSpace, class T,
          class Y>
void tensor_core_launch_as(const ExecSpace& space, const ImplicitGemmOperands<L, T, Y>& o,
                           const TensorCoreLaunchData<T>& data, LaunchMode mode) {
  using Kernel = TensorCoreDeviceKernel<L, Tile, Math, AVec, BVec, ExecSpace, Y>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::int64_t m_blocks = (o.M + Tile::BM - 1) / Tile::BM;
  const std::int64_t league = m_blocks * ((o.J + Tile::BN - 1) / Tile::BN) * data.k_slices;
  throw_if(league > std::numeric_limits<int>::max(), op, kTensorCoreAlgoName, ": ", league,
           " tiles exceed the launch limit; split the batch");
  throw_if(Kernel::scratch_bytes() > static_cast<std::size_t>(Policy::scratch_size_max(0)), op,
           "internal: ", kTensorCoreAlgoName, " tile needs ", Kernel::scratch_bytes(),
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(0));
  if (mode == LaunchMode::Check) return;
  Policy policy(space, static_cast<int>(league), Tile::threads);
  Kokkos::parallel_for("kcnn::conv2d::tensor_core",
                       policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
                       Kernel{o, static_cast<int>(m_blocks), data.a_pack, data.k_slices,
                              data.steps_per_slice, data.partial});
  if (data.k_slices > 1)
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core_split_k_reduce",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                        std::int64_t(o.M) * o.J),
        SplitKReduce<L, T, Kernel::partial_j_major, Y>{o, data.partial, data.k_slices});
}

/// The split of K for tile `Tile` (ImplicitGemm's wave-fill rule, implicit_gemm_k_slices:
/// the slice count whose copies of the tile grid fill the GPU's team slots best; ResNet's
/// 512-channel 7x7 layer on the H100: 100 tiles of 128 x 64, 5 slices; 256 channels at
/// 14x14: 392 tiles, 2 slices) within `budget` bytes of partial sums.
struct TensorCoreSplitPlan {
  int k_slices = 1, steps_per_slice = 0;
  std::size_t partial_bytes = 0;
};

template <class Tile, Layout L, class T, class Y>
TensorCoreSplitPlan tensor_core_split_plan(const ImplicitGemmOperands<L, T, Y>& o,
                                           std::int64_t multiprocessors, std::size_t budget) {
  const int wanted = implicit_gemm_k_slices<Tile>(o, multiprocessors, budget);
  TensorCoreSplitPlan plan;
  plan.steps_per_slice = implicit_gemm_steps_per_slice<Tile>(o.K, wanted);
  plan.k_slices = implicit_gemm_nonempty_slices<Tile>(o.K, wanted);
  if (plan.k_slices > 1)
    plan.partial_bytes = static_cast<std::size_t>(plan.k_slices) * sizeof(accumulator_t<T>) *
                         std::size_t(o.M) * std::size_t(o.J);
  return plan;
}

/// The workspace bytes of tile `Tile`'s packed weights (float, 16-bit; none for double).
template <class Tile, TensorCoreMath Math>
std::size_t tensor_core_pack_bytes(std::int64_t M, std::int64_t K) {
  if constexpr (Math == TensorCoreMath::F64) {
    return 0;
  } else {
    return align_up(TensorCorePackedWeightsShape<Tile>::of(M, K).bytes());
  }
}

/// Tile `Tile` under `Math`: float packs its weights for the MMAs first
/// (PackTensorCoreWeights, rounded under TF32); K is split where the tile grid is too
/// small for the GPU. Both live in the instance's cached workspace, [staged copies][packed
/// A][partial sums], within `limit` bytes; returns their bytes. `staging` (NHWC operands
/// only): an NCHW call's channels-last copies, enqueued first. The gather variants compiled:
/// float B 16-byte (NHWC) or not; double NHWC both operands 16-byte or neither (a layer
/// with one but not the other is rare: C odd with K even, or unpacked w), NCHW A 16-byte
/// or not (B is gathered pixel-major, one element per copy).
template <class Tile, TensorCoreMath Math, Layout L, class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_tile(const ExecSpace& space, ImplicitGemmOperands<L, T, Y> o,
                                    TensorCoreVectorGathers vec, std::size_t limit, LaunchMode mode,
                                    StagingFor<L, T> staging = nullptr) {
  constexpr bool packs = Math != TensorCoreMath::F64;
  std::int64_t pack_elements = 0, pack_blocks = 0;
  if constexpr (packs) {  // (the packed layout exists for the TF32 and 16-bit tiles only)
    using Packed = TensorCorePackedWeightsShape<Tile>;
    const Packed packed = Packed::of(o.M, o.K);
    pack_elements = packed.elements();
    pack_blocks = packed.m_pad / Packed::quad_rows;
  }
  std::size_t staged_bytes = 0;
  if constexpr (L == Layout::NHWC) staged_bytes = staging ? staging->bytes() : 0;
  const std::size_t pack_bytes = tensor_core_pack_bytes<Tile, Math>(o.M, o.K);
  throw_if(staged_bytes + pack_bytes > limit, "kcnn::conv2d_forward", kTensorCoreAlgoName,
           ": the weights packed for the tensor cores take ", pack_bytes,
           " bytes of workspace, more than the limit of ", limit,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  const TensorCoreSplitPlan split = tensor_core_split_plan<Tile>(o, multiprocessor_count(space),
                                                                 limit - staged_bytes - pack_bytes);
  const std::size_t bytes = staged_bytes + pack_bytes + split.partial_bytes;

  using Acc = accumulator_t<T>;
  auto launch = [&](const T* a_pack, Acc* partial, LaunchMode m) {
    const TensorCoreLaunchData<T> d{a_pack, split.k_slices, split.steps_per_slice, partial};
    if constexpr (!packs) {
      if constexpr (L == Layout::NHWC) {
        if (vec.a && vec.b) return tensor_core_launch_as<Tile, Math, true, true>(space, o, d, m);
      } else {
        if (vec.a) return tensor_core_launch_as<Tile, Math, true, false>(space, o, d, m);
      }
    } else if constexpr (L == Layout::NHWC) {
      if (vec.b) return tensor_core_launch_as<Tile, Math, false, true>(space, o, d, m);
    }
    tensor_core_launch_as<Tile, Math, false, false>(space, o, d, m);
  };
  launch(nullptr, nullptr, LaunchMode::Check);  // every limit before anything is enqueued
  if (mode == LaunchMode::Check) return bytes;
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, bytes);
  if constexpr (L == Layout::NHWC) {
    if (staging) staging->run(space, lease.data(), o);
  }
  unsigned char* const own = lease.data() + staged_bytes;
  T* const a_pack = packs ? reinterpret_cast<T*>(own) : nullptr;
  Acc* const partial = split.k_slices > 1 ? reinterpret_cast<Acc*>(own + pack_bytes) : nullptr;
  if constexpr (packs) {
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core::pack_weights",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0, pack_elements),
        PackTensorCoreWeights<L, T, Math == TensorCoreMath::TF32>{o.map, o.w, o.ws, a_pack, o.M,
                                                                  o.K, pack_blocks});
  }
  launch(a_pack, partial, mode);
  return bytes;
}

/// Calls f(Tile{}) with the block tile (TensorCoreTiles) for element type T in layout L
/// and M filters.
template <class T, Layout L, class F>
std::size_t with_tensor_core_tile(std::int64_t M, const F& f) {
  using Tiles = TensorCoreTiles;
  if constexpr (std::is_same_v<T, double>) {
    if constexpr (L == Layout::NHWC) {
      return f(Tiles::DoubleNhwc{});
    } else {
      return f(Tiles::DoubleNchw{});
    }
  } else if constexpr (is_16bit_storage_v<T>) {
    if constexpr (L == Layout::NHWC) {
      if (M <= Tiles::Bit16NhwcSmallM<T>::BM) return f(Tiles::Bit16NhwcSmallM<T>{});
      if (M <= Tiles::Bit16NhwcMidM<T>::BM) return f(Tiles::Bit16NhwcMidM<T>{});
      return f(Tiles::Bit16NhwcLargeM<T>{});
    } else {
      if (M <= Tiles::Bit16NchwSmallM<T>::BM) return f(Tiles::Bit16NchwSmallM<T>{});
      return f(Tiles::Bit16NchwLargeM<T>{});
    }
  } else if constexpr (L == Layout::NHWC) {
    if (M <= TensorCoreTiles::FloatNhwcSmallM::BM) return f(TensorCoreTiles::FloatNhwcSmallM{});
    return f(TensorCoreTiles::FloatNhwcLargeM{});
  } else {
    if (M <= TensorCoreTiles::FloatNchwSmallM::BM) return f(TensorCoreTiles::FloatNchwSmallM{});
    return f(TensorCoreTiles::FloatNchwLargeM{});
  }
}

/// Whether a 16-bit problem's stages can be channel runs (channel_run_kernel.hpp): C a
/// multiple of the 32 taps of a stage. NCHW calls then stage w channels-last too.
template <class T>
bool tensor_core_channel_runs_fit(const Conv2dProblem& pb) {
  return is_16bit_storage_v<T> && pb.C % TensorCoreScratchRows<T>::BK == 0;
}

/// Whether NHWC operands `o` run the channel-run kernel: channel runs fit, both operands
/// take 16-byte copies (`vec`: x's channels contiguous, w packed (M, R, S, C), both
/// aligned), no fused pooling columns.
template <class T, class Y>
bool tensor_core_runs_channels(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                               const Conv2dProblem& pb, TensorCoreVectorGathers vec) {
  return tensor_core_channel_runs_fit<T>(pb) && vec.a && vec.b && !o.pooling.enabled;
}

/// The channel-run kernel on tile `Tile` (TensorCoreRunTile): K split as
/// tensor_core_split_plan decides for the tile's filter-major view; workspace [staged
/// copies][partial sums] within `limit`; returns its bytes.
template <class Tile, TensorCoreMath Math, class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_channel_runs_tile(const ExecSpace& space,
                                                 ImplicitGemmOperands<Layout::NHWC, T, Y> o,
                                                 std::size_t limit, LaunchMode mode,
                                                 const ChannelsLastStaging<T>* staging) {
  using Kernel = TensorCoreChannelRunKernel<Tile, Math, ExecSpace, Y>;
  using Policy = BoundedTeamPolicy<ExecSpace, Tile::threads, Tile::min_teams_per_sm>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::size_t staged_bytes = staging ? staging->bytes() : 0;
  throw_if(staged_bytes > limit, op, kTensorCoreAlgoName, ": the channels-last copies take ",
           staged_bytes, " bytes of workspace, more than the limit of ", limit,
           " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
  const TensorCoreSplitPlan split = tensor_core_split_plan<typename Tile::GemmView>(
      o, multiprocessor_count(space), limit - staged_bytes);
  const std::size_t bytes = staged_bytes + split.partial_bytes;
  const std::int64_t f_blocks = (o.M + Tile::BF - 1) / Tile::BF;
  const std::int64_t league = f_blocks * ((o.J + Tile::BP - 1) / Tile::BP) * split.k_slices;
  throw_if(league > std::numeric_limits<int>::max(), op, kTensorCoreAlgoName, ": ", league,
           " tiles exceed the launch limit; split the batch");
  throw_if(Kernel::scratch_bytes() > static_cast<std::size_t>(Policy::scratch_size_max(0)), op,
           "internal: ", kTensorCoreAlgoName, " tile needs ", Kernel::scratch_bytes(),
           " bytes of team scratch, more than the backend's ", Policy::scratch_size_max(0));
  if (mode == LaunchMode::Check) return bytes;
  auto lease = WorkspaceCache<ExecSpace>::acquire(space, bytes);
  if (staging) staging->run(space, lease.data(), o);
  using Acc = accumulator_t<T>;
  Acc* const partial =
      split.k_slices > 1 ? reinterpret_cast<Acc*>(lease.data() + staged_bytes) : nullptr;
  constexpr std::int64_t per_vector = 16 / sizeof(Y);
  auto whole = [&](std::int64_t v) { return v % per_vector == 0; };
  const bool y_vectors = o.ys.c == 1 && whole(o.ys.w) && whole(o.ys.h) && whole(o.ys.n) &&
                         reinterpret_cast<std::uintptr_t>(o.y) % 16 == 0;
  Policy policy(space, static_cast<int>(league), Tile::threads);
  Kokkos::parallel_for("kcnn::conv2d::tensor_core_channel_runs",
                       policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes())),
                       Kernel{o, static_cast<int>(f_blocks), split.k_slices, split.steps_per_slice,
                              partial, y_vectors});
  if (split.k_slices > 1)
    Kokkos::parallel_for(
        "kcnn::conv2d::tensor_core_split_k_reduce",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(space, 0,
                                                                        std::int64_t(o.M) * o.J),
        SplitKReduce<Layout::NHWC, T, Kernel::partial_j_major, Y>{o, partial, split.k_slices});
  return bytes;
}

/// Whether operands `o` take the channel-run kernel's wide-row tile Wide (128-byte rows:
/// C a multiple of its 64 taps) rather than Narrow: always, unless Narrow's grid fits one
/// wave of resident teams (min_teams_per_sm per multiprocessor) and Wide's does not
/// (measurements: TensorCoreTiles::RunsWideRows).
template <class Wide, class Narrow, class T, class Y>
bool tensor_core_prefers_wide_rows(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                   std::int64_t multiprocessors) {
  if (o.map.C % TensorCoreScratchRows<T, Wide::row_bytes>::BK != 0) return false;
  auto one_wave = [&](auto tile) {
    using Tile = decltype(tile);
    const std::int64_t teams =
        ((o.J + Tile::BP - 1) / Tile::BP) * ((o.M + Tile::BF - 1) / Tile::BF);
    return teams <= multiprocessors * Tile::min_teams_per_sm;
  };
  return !(one_wave(Narrow{}) && !one_wave(Wide{}));
}

/// The channel-run kernel on its tile (TensorCoreTiles::Runs, or RunsWideRows where the
/// build has the wgmma pass and tensor_core_prefers_wide_rows).
template <TensorCoreMath Math, class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_channel_runs(const ExecSpace& space,
                                            const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                            std::size_t limit, LaunchMode mode,
                                            const ChannelsLastStaging<T>* staging) {
  using Tiles = TensorCoreTiles;
  if constexpr (kBuildHasWgmmaPass) {
    if (tensor_core_prefers_wide_rows<Tiles::RunsWideRows<T>, Tiles::Runs<T>>(
            o, multiprocessor_count(space)))
      return tensor_core_launch_channel_runs_tile<Tiles::RunsWideRows<T>, Math>(space, o, limit,
                                                                                mode, staging);
  }
  return tensor_core_launch_channel_runs_tile<Tiles::Runs<T>, Math>(space, o, limit, mode, staging);
}

/// Whether NHWC operands `o` that run channels (tensor_core_runs_channels) are within the
/// TMA kernel's reach (tma_kernel.hpp): y of T packed NHWC (its tensor map is the J x M
/// matrix; `y_staged`: an NCHW call's result, written to a packed copy in the workspace
/// and moved into y by ChannelsLastTranspose16) with M a multiple of 8 (rows of 16-byte
/// multiples) and 16-byte aligned, and
/// the tensor maps' ranges: strides up to 8, the window-origin box's corners (-pad,
/// pad - (R - 1) * dilation) within [-128, 127], output pixels and extents within 32 bits,
/// x's strides within 2^40 bytes; and a driver that encodes tensor maps (CUDA 12 and
/// later).
template <class T, class Y>
bool tensor_core_tma_problem_fits(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                  const Conv2dProblem& pb, bool y_staged = false) {
  if constexpr (!std::is_same_v<T, Y> || !is_16bit_storage_v<T>) {
    (void)o, (void)pb, (void)y_staged;
    return false;
  } else {
    const UnrollMap<Layout::NHWC>& m = o.map;
    const bool y_packed =
        o.M % 8 == 0 && (y_staged ? channels_last_transpose16_fits(pb.N, o.M, m.P, m.Q)
                                  : o.ys.c == 1 && o.ys.w == o.M && o.ys.h == m.Q * o.M &&
                                        o.ys.n == m.P * m.Q * o.M &&
                                        reinterpret_cast<std::uintptr_t>(o.y) % 16 == 0);
    auto corner = [](std::int64_t v) { return v >= -128 && v <= 127; };
    const bool box = corner(-m.pad_w) && corner(-m.pad_h) &&
                     corner(m.pad_w - (m.S - 1) * m.dilation_w) &&
                     corner(m.pad_h - (m.R - 1) * m.dilation_h);
    constexpr std::int64_t int_max = std::numeric_limits<int>::max();
    const bool ranges = o.J <= int_max && pb.N <= int_max && pb.H <= int_max && pb.W <= int_max &&
                        o.xs.n < (std::int64_t(1) << 39) / 2 &&
                        (m.S - 1) * m.dilation_w <= 0xFFFF && (m.R - 1) * m.dilation_h <= 0xFFFF;
    // (The driver takes no tensor whose address is not 16-byte aligned: an unmanaged View
    // of a 16-bit type may start anywhere even.)
    const bool aligned = reinterpret_cast<std::uintptr_t>(o.x) % 16 == 0 &&
                         reinterpret_cast<std::uintptr_t>(o.w) % 16 == 0;
    return y_packed && box && ranges && aligned && m.stride_h <= 8 && m.stride_w <= 8 &&
           tma_available();
  }
}

/// The halo kernel's tiles on tile `Tile` for operands `o` of N images.
template <class Tile, class T, class Y>
std::int64_t tensor_core_halo_tiles(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                    std::int64_t N) {
  const UnrollMap<Layout::NHWC>& m = o.map;
  return N * ((m.P + Tile::BH - 1) / Tile::BH) * ((m.Q + Tile::BW - 1) / Tile::BW) *
         ((o.M + Tile::BF - 1) / Tile::BF);
}

/// Whether operands `o` within the TMA kernel's reach (tensor_core_tma_problem_fits) are
/// also within the halo kernel's (halo_kernel.hpp): a stride-1 undilated filter whose
/// halo (Tile::BH + R - 1 rows of 8 + S - 1 pixels) fits the tile's, C a multiple of 64
/// (a halo pixel is 128 bytes), x packed NHWC (its tensor map's strides), and the tiles
/// within 32 bits.
template <class Tile, class T, class Y>
bool tensor_core_halo_problem_fits(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                   const Conv2dProblem& pb, bool y_staged = false) {
  const UnrollMap<Layout::NHWC>& m = o.map;
  const bool filter = m.stride_h == 1 && m.stride_w == 1 && m.dilation_h == 1 &&
                      m.dilation_w == 1 &&
                      (Tile::BH + m.R - 1) * (Tile::BW + m.S - 1) <= Tile::halo_pixels;
  const bool x_packed = m.C % 64 == 0 && o.xs.c == 1 && o.xs.w == m.C && o.xs.h == m.W * m.C &&
                        o.xs.n == m.H * m.W * m.C;
  return filter && x_packed &&
         tensor_core_halo_tiles<Tile>(o, pb.N) <= std::numeric_limits<int>::max() &&
         tensor_core_tma_problem_fits(o, pb, y_staged);
}

/// The share of the halo tiles' output pixels that lie in the output (the rest is the
/// blocks' overhang past P and Q).
template <class Tile>
double tensor_core_halo_pixel_use(std::int64_t P, std::int64_t Q) {
  const std::int64_t covered =
      (P + Tile::BH - 1) / Tile::BH * Tile::BH * ((Q + Tile::BW - 1) / Tile::BW * Tile::BW);
  return double(P * Q) / double(covered);
}

/// Whether they take it: also a build with the sm_90a pass (the kernel's TMA needs
/// sm_90, its speed wgmma).
template <class T, class Y>
bool tensor_core_tma_fits(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                          const Conv2dProblem& pb, bool y_staged = false) {
  return kBuildHasWgmmaPass && tensor_core_tma_problem_fits(o, pb, y_staged);
}

/// The TMA kernel's tile for operands `o` (measurements: TensorCoreTiles::TmaWideRows and
/// TmaHalo): the halo kernel's where it fits and pays (tensor_core_tma_tile); else
/// the 128 x 128 tile where M > 64, the activation is Identity or ReLU (its registers
/// have no room for the others', tma_kernel.hpp) and its grid fills 90% of a wave (teams
/// resident at its launch bounds on every multiprocessor); else 128-byte rows (C a multiple of 64)
/// where the reduction takes at most 9 of their stages, or the 128 x 64 tile's grid takes
/// more than a wave, or at most half of one (K then splits: the harness ran both tiles'
/// splits alike, 0.0368 / 0.0362 ms on the 512-channel layer, but in kcnn the 128 x 64
/// split kernel spills at its 128 registers and the 64 x 64 one does not, ptxas, session
/// 27); else the 128 x 64 tile.
enum class TensorCoreTmaTileId { WideRows, Tall, Square, Halo };

template <class Tile>
std::int64_t tensor_core_tma_teams(std::int64_t J, std::int64_t M) {
  return ((J + Tile::BP - 1) / Tile::BP) * ((M + Tile::BF - 1) / Tile::BF);
}

template <class T, class Y>
TensorCoreTmaTileId tensor_core_tma_tile(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                         const Conv2dProblem& pb, bool y_staged,
                                         std::int64_t multiprocessors) {
  using Halo = TensorCoreTiles::TmaHalo<T>;
  // The halo tile where it fits, its blocks' pixels are at least 3/4 in the output
  // (TensorCoreTiles::TmaHalo: it led at 7/8 and 0.77, lost at 0.38) and its tiles fill a
  // wave's multiprocessors.
  if (tensor_core_halo_problem_fits<Halo>(o, pb, y_staged) &&
      4 * tensor_core_halo_pixel_use<Halo>(o.map.P, o.map.Q) >= 3 &&
      tensor_core_halo_tiles<Halo>(o, pb.N) >= multiprocessors)
    return TensorCoreTmaTileId::Halo;
  using Square = TensorCoreTiles::TmaSquareTile<T>;
  using Tall = TensorCoreTiles::TmaTallTile<T>;
  using Wide = TensorCoreTiles::TmaWideRows<T>;
  const bool cheap_activation =
      o.activation == Activation::Identity || o.activation == Activation::ReLU;
  if (o.M > 64 && cheap_activation &&
      10 * tensor_core_tma_teams<Square>(o.J, o.M) >=
          9 * multiprocessors * Square::min_teams_per_sm)
    return TensorCoreTmaTileId::Square;
  const std::int64_t tall_teams = tensor_core_tma_teams<Tall>(o.J, o.M);
  const std::int64_t tall_slots = multiprocessors * Tall::min_teams_per_sm;
  if (o.map.C % TensorCoreScratchRows<T, Wide::row_bytes>::BK == 0 &&
      (o.K <= 9 * TensorCoreScratchRows<T, Wide::row_bytes>::BK || tall_teams > tall_slots ||
       2 * tall_teams <= tall_slots))
    return TensorCoreTmaTileId::WideRows;
  return TensorCoreTmaTileId::Tall;
}

/// The TMA kernel's league for `tiles` output tiles (unsplit K): at most the teams
/// resident at the tile's launch bounds (min_teams_per_sm on every multiprocessor), each
/// walking tiles league-size apart, so that a team's set-up (its barriers and the tensor
/// maps' acquire fences, a few microseconds) is paid once rather than per tile: the
/// stand-alone harness ran the 64-channel ResNet layer's 3,136 tiles of 64 x 64 in 0.0545
/// ms without those fences and 0.0714 with them, a team per tile (H200, session 27,
/// perf_tests/data/h200-2026-11-28-s27-harness-acquire.txt).
template <class Tile, class ExecSpace>
std::int64_t tensor_core_tma_league(std::int64_t tiles, const ExecSpace& space) {
  return std::min<std::int64_t>(tiles, multiprocessor_count(space) * Tile::min_teams_per_sm);
}

/// The TMA kernel's split of K: up to 3 slices where the grid fills at most half the
/// resident teams' slots (the harness: the 512-channel 7x7 layer's 200 teams of 64 x 64,
/// 0.0528 ms whole, 0.0411 in 2 slices, 0.0362 in 3, 0.0453 in 4), each slice at least 16
/// stages, the partial sums within `budget` bytes.
template <class Tile>
int tensor_core_tma_k_slices(std::int64_t teams, int steps, std::int64_t multiprocessors,
                             std::size_t budget) {
  constexpr int most = 3, fewest_steps = 16;
  const std::int64_t slots = multiprocessors * Tile::min_teams_per_sm;
  int slices =
      static_cast<int>(std::min<std::int64_t>(most, slots / std::max<std::int64_t>(teams, 1)));
  auto partial_bytes = [&](int k) {
    return std::size_t(teams) * std::size_t(k) * Tile::BP * Tile::BF * sizeof(float);
  };
  while (slices > 1 && (steps / slices < fewest_steps || partial_bytes(slices) > budget))
    --slices;
  return std::max(slices, 1);
}

/// The channels-last copies a staged NCHW call of the TMA or halo kernel keeps in its
/// workspace (x, w if copied, y's packed copy); none for an NHWC call.
template <class T, class Y>
std::size_t tensor_core_tma_copy_bytes(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o,
                                       const ChannelsLastStaging<T>* staging) {
  return staging ? staging->bytes() + align_up(sizeof(T) * std::size_t(o.J * o.M)) : 0;
}

/// The workspace of a TMA or halo kernel's call, [staged copies][y's packed copy][extra
/// bytes]: leased under LaunchMode::Run and held until destroyed (every kernel of the call
/// is enqueued first: another call on the instance may not take it before), the
/// channels-last copies made and o's x and w pointed at them; under Check, the same
/// pointers at a stand-in address of the workspace's alignment. Throws where the copies
/// exceed `limit`.
template <class ExecSpace, class T>
struct TensorCoreTmaWorkspace {
  std::optional<typename WorkspaceCache<ExecSpace>::Lease> lease;
  std::size_t bytes = 0;           ///< in all
  unsigned char* extra = nullptr;  ///< the extra bytes (after the copies)
  T* y_copy = nullptr;             ///< y's packed copy (staged calls), else nullptr

  TensorCoreTmaWorkspace(const ExecSpace& space, ImplicitGemmOperands<Layout::NHWC, T, T>& o,
                         std::size_t limit, LaunchMode mode, const ChannelsLastStaging<T>* staging,
                         std::size_t extra_bytes) {
    const std::size_t copies = tensor_core_tma_copy_bytes(o, staging);
    throw_if(copies > limit, "kcnn::conv2d_forward", kTensorCoreAlgoName,
             ": the channels-last copies of x, w and y take ", copies,
             " bytes of workspace, more than the limit of ", limit,
             " (Conv2dParams::workspace_limit_bytes, kcnn::set_workspace_limit)");
    bytes = copies + extra_bytes;
    if (mode == LaunchMode::Run && bytes > 0)
      lease.emplace(WorkspaceCache<ExecSpace>::acquire(space, bytes));
    unsigned char* const base =
        lease ? lease->data() : reinterpret_cast<unsigned char*>(std::uintptr_t(kScratchAlign));
    extra = base + copies;
    if (staging) {
      y_copy = reinterpret_cast<T*>(base + staging->bytes());
      if (mode == LaunchMode::Run) {
        staging->run(space, base, o);
      } else {  // where run will put them
        o.x = reinterpret_cast<const T*>(base);
        if (staging->copy_w) o.w = reinterpret_cast<const T*>(base + staging->x_bytes());
      }
    }
  }
};

/// A 4-D NHWC tensor as its tensor maps take it: extents (channels, columns, rows, images)
/// and the byte strides of a column, a row and an image.
struct TmaNhwcShape {
  std::uint64_t extents[4];
  std::uint64_t byte_strides[3];
};

/// x's shape (through its strides) for operands `o` of N images.
template <class T, class Y>
TmaNhwcShape tma_x_shape(const ImplicitGemmOperands<Layout::NHWC, T, Y>& o, std::int64_t N) {
  const UnrollMap<Layout::NHWC>& m = o.map;
  return {{std::uint64_t(m.C), std::uint64_t(m.W), std::uint64_t(m.H), std::uint64_t(N)},
          {sizeof(T) * std::uint64_t(o.xs.w), sizeof(T) * std::uint64_t(o.xs.h),
           sizeof(T) * std::uint64_t(o.xs.n)}};
}

/// The TMA kernel on tile `Tile`: its tensor maps encoded on the host and passed as the
/// launch's grid-constant parameter (launch_grid_constant_teams), the workspace within
/// `limit`, [staged copies][y's packed copy][partial sums]; returns its bytes. `staging`
/// (an NCHW call, tensor_core_launch_nchw): x and w are copied channels-last first, the
/// kernel writes a packed NHWC copy of y and ChannelsLastTranspose16 moves it into y.
/// Also under LaunchMode::Check the maps are encoded (the staged copies at a stand-in
/// address of the workspace's alignment), so that one the driver refuses fails before
/// anything is enqueued.
template <class Tile, TensorCoreMath Math, class ExecSpace, class T>
std::size_t tensor_core_launch_tma_tile(const ExecSpace& space,
                                        ImplicitGemmOperands<Layout::NHWC, T, T> o,
                                        const Conv2dProblem& pb, std::size_t limit, LaunchMode mode,
                                        const ChannelsLastStaging<T>* staging) {
  using Kernel = TensorCoreTmaKernel<Tile, Math, false>;
  using SplitKernel = TensorCoreTmaKernel<Tile, Math, true>;
  using Rows = TensorCoreScratchRows<T, Tile::row_bytes>;
  constexpr const char* op = "kcnn::conv2d_forward";
  const std::size_t copy_bytes = tensor_core_tma_copy_bytes(o, staging);
  const std::int64_t teams = tensor_core_tma_teams<Tile>(o.J, o.M);
  const int steps = o.K / Rows::BK;
  const int slices = Tile::split_k && teams <= kTmaMostSplitTeams && copy_bytes <= limit
                         ? tensor_core_tma_k_slices<Tile>(teams, steps, multiprocessor_count(space),
                                                          limit - copy_bytes)
                         : 1;
  const int per_slice = (steps + slices - 1) / slices;
  const int k_slices = (steps + per_slice - 1) / per_slice;  // none empty
  const std::size_t partial_bytes =
      k_slices > 1 ? std::size_t(teams) * k_slices * Tile::BP * Tile::BF * sizeof(float) : 0;
  throw_if(teams * k_slices > std::numeric_limits<int>::max(), op, kTensorCoreAlgoName, ": ",
           teams * k_slices, " tiles exceed the launch limit; split the batch");

  TensorCoreTmaWorkspace<ExecSpace, T> work(space, o, limit, mode, staging, partial_bytes);
  T* const y_copy = work.y_copy;

  constexpr bool bf16 = Math == TensorCoreMath::BF16;
  constexpr TmaSwizzle rows = Tile::row_bytes == 128 ? TmaSwizzle::Bytes128 : TmaSwizzle::Bytes64;
  const UnrollMap<Layout::NHWC>& m = o.map;
  TmaMaps tma;
  const TmaNhwcShape x_shape = tma_x_shape(o, pb.N);
  const bool encoded =
      tma_encode_im2col_nhwc<bf16>(tma.x, o.x, x_shape.extents, x_shape.byte_strides, int(m.pad_w),
                                   int(m.pad_h), int((m.S - 1) * m.dilation_w + 1),
                                   int((m.R - 1) * m.dilation_h + 1), int(m.stride_w),
                                   int(m.stride_h), Rows::BK, Tile::BP, rows) &&
      tma_encode_matrix<bf16>(tma.w, o.w, std::uint64_t(o.M), std::uint64_t(o.K),
                              sizeof(T) * std::uint64_t(o.K), Tile::BF, Rows::BK, rows) &&
      tma_encode_matrix<bf16>(tma.y, staging ? y_copy : o.y, std::uint64_t(o.J), std::uint64_t(o.M),
                              sizeof(T) * std::uint64_t(o.M), Tile::BP, 64, TmaSwizzle::Bytes128);
  throw_if(!encoded, op, "internal: ", kTensorCoreAlgoName,
           ": the CUDA driver refused a tensor map of this problem");
  if (mode == LaunchMode::Check) return work.bytes;

  TensorCoreTmaGeometry geo;
  geo.M = o.M, geo.C = int(m.C), geo.S = int(m.S);
  geo.Q = int(m.Q), geo.PQ = int(m.P * m.Q);
  geo.stride_h = int(m.stride_h), geo.stride_w = int(m.stride_w);
  geo.pad_h = int(m.pad_h), geo.pad_w = int(m.pad_w);
  geo.dilation_h = int(m.dilation_h), geo.dilation_w = int(m.dilation_w);
  geo.steps = steps;
  const int f_blocks = static_cast<int>((o.M + Tile::BF - 1) / Tile::BF);
  auto launch = [&](auto kernel, int league) {
    kernel.bias = o.bias;
    kernel.activation = o.activation;
    kernel.geo = geo;
    kernel.f_blocks = f_blocks;
    kernel.tiles = static_cast<int>(teams);
    using K = decltype(kernel);
    launch_grid_constant_teams<Tile::threads, Tile::min_teams_per_sm, K::scratch_bytes()>(
        space, "kcnn::conv2d::tensor_core_tma", league, K::scratch_bytes(), kernel, tma);
  };
  bool launched = false;
  if constexpr (Tile::split_k) {
    if (k_slices > 1) {  // a team per (tile, slice): the split's grids are small
      const TmaSplitCounters<ExecSpace> counters(space);
      SplitKernel kernel{};
      kernel.k_slices = k_slices;
      kernel.steps_per_slice = per_slice;
      kernel.partial = reinterpret_cast<float*>(work.extra);
      kernel.counters = counters.data();
      launch(kernel, static_cast<int>(teams * k_slices));
      launched = true;
    }
  }
  if (!launched) {
    // At most the teams resident at the tile's launch bounds, each walking tiles
    // (tensor_core_tma_league).
    Kernel kernel{};
    kernel.k_slices = 1;
    kernel.steps_per_slice = steps;
    launch(kernel, static_cast<int>(tensor_core_tma_league<Tile>(teams, space)));
  }
  if (staging)  // y's packed copy into y, through y's strides
    channels_last_transpose16<false>(space, static_cast<const T*>(y_copy), o.y, o.ys, pb.N, o.M,
                                     m.P, m.Q);
  return work.bytes;
}

/// The halo kernel on tile `Tile` (halo_kernel.hpp): its tensor maps (x's halo box, w's
/// matrix, y's box) the launch's grid-constant parameter (launch_grid_constant_teams),
/// the workspace within `limit` as the TMA kernel's ([staged copies][y's packed copy],
/// tensor_core_tma_workspace); returns its bytes. Under LaunchMode::Check the maps are
/// encoded too.
template <class Tile, TensorCoreMath Math, class ExecSpace, class T>
std::size_t tensor_core_launch_halo_tile(const ExecSpace& space,
                                         ImplicitGemmOperands<Layout::NHWC, T, T> o,
                                         const Conv2dProblem& pb, std::size_t limit,
                                         LaunchMode mode, const ChannelsLastStaging<T>* staging) {
  using Kernel = TensorCoreHaloKernel<Tile, Math>;
  constexpr const char* op = "kcnn::conv2d_forward";
  TensorCoreTmaWorkspace<ExecSpace, T> work(space, o, limit, mode, staging, 0);

  const UnrollMap<Layout::NHWC>& m = o.map;
  constexpr bool bf16 = Math == TensorCoreMath::BF16;
  TensorCoreHaloGeometry geo;
  geo.M = o.M, geo.C = int(m.C), geo.R = int(m.R), geo.S = int(m.S);
  geo.pad_h = int(m.pad_h), geo.pad_w = int(m.pad_w);
  geo.halo_cols = Tile::BW + geo.S - 1;
  geo.p_blocks = int((m.P + Tile::BH - 1) / Tile::BH);
  geo.q_blocks = int((m.Q + Tile::BW - 1) / Tile::BW);
  geo.f_blocks = int((o.M + Tile::BF - 1) / Tile::BF);
  TmaMaps tma;
  const TmaNhwcShape x_shape = tma_x_shape(o, pb.N);
  const int halo_box[3] = {TensorCoreScratchRows<T, 128>::BK, geo.halo_cols, Tile::BH + geo.R - 1};
  const std::uint64_t y_extents[4] = {std::uint64_t(o.M), std::uint64_t(m.Q), std::uint64_t(m.P),
                                      std::uint64_t(pb.N)};
  const std::uint64_t y_strides[3] = {sizeof(T) * std::uint64_t(o.M),
                                      sizeof(T) * std::uint64_t(m.Q * o.M),
                                      sizeof(T) * std::uint64_t(m.P * m.Q * o.M)};
  const int y_box[3] = {64, Tile::BW, Tile::BH};
  const bool encoded =
      tma_encode_nhwc_box<bf16>(tma.x, o.x, x_shape.extents, x_shape.byte_strides, halo_box) &&
      tma_encode_matrix<bf16>(tma.w, o.w, std::uint64_t(o.M), std::uint64_t(o.K),
                              sizeof(T) * std::uint64_t(o.K), Tile::BF,
                              TensorCoreScratchRows<T, 128>::BK, TmaSwizzle::Bytes128) &&
      tma_encode_nhwc_box<bf16>(tma.y, work.y_copy ? work.y_copy : o.y, y_extents, y_strides,
                                y_box);
  throw_if(!encoded, op, "internal: ", kTensorCoreAlgoName,
           ": the CUDA driver refused a tensor map of this problem");
  if (mode == LaunchMode::Check) return work.bytes;

  // A team per tile (halo_kernel.hpp says why); tensor_core_halo_problem_fits bounded
  // the count to int.
  const std::int64_t tiles = pb.N * geo.p_blocks * geo.q_blocks * geo.f_blocks;
  const Kernel kernel{o.bias, o.activation, geo};
  launch_grid_constant_teams<Tile::threads, Tile::min_teams_per_sm, Kernel::scratch_bytes()>(
      space, "kcnn::conv2d::tensor_core_halo", static_cast<int>(tiles), Kernel::scratch_bytes(),
      kernel, tma);
  if (staging)  // y's packed copy into y, through y's strides
    channels_last_transpose16<false>(space, static_cast<const T*>(work.y_copy), o.y, o.ys, pb.N,
                                     o.M, m.P, m.Q);
  return work.bytes;
}

/// The TMA kernel on its tile (tensor_core_tma_tile).
template <TensorCoreMath Math, class ExecSpace, class T>
std::size_t tensor_core_launch_tma(const ExecSpace& space,
                                   const ImplicitGemmOperands<Layout::NHWC, T, T>& o,
                                   const Conv2dProblem& pb, std::size_t limit, LaunchMode mode,
                                   const ChannelsLastStaging<T>* staging) {
  using Tiles = TensorCoreTiles;
  switch (tensor_core_tma_tile(o, pb, staging != nullptr, multiprocessor_count(space))) {
    case TensorCoreTmaTileId::Halo:
      return tensor_core_launch_halo_tile<Tiles::TmaHalo<T>, Math>(space, o, pb, limit, mode,
                                                                   staging);
    case TensorCoreTmaTileId::Square:
      return tensor_core_launch_tma_tile<Tiles::TmaSquareTile<T>, Math>(space, o, pb, limit, mode,
                                                                        staging);
    case TensorCoreTmaTileId::WideRows:
      return tensor_core_launch_tma_tile<Tiles::TmaWideRows<T>, Math>(space, o, pb, limit, mode,
                                                                      staging);
    case TensorCoreTmaTileId::Tall:
      break;
  }
  return tensor_core_launch_tma_tile<Tiles::TmaTallTile<T>, Math>(space, o, pb, limit, mode,
                                                                  staging);
}

/// Launches operands `o` (layout L) under arithmetic Math on its tile.
template <TensorCoreMath Math, Layout L, class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_math(const ExecSpace& space, const ImplicitGemmOperands<L, T, Y>& o,
                                    TensorCoreVectorGathers vec, std::size_t limit, LaunchMode mode,
                                    StagingFor<L, T> staging) {
  return with_tensor_core_tile<T, L>(o.M, [&](auto tile) {
    return tensor_core_launch_tile<decltype(tile), Math>(space, o, vec, limit, mode, staging);
  });
}

template <Layout L, class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_operands(const ExecSpace& space,
                                        const ImplicitGemmOperands<L, T, Y>& o,
                                        TensorCoreVectorGathers vec, const Conv2dProblem& pb,
                                        LaunchMode mode, StagingFor<L, T> staging = nullptr) {
  const std::size_t limit = pb.workspace_limit_bytes;
  if constexpr (std::is_same_v<T, double>) {
    return tensor_core_launch_math<TensorCoreMath::F64>(space, o, vec, limit, mode, staging);
  } else if constexpr (is_16bit_storage_v<T>) {
    constexpr TensorCoreMath math = tensor_core_16bit_math_v<T>;
    if constexpr (L == Layout::NHWC) {
      if (tensor_core_runs_channels(o, pb, vec)) {
        if constexpr (std::is_same_v<T, Y>) {
          // staged: x and w copied channels-last (w: channel runs copy it) and y from a
          // packed copy, where the copies fit the workspace (else no copy of y: the
          // channel-run kernel writes y through its strides)
          const bool staged_fits =
              !staging ||
              (staging->copy_w &&
               staging->bytes() + align_up(sizeof(T) * std::size_t(o.J * o.M)) <= limit);
          if (staged_fits && tensor_core_tma_fits(o, pb, staging != nullptr))
            return tensor_core_launch_tma<math>(space, o, pb, limit, mode, staging);
        }
        return tensor_core_launch_channel_runs<math>(space, o, limit, mode, staging);
      }
    }
    return tensor_core_launch_math<math>(space, o, vec, limit, mode, staging);
  } else {
    if (pb.math == MathMode::TF32x3)
      return tensor_core_launch_math<TensorCoreMath::TF32x3>(space, o, vec, limit, mode, staging);
    return tensor_core_launch_math<TensorCoreMath::TF32>(space, o, vec, limit, mode, staging);
  }
}

/// Whether an NCHW problem runs staged channels-last (channels_last.hpp): where the NHWC
/// kernel then gathers 16 bytes at a time (C a multiple of a vector) and each element of
/// x feeds R*S > 1 taps; 1x1 layers and odd channel counts gain less from the NHWC
/// gathers than the copy of x costs (H100, TF32: pointwise 256 -> 64 at 56x56 0.43 ms
/// staged against 0.29 for the NCHW kernel; TUNING.md, session 14).
template <class T>
bool tensor_core_stages_channels_last(const Conv2dProblem& pb) {
  return pb.R * pb.S > 1 && pb.C % vector_elements_v<T> == 0;
}

/// NCHW operands `o` staged channels-last where that pays
/// (tensor_core_stages_channels_last) and the copies and the NHWC tile's packed weights
/// fit the workspace limit; else the NCHW kernel, whose gathers need no copy. Returns
/// the workspace bytes.
template <class ExecSpace, class T, class Y>
std::size_t tensor_core_launch_nchw(const ExecSpace& space,
                                    const ImplicitGemmOperands<Layout::NCHW, T, Y>& o,
                                    const Conv2dProblem& pb, LaunchMode mode) {
  constexpr std::int64_t vec_elements = vector_elements_v<T>;
  ChannelsLastStaging<T> staging;
  staging.x = o.x, staging.xs = o.xs, staging.w = o.w, staging.ws = o.ws;
  staging.N = pb.N, staging.C = pb.C, staging.H = pb.H, staging.W = pb.W;
  staging.M = pb.M, staging.R = pb.R, staging.S = pb.S;
  // double: w reordered for the 16-byte A copies; 16-bit channel runs read w packed
  // (M, R, S, C).
  const bool runs = tensor_core_channel_runs_fit<T>(pb);
  staging.copy_w = std::is_same_v<T, double> || runs;
  constexpr TensorCoreMath packing = std::is_same_v<T, double> ? TensorCoreMath::F64
                                     : is_16bit_storage_v<T>   ? tensor_core_16bit_math_v<T>
                                                               : TensorCoreMath::TF32;
  const std::size_t pack_bytes =
      runs ? 0 : with_tensor_core_tile<T, Layout::NHWC>(pb.M, [&](auto tile) {
        return tensor_core_pack_bytes<decltype(tile), packing>(o.M, o.K);
      });
  if (tensor_core_stages_channels_last<T>(pb) && staging.fits_launch() &&
      staging.bytes() + pack_bytes <= pb.workspace_limit_bytes) {
    // The copies are packed NHWC in an aligned workspace and C is a multiple of a
    // vector (so is K): 16-byte gathers of both.
    const TensorCoreVectorGathers vec{staging.copy_w && o.K % vec_elements == 0, true};
    return tensor_core_launch_operands(space, staging.operands(o, pb), vec, pb, mode, &staging);
  }
  return tensor_core_launch_operands(space, o, tensor_core_vector_gathers(o, pb), pb, mode);
}

/// Whether TensorCoreGemm applies pb's pooling itself on T tensors: the few-channel
/// kernels' 2x2 and 4x4 windows at their stride.
template <class T>
bool tensor_core_fuses_pool(const Conv2dProblem& pb) {
  return tensor_core_few_channels_fit<T>(pb);
}

/// Runs (or with LaunchMode::Check only plans and checks) ConvAlgo::TensorCoreGemm; `pb`
/// has been validated against the Views and has a pooling only where the algorithm
/// fuses it (tensor_core_fuses_pool; otherwise dispatch pools in a second pass). Needs a
/// CUDA build for a GPU with the sm_80 tensor cores; float tensors with MathMode::TF32
/// or ::TF32x3 (Strict float is the other algorithms' work), double tensors (IEEE fp64
/// products), half_t and kcnn::bfloat16 tensors (exact products, float sums, one
/// rounding at the store). 16-bit tensors with at most 4 input channels and 16 filters at
/// unit stride and dilation run the few-channel kernel (few_channels_kernel.hpp, which
/// fuses 2x2 and 4x4 pooling at their stride; with one channel and filters at most 9
/// wide its single-channel sibling, single_channel_kernel.hpp); those whose channel
/// count is a multiple of 32 the channel-run kernel (channel_run_kernel.hpp); other
/// 16-bit tensors the generic one.
/// Returns the workspace bytes (within pb.workspace_limit_bytes): the few-channel
/// kernels' weights in fragment order; NCHW's channels-last
/// copy of x where it is staged (and of w: double, 16-bit channel runs; and of y: the
/// TMA kernel on Hopper), the packed
/// weights of float and of 16-bit outside channel runs (M rounded up to the block tile, K
/// to 16 taps (float) or 32 (16-bit)) and, where K is split, the slices' partial sums
/// (slices x M x N*P*Q accumulators).
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_tensor_core(const ExecSpace& space, const XView& x, const WView& w,
                               const BView& bias, const YView& y, const Conv2dProblem& pb,
                               LaunchMode mode = LaunchMode::Run) {
  using T = view_scalar_t<XView>;
  constexpr const char* op = "kcnn::conv2d_forward";
  throw_if(!has_tensor_cores_v<ExecSpace>, op, kTensorCoreAlgoName,
           " needs NVIDIA tensor cores (a CUDA build for sm_80 or newer); the ", ExecSpace::name(),
           " backend of this build has none; use another algorithm");
  throw_if(ElementTraits<T>::kind == ElementKind::Float32 && pb.math == MathMode::Strict, op,
           kTensorCoreAlgoName,
           " computes float tensors with TF32 products: it needs params.math = MathMode::TF32 or "
           "MathMode::TF32x3 (MathMode::Strict is the other algorithms')");
  std::size_t workspace = 0;
  if constexpr (has_tensor_cores_v<ExecSpace>) {
    if constexpr (is_16bit_storage_v<T> && std::is_same_v<T, view_scalar_t<YView>>) {
      if (tensor_core_few_channels_fit<T>(pb)) {
        // Unpooled, where an image's offsets pass 32 bits: the implicit GEMM below.
        const bool offsets_fit =
            pb.layout == Layout::NCHW
                ? few_channels_image_offsets_fit(pb, logical_strides<Layout::NCHW>(x),
                                                 logical_strides<Layout::NCHW>(y))
                : few_channels_image_offsets_fit(pb, logical_strides<Layout::NHWC>(x),
                                                 logical_strides<Layout::NHWC>(y));
        if (pb.has_pool || offsets_fit)
          return pb.layout == Layout::NCHW
                     ? tensor_core_launch_few_channels<Layout::NCHW>(space, x, w, bias, y, pb, mode)
                     : tensor_core_launch_few_channels<Layout::NHWC>(space, x, w, bias, y, pb,
                                                                     mode);
      }
    }
    throw_if(pb.has_pool, op, "internal: ", kTensorCoreAlgoName,
             " handed a pooling it does not fuse");
    if (pb.layout == Layout::NCHW) {
      workspace = tensor_core_launch_nchw(
          space, implicit_gemm_operands<Layout::NCHW>(x, w, bias, y, pb, kTensorCoreAlgoName), pb,
          mode);
    } else {
      const auto o = implicit_gemm_operands<Layout::NHWC>(x, w, bias, y, pb, kTensorCoreAlgoName);
      workspace =
          tensor_core_launch_operands(space, o, tensor_core_vector_gathers(o, pb), pb, mode);
    }
  } else {
    (void)space, (void)x, (void)w, (void)bias, (void)y, (void)mode;
  }
  return workspace;
}

}  // namespace kcnn::Impl
