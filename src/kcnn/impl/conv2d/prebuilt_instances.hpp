// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file impl/conv2d/prebuilt_instances.hpp
/// \brief Explicit instances of conv2d_launch (every registered algorithm, run and
///        check, with the fused-pooling second pass), so that a program compiles the
///        convolution kernels once instead of once per translation unit.
///
/// conv2d_forward, find_best_algo and the Auto selection reach the kernels only through
/// conv2d_launch on the kernel View types (kernel_input4_t, ...), whatever Views the
/// caller passed. One instance per execution space and element type therefore covers
/// every call. With CUDA a set of unrolled kernels costs minutes of compile time, and
/// every translation unit that calls conv2d_forward would otherwise pay it again.
///
/// The largest kernel sets, Tiled's (conv2d_tiled) and TensorCoreGemm's
/// (conv2d_tensor_core), are instances of their own, so that one element type's kernels
/// compile in three translation units side by side (the float set alone took 20 minutes
/// of a 2-core CUDA build as one unit).
///
/// Use (kcnn's own programs do, through the CMake target kcnn_prebuilt_instances, whose
/// sources CMake generates from src/instances/conv2d_instances.cpp.in): compile the
/// translation units that call kcnn with KCNN_PREBUILT_INSTANCES defined and link the
/// objects that define the instances, e.g. for float
///   #define KCNN_DEFINING_INSTANCES  // (only for conv2d_launch's own unit)
///   #include <kcnn/kcnn.hpp>
///   KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, , float)
/// and likewise KCNN_CONV2D_TILED_INSTANCE and KCNN_CONV2D_TENSOR_CORE_INSTANCE (16-bit
/// types: KCNN_CONV2D_TENSOR_CORE_16BIT_INSTANCE, with the float output of the two-pass
/// pooling), and KCNN_CONV2D_BACKWARD_INSTANCE (its unit defines
/// KCNN_DEFINING_BACKWARD_INSTANCES): the backward operations, which otherwise compiled
/// their Winograd, direct and GEMM kernels in each of the nine units of kcnn's tests,
/// benchmarks and examples that take a gradient. Without KCNN_PREBUILT_INSTANCES (the default, e.g.
/// code using the installed package) nothing here is declared and each translation unit
/// instantiates what it calls.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>

#include "../../bfloat16.hpp"
#include "../backward/backward_launch.hpp"
#include "../backward/depthwise/depthwise_backward.hpp"
#include "../common/view_checks.hpp"
#include "dispatch.hpp"

/// Declares (EXTERN = extern) or defines (EXTERN empty) conv2d_launch for execution space
/// SPACE and element type T on the kernel View types conv2d_forward passes, and the
/// depthwise entry points (KCNN_DEPTHWISE_INSTANCES).
#define KCNN_CONV2D_LAUNCH_INSTANCE(EXTERN, SPACE, T)                                             \
  EXTERN template std::size_t kcnn::Impl::conv2d_launch<                                          \
      SPACE, kcnn::Impl::kernel_input4_t<SPACE, T>, kcnn::Impl::kernel_input4_t<SPACE, T>,        \
      kcnn::Impl::kernel_input1_t<SPACE, T>, kcnn::Impl::kernel_output4_t<SPACE, T>>(             \
      const SPACE&, kcnn::ConvAlgo, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                 \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_input1_t<SPACE, T>&, \
      const kcnn::Impl::kernel_output4_t<SPACE, T>&, const kcnn::Impl::Conv2dProblem&,            \
      kcnn::Impl::LaunchMode);                                                                    \
  KCNN_DEPTHWISE_INSTANCES(EXTERN, SPACE, T)

/// The depthwise kernels' entry points on pointers and strides for SPACE and T: forward
/// (ConvAlgo::Depthwise, which conv2d_launch reaches) and the two backward operations
/// (conv2d_backward.hpp), defined with conv2d_launch.
#define KCNN_DEPTHWISE_INSTANCES(EXTERN, SPACE, T)                                                 \
  EXTERN template void kcnn::Impl::conv2d_depthwise_run<SPACE, T, T>(                              \
      const SPACE&, const kcnn::Impl::DepthwiseOperands<T, T>&, const kcnn::Impl::Conv2dProblem&); \
  EXTERN template void kcnn::Impl::conv2d_backward_data_depthwise_run<SPACE, T>(                   \
      const SPACE&, const kcnn::Impl::DepthwiseBackwardDataOperands<T>&,                           \
      const kcnn::Impl::Conv2dProblem&);                                                           \
  EXTERN template void kcnn::Impl::conv2d_backward_weights_depthwise_run<SPACE, T>(                \
      const SPACE&, const kcnn::Impl::DepthwiseBackwardWeightsOperands<T>&,                        \
      const kcnn::Impl::Conv2dProblem&);

/// The backward operations after their checks (impl/backward/backward_launch.hpp) for
/// SPACE and T: with the depthwise entry points above, every kernel conv2d_backward_data
/// and conv2d_backward_weights reach.
#define KCNN_CONV2D_BACKWARD_INSTANCE(EXTERN, SPACE, T)                                            \
  EXTERN template void kcnn::Impl::conv2d_backward_data_launch<SPACE, T>(                          \
      const SPACE&, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                                  \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_output4_t<SPACE, T>&, \
      const kcnn::Impl::Conv2dProblem&);                                                           \
  EXTERN template void kcnn::Impl::conv2d_backward_weights_launch<SPACE, T>(                       \
      const SPACE&, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                                  \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_output4_t<SPACE, T>&, \
      const kcnn::Impl::kernel_view_t<SPACE, T*>&, const kcnn::Impl::Conv2dProblem&);

/// Tiled's launch (conv2d_tiled) for SPACE and T: it fuses every pooling, so y is T.
#define KCNN_CONV2D_TILED_INSTANCE(EXTERN, SPACE, T)                                              \
  EXTERN template std::size_t kcnn::Impl::conv2d_tiled<                                           \
      SPACE, kcnn::Impl::kernel_input4_t<SPACE, T>, kcnn::Impl::kernel_input4_t<SPACE, T>,        \
      kcnn::Impl::kernel_input1_t<SPACE, T>, kcnn::Impl::kernel_output4_t<SPACE, T>>(             \
      const SPACE&, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                                 \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_input1_t<SPACE, T>&, \
      const kcnn::Impl::kernel_output4_t<SPACE, T>&, const kcnn::Impl::Conv2dProblem&,            \
      const kcnn::Impl::TiledTuning&, kcnn::Impl::LaunchMode);

/// TensorCoreGemm's launch (conv2d_tensor_core) for SPACE, x/w/bias of T and y of Y.
#define KCNN_CONV2D_TENSOR_CORE_INSTANCE_Y(EXTERN, SPACE, T, Y)                                   \
  EXTERN template std::size_t kcnn::Impl::conv2d_tensor_core<                                     \
      SPACE, kcnn::Impl::kernel_input4_t<SPACE, T>, kcnn::Impl::kernel_input4_t<SPACE, T>,        \
      kcnn::Impl::kernel_input1_t<SPACE, T>, kcnn::Impl::kernel_output4_t<SPACE, Y>>(             \
      const SPACE&, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                                 \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_input1_t<SPACE, T>&, \
      const kcnn::Impl::kernel_output4_t<SPACE, Y>&, const kcnn::Impl::Conv2dProblem&,            \
      kcnn::Impl::LaunchMode);
/// float and double: y is T (the two-pass pooling's unpooled output too).
#define KCNN_CONV2D_TENSOR_CORE_INSTANCE(EXTERN, SPACE, T) \
  KCNN_CONV2D_TENSOR_CORE_INSTANCE_Y(EXTERN, SPACE, T, T)
/// 16-bit types: y is T, or float for the two-pass pooling's unpooled output.
#define KCNN_CONV2D_TENSOR_CORE_16BIT_INSTANCE(EXTERN, SPACE, T) \
  KCNN_CONV2D_TENSOR_CORE_INSTANCE_Y(EXTERN, SPACE, T, T)        \
  KCNN_CONV2D_TENSOR_CORE_INSTANCE_Y(EXTERN, SPACE, T, float)

/// The execution spaces with prebuilt instances: the default one, plus Serial in host
/// builds whose default is a parallel host backend (the unit tests run on both).
#define KCNN_FOR_EACH_PREBUILT_SPACE(MACRO, EXTERN, T) \
  MACRO(EXTERN, Kokkos::DefaultExecutionSpace, T)      \
  KCNN_IF_PREBUILT_HOST_SERIAL(MACRO(EXTERN, Kokkos::Serial, T))

#if defined(KOKKOS_ENABLE_SERIAL) &&                                     \
    (defined(KOKKOS_ENABLE_OPENMP) || defined(KOKKOS_ENABLE_THREADS)) && \
    !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && !defined(KOKKOS_ENABLE_SYCL)
#define KCNN_IF_PREBUILT_HOST_SERIAL(X) X
#else
#define KCNN_IF_PREBUILT_HOST_SERIAL(X)
#endif

/// Whether half_t and kcnn::bfloat16 are types of their own in this build (where Kokkos
/// makes one of them float, its instances are the float ones).
#if defined(KOKKOS_HALF_T_IS_FLOAT) && KOKKOS_HALF_T_IS_FLOAT
#define KCNN_HALF_IS_OWN_TYPE 0
#else
#define KCNN_HALF_IS_OWN_TYPE 1
#endif
#if KCNN_BFLOAT16_IS_KOKKOS_BHALF && defined(KOKKOS_BHALF_T_IS_FLOAT) && KOKKOS_BHALF_T_IS_FLOAT
#define KCNN_BFLOAT16_IS_OWN_TYPE 0
#else
#define KCNN_BFLOAT16_IS_OWN_TYPE 1
#endif

#if defined(KCNN_PREBUILT_INSTANCES)
// Tiled's and TensorCoreGemm's kernels: extern also in conv2d_launch's own units.
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TILED_INSTANCE, extern, float)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TILED_INSTANCE, extern, double)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TENSOR_CORE_INSTANCE, extern, float)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TENSOR_CORE_INSTANCE, extern, double)
#if KCNN_HALF_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TILED_INSTANCE, extern, Kokkos::Experimental::half_t)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TENSOR_CORE_16BIT_INSTANCE, extern,
                             Kokkos::Experimental::half_t)
#endif
#if KCNN_BFLOAT16_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TILED_INSTANCE, extern, kcnn::bfloat16)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_TENSOR_CORE_16BIT_INSTANCE, extern, kcnn::bfloat16)
#endif
#if !defined(KCNN_DEFINING_INSTANCES)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, extern, float)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, extern, double)
#if KCNN_HALF_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, extern, Kokkos::Experimental::half_t)
#endif
#if KCNN_BFLOAT16_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_LAUNCH_INSTANCE, extern, kcnn::bfloat16)
#endif
#endif
#if !defined(KCNN_DEFINING_BACKWARD_INSTANCES)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_BACKWARD_INSTANCE, extern, float)
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_BACKWARD_INSTANCE, extern, double)
#if KCNN_HALF_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_BACKWARD_INSTANCE, extern, Kokkos::Experimental::half_t)
#endif
#if KCNN_BFLOAT16_IS_OWN_TYPE
KCNN_FOR_EACH_PREBUILT_SPACE(KCNN_CONV2D_BACKWARD_INSTANCE, extern, kcnn::bfloat16)
#endif
#endif
#endif
