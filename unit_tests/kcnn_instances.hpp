// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
/// \file kcnn_instances.hpp
/// \brief The kernels behind conv2d_forward are compiled once for the whole test
///        program (kcnn_instances_*.cpp), not once per test file: with CUDA each set of
///        unrolled kernels costs minutes of build time. Every test file includes this.
#pragma once

#include <Kokkos_Core.hpp>
#include <kcnn/kcnn.hpp>

// Declares (extern) or defines (explicit instantiation) conv2d_launch (every registered
// algorithm, run and check) for one execution space and scalar type, on the kernel View
// types conv2d_forward passes.
#define KCNN_TEST_CONV2D_INSTANCE(EXTERN, SPACE, T)                                               \
  EXTERN template std::size_t kcnn::Impl::conv2d_launch<                                          \
      SPACE, kcnn::Impl::kernel_input4_t<SPACE, T>, kcnn::Impl::kernel_input4_t<SPACE, T>,        \
      kcnn::Impl::kernel_input1_t<SPACE, T>, kcnn::Impl::kernel_output4_t<SPACE, T>>(             \
      const SPACE&, kcnn::ConvAlgo, const kcnn::Impl::kernel_input4_t<SPACE, T>&,                 \
      const kcnn::Impl::kernel_input4_t<SPACE, T>&, const kcnn::Impl::kernel_input1_t<SPACE, T>&, \
      const kcnn::Impl::kernel_output4_t<SPACE, T>&, const kcnn::Impl::Conv2dProblem&,            \
      kcnn::Impl::LaunchMode);

// The spaces the tests run on (test_support.hpp: the default space, plus Serial in host
// builds).
#define KCNN_TEST_FOR_EACH_SPACE(MACRO, EXTERN, T) \
  MACRO(EXTERN, Kokkos::DefaultExecutionSpace, T)  \
  KCNN_TEST_IF_HOST_SERIAL(MACRO(EXTERN, Kokkos::Serial, T))

#if defined(KOKKOS_ENABLE_SERIAL) && !defined(KOKKOS_ENABLE_CUDA)
#define KCNN_TEST_IF_HOST_SERIAL(X) X
#else
#define KCNN_TEST_IF_HOST_SERIAL(X)
#endif

#ifndef KCNN_TEST_DEFINE_INSTANCES
KCNN_TEST_FOR_EACH_SPACE(KCNN_TEST_CONV2D_INSTANCE, extern, float)
KCNN_TEST_FOR_EACH_SPACE(KCNN_TEST_CONV2D_INSTANCE, extern, double)
#endif
