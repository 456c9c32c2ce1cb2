// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/winograd/winograd.hpp
/// \brief ConvAlgo::Winograd: 3 x 3, stride-1, undilated convolutions through Winograd's
///        minimal filtering F(m x m, 3 x 3), m = 2 or 4 (transforms.hpp).
///
/// The output is cut into m x m tiles t (over images, tile rows, tile columns; edge tiles
/// are cut off at the store). With alpha = m + 2 and xi one of the alpha^2 transform-domain
/// positions, the convolution becomes alpha^2 independent GEMMs
///     Z[xi](k, t) = sum_c U[xi](k, c) * V[xi](c, t)
/// between the transformed filters U = G g G^T and the transformed input patches
/// V = B^T d B, followed by the output transform y_tile = A^T Z A. A 3 x 3 layer then
/// takes alpha^2 / (9 m^2) of the direct convolution's multiplies: 0.44x with F(2x2),
/// 0.25x with F(4x4).
///
/// Element types: the transforms and GEMMs compute in the element type's compute type
/// (float for float and the 16-bit types, double for double); bias and activation are
/// applied to the transformed output, which is rounded once at the store.
///
/// Execution (model: oneDNN's and Lavin's blocked pipelines):
///  - The filters are transformed on every call (WinogradFilterTransform, alpha^2 M C
///    values in the workspace), or once by kcnn::WinogradFilters (winograd_filters.hpp).
///  - Host backends (host_blocks.hpp): the tiles are processed in blocks sized for the
///    caches; a thread takes a block (or, with fewer blocks than threads and a large U,
///    a part of a block's filters), transforms its patches into its own slot of the
///    workspace, runs the alpha^2 GEMMs on a register-blocked micro-kernel and
///    transforms the products into y. Nothing transform-domain but U leaves the thread's
///    caches.
///  - CUDA, float tensors: F(2x2) in one fused kernel (device_fused.hpp: the input
///    transform in the GEMMs' tile loader, the output transform, bias and activation in
///    their epilogue; only U is in the workspace).
///  - Device backends otherwise (double and 16-bit tensors, a forced F(4x4), or
///    WinogradTuning::device_fused off): the staged pipeline, per chunk of tiles an
///    input-transform kernel, the alpha^2 GEMMs (cuBLAS, strict arithmetic) and an
///    output-transform kernel with bias and activation, in the workspace.
///
/// Accuracy: the transforms' constants enlarge the rounding error (Barabasz et al.
/// 2018); the bound each tile meets and the tile choice it sets are at
/// kWinogradF4MaxChannels below (measured; test_conv2d_winograd.cpp checks the bound).
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "../../arch/device_traits.hpp"
#include "../../arch/grid_constant_launch.hpp"
#include "../../arch/host_simd.hpp"
#include "../../blas/gemm.hpp"
#include "../../common/element_traits.hpp"
#include "../../common/index_math.hpp"
#include "../../common/problem.hpp"
#include "../../common/tensor_access.hpp"
#include "../../common/view_checks.hpp"
#include "../../common/workspace_cache.hpp"
#include "../../epilogue/bias_activation.hpp"
#include "device_fused.hpp"
#include "host_blocks.hpp"
#include "kernels.hpp"
#include "transforms.hpp"

namespace kcnn::Impl {

/// Choices the planner makes by itself, forced by tests and measurements.
struct WinogradTuning {
  int tile = 0;  ///< output tile m: 0 = winograd_tile's choice, else 2 or 4
  /// Host: the per-thread blocked pipeline (with a host BLAS), else the staged one.
  bool host_blocked = true;
  /// Host: transform-domain bytes (V and Z of one block) a thread aims for.
  std::size_t host_block_bytes = std::size_t(1) << 20;
  /// Host: transformed filters (U) from this size on size the blocks instead.
  std::size_t host_large_filters_bytes = std::size_t(4) << 20;
  /// CUDA, float tensors: the fused F(2x2) kernel (with tile 0 or 2), else the staged
  /// pipeline.
  bool device_fused = true;
  /// Host: filters per part where the threads share a block's filters (0: the planner's
  /// parts, only where U is large and the blocks fewer than the threads).
  std::int64_t host_part_filters = 0;
  /// Host: where the threads share the only block's filters and U is not given, each part
  /// transforms its own filters (the shared-block pipeline, WinogradHostFilterParts).
  bool host_fused_filters = true;
};

struct WinogradPlan {
  int tile = 4, alpha = 6;
  std::int64_t tiles_h = 0, tiles_w = 0;  ///< tile rows and columns of one image
  std::int64_t tiles = 0;                 ///< over the batch
  std::int64_t chunk_tiles = 0, chunks = 0;
  bool host_blocked = false;
  bool device_fused = false;  ///< device: the fused kernel (WinogradFusedFilterLayout U)
  int slots = 1;
  std::int64_t m_pad = 0;   ///< filters per row of NHWC's U and Z (host: whole vectors)
  int lanes = 1;            ///< host: the tiles of NCHW's V and Z rows are padded to these
  std::size_t u_bytes = 0;  ///< transformed filters, alpha^2 m_pad C values
  std::size_t v_bytes = 0, z_bytes = 0;  ///< one slot's transformed patches and products
  std::size_t tiles_bytes = 0;           ///< one host slot's tile positions
  /// Host: a block's filters are split into `parts` of part_filters (whole vectors), a
  /// work item per block and part (WinogradHostBlocks).
  std::int64_t part_filters = 0, parts = 1;
  /// Host, the shared-block pipeline: one block, its V and tile positions shared
  /// (shared_bytes), each slot its part's Z and U (u_part_bytes), no U in the workspace.
  bool host_fused_filters = false;
  std::size_t u_part_bytes = 0, shared_bytes = 0;
  std::size_t slot_bytes() const {
    return host_fused_filters ? z_bytes + u_part_bytes : v_bytes + z_bytes + tiles_bytes;
  }
  /// U's bytes in the workspace (none in the shared-block pipeline).
  std::size_t u_workspace_bytes() const { return host_fused_filters ? 0 : u_bytes; }
  std::size_t workspace_bytes() const {
    return u_workspace_bytes() + shared_bytes + std::size_t(slots) * slot_bytes();
  }
};

/// Reduction lengths up to which F(4x4) is within the Strict tolerance: its error stays
/// below 2^-16 of sum_k |w_k x_k| (about 1.4e-6 from 4 channels on), which for random
/// inputs of either sign is at most 4e-5 of the output's magnitude at 4,096 channels
/// (it grows like sqrt(C)); F(2x2) stays below 2^-19 of that sum (1e-7 typically). Random
/// inputs, float, NHWC 20 x 20, 8 filters, test_conv2d_winograd.cpp's ErrorWithinTheBound.
inline constexpr std::int64_t kWinogradF4MaxChannels = 4096;

/// The tile F(m x m, 3 x 3) used when the caller does not force one: F(4x4) (a quarter
/// of the direct convolution's multiplies) within its accuracy range, else F(2x2).
inline int winograd_tile(const Conv2dProblem& pb) {
  return pb.C <= kWinogradF4MaxChannels ? 4 : 2;
}

/// Why ConvAlgo::Winograd cannot compute pb, or nothing: the geometry it implements.
inline std::optional<std::string> winograd_geometry_reason(const Conv2dProblem& pb) {
  if (pb.R != 3 || pb.S != 3)
    return msg("ConvAlgo::Winograd computes 3x3 filters only (this filter is ", pb.R, "x", pb.S,
               ")");
  if (pb.stride_h != 1 || pb.stride_w != 1)
    return msg("ConvAlgo::Winograd computes stride 1 only (stride ", pb.stride_h, "x", pb.stride_w,
               ")");
  if (pb.dilation_h != 1 || pb.dilation_w != 1)
    return msg("ConvAlgo::Winograd computes undilated filters only (dilation ", pb.dilation_h, "x",
               pb.dilation_w, ")");
  return {};
}

/// Whether ExecSpace runs the fused kernel for elements T: CUDA, float. (The 16-bit types
/// take the staged pipeline for now: each fused instantiation adds to the CUDA build,
/// which CI's 60 minutes bound; double's 128 sums per thread would not fit registers.)
template <class ExecSpace, class T>
inline constexpr bool winograd_fusable =
#if defined(KOKKOS_ENABLE_CUDA)
    std::is_same_v<ExecSpace, Kokkos::Cuda>&& std::is_same_v<T, float>;
#else
    false;
#endif

/// Plans pb (geometry checked by the caller). Throws kcnn::Error when the workspace
/// limit cannot hold the transformed filters (unless `u_in_workspace` is false: they
/// were transformed beforehand, kcnn::WinogradFilters) and one tile's transform-domain
/// values. host_lanes: the host vector's lanes of the compute type (host backends);
/// fusable: winograd_fusable of the backend and element type.
inline WinogradPlan plan_winograd(const char* op, const Conv2dProblem& pb, std::size_t elem_bytes,
                                  std::size_t limit_bytes, bool host, int host_lanes,
                                  int host_threads, const WinogradTuning& tuning,
                                  bool fusable = false, bool u_in_workspace = true) {
  WinogradPlan plan;
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  // The fused kernel takes 32-bit extents and one team per 64 filters x 32 tiles of 2x2
  // outputs in a launch of at most int_max teams; beyond those, the staged pipeline.
  const std::int64_t fused_teams = WinogradFusedShape::teams(pb.M, pb.N, pb.P, pb.Q);
  plan.device_fused = !host && fusable && tuning.device_fused && tuning.tile != 4 &&
                      std::max({pb.H, pb.W, pb.P, pb.Q}) <= int_max && fused_teams <= int_max;
  plan.tile = tuning.tile ? tuning.tile : plan.device_fused ? 2 : winograd_tile(pb);
  throw_if(plan.tile != 2 && plan.tile != 4, op, "internal: Winograd tile ", plan.tile);
  plan.alpha = plan.tile + 2;
  const auto a2 = static_cast<std::int64_t>(plan.alpha * plan.alpha);
  plan.tiles_h = (pb.P + plan.tile - 1) / plan.tile;
  plan.tiles_w = (pb.Q + plan.tile - 1) / plan.tile;
  plan.tiles = pb.N * plan.tiles_h * plan.tiles_w;
  throw_if(pb.M > int_max || pb.C > int_max, op,
           "ConvAlgo::Winograd: the GEMMs take 32-bit extents (M = ", pb.M, ", C = ", pb.C, ")");
  if (plan.device_fused) {
    const auto f = WinogradFusedFilterLayout::of(pb.C, pb.M);
    plan.m_pad = f.filters_pad;
    plan.u_bytes = align_up(static_cast<std::size_t>(a2 * f.plane) * elem_bytes);
    throw_if(u_in_workspace && plan.u_bytes + kScratchAlign > limit_bytes, op,
             "ConvAlgo::Winograd: the workspace limit of ", limit_bytes,
             " bytes is too small; this problem needs at least ", plan.u_bytes + kScratchAlign,
             " bytes (the transformed filters)");
    plan.slots = 0;
    plan.chunk_tiles = plan.tiles;
    plan.chunks = 1;
    return plan;
  }

  plan.host_blocked = host && tuning.host_blocked;
  const bool nhwc = pb.layout == Layout::NHWC;
  plan.lanes = plan.host_blocked && !nhwc ? host_lanes : 1;
  plan.m_pad = plan.host_blocked && nhwc ? round_up(pb.M, host_lanes) : pb.M;
  plan.u_bytes =
      align_up(static_cast<std::size_t>(a2 * winograd_plane(plan.m_pad * pb.C)) * elem_bytes);
  const auto per_tile = static_cast<std::size_t>(a2 * (pb.C + plan.m_pad)) * elem_bytes +
                        (plan.host_blocked ? sizeof(WinogradTilePosition) : 0);
  plan.slots = plan.host_blocked ? std::max(1, host_threads) : 1;
  // Alignment allowances, the planes' padding (winograd_plane: up to 31 values each) and
  // that of NCHW's tile rows (lanes - 1 tiles).
  const std::size_t fixed =
      (u_in_workspace ? plan.u_bytes : 0) +
      std::size_t(plan.slots) * (3 * kScratchAlign + std::size_t(2 * a2 * 31) * elem_bytes +
                                 per_tile * std::size_t(plan.lanes - 1));
  const std::size_t avail =
      limit_bytes > fixed ? (limit_bytes - fixed) / std::size_t(plan.slots) : 0;
  throw_if(
      avail < per_tile, op, "ConvAlgo::Winograd: the workspace limit of ", limit_bytes,
      " bytes is too small; this problem needs at least ", fixed + per_tile, " bytes (",
      u_in_workspace ? msg("the transformed filters, ", plan.u_bytes, ", and ") : std::string(),
      per_tile, " per tile of ", plan.tile, "x", plan.tile, " outputs)");
  auto chunk = static_cast<std::int64_t>(avail / per_tile);
  if (plan.host_blocked) {
    // Cache-sized blocks of whole vectors of tiles (NCHW's GEMM columns), and enough
    // blocks to keep every thread busy. Each block reads all of U: where U outgrows
    // the caches (past host_large_filters_bytes) a block's V and Z take as many bytes as
    // U, so that U's traffic stays at most the transform domain's.
    const std::int64_t unit = host_lanes;
    const std::size_t block_bytes = plan.u_bytes > tuning.host_large_filters_bytes
                                        ? std::max(tuning.host_block_bytes, plan.u_bytes)
                                        : tuning.host_block_bytes;
    const auto target = std::max<std::int64_t>(
        unit, static_cast<std::int64_t>(block_bytes / per_tile) / unit * unit);
    const std::int64_t balanced = (plan.tiles + plan.slots - 1) / plan.slots;
    const std::int64_t blocks =
        (plan.tiles + std::min(chunk, target) - 1) / std::min(chunk, target);
    if (tuning.host_part_filters > 0 ||
        (plan.u_bytes > tuning.host_large_filters_bytes && blocks < plan.slots)) {
      // Fewer cache-sized blocks than threads, and U outgrows the caches: rather than
      // smaller blocks of tiles (each of which reads all of U), the threads share a
      // block's filters, each reading its part of U (the 512-channel layer at N = 8, 32
      // tiles, NCHW: 7.3-7.4 -> 5.4-5.7 ms; NHWC 6.2-6.5 -> 5.9-6.1; 2-core AMD Zen 5,
      // session 42).
      chunk = std::min(chunk, target);
      const std::int64_t parts = (plan.slots + blocks - 1) / blocks;
      plan.part_filters = round_up(
          tuning.host_part_filters > 0 ? tuning.host_part_filters : (pb.M + parts - 1) / parts,
          host_lanes);
    } else {
      chunk = std::min({chunk, target, std::max<std::int64_t>(1, balanced)});
    }
  }
  plan.chunk_tiles = std::max<std::int64_t>(1, std::min({chunk, plan.tiles, int_max}));
  plan.chunks = (plan.tiles + plan.chunk_tiles - 1) / plan.chunk_tiles;
  if (plan.part_filters == 0) plan.part_filters = plan.m_pad;
  plan.parts = (pb.M + plan.part_filters - 1) / std::max<std::int64_t>(1, plan.part_filters);
  const std::int64_t row_tiles = round_up(plan.chunk_tiles, plan.lanes);
  plan.v_bytes =
      align_up(static_cast<std::size_t>(a2 * winograd_plane(pb.C * row_tiles)) * elem_bytes);
  plan.z_bytes =
      align_up(static_cast<std::size_t>(a2 * winograd_plane(plan.m_pad * row_tiles)) * elem_bytes);
  if (plan.host_blocked)
    plan.tiles_bytes =
        align_up(static_cast<std::size_t>(plan.chunk_tiles) * sizeof(WinogradTilePosition));
  if (plan.host_blocked && plan.parts > 1 && plan.chunks == 1 && u_in_workspace &&
      tuning.host_fused_filters) {
    // The shared-block pipeline: parts of 4 vectors of filters (a register block's width
    // on AVX-512), so that a part's U stays in the caches between its transform and its
    // GEMMs, where the workspace holds it.
    WinogradPlan shared = plan;
    shared.host_fused_filters = true;
    if (tuning.host_part_filters == 0)
      shared.part_filters = std::min(plan.m_pad, std::int64_t(4) * host_lanes);
    shared.parts = (pb.M + shared.part_filters - 1) / shared.part_filters;
    shared.u_part_bytes = align_up(
        static_cast<std::size_t>(a2 * winograd_plane(shared.part_filters * pb.C)) * elem_bytes);
    shared.shared_bytes = plan.v_bytes + plan.tiles_bytes;
    if (shared.workspace_bytes() + kScratchAlign <= limit_bytes) return shared;
  }
  return plan;
}

// ---------------------------------------------------------------------------------
// Drivers
// ---------------------------------------------------------------------------------

/// What a plan's transformed filters U look like: two plans whose U layouts are equal
/// read the same U (the key that kcnn::WinogradFilters keeps with its U).
struct WinogradFiltersLayout {
  Layout layout = Layout::NCHW;
  int tile = 0;
  bool device_fused = false;
  std::int64_t M = 0, C = 0, m_pad = 0;
  std::size_t u_bytes = 0;
  bool operator==(const WinogradFiltersLayout& o) const {
    return layout == o.layout && tile == o.tile && device_fused == o.device_fused && M == o.M &&
           C == o.C && m_pad == o.m_pad && u_bytes == o.u_bytes;
  }
  bool operator!=(const WinogradFiltersLayout& o) const { return !(*this == o); }
};

inline WinogradFiltersLayout winograd_filters_layout(const Conv2dProblem& pb,
                                                     const WinogradPlan& plan) {
  return {pb.layout, plan.tile, plan.device_fused, pb.M, pb.C, plan.m_pad, plan.u_bytes};
}

/// "F(2x2), 64 filters x 32 channels, NHWC (fused kernel)" for messages.
inline std::string describe(const WinogradFiltersLayout& f) {
  return msg("F(", f.tile, "x", f.tile, "), ", f.M, " filters x ", f.C, " channels, ",
             to_string(f.layout), f.device_fused ? " (fused kernel)" : "");
}

/// The filters as the filter transform reads them: element (m, c, r, s) of pb's (M, C, 3,
/// 3) filters at w[ws.offset(m, c, r, s)]. conv2d_forward passes its w; backward data
/// passes w rotated and transposed through the strides (no copy). Or, with
/// `is_transformed` (of_transformed), U itself, transformed beforehand
/// (kcnn::WinogradFilters) in the layout `transformed_layout`: the run skips the filter
/// transform and U's workspace. (A flag, not a null test: U of no filters has no data.)
template <class W>
struct WinogradFilterSource {
  const W* w = nullptr;
  LogicalStrides ws;
  bool is_transformed = false;
  const compute_t<W>* transformed = nullptr;
  WinogradFiltersLayout transformed_layout;

  static WinogradFilterSource strided(const W* w, const LogicalStrides& ws) {
    WinogradFilterSource source;
    source.w = w, source.ws = ws;
    return source;
  }
  static WinogradFilterSource of_transformed(const compute_t<W>* u,
                                             const WinogradFiltersLayout& layout) {
    WinogradFilterSource source;
    source.is_transformed = true;
    source.transformed = u, source.transformed_layout = layout;
    return source;
  }
};

/// Transforms the filters of `source` into U (u, plan.u_bytes) in the layout the plan's
/// pipeline reads: the fused kernel's (WinogradFusedFilterLayout) or the others'
/// (WinogradFilterTransform's, NCHW or NHWC, rows of plan.m_pad filters).
template <Layout L, class ExecSpace, class W>
void winograd_transform_filters(const ExecSpace& space, const WinogradFilterSource<W>& source,
                                compute_t<W>* u, const Conv2dProblem& pb,
                                const WinogradPlan& plan) {
  using Acc = compute_t<W>;
  using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  auto transform = [&](auto tile_tag) {
    constexpr int Tile = decltype(tile_tag)::value;
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (winograd_fusable<ExecSpace, W> && Tile == 2) {
      if (plan.device_fused) {
        // U in the fused kernel's order ([xi][c][k], k fastest, whatever the layout).
        const auto f = WinogradFusedFilterLayout::of(pb.C, pb.M);
        using Filters = WinogradFilterTransform<Layout::NHWC, Tile, W, Acc>;
        const WinogradFusedFilterTransform<Filters> filters{
            Filters{source.w, source.ws, u, pb.M, pb.C, f.filters_pad, f.channels_pad}};
        Kokkos::parallel_for("kcnn::conv2d::winograd::filter_transform",
                             Range(space, 0, filters.items()), filters);
        return;
      }
    }
#endif
    if constexpr (runs_on_host_v<ExecSpace>) {
      using Filters = WinogradHostFilterTransform<L, Tile, W, Acc>;
      Filters filters{source.w, source.ws, u, pb.M, pb.C, plan.m_pad};
      // Streaming stores: U is written once here and read by the blocks' GEMMs after the
      // whole transform; reading each line of U for ownership first took half the time
      // (512-channel layer: 3.6 -> 1.7 ms; 256: 0.34 -> 0.26; the whole call no slower
      // from 64 channels up: 2-core AMD Zen 5, session 42).
      filters.streaming =
          aligned_to(u, Filters::Vector::alignment) && filters.row_length() % Filters::lanes == 0;
      Kokkos::parallel_for("kcnn::conv2d::winograd::filter_transform",
                           Range(space, 0, filters.items()), filters);
    } else {
      const WinogradFilterTransform<L, Tile, W, Acc> filters{source.w, source.ws,  u,   pb.M,
                                                             pb.C,     plan.m_pad, pb.C};
      Kokkos::parallel_for("kcnn::conv2d::winograd::filter_transform",
                           Range(space, 0, filters.items()), filters);
    }
  };
  if (plan.tile == 2) {
    transform(std::integral_constant<int, 2>{});
  } else {
    transform(std::integral_constant<int, 4>{});
  }
}

template <Layout L, int Tile, class ExecSpace, class XView, class W, class BView, class YView>
void conv2d_winograd_run(const ExecSpace& space, const XView& x,
                         const WinogradFilterSource<W>& filter_source, const BView& bias,
                         const YView& y, const Conv2dProblem& pb, const WinogradPlan& plan) {
  using T = view_scalar_t<XView>;
  using Y = view_scalar_t<YView>;
  using Bias = view_scalar_t<BView>;
  using Acc = compute_t<T>;
  using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  constexpr int a2 = (Tile + 2) * (Tile + 2);

  // U in the workspace's first u_bytes, unless transformed beforehand or by the parts of
  // the shared-block pipeline.
  const bool transformed = filter_source.is_transformed;
  const std::size_t u_bytes = transformed ? 0 : plan.u_workspace_bytes();
  auto lease = WorkspaceCache<ExecSpace>::acquire(
      space, plan.workspace_bytes() - plan.u_workspace_bytes() + u_bytes);
  unsigned char* base = lease.data();
  unsigned char* slots = base + u_bytes;
  const Acc* u = filter_source.transformed;
  if (!transformed && !plan.host_fused_filters) {
    Acc* u_written = reinterpret_cast<Acc*>(base);
    winograd_transform_filters<L>(space, filter_source, u_written, pb, plan);
    u = u_written;
  }

  const WinogradTileGrid grid{plan.tiles_h, plan.tiles_w, plan.tile};
  const Bias* bias_data = pb.has_bias ? bias.data() : nullptr;
  const auto bias_stride = static_cast<std::int64_t>(bias.stride(0));
  const LogicalStrides xs = logical_strides<L>(x), ys = logical_strides<L>(y);

#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (winograd_fusable<ExecSpace, T> && Tile == 2) {
    if (plan.device_fused) {
      const auto f = WinogradFusedFilterLayout::of(pb.C, pb.M);
      using Shape = WinogradFusedShape;
      const int m_blocks = static_cast<int>(f.filters_pad / Shape::BK);
      const auto league = static_cast<int>(Shape::teams(pb.M, pb.N, pb.P, pb.Q));
      auto launch = [&](auto vector_copies, auto unit_columns) {
        using Kernel = WinogradFusedKernel<L, decltype(vector_copies)::value,
                                           decltype(unit_columns)::value, T, Bias, Y>;
        const Kernel kernel{x.data(),
                            xs,
                            u,
                            f.plane,
                            f.filters_pad,
                            y.data(),
                            ys,
                            bias_data,
                            bias_stride,
                            grid,
                            plan.tiles,
                            static_cast<int>(pb.C),
                            static_cast<int>(pb.H),
                            static_cast<int>(pb.W),
                            static_cast<int>(pb.M),
                            static_cast<int>(pb.P),
                            static_cast<int>(pb.Q),
                            pb.pad_h,
                            pb.pad_w,
                            m_blocks,
                            pb.activation};
        launch_grid_constant_teams<Shape::threads, 1, Shape::scratch_bytes>(
            space, "kcnn::conv2d::winograd::fused", league, Shape::scratch_bytes, kernel,
            WinogradFusedNoConstants{});
      };
      if constexpr (L == Layout::NHWC) {
        // A pixel's channels as 16-byte runs: adjacent channels, whole vectors of them,
        // every pixel's first channel 16-byte aligned.
        const bool runs = xs.c == 1 && pb.C % 4 == 0 && xs.w % 4 == 0 && xs.h % 4 == 0 &&
                          xs.n % 4 == 0 && reinterpret_cast<std::uintptr_t>(x.data()) % 16 == 0;
        if (runs) return launch(std::true_type{}, std::false_type{});
      } else {
        if (xs.w == 1) return launch(std::false_type{}, std::true_type{});
      }
      return launch(std::false_type{}, std::false_type{});
    }
  }
#endif

  if constexpr (runs_on_host_v<ExecSpace>) {
    if (plan.host_blocked) {
      Kokkos::Experimental::UniqueToken<ExecSpace> token(space);
      throw_if(token.size() > plan.slots, "kcnn::conv2d_forward",
               "internal error: Winograd planned ", plan.slots, " host slots for ", token.size(),
               " threads");
      using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>,
                                         Kokkos::IndexType<std::int64_t>>;
      using Blocks = WinogradHostBlocks<L, Tile, T, Acc, Bias, Y, ExecSpace>;
      const Blocks blocks{x.data(),
                          xs,
                          u,
                          y.data(),
                          ys,
                          bias_data,
                          bias_stride,
                          grid,
                          pb.C,
                          pb.H,
                          pb.W,
                          pb.M,
                          pb.P,
                          pb.Q,
                          plan.m_pad,
                          pb.pad_h,
                          pb.pad_w,
                          pb.activation,
                          token,
                          slots,
                          plan.slot_bytes(),
                          plan.v_bytes,
                          plan.z_bytes,
                          plan.chunk_tiles,
                          plan.tiles,
                          plan.part_filters};
      if (!plan.host_fused_filters) {
        Kokkos::parallel_for("kcnn::conv2d::winograd::host_blocks",
                             Policy(space, 0, plan.chunks * plan.parts).set_chunk_size(1), blocks);
        return;
      }
      // The shared-block pipeline: one block of all tiles; its positions and V in the
      // shared region, then the parts of the filters (slots after the shared region).
      using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
      Acc* v = reinterpret_cast<Acc*>(slots);
      auto* at = reinterpret_cast<WinogradTilePosition*>(slots + plan.v_bytes);
      const std::int64_t nt = plan.tiles;
      Kokkos::parallel_for("kcnn::conv2d::winograd::host_tile_positions", Range(space, 0, nt),
                           WinogradHostTilePositions{at, grid, 0});
      Kokkos::parallel_for("kcnn::conv2d::winograd::host_shared_input",
                           Range(space, 0, L == Layout::NHWC ? nt : pb.C),
                           WinogradHostSharedInput<Blocks>{blocks, v, at, nt});
      Kokkos::parallel_for("kcnn::conv2d::winograd::host_filter_parts",
                           Policy(space, 0, plan.parts).set_chunk_size(1),
                           WinogradHostFilterParts<Blocks, W>{
                               blocks, filter_source.w, filter_source.ws, v, at, nt,
                               slots + plan.shared_bytes, plan.slot_bytes(), plan.z_bytes});
      return;
    }
  }

  Acc* v = reinterpret_cast<Acc*>(slots);
  Acc* z = reinterpret_cast<Acc*>(slots + plan.v_bytes);
  WinogradInputTransform<L, Tile, T, Acc> in{x.data(), xs, v, grid,     pb.C,    pb.H,
                                             pb.W,     0,  0, pb.pad_h, pb.pad_w};
  WinogradOutputTransform<L, Tile, Acc, Bias, Y> out{
      z, y.data(), ys, bias_data, bias_stride, grid, pb.M, pb.P, pb.Q, 0, 0, pb.activation};
  using Matrix = GemmMatrix<ExecSpace, Acc>;
  using ConstMatrix = GemmMatrix<ExecSpace, const Acc>;
  const std::int64_t M = pb.M, C = pb.C;
  for (std::int64_t t0 = 0; t0 < plan.tiles; t0 += plan.chunk_tiles) {
    const std::int64_t nt = std::min(plan.chunk_tiles, plan.tiles - t0);
    in.t0 = out.t0 = t0;
    in.nt = out.nt = nt;
    Kokkos::parallel_for("kcnn::conv2d::winograd::input_transform", Range(space, 0, C * nt), in);
    for (int xi = 0; xi < a2; ++xi) {
      const Acc* uxi = u + xi * winograd_plane(M * C);
      const Acc* vxi = v + xi * winograd_plane(C * nt);
      Acc* zxi = z + xi * winograd_plane(M * nt);
      if constexpr (L == Layout::NCHW) {  // Z (M x nt) = U (M x C) V (C x nt)
        gemm(space, "N", "N", Acc(1), ConstMatrix(uxi, M, C), ConstMatrix(vxi, C, nt), Acc(0),
             Matrix(zxi, M, nt), GemmMath::Strict);
      } else {  // Z (nt x M) = V (nt x C) U (C x M)
        gemm(space, "N", "N", Acc(1), ConstMatrix(vxi, nt, C), ConstMatrix(uxi, C, M), Acc(0),
             Matrix(zxi, nt, M), GemmMath::Strict);
      }
    }
    Kokkos::parallel_for("kcnn::conv2d::winograd::output_transform", Range(space, 0, M * nt), out);
  }
}

/// conv2d_winograd with the filters read through `filters` (see WinogradFilterSource).
template <class ExecSpace, class XView, class W, class BView, class YView>
std::size_t conv2d_winograd_from(const ExecSpace& space, const XView& x,
                                 const WinogradFilterSource<W>& filters, const BView& bias,
                                 const YView& y, const Conv2dProblem& pb,
                                 const WinogradTuning& tuning = {},
                                 LaunchMode mode = LaunchMode::Run) {
  using Acc = compute_t<view_scalar_t<XView>>;
  const char* op = "kcnn::conv2d_forward";
  if (auto reason = winograd_geometry_reason(pb)) throw_if(true, op, *reason);
  int threads = 1;
  if constexpr (runs_on_host_v<ExecSpace>) {
    threads = Kokkos::Experimental::UniqueToken<ExecSpace>(space).size();
  }
  const WinogradPlan plan =
      plan_winograd(op, pb, sizeof(Acc), pb.workspace_limit_bytes, runs_on_host_v<ExecSpace>,
                    HostVector<Acc>::lanes, threads, tuning,
                    winograd_fusable<ExecSpace, view_scalar_t<XView>>, !filters.is_transformed);
  const std::size_t workspace =
      plan.workspace_bytes() - (filters.is_transformed ? plan.u_workspace_bytes() : 0);
  if (filters.is_transformed) {
    const WinogradFiltersLayout want = winograd_filters_layout(pb, plan);
    throw_if(want != filters.transformed_layout, op, "the transformed Winograd filters (",
             describe(filters.transformed_layout), ") do not fit this call, which needs ",
             describe(want),
             " (the fused kernel takes 32-bit extents and teams); pass the filters View instead");
  }
  if (mode == LaunchMode::Check) return workspace;
  auto run = [&](auto layout_tag, auto tile_tag) {
    conv2d_winograd_run<decltype(layout_tag)::value, decltype(tile_tag)::value>(space, x, filters,
                                                                                bias, y, pb, plan);
  };
  using NCHW = std::integral_constant<Layout, Layout::NCHW>;
  using NHWC = std::integral_constant<Layout, Layout::NHWC>;
  using F2 = std::integral_constant<int, 2>;
  using F4 = std::integral_constant<int, 4>;
  if (pb.layout == Layout::NCHW) {
    plan.tile == 2 ? run(NCHW{}, F2{}) : run(NCHW{}, F4{});
  } else {
    plan.tile == 2 ? run(NHWC{}, F2{}) : run(NHWC{}, F4{});
  }
  return workspace;
}

/// Runs ConvAlgo::Winograd (with LaunchMode::Check: only plans, which tests its limits);
/// `pb` has been validated against the Views. Returns the workspace bytes the run takes.
template <class ExecSpace, class XView, class WView, class BView, class YView>
std::size_t conv2d_winograd(const ExecSpace& space, const XView& x, const WView& w,
                            const BView& bias, const YView& y, const Conv2dProblem& pb,
                            const WinogradTuning& tuning = {}, LaunchMode mode = LaunchMode::Run) {
  const LogicalStrides ws = pb.layout == Layout::NCHW ? logical_strides<Layout::NCHW>(w)
                                                      : logical_strides<Layout::NHWC>(w);
  return conv2d_winograd_from(space, x,
                              WinogradFilterSource<view_scalar_t<WView>>::strided(w.data(), ws),
                              bias, y, pb, tuning, mode);
}

}  // namespace kcnn::Impl
