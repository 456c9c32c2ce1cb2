// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tensor_core/tile_shapes.hpp
/// \brief ConvAlgo::TensorCoreGemm: the arithmetic of each math mode on tensor cores
///        (TensorCoreMath) and the block tiles (TensorCoreTile).
#pragma once

#include <type_traits>

#include "../../arch/mma.hpp"
#include "../../arch/wgmma.hpp"
#include "../../common/element_traits.hpp"

namespace kcnn::Impl {

/// The tensor-core arithmetic of a call: TF32 and TF32x3 (float tensors, MathMode::TF32
/// and ::TF32x3), F64 (double tensors, IEEE fp64 products on DMMA), F16 and BF16 (Kokkos'
/// half_t and kcnn::bfloat16 tensors: exact products, float sums).
enum class TensorCoreMath { TF32, TF32x3, F64, F16, BF16 };

/// Element type and MMA instruction shape of each arithmetic.
template <TensorCoreMath Math>
struct TensorCoreOp {
  using element = float;
  using shape = MmaShape<16, 8, 8>;  ///< mma.sync m16n8k8 TF32
  static constexpr int accumulators = 4;
};
template <>
struct TensorCoreOp<TensorCoreMath::F64> {
  using element = double;
  using shape = MmaShape<8, 8, 4>;  ///< mma.sync m8n8k4 f64
  static constexpr int accumulators = 2;
};
template <>
struct TensorCoreOp<TensorCoreMath::F16> {
  using element = Kokkos::Experimental::half_t;
  using shape = MmaShape<16, 8, 16>;  ///< mma.sync m16n8k16 f16, float sums
  static constexpr int accumulators = 4;
  static constexpr Mma16BitFormat format = Mma16BitFormat::Half;
};
template <>
struct TensorCoreOp<TensorCoreMath::BF16> {
  using element = kcnn::bfloat16;
  using shape = MmaShape<16, 8, 16>;  ///< mma.sync m16n8k16 bf16, float sums
  static constexpr int accumulators = 4;
  static constexpr Mma16BitFormat format = Mma16BitFormat::BFloat16;
};

/// The arithmetic of 16-bit storage type T.
template <class T>
inline constexpr TensorCoreMath tensor_core_16bit_math_v =
    ElementTraits<T>::kind == ElementKind::Float16 ? TensorCoreMath::F16 : TensorCoreMath::BF16;

/// Whether Math reads 16-bit factors (m16n8k16).
constexpr bool is_16bit_math(TensorCoreMath math) {
  return math == TensorCoreMath::F16 || math == TensorCoreMath::BF16;
}

/// The scratch rows of the tensor-core kernels' operand tiles: each holds BK taps in 64 bytes: four
/// 16-byte chunks, so one 16-byte load gives a lane its fragment elements of two MMA k-steps (TF32:
/// BK = 16, fp64: BK = 8; 16-bit: BK = 32, one chunk per k-step and lane quarter, read by
/// ldmatrix). Chunk c of row r sits at chunk c ^ ((r / 2) % 4): the 8 lanes of a 16-byte load phase
/// (rows g, g + 1 of chunks 0..3) read 128 distinct bytes, and so do the 4-byte copies of 8 pixels
/// x 4 taps that NCHW's gathers write (no padding, so more stages fit the scratch).
/// RowBytes = 128 (the 16-bit channel-run kernel's wide rows: 64 taps, eight chunks): chunk c
/// of row r sits at chunk c ^ (r % 8), Hopper's 128-byte swizzle, which wgmma reads as such.
template <class T, int RowBytes = 64>
struct TensorCoreScratchRows {
  static_assert(RowBytes == 64 || RowBytes == 128, "64- or 128-byte rows");
  using element = T;
  static constexpr int row_bytes = RowBytes;
  static constexpr int chunks = row_bytes / 16;  ///< 16-byte chunks per row
  static constexpr int BK = row_bytes / static_cast<int>(sizeof(T));
  static constexpr int chunk = vector_elements_v<T>;  ///< elements per 16-byte chunk
  static_assert(BK == chunks * chunk, "whole 16-byte chunks per row");

  /// The chunk position of chunk c of row `row`.
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int swizzled_chunk(int row, int c) {
    return c ^ (row_bytes == 64 ? (row >> 1) & 3 : row & 7);
  }
  /// Element offset of tap position k (0 <= k < BK) of scratch row `row`.
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int offset(int row, int k) {
    return row * BK + swizzled_chunk(row, k / chunk) * chunk + k % chunk;
  }
};

/// A block tile of the GEMM view: BM filters x BN output pixels per team, K consumed
/// BK taps per pipeline stage, WarpsM x WarpsN warps each computing a
/// (BM / WarpsM) x (BN / WarpsN) warp tile, Stages scratch buffers in flight.
template <class T, int BM_, int BN_, int WarpsM_, int WarpsN_, int Stages_, int MinTeams_>
struct TensorCoreTile : TensorCoreScratchRows<T> {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, WarpsM = WarpsM_, WarpsN = WarpsN_;
  static constexpr int Stages = Stages_;
  static constexpr int threads = 32 * WarpsM * WarpsN;
  static constexpr int min_teams_per_sm = MinTeams_;
  static_assert(Stages >= 2, "a pipeline of at least two stages");
};

/// A block tile of the 16-bit channel-run kernel (channel_run_kernel.hpp): BP output
/// pixels (its GEMM rows) x BF filters per team, WarpsP x WarpsF warps of
/// (BP / WarpsP) x (BF / WarpsF), Stages scratch buffers of RowBytes-byte rows
/// (TensorCoreScratchRows: 64 bytes = 32 taps a stage, 128 = 64 taps). GemmView: the same tile in
/// the filter-major terms of the split-K rule (implicit_gemm_k_slices: BM filters, BN pixels).
/// Warpgroup: the team is one warpgroup (4 warps x 1) whose warp w owns rows 16w..16w+15
/// of each 64-row slab and all BF filters (arch/wgmma.hpp's accumulator layout): wgmma
/// m64nBFk16 where the code is compiled for sm_90a, mma.sync on the same fragments
/// elsewhere. Wgmma = false keeps mma.sync in the sm_90a pass too (the tests check that
/// path, which the driver may load where a build has no sm_90a pass, through it).
template <class T, int BP_, int BF_, int WarpsP_, int WarpsF_, int Stages_, int MinTeams_,
          bool Warpgroup_ = false, bool Wgmma_ = Warpgroup_, int RowBytes_ = 64>
struct TensorCoreRunTile {
  static constexpr int BP = BP_, BF = BF_, WarpsP = WarpsP_, WarpsF = WarpsF_;
  static constexpr int row_bytes = RowBytes_;  ///< TensorCoreScratchRows<T, row_bytes>
  static constexpr int Stages = Stages_;
  static constexpr int threads = 32 * WarpsP * WarpsF;
  static constexpr int min_teams_per_sm = MinTeams_;
  static constexpr bool warpgroup = Warpgroup_;
  static constexpr bool wgmma = Wgmma_;
  static_assert(Stages >= 2, "a pipeline of at least two stages");
  static_assert(!warpgroup || (WarpsP == 4 && WarpsF == 1 && BP % 64 == 0 && BF == 64),
                "a warpgroup tile: 4 warps over 64-row slabs, m64n64k16");
  static_assert(!wgmma || warpgroup, "wgmma needs a warpgroup tile");
  struct GemmView {
    static constexpr int BM = BF_, BN = BP_, BK = TensorCoreScratchRows<T, RowBytes_>::BK;
    static constexpr int min_teams_per_sm = MinTeams_;
  };
};

/// A block tile of the 16-bit TMA kernel (tma_kernel.hpp): BP output pixels x BF filters
/// per team of one warpgroup, Stages scratch buffers of RowBytes-byte rows (64: 32 taps
/// a stage, 128: 64 taps), at least MinTeams teams per multiprocessor in the launch
/// bounds (which cap the registers). GemmView as TensorCoreRunTile's.
template <class T, int BP_, int BF_, int RowBytes_, int Stages_, int MinTeams_, bool SplitK_ = true>
struct TensorCoreTmaTile {
  static constexpr int BP = BP_, BF = BF_, row_bytes = RowBytes_, Stages = Stages_;
  /// Whether K may be split (the fix-up's registers would spill the 128 x 128 tile's
  /// accumulators, and its rule never splits).
  static constexpr bool split_k = SplitK_;
  static constexpr int threads = 128;
  static constexpr int min_teams_per_sm = MinTeams_;
  static_assert(BP % 64 == 0 && (BF == 64 || BF == 128), "wgmma m64n64k16 or m64n128k16 slabs");
  static_assert(RowBytes_ == 64 || RowBytes_ == 128, "64- or 128-byte rows");
  static_assert(Stages >= 2, "a pipeline of at least two stages");
  struct GemmView {
    static constexpr int BM = BF_, BN = BP_, BK = TensorCoreScratchRows<T, RowBytes_>::BK;
    static constexpr int min_teams_per_sm = MinTeams_;
  };
};

/// A block tile of the 16-bit halo kernel (halo_kernel.hpp): BH x 8 output pixels of one
/// image (BH / 8 slabs of 64 rows) x BF filters per team of one warpgroup; per block of 64
/// channels the input pixels those outputs read with a stride-1 filter of up to
/// (HaloPixels / (BH + 2) - 7) columns arrive once (the halo, at most HaloPixels pixels of
/// 128 bytes), the filters stream through Stages buffers of BF rows of 128 bytes.
template <class T, int BH_, int BF_, int Stages_, int MinTeams_, int HaloPixels_>
struct TensorCoreHaloTile {
  static constexpr int BH = BH_, BW = 8, BF = BF_, Stages = Stages_;
  static constexpr int halo_pixels = HaloPixels_;
  static constexpr int threads = 128;
  static constexpr int min_teams_per_sm = MinTeams_;
  static_assert(BH % 8 == 0 && BF == 64, "m64n64k16 slabs of eight 8-pixel rows");
  static_assert(Stages >= 2, "a pipeline of at least two stages");
  static_assert(sizeof(T) == 2, "16-bit elements: 64 channels in a 128-byte row");
};

/// The tiles, chosen by element type, layout and the filter count M
/// (with_tensor_core_tile). Kokkos' level-0 team scratch on CUDA holds 40,960 bytes (its
/// scratch_size_max(0) on the H100): 192 rows of 64 bytes take 12 KB a stage, so three
/// stages fit (36 KB); fp64's 128 rows take 8 KB, four stages.
///
/// Chosen on the H100 (session 14, one call; ResNet 3x3 layers of 64 / 128 / 256 / 512
/// channels, TensorCoreGemm's own rows, NHWC, ms; TUNING.md has the NCHW columns):
///
///   tile (warps of WM x WN)                     TF32                        TF32x3
///   64 x 128, 8 of 32 x 32 (before)       0.230 0.192 0.214 0.136    0.400 0.381 0.409 0.236
///   64 x 128, 4 of 64 x 32 (NhwcSmallM)   0.206 0.177 0.200 0.176    0.364 0.343 0.362 0.233
///   128 x 64, 4 of 64 x 32 (NhwcLargeM)   0.335 0.164 0.171 0.130    0.685 0.327 0.346 0.215
///   128 x 128, 4 of 64 x 64, 2 stages     0.437 0.255 0.216 0.116    0.667 0.415 0.318 0.185
///
/// float NHWC: warp tiles of 64 x 32, whose stage feeds 32 MMAs per warp from 12 fragment
/// loads (32 x 32: 16 from 8), and the B rounding is shared by four m16 tiles instead of
/// two. float NCHW's own kernel (NCHW calls not staged channels-last: 1x1 layers, channel
/// counts without 16-byte gathers, or no room in the workspace; channels_last.hpp) keeps
/// eight warps of 32 x 32: its one-element gathers of x need the threads (TF32, 64
/// channels: 0.393 ms, against 0.530 with four warps of 64 x 32).
/// double NHWC: 64 x 64, four warps of 32 x 32, four stages, 3 teams per multiprocessor
/// (166 registers, no spills): 0.504 / 0.459 / 0.432 / 0.266 -> 0.458 / 0.433 / 0.427 /
/// 0.364 ms, the 2-D field (N=16, C=M=32, 256x256) 1.42 -> 1.18 ms; the 512-channel
/// layer loses (its K split follows the team slots), and Auto gives it to cuBLAS anyway.
/// double NCHW keeps 2 teams per multiprocessor (3 spill: 168 registers).
struct TensorCoreTiles {
  using FloatNhwcSmallM = TensorCoreTile<float, 64, 128, 1, 4, 3, 2>;  ///< M <= 64
  using FloatNhwcLargeM = TensorCoreTile<float, 128, 64, 2, 2, 3, 2>;  ///< M > 64
  using FloatNchwSmallM = TensorCoreTile<float, 64, 128, 2, 4, 3, 2>;  ///< M <= 64
  using FloatNchwLargeM = TensorCoreTile<float, 128, 64, 4, 2, 3, 2>;  ///< M > 64
  using DoubleNhwc = TensorCoreTile<double, 64, 64, 2, 2, 4, 3>;
  using DoubleNchw = TensorCoreTile<double, 64, 64, 2, 2, 4, 2>;
  /// 16-bit (half_t, bfloat16): 64-byte rows of 32 taps. Chosen on the H100 (session 16,
  /// one call, bfloat16 NHWC, ResNet 3x3 layers of 64 / 128 / 256 / 512 channels, the
  /// kernel alone, median of 30, ms; "m" = teams per multiprocessor the launch bounds
  /// ask for, 4 caps the registers at 128 with 16-24 bytes of spills):
  ///
  ///   tile (warps of WM x WN), stages, m       64      128     256     512
  ///   64 x 128 (1 x 4 of 64 x 32), 3, m 2    0.1285  0.1056  0.1250  0.1037
  ///   64 x 128 (1 x 4 of 64 x 32), 3, m 4    0.1201  0.1189  0.0959  0.0875
  ///   64 x 128 (2 x 4 of 32 x 32), 3, m 2    0.1262  0.0998  0.1241  0.0892
  ///   128 x 128 (2 x 4 of 64 x 32), 2, m 2   0.1840  0.1003  0.0897  0.0784
  ///   128 x 64 (2 x 2 of 64 x 32), 3, m 2    0.2122  0.0908  0.1084  0.0831
  ///   128 x 64 (2 x 2 of 64 x 32), 3, m 4    0.2131  0.1074  0.0838  0.0793
  ///   64 x 64 (2 x 2 of 32 x 32), 4, m 3     0.1344  0.1088  0.1129  0.0950
  ///
  /// so M <= 64: 64 x 128 at 4 teams; M <= 128: 128 x 64 at 2; more filters: 128 x 64 at
  /// 4. All stay far from the tensor cores (115-177 TFLOP/s of cublasGemmEx's 890): per
  /// stage a warp issues about 240 instructions for its 32 MMAs, most of them the B
  /// gathers' address and bounds work (SASS).
  /// NCHW's pixel-major gathers need eight warps (one per group of 4 taps).
  template <class T>
  using Bit16NhwcSmallM = TensorCoreTile<T, 64, 128, 1, 4, 3, 4>;  ///< M <= 64
  template <class T>
  using Bit16NhwcMidM = TensorCoreTile<T, 128, 64, 2, 2, 3, 2>;  ///< M <= 128
  template <class T>
  using Bit16NhwcLargeM = TensorCoreTile<T, 128, 64, 2, 2, 3, 4>;  ///< M > 128
  template <class T>
  using Bit16NchwSmallM = TensorCoreTile<T, 64, 128, 2, 4, 3, 2>;
  template <class T>
  using Bit16NchwLargeM = TensorCoreTile<T, 128, 64, 4, 2, 3, 2>;
  /// 16-bit channel runs (channel_run_kernel.hpp; C a multiple of 32): 128 pixels x 64
  /// filters, four warps of 64 x 32, three stages, 4 teams per multiprocessor (128
  /// registers, no spills). Chosen on the H100 (session 18, one call, bfloat16 NHWC,
  /// ResNet 3x3 layers of 64 / 128 / 256 / 512 channels, kernel alone with its split K,
  /// median of 30, ms; "m" = teams per multiprocessor asked of the launch bounds; the
  /// generic kernel's tiles above ran 0.121 / 0.094 / 0.085 / 0.082):
  ///
  ///   tile (warps of WP x WF), stages, m        64      128     256     512
  ///   128 x 64 (2 x 2 of 64 x 32), 3, m 3     0.1036  0.0847  0.0782  0.0608
  ///   128 x 64 (2 x 2 of 64 x 32), 3, m 4     0.0991  0.0867  0.0700  0.0556
  ///   128 x 64 (4 x 2 of 32 x 32), 3, m 2     0.1151  0.0954  0.1251  0.0648
  ///   192 x 64 (3 x 2 of 64 x 32), 2, m 2     0.1138  0.0922  0.0809  0.0640
  ///   128 x 128 (2 x 2 of 64 x 64), 2, m 2    0.1701  0.0921  0.0797  0.0551
  ///   128 x 128 (2 x 4 of 64 x 32), 2, m 2    0.1734  0.1022  0.0928  0.0615
  ///   64 x 128 (2 x 2 of 32 x 64), 3, m 3     0.1591  0.0890  0.0779  0.0549
  ///
  /// One tile for every M (a 128 x 128 tile for M > 128 would gain 7% at 512 channels
  /// through L2 only and lose 4% at 256). What bounds them (ncu, 64 channels): the
  /// tensor pipe is 26% busy, L2 49%; the warps wait on fixed-latency dependencies and
  /// shared-memory results with 4 warps per scheduler (40 KB of team scratch a team).
  template <class T>
  using RunsMmaSync = TensorCoreRunTile<T, 128, 64, 2, 2, 3, 4>;
  /// Builds with the wgmma pass (kBuildHasWgmmaPass): the same 128 x 64 tile as one
  /// warpgroup (wgmma m64n64k16 in the sm_90a pass, arch/wgmma.hpp). Chosen on an H200
  /// (session 24, a stand-alone harness of the same gathers and pipeline, bfloat16 NHWC
  /// ResNet 3x3 layers of 64 / 128 / 256 / 512 channels, median of 50, ms; cuDNN 9.19
  /// through PyTorch in the same call 0.0577 / 0.0434 / 0.0446 / 0.0393):
  ///
  ///   tile (warpgroups), stages, m, epilogue         64      128     256     512
  ///   128 x 64 (1), 3, m 1, fragment stores       0.0709  0.0684  0.0582  0.0512
  ///   128 x 64 (1), 3, m 4, staged 16-byte stores 0.0641  0.0635  0.0553  0.0518
  ///   128 x 64 (2 of 64 x 64), 3, m 3, staged     0.0718  0.0635  0.0613  0.0581
  ///   64 x 64 (1), 4 stages, m 1, fragment stores 0.0831  0.0741  0.0686  0.0559
  ///   128 x 128 (1), 2 stages, m 2, staged          -     0.0538  0.0493  0.0639
  ///
  /// (m 5 caps the registers at 102: spills, 2x slower.) Waiting for each stage's wgmma
  /// before the next barrier beat keeping one in flight (which leaves one stage less of
  /// copies ahead in three buffers: 0.0659 / 0.0660 / 0.0593 / 0.0570). The 128 x 128 tile
  /// (m64n128k16), faster in the harness on the 128- and 256-channel layers, was built into
  /// this kernel (its float epilogue staged a 64-pixel slab per pass) for layers of more
  /// than 64 filters with a team per multiprocessor, and measured no faster in kcnn_perf
  /// on the H100 (128 / 256 channels, NHWC, host timing, ms: bf16 0.091 / 0.078 against
  /// this tile's 0.088 / 0.075, fp16 0.092 / 0.086 against 0.092 / 0.072; two builds, two
  /// calls: data/h100-2026-11-28-s24-wide-tile-*.json, -s24-*-host.json): not kept. The
  /// 512-channel layer's 104 teams want split K (the launch's rule).
  template <class T>
  using RunsWarpgroup = TensorCoreRunTile<T, 128, 64, 4, 1, 3, 4, true>;
  template <class T>
  using Runs = std::conditional_t<kBuildHasWgmmaPass, RunsWarpgroup<T>, RunsMmaSync<T>>;
  /// Builds with the wgmma pass, C a multiple of 64: 64 pixels x 64 filters, one
  /// warpgroup, two stages of 128-byte rows (64 taps: a stage, its barrier and its wait
  /// cover twice the taps of 64-byte rows), 33 KB of team scratch. Chosen on an H200
  /// (session 25, the stand-alone harness perf_tests/data/s25-wgmma-smem-harness.cu:
  /// the gathers and pipeline above with either row width, ReLU, no bias, staged bf16
  /// stores; bfloat16 NHWC ResNet 3x3 layers of 64 / 128 / 256 / 512 channels, median of
  /// 50, ms; cuDNN 9.19 through PyTorch in the same call 0.0573 / 0.0434 / 0.0439 /
  /// 0.0336; data/h200-2026-11-28-s25-wgmma-smem.txt):
  ///
  ///   tile, rows, stages, m (teams resident)       64      128     256     512
  ///   128 x 64, 64-byte rows, 3, m 4 (4)        0.0634  0.0635  0.0548  0.0513
  ///   64 x 64, 128-byte rows, 2, m 4 (5)        0.0606  0.0576  0.0617  0.0428
  ///   128 x 128, 64-byte rows, 2, m 2 (2)         -     0.0542  0.0498  0.0636
  ///   beyond Kokkos' 48 KB (not reachable through a TeamPolicy):
  ///   128 x 64, 128-byte rows, 3, m 3 (3), 74 KB 0.0620  0.0514  0.0461  0.0388
  ///   128 x 128, 128-byte rows, 3, m 2 (2), 99 KB   -     0.0468  0.0425  0.0523
  ///
  /// The 256-channel layer's 784 wide-row teams take two waves of 5 per multiprocessor,
  /// the 128 x 64 tile's 392 one wave of 4: tensor_core_prefers_wide_rows keeps that tile
  /// where its grid fits one wave and the wide rows' does not.
  template <class T>
  using RunsWideRows = TensorCoreRunTile<T, 64, 64, 4, 1, 2, 4, true, true, 128>;

  /// Tiles of the TMA kernel (tma_kernel.hpp, builds with the wgmma pass): one warpgroup,
  /// operand tiles loaded by TMA. Chosen on an H200 (session 26, the stand-alone harness
  /// perf_tests/data/s26-tma-im2col-harness.cu: the same loads, pipeline, wgmma and TMA
  /// store, bias + ReLU; bfloat16 NHWC ResNet 3x3 layers of 64 / 128 / 256 / 512 channels,
  /// median of 50, ms; data/h200-2026-11-28-s26-tma-harness-2.txt, the 128 x 128 row and
  /// the 42 KB one from -3.txt, another call):
  ///
  ///   tile, rows, stages, m (teams resident)       64      128     256     512
  ///   64 x 64, 128-byte rows, 2, m 5 (6)        0.0548  0.0527  0.0539  0.0528
  ///     the same, K in 3 slices                   -       -     0.0682  0.0362
  ///   128 x 64, 64-byte rows, 3, m 4 (5)        0.0610  0.0600  0.0449  0.0588
  ///     the same, K in 3 slices                   -       -     0.0656  0.0365
  ///   128 x 128, 64-byte rows, 2, m 3 (3)         -     0.0467  0.0613  0.0971
  ///   64 x 64, 64-byte rows, 5, m 5 (5), 42 KB  0.0823  0.0748  0.0842  0.0658
  ///   beyond Kokkos' 48 KB (not reachable through a TeamPolicy):
  ///   64 x 64, 128-byte rows, 3, m 4 (4), 50 KB 0.0558  0.0465  0.0535  0.0401
  ///   128 x 64, 128-byte rows, 4, m 2 (2), 99 KB 0.0518 0.0409  0.0485  0.0373
  ///
  /// (cuDNN 9.19 through PyTorch, its convolution alone, in the call of -2.txt: 0.0564 /
  /// 0.0442 / 0.0445 / 0.0329.) Stages of 32 taps lose to stages of 64 wherever a tile
  /// fits both: a stage's barrier wait and wgmma batch are per stage. The choice
  /// (tensor_core_tma_tile): the 128 x 128 tile where M allows it and its grid fills a
  /// wave; else 128-byte rows of 64 taps (C a multiple of 64) where the reduction is short
  /// (at most 9 stages: its two stages suffice) or the 128 x 64 tile's grid fills more
  /// than one wave; else the 128 x 64 tile. K is split where a grid fills less than half a
  /// wave. In kcnn on the H100 (kcnn_perf, one call with PyTorch, perf_tests/RESULTS.md,
  /// session 26) these take 0.088 / 0.055 / 0.058 / 0.055 ms a call, the kernels alone
  /// (ncu, base clocks) 82-85 us on the 64-channel layer and 50-52 on the 512-channel one.
  /// The harness skipped the tensor maps' per-block acquire fences that kcnn's kernel
  /// needs; with them its 64 x 64 tile took 0.0714 ms on the 64-channel layer (session 27,
  /// data/h200-2026-11-28-s27-harness-acquire.txt), hence kcnn's teams walking tiles
  /// (tensor_core_tma_league): on the H200 0.072 / 0.058 / 0.058 / 0.057 ms a call, the
  /// kernels alone 58.8 us (64 channels) and 42.4 us (512; the harness's 32.8) by ncu;
  /// the 512-channel layer then moved to the 64 x 64 tile, K in 3 slices (kcnn's 128 x 64
  /// split kernel spills, its 64 x 64 one does not): 0.050 ms a call, 36.2 us by ncu.
  /// Session 31: no fences any more (the maps are a grid-constant kernel parameter),
  /// 0.039 ms a call on that layer, 32.4 us by ncu; the walking teams stay until a
  /// team per tile is measured against them.
  template <class T>
  using TmaWideRows = TensorCoreTmaTile<T, 64, 64, 128, 2, 5>;
  template <class T>
  using TmaTallTile = TensorCoreTmaTile<T, 128, 64, 64, 3, 4>;
  template <class T>
  using TmaSquareTile = TensorCoreTmaTile<T, 128, 128, 64, 2, 3, false>;

  /// The halo kernel's tile (halo_kernel.hpp): 16 x 8 output pixels x 64 filters, a halo of
  /// up to 18 x 10 pixels (3x3 filters; 23,040 bytes) and two filter stages (16,384): the
  /// team scratch holds 40,472 bytes with the alignment slack, of Kokkos' 40,960. Chosen
  /// on an H200 (session 29, the stand-alone harness perf_tests/data/s29-halo-harness.cu,
  /// bfloat16 NHWC ResNet 3x3 layers of 64 / 128 / 256 / 512 channels, bias + ReLU, median
  /// of 50 launches, ms; data/h200-2026-11-28-s29-halo-harness.txt):
  ///
  ///   tile                                         64      128     256     512
  ///   im2col 64 x 64, 128-byte rows (WideRows)   0.0567  0.0546  0.0561  0.0540
  ///     the same, K in 3 slices                     -       -     0.0697  0.0380
  ///   im2col 128 x 64, 64-byte rows (Tall)       0.0623  0.0617  0.0462  0.0599
  ///   im2col 128 x 128, 64-byte rows (Square)      -     0.0471  0.0613  0.0965
  ///   halo 8 x 8, 2 stages, m 5                  0.0446  0.0521  0.0569  0.0428
  ///   halo 16 x 8, 2 stages, m 4                 0.0400  0.0393  0.0392  0.0482
  ///
  /// Loads, not the tensor cores, bound the im2col tiles (the same harness with the
  /// wgmma left out ran 0.0518 / 0.0452 / 0.0447 / 0.0429 ms, with the loads left out
  /// 0.0365 / 0.0289 / 0.0271 / 0.0197): an im2col tile reads each input pixel once per
  /// tap, the halo once per 64 channels for all nine. Its cost is the pixels past the
  /// output's edges: 16 x 8 blocks cover 56 x 56 with 12.5% waste, 28 x 28 and 14 x 14
  /// with 23%, 7 x 7 with 62% (where it loses); tensor_core_tma_tile takes it where the
  /// blocks' pixels are at least 3/4 useful. In kcnn (kcnn_perf, the same H200) the kernel
  /// took 52 / 50 / 51 us by ncu in session 29, when its teams walked tiles at 96
  /// registers with spills; as a team per tile at 90 registers without (the epilogue's
  /// stores through 32-bit addresses, the sums started at the bias), 49 / 45 / 39 us, and
  /// 46 / 44 / 39 with the three tensor maps acquired by three threads at once (session
  /// 30, RESULTS.md). At 4 teams per multiprocessor (128 registers) the walking kernel
  /// took the same time as at 5. Session 31: the tensor maps a grid-constant kernel
  /// parameter (no acquire fences) and the sums started at zero again (at the bias,
  /// ptxas serialized the wgmma batches once the kernel left Kokkos' launch), 37 / 36 /
  /// 36 us. Launched by launch_grid_constant_teams, the TMA and halo kernels are no
  /// longer held to a TeamPolicy's 48 KB: the tiles marked "beyond Kokkos' 48 KB" above
  /// are reachable now, not yet measured in kcnn.
  template <class T>
  using TmaHalo = TensorCoreHaloTile<T, 16, 64, 2, 5, 180>;
};

}  // namespace kcnn::Impl
