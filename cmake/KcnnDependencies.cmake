# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Included before project(): points CMake at the prefix cmake/bootstrap-deps.sh
# installs into, so the presets configure without extra flags. Users with their own
# Kokkos and Kokkos Kernels leave KCNN_DEPS_VARIANT empty and pass Kokkos_ROOT and
# KokkosKernels_ROOT (or CMAKE_PREFIX_PATH) as usual.

set(KCNN_DEPS_VARIANT "" CACHE STRING
    "Search the prefix of 'cmake/bootstrap-deps.sh <variant>' (openmp, cuda or fuzz); empty: don't")

if(KCNN_DEPS_VARIANT)
  if(NOT KCNN_DEPS_VARIANT MATCHES "^(openmp|cuda|fuzz)$")
    message(FATAL_ERROR "KCNN_DEPS_VARIANT must be openmp, cuda, fuzz or empty, not '${KCNN_DEPS_VARIANT}'")
  endif()
  # Same rule as the bootstrap script.
  if(DEFINED ENV{KCNN_DEPS_PREFIX} AND NOT "$ENV{KCNN_DEPS_PREFIX}" STREQUAL "")
    set(_kcnn_prefix "$ENV{KCNN_DEPS_PREFIX}")
  elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(_kcnn_prefix "$ENV{XDG_CACHE_HOME}/kcnn/deps/${KCNN_DEPS_VARIANT}")
  else()
    set(_kcnn_prefix "$ENV{HOME}/.cache/kcnn/deps/${KCNN_DEPS_VARIANT}")
  endif()
  set(KCNN_DEPS_PREFIX "${_kcnn_prefix}" CACHE PATH "Prefix of the bootstrapped Kokkos and Kokkos Kernels")
  if(NOT EXISTS "${KCNN_DEPS_PREFIX}")
    message(FATAL_ERROR "No bootstrapped dependencies in ${KCNN_DEPS_PREFIX}: "
                        "run 'bash cmake/bootstrap-deps.sh ${KCNN_DEPS_VARIANT}' first")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${KCNN_DEPS_PREFIX}")
  # Kokkos' CUDA backend compiles all C++ through its nvcc_wrapper.
  if(KCNN_DEPS_VARIANT STREQUAL "cuda" AND NOT CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX})
    set(CMAKE_CXX_COMPILER "${KCNN_DEPS_PREFIX}/bin/nvcc_wrapper")
  endif()
endif()
