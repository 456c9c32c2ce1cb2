// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/implicit_gemm/implicit_gemm.hpp
/// \brief ConvAlgo::ImplicitGemm: the convolution as the GEMM
///        out(m, j) = sum_k W(m, k) * X(k, j), m over output channels, j over output
///        pixels (n, p, q), k over taps (c, r, s), where the unrolled matrix X is never
///        stored: each tile of it is gathered from the input while it is loaded.
///
/// Both layouts are the same GEMM; they differ only in how k decomposes (the weights'
/// memory order, see UnrollMap) and where out(m, j) is stored. Every gather goes through
/// UnrollMap::gather_tap / gather_pixel, the mapping im2col and col2im use.
///
/// GPU kernel (one team per BM x BN output tile, one CUDA thread per TM x TN
/// micro-tile): K is walked in BK steps. Per step the team gathers the BK x BN X tile
/// and the BM x BK W tile into one of two scratch buffers while it multiplies out of the
/// other (the next step's global loads are issued into registers before the current
/// step's math and stored to scratch after it: one barrier per step). A step's taps
/// (the (c, r, s) decomposition of its k, as offsets) are computed two steps ahead by
/// BK threads into a scratch table, so no thread divides per element. Micro-tile
/// operands come out of scratch with 16-byte vector loads.
///
/// Host kernel (a team is one OpenMP thread): the team owns BN output pixels and all M
/// channels. It unrolls its pixels' whole K x BN panel once into scratch (NCHW with
/// the vectorized row copies of the host im2col kernel) and multiplies it with the
/// weights in TM x TN register blocks whose TN columns are SIMD lanes.
///
/// Fused pooling (non-overlapping windows, see implicit_gemm_fuses_pool): the GEMM's
/// columns become the cells of the pooling windows, window by window
/// (ImplicitGemmPoolColumns), and a team takes whole windows only; its activated conv
/// outputs go to scratch and the team reduces them into y (pool_tile).
///
/// The files, by role: operands.hpp (the GEMM view's operands, the pooling columns),
/// tile_choice.hpp (tiles, split-K heuristic, device plan), device_kernel.hpp and
/// host_kernel.hpp (the kernels), launch.hpp (the launches and conv2d_implicit_gemm).
#pragma once

#include "launch.hpp"
