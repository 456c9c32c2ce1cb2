// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/tiled/tiled.hpp
/// \brief ConvAlgo::Tiled: direct convolution with team scratch memory and register
///        blocking, one source for GPUs and CPUs.
///
/// A team owns a tile of outputs of one image: tile_p rows x tile_q columns x tile_m
/// output channels. Input channels are walked in chunks; for each chunk the team stages
/// the input halo tile (the rows and columns its outputs read, zeros where the window
/// leaves the image) and the chunk's filter taps for its output channels into level-0
/// scratch. Each logical thread then computes a compile-time micro-tile of
/// BM channels x BH rows x BW columns held in registers: every staged input value it
/// reads feeds BM multiply-adds, every staged weight feeds BH*BW.
///
/// The filter extent is a template parameter for the common sizes (1, 3, 5, 7) so
/// the tap loops unroll; other sizes take the same kernel with runtime extents. Unit
/// stride and dilation get their own instantiation: then every scratch index is a
/// compile-time offset from a per-thread base and the compiler keeps reused input
/// values in registers instead of reloading them per tap.
///
/// On GPUs a logical thread is a CUDA thread and the micro-tile is small (registers
/// are per thread); on CPUs a team is one OpenMP thread that walks all logical threads
/// of its tile, and BW spans a SIMD register so the innermost loop over the output
/// width vectorizes.
///
/// Fused pooling (Conv2dParams::pool): a team owns a tile of pooled outputs instead and
/// computes the conv outputs their windows read (its conv tile starts where its first
/// window does, and holds as many whole windows as the micro-tiles cover). The
/// activated conv outputs go to scratch (GPUs: the staging block, once the last chunk
/// is read; CPUs: level 1), then the team reduces each window from there into y. Any
/// window, stride and padding: overlapping windows at tile edges are recomputed by both
/// neighbouring teams.
///
/// The files, by role: geometry.hpp (micro-tiles, team geometry, pooling paths,
/// tuning), kernel_base.hpp (state and helpers both kernels share), staging.hpp,
/// mainloop.hpp and epilogue.hpp (the phases, as mixins), device_kernel.hpp
/// (TiledDeviceKernel) and host_kernel.hpp (TiledHostKernel), launch.hpp
/// (conv2d_tiled and its dispatch).
#pragma once

#include "launch.hpp"
