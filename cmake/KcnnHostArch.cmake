# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# KCNN_HOST_ARCH: the CPU that code using kcnn is compiled for. kcnn is header-only, so
# its host kernels are compiled in the user's translation units with the user's flags;
# without architecture flags they get only the baseline x86-64 vector unit (SSE2): 3.2x
# slower on the 3x3 64-channel layer at N=8 (perf_tests/RESULTS.md, session 7). kcnn::kcnn therefore carries
# -march=<KCNN_HOST_ARCH> as a usage requirement, in its build tree and in the installed
# package alike:
#   - default "native" (the CPU of the machine that compiles the user's code), unless
#     CMAKE_CXX_FLAGS already name the CPU (-march=/-mcpu=), or the Kokkos in use
#     carries a host architecture (Kokkos_ARCH_* for a CPU: Kokkos' own flags apply) or
#     has a GPU backend (GPU builds are often compiled on one machine and run on another:
#     choose the host CPU explicitly there);
#   - any -march value (e.g. "skylake-avx512", "znver3", "x86-64-v3") to choose another;
#   - "OFF" or empty: no flag (bring your own, e.g. in CMAKE_CXX_FLAGS).
# An outside project can override the installed package's choice the same way:
#   cmake -DKCNN_HOST_ARCH=<value> ...   (before or at find_package(kcnn)).
# This file is installed beside kcnnConfig.cmake, which uses the last two functions.
include(CheckCXXCompilerFlag)

# Sets `out` to TRUE when CMAKE_CXX_FLAGS already name the CPU (-march= or -mcpu=).
function(kcnn_cxx_flags_name_cpu out)
  if(CMAKE_CXX_FLAGS MATCHES "(^| )-(march|mcpu)=")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Adds -march=<arch> (C++ only) to `target`'s usage requirements once, wrapped in
# `wrapper` (BUILD_INTERFACE for kcnn's build tree, empty for the imported target), and
# says so.
function(kcnn_add_host_arch target arch wrapper)
  set(option "$<$<COMPILE_LANGUAGE:CXX>:-march=${arch}>")
  if(wrapper)
    set(option "$<${wrapper}:${option}>")
  endif()
  get_target_property(options ${target} INTERFACE_COMPILE_OPTIONS)
  if(NOT options OR NOT option IN_LIST options)
    target_compile_options(${target} INTERFACE "${option}")
    message(STATUS "kcnn: host kernels compiled with -march=${arch} (KCNN_HOST_ARCH)")
  endif()
endfunction()

# Sets `out` to kcnn's default for KCNN_HOST_ARCH with the Kokkos already found.
function(kcnn_default_host_arch out)
  set(gpu_arch_regex
      "^(KEPLER|MAXWELL|PASCAL|VOLTA|TURING|AMPERE|ADA|HOPPER|BLACKWELL|VEGA|NAVI|AMD_GFX|INTEL_GEN|INTEL_DG|INTEL_PVC|INTEL_XE)")
  set(kokkos_host_arch "")
  foreach(arch IN LISTS Kokkos_ARCH)
    if(NOT arch MATCHES "${gpu_arch_regex}")
      set(kokkos_host_arch "${arch}")
    endif()
  endforeach()
  set(kokkos_gpu_backend OFF)
  foreach(device IN ITEMS CUDA HIP SYCL OPENMPTARGET OPENACC)
    if(device IN_LIST Kokkos_DEVICES)
      set(kokkos_gpu_backend ON)
    endif()
  endforeach()
  kcnn_cxx_flags_name_cpu(flags_name_cpu)
  if(flags_name_cpu)
    set(value "")
    set(why "CMAKE_CXX_FLAGS already names the CPU")
  elseif(kokkos_host_arch)
    set(value "")
    set(why "Kokkos carries Kokkos_ARCH_${kokkos_host_arch}")
  elseif(kokkos_gpu_backend)
    set(value "")
    set(why "a GPU backend (set KCNN_HOST_ARCH to the CPU the programs will run on)")
  else()
    check_cxx_compiler_flag(-march=native KCNN_COMPILER_HAS_MARCH_NATIVE)
    if(KCNN_COMPILER_HAS_MARCH_NATIVE)
      set(value "native")
      set(why "this machine's CPU")
    else()
      set(value "")
      set(why "the compiler takes no -march=native")
    endif()
  endif()
  set(${out} "${value}" PARENT_SCOPE)
  set(${out}_WHY "${why}" PARENT_SCOPE)
endfunction()
