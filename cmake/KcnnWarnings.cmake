# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# kcnn_enable_warnings(target): warnings for kcnn's own code (tests, benchmarks,
# examples). Under nvcc_wrapper the flags reach the host compiler.
option(KCNN_WARNINGS_AS_ERRORS "Treat warnings in kcnn's own code as errors" OFF)

function(kcnn_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(KCNN_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
