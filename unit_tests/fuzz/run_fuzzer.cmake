# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# cmake -DFUZZER=<exe> -DSEED_CORPUS=<dir> -DWORK_DIR=<dir> -DINPUTS=<n> -P run_fuzzer.cmake
# One bounded libFuzzer run of INPUTS inputs: new inputs go to WORK_DIR/corpus (the seed
# corpus is only read), a crashing input to WORK_DIR/crash-*. Prints the number of inputs
# tried and the time taken.
file(MAKE_DIRECTORY ${WORK_DIR}/corpus)
string(TIMESTAMP started "%s")
execute_process(
  COMMAND ${FUZZER} -runs=${INPUTS} -timeout=20 -rss_limit_mb=4096
    -print_final_stats=1 -artifact_prefix=${WORK_DIR}/ ${WORK_DIR}/corpus ${SEED_CORPUS}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
string(REGEX MATCH "stat::number_of_executed_units: *([0-9]+)" runs_line "${out}")
set(runs "${CMAKE_MATCH_1}")
if(NOT status EQUAL 0)
  message("${out}")
  message(FATAL_ERROR "kcnn fuzz: the fuzzer failed (exit ${status}) after ${runs} inputs; "
                      "the input is in ${WORK_DIR}/crash-* (replay: ${FUZZER} <file>)")
endif()
if(runs STREQUAL "")
  message("${out}")
  message(FATAL_ERROR "kcnn fuzz: no final statistics in the fuzzer's output")
endif()
string(TIMESTAMP finished "%s")
math(EXPR seconds "${finished} - ${started}")
message("kcnn fuzz: ${runs} inputs tried in ${seconds} s, 0 failures")
if(runs LESS INPUTS)
  message(FATAL_ERROR "kcnn fuzz: the fuzzer stopped after ${runs} of ${INPUTS} inputs")
endif()
