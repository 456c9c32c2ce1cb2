# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# One example command line, checked as a new user would meet it (the examples' argument
# handling tests, examples/CMakeLists.txt):
#   cmake -DCOMMAND="exe|arg|..." -DEXIT_CODE=n [-DMATCH=regex] [-DNO_MATCH=regex]
#         -P command_line_test.cmake
# The command's exit code must be EXIT_CODE and its output (stdout and stderr) match
# MATCH and not NO_MATCH. Exit code 77 (the examples' --skip-missing-data) prints
# "skipped: ...", which the tests take as a skip (SKIP_REGULAR_EXPRESSION).
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
if(rc STREQUAL "77")
  message("skipped: ${output}")
  return()
endif()
if(NOT rc STREQUAL "${EXIT_CODE}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXIT_CODE}; output:\n${output}")
endif()
if(DEFINED MATCH AND NOT output MATCHES "${MATCH}")
  message(FATAL_ERROR "the output does not match '${MATCH}':\n${output}")
endif()
if(DEFINED NO_MATCH AND output MATCHES "${NO_MATCH}")
  message(FATAL_ERROR "the output matches '${NO_MATCH}':\n${output}")
endif()
message(STATUS "exit code ${rc} as expected; output:\n${output}")
