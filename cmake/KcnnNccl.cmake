# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# NCCL for kcnn::parallel's device-memory collectives (KCNN_ENABLE_NCCL): its header and
# library, from NCCL_ROOT, CUDA_HOME or the CUDA toolkit beside nvcc (/usr/local/cuda),
# or the system (Debian's libnccl-dev). Used by kcnn's build and by the installed
# package (kcnnConfig.cmake).
#   kcnn_find_nccl(<target>)  adds NCCL's include directory and library to the INTERFACE
#                             target <target>, and KCNN_ENABLE_NCCL to its definitions;
#                             fails when NCCL is not found.
function(kcnn_find_nccl target)
  find_program(_kcnn_nvcc nvcc HINTS ENV CUDA_HOME PATH_SUFFIXES bin)
  set(_kcnn_cuda_root "")
  if(_kcnn_nvcc)
    get_filename_component(_kcnn_cuda_root "${_kcnn_nvcc}" DIRECTORY)
    get_filename_component(_kcnn_cuda_root "${_kcnn_cuda_root}" DIRECTORY)
  endif()
  set(_kcnn_hints $ENV{NCCL_ROOT} $ENV{CUDA_HOME} ${_kcnn_cuda_root} /usr/local/cuda)
  find_path(KCNN_NCCL_INCLUDE_DIR nccl.h HINTS ${_kcnn_hints} PATH_SUFFIXES include
            DOC "Directory of nccl.h (KCNN_ENABLE_NCCL)")
  find_library(KCNN_NCCL_LIBRARY nccl HINTS ${_kcnn_hints} PATH_SUFFIXES lib lib64
               DOC "The NCCL library (KCNN_ENABLE_NCCL)")
  if(NOT KCNN_NCCL_INCLUDE_DIR OR NOT KCNN_NCCL_LIBRARY)
    message(FATAL_ERROR "kcnn: NCCL not found (nccl.h: ${KCNN_NCCL_INCLUDE_DIR}, library: "
                        "${KCNN_NCCL_LIBRARY}); set NCCL_ROOT or CUDA_HOME, or turn "
                        "KCNN_ENABLE_NCCL off")
  endif()
  target_include_directories(${target} SYSTEM INTERFACE "${KCNN_NCCL_INCLUDE_DIR}")
  target_link_libraries(${target} INTERFACE "${KCNN_NCCL_LIBRARY}")
  target_compile_definitions(${target} INTERFACE KCNN_ENABLE_NCCL)
endfunction()
