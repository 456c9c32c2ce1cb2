# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs kcnn from BUILD_DIR into a scratch prefix, moves the prefix elsewhere (the
# package must be relocatable), then configures, builds and runs the outside project
# beside this file against it: the find_package(kcnn) path users take. Kokkos and Kokkos
# Kernels are found through CMAKE_PREFIX_PATH, as the README says. Fails on any CMake
# warning in the outside project's configuration, and when the compile commands lack the
# -march=HOST_ARCH flag kcnn is meant to carry (HOST_ARCH empty: when they have one).
# EXPECT_PARALLEL (kcnn built with MPI): the package must define kcnn::parallel, whose
# program runs as one MPI rank.
foreach(var BUILD_DIR WORK_DIR CXX_COMPILER CXX_FLAGS DEPS_PREFIXES HOST_ARCH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
function(run_step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGV}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()
run_step(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/installed")
file(RENAME "${WORK_DIR}/installed" "${WORK_DIR}/moved")
file(GLOB_RECURSE package_files "${WORK_DIR}/moved/*.cmake")
foreach(f IN LISTS package_files)
  file(READ "${f}" text)
  string(FIND "${text}" "${WORK_DIR}/installed" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${f} names the install prefix: the package is not relocatable")
  endif()
endforeach()
# The prefix list goes through an initial cache file: a ';' on a command line would be
# split into separate arguments here.
file(WRITE "${WORK_DIR}/prefixes.cmake"
     "set(CMAKE_PREFIX_PATH \"${WORK_DIR}/moved;${DEPS_PREFIXES}\" CACHE STRING \"\")\n")
run_step(${CMAKE_COMMAND} -C "${WORK_DIR}/prefixes.cmake" -S "${CMAKE_CURRENT_LIST_DIR}"
         -B "${WORK_DIR}/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
if(step_output MATCHES "CMake Warning|CMake Deprecation Warning")
  message(FATAL_ERROR "the outside project's configuration warned (output above)")
endif()
file(READ "${WORK_DIR}/build/compile_commands.json" commands)
if(HOST_ARCH AND NOT commands MATCHES "-march=${HOST_ARCH}")
  message(FATAL_ERROR "the outside project is not compiled with -march=${HOST_ARCH}: ${commands}")
elseif(NOT HOST_ARCH AND commands MATCHES "-march=")
  message(FATAL_ERROR "kcnn added a -march flag although KCNN_HOST_ARCH is empty: ${commands}")
endif()
run_step(${CMAKE_COMMAND} --build "${WORK_DIR}/build" --parallel 2)
run_step("${WORK_DIR}/build/consumer")
if(EXPECT_PARALLEL AND NOT EXISTS "${WORK_DIR}/build/consumer_parallel")
  message(FATAL_ERROR "kcnn was built with MPI, but the package defined no kcnn::parallel")
endif()
if(EXISTS "${WORK_DIR}/build/consumer_parallel")
  run_step("${WORK_DIR}/build/consumer_parallel")
  if(NOT step_output MATCHES "parallel: ok")
    message(FATAL_ERROR "consumer_parallel did not print 'parallel: ok'")
  endif()
endif()
