// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Session 31 (not built by CMake): kcnn's halo kernel launched four ways in one process
// (h200-2026-11-29-s31-launch-ab.txt). Built against the cuda preset's build like its
// sm_90a instance units: NVCC_APPEND_FLAGS=-gencode=arch=compute_90a,code=sm_90a nvcc_wrapper
// -DKCNN_PREBUILT_INSTANCES -DKCNN_WGMMA_PASS -I src -I build/cuda/generated -arch=sm_90 -O3
// -expt-extended-lambda -Xcompiler -fopenmp -std=c++17, linked with libkcnn_prebuilt_instances.a
// and Kokkos. Variant (a) of that file needs the halo kernel's operator() templated on its
// team type (as it was during the session).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <kcnn/impl/conv2d/tensor_core/launch.hpp>
#include <kcnn/kcnn.hpp>
#include <random>
#include <string>
#include <vector>
namespace proto {
using namespace kcnn::Impl;
using T = kcnn::bfloat16;
using Tile = TensorCoreTiles::TmaHalo<T>;
using Kernel = TensorCoreHaloKernel<Tile, TensorCoreMath::BF16>;
using member = Kokkos::TeamPolicy<Kokkos::Cuda>::member_type;
struct KTeam {
  const member& m;
  KOKKOS_INLINE_FUNCTION int team_rank() const { return m.team_rank(); }
  KOKKOS_INLINE_FUNCTION int league_rank() const { return m.league_rank(); }
  KOKKOS_INLINE_FUNCTION int league_size() const { return m.league_size(); }
  KOKKOS_INLINE_FUNCTION void team_barrier() const { m.team_barrier(); }
  KOKKOS_INLINE_FUNCTION unsigned char* scratch_aligned(std::size_t a) const {
    return static_cast<unsigned char*>(
        m.team_scratch(0).get_shmem_aligned(Kernel::data_bytes + Kernel::control_bytes, a));
  }
};
struct KokkosHalo {
  Kernel k;
  const TmaMaps* maps;
  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const { k(KTeam{m}, *maps); }
};
struct MapsPtr {
  const TmaMaps* p;
};
struct ViaPtr {
  Kernel k;
  KOKKOS_INLINE_FUNCTION void operator()(const GridConstantTeam& t, const MapsPtr& m) const {
    k(t, *m.p);
  }
};
template <int Off, bool Y>
struct TeamV {
  __device__ int team_rank() const { return Y ? threadIdx.y : threadIdx.x; }
  __device__ int league_rank() const { return blockIdx.x; }
  __device__ int league_size() const { return gridDim.x; }
  KOKKOS_INLINE_FUNCTION void team_barrier() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  KOKKOS_INLINE_FUNCTION unsigned char* scratch_aligned(std::size_t a) const {
#if defined(__CUDA_ARCH__)
    extern __shared__ __align__(16) unsigned char proto_smem[];
    const std::uint32_t base = static_cast<std::uint32_t>(__cvta_generic_to_shared(proto_smem));
    return proto_smem + (a - base % a) % a + Off;
#else
    return nullptr;
#endif
  }
};
template <int Off, bool Y>
__global__ void __launch_bounds__(128, 5) myk(const Kernel k, const __grid_constant__ TmaMaps m) {
  k(TeamV<Off, Y>{}, m);
}
template <int Off, bool Y>
void launch_my(int tiles, const Kernel& k, const TmaMaps& m) {
  myk<Off, Y><<<tiles, Y ? dim3(1, 128, 1) : dim3(128, 1, 1), Kernel::scratch_bytes() + Off,
                Kokkos::Cuda().cuda_stream()>>>(k, m);
}
template <class F>
float time_it(F&& f, int reps = 50) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i)
    f();
  Kokkos::fence();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a, Kokkos::Cuda().cuda_stream());
    f();
    cudaEventRecord(b, Kokkos::Cuda().cuda_stream());
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int run() {
  {
    struct L {
      const char* name;
      int N, C, H;
    } layers[] = {{"c64_56", 64, 64, 56}, {"c128_28", 64, 128, 28}, {"c256_14", 64, 256, 14}};
    for (auto l : layers) {
      if (getenv("ONLY") && std::string(getenv("ONLY")) != l.name) continue;
      const int N = l.N, C = l.C, H = l.H, W = l.H, M = l.C;
      Kokkos::View<T****, Kokkos::LayoutRight, Kokkos::CudaSpace> x("x", N, H, W, C),
          y("y", N, H, W, M), w("w", M, 3, 3, C);
      Kokkos::View<T*, Kokkos::CudaSpace> bias("b", M);
      auto fill = [](auto v, unsigned seed) {
        auto h = Kokkos::create_mirror_view(v);
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-1, 1);
        T* p = h.data();
        for (size_t i = 0; i < h.span(); ++i)
          p[i] = T(u(rng));
        Kokkos::deep_copy(v, h);
      };
      fill(x, 1);
      fill(w, 2);
      fill(bias, 3);
      kcnn::Conv2dParams p;
      p.pad_h = p.pad_w = 1;
      p.layout = kcnn::Layout::NHWC;
      p.activation = kcnn::Activation::ReLU;
      p.algo = kcnn::ConvAlgo::TensorCoreGemm;
      const Kokkos::Cuda space;
      const auto pb = make_conv2d_problem("kh", x, w, bias, y, p);
      const auto o = implicit_gemm_operands<kcnn::Layout::NHWC>(
          as_kernel_view<Kokkos::Cuda, false>(x), as_kernel_view<Kokkos::Cuda, false>(w),
          as_kernel_view<Kokkos::Cuda, false>(bias), as_kernel_view<Kokkos::Cuda, true>(y), pb);
      auto call = [&] { kcnn::conv2d_forward(space, x, w, bias, y, p); };
      auto direct = [&] {
        tensor_core_launch_halo_tile<Tile, TensorCoreMath::BF16>(
            space, o, pb, pb.workspace_limit_bytes, LaunchMode::Run,
            static_cast<const ChannelsLastStaging<T>*>(nullptr));
      };
      // Kokkos launch of the same functor, maps copied to global memory once.
      const UnrollMap<kcnn::Layout::NHWC>& m = o.map;
      TensorCoreHaloGeometry geo;
      geo.M = o.M, geo.C = int(m.C), geo.R = int(m.R), geo.S = int(m.S);
      geo.pad_h = int(m.pad_h), geo.pad_w = int(m.pad_w);
      geo.halo_cols = Tile::BW + geo.S - 1;
      geo.p_blocks = int((m.P + Tile::BH - 1) / Tile::BH);
      geo.q_blocks = int((m.Q + Tile::BW - 1) / Tile::BW);
      geo.f_blocks = int((o.M + Tile::BF - 1) / Tile::BF);
      TmaMaps hm;
      const TmaNhwcShape xs = tma_x_shape(o, pb.N);
      const int halo_box[3] = {64, geo.halo_cols, Tile::BH + geo.R - 1};
      const std::uint64_t ye[4] = {std::uint64_t(o.M), std::uint64_t(m.Q), std::uint64_t(m.P),
                                   std::uint64_t(pb.N)};
      const std::uint64_t ys[3] = {2 * std::uint64_t(o.M), 2 * std::uint64_t(m.Q * o.M),
                                   2 * std::uint64_t(m.P * m.Q * o.M)};
      const int y_box[3] = {64, Tile::BW, Tile::BH};
      bool ok =
          tma_encode_nhwc_box<true>(hm.x, o.x, xs.extents, xs.byte_strides, halo_box) &&
          tma_encode_matrix<true>(hm.w, o.w, std::uint64_t(o.M), std::uint64_t(o.K),
                                  2 * std::uint64_t(o.K), Tile::BF, 64, TmaSwizzle::Bytes128) &&
          tma_encode_nhwc_box<true>(hm.y, o.y, ye, ys, y_box);
      if (!ok) {
        printf("encode failed\n");
        return 1;
      }
      Kokkos::View<TmaMaps, Kokkos::CudaSpace> dm("maps");
      Kokkos::deep_copy(dm, Kokkos::View<TmaMaps, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&hm));
      const std::int64_t tiles = pb.N * geo.p_blocks * geo.q_blocks * geo.f_blocks;
      KokkosHalo kh{Kernel{o.bias, o.activation, geo}, dm.data()};
      BoundedTeamPolicy<Kokkos::Cuda, 128, Tile::min_teams_per_sm> policy(space, int(tiles), 128);
      policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes()));
      auto kokkos = [&] { Kokkos::parallel_for("kh", policy, kh); };
      ViaPtr vp{Kernel{o.bias, o.activation, geo}};
      auto rawptr = [&] {
        launch_grid_constant_teams<128, Tile::min_teams_per_sm, Kernel::scratch_bytes()>(
            space, "vp", int(tiles), Kernel::scratch_bytes(), vp, MapsPtr{dm.data()});
      };
      auto rawgc = [&] {
        launch_grid_constant_teams<128, Tile::min_teams_per_sm, Kernel::scratch_bytes()>(
            space, "gc", int(tiles), Kernel::scratch_bytes(), kh.k, hm);
      };
      for (int r = 0; r < 2; ++r)
        printf("%s r%d call %.4f direct %.4f kokkos %.4f rawptr %.4f rawgc %.4f ms\n", l.name, r,
               time_it(call), time_it(direct), time_it(kokkos), time_it(rawptr), time_it(rawgc));
      printf("%s my: x0 %.4f x1024 %.4f y0 %.4f y1024 %.4f ms\n", l.name,
             time_it([&] { launch_my<0, false>(int(tiles), kh.k, hm); }),
             time_it([&] { launch_my<1024, false>(int(tiles), kh.k, hm); }),
             time_it([&] { launch_my<0, true>(int(tiles), kh.k, hm); }),
             time_it([&] { launch_my<1024, true>(int(tiles), kh.k, hm); }));
      cudaFuncSetAttribute(&grid_constant_team_kernel<Kernel, TmaMaps, 128, Tile::min_teams_per_sm>,
                           cudaFuncAttributePreferredSharedMemoryCarveout, -1);
      cudaFuncSetAttribute(&grid_constant_team_kernel<ViaPtr, MapsPtr, 128, Tile::min_teams_per_sm>,
                           cudaFuncAttributePreferredSharedMemoryCarveout, -1);
      printf("%s carveout default: rawptr %.4f rawgc %.4f ms\n", l.name, time_it(rawptr),
             time_it(rawgc));
      cudaFuncAttributes fa;
      cudaFuncGetAttributes(
          &fa, &grid_constant_team_kernel<Kernel, TmaMaps, 128, Tile::min_teams_per_sm>);
      printf("gc regs %d static smem %zu; ", fa.numRegs, fa.sharedSizeBytes);
      cudaFuncGetAttributes(
          &fa, &grid_constant_team_kernel<ViaPtr, MapsPtr, 128, Tile::min_teams_per_sm>);
      printf("ptr regs %d\n", fa.numRegs);
    }
  }
  return 0;
}
}  // namespace proto
int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  const int rc = proto::run();
  Kokkos::finalize();
  return rc;
}
