# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Data-parallel training follows training on one rank (examples/CMakeLists.txt,
# lenet5_mpi_train_two_ranks_follow_one):
#   cmake -DLAUNCH="mpiexec|-n|" -DLAUNCH_FLAGS="..." -DLENET5=exe -DWORK_DIR=dir
#         -DARGS="train|--limit|..." -DLOSS_TOLERANCE_PPM=n -P mpi_train_test.cmake
# Runs the same training with 1 and with 2 ranks (the same global batch, initial weights
# and sample order) and compares each epoch's mean training loss (relative difference
# at most LOSS_TOLERANCE_PPM millionths, plus one in the last printed digit) and test
# accuracy (at most one test image apart). The two runs
# differ only in the order of the float sums (each rank's shard, then the mean over
# the ranks), so they agree to within that rounding, grown over the steps.
string(REPLACE "|" ";" launch "${LAUNCH}")
string(REPLACE "|" ";" launch_flags "${LAUNCH_FLAGS}")
string(REPLACE "|" ";" args "${ARGS}")
foreach(ranks IN ITEMS 1 2)
  execute_process(COMMAND ${launch} ${ranks} ${launch_flags} ${LENET5} ${args}
                          --out ${WORK_DIR}/lenet5_mpi_${ranks}.bin
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc STREQUAL "77" OR out MATCHES "skipped: ")
    message("skipped: ${out}${err}")
    return()
  endif()
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${ranks} rank(s): exit code ${rc}; output:\n${out}${err}")
  endif()
  message(STATUS "${ranks} rank(s):\n${out}${err}")
  string(REGEX MATCHALL "mean loss [0-9.]+, test accuracy [0-9.]+" epochs_${ranks} "${out}")
  list(LENGTH epochs_${ranks} count_${ranks})
  if(count_${ranks} EQUAL 0)
    message(FATAL_ERROR "${ranks} rank(s): no epoch line in the output")
  endif()
endforeach()
if(NOT count_1 EQUAL count_2)
  message(FATAL_ERROR "${count_1} epoch lines with 1 rank, ${count_2} with 2")
endif()
string(REGEX MATCH "([0-9]+) images, batch" images "${out}")
set(images "${CMAKE_MATCH_1}")
math(EXPR last "${count_1} - 1")
foreach(e RANGE ${last})
  list(GET epochs_1 ${e} line_1)
  list(GET epochs_2 ${e} line_2)
  string(REGEX MATCH "mean loss ([0-9.]+), test accuracy ([0-9.]+)" _ "${line_1}")
  set(loss_1 ${CMAKE_MATCH_1})
  set(accuracy_1 ${CMAKE_MATCH_2})
  string(REGEX MATCH "mean loss ([0-9.]+), test accuracy ([0-9.]+)" _ "${line_2}")
  set(loss_2 ${CMAKE_MATCH_1})
  set(accuracy_2 ${CMAKE_MATCH_2})
  # CMake's math is integer: compare in millionths.
  # (Leading zeros off: math() would read them as octal.)
  string(REPLACE "." "" loss_1_micro "${loss_1}")
  string(REPLACE "." "" loss_2_micro "${loss_2}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" loss_1_micro "${loss_1_micro}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" loss_2_micro "${loss_2_micro}")
  math(EXPR loss_diff "${loss_1_micro} - ${loss_2_micro}")
  if(loss_diff LESS 0)
    math(EXPR loss_diff "0 - ${loss_diff}")
  endif()
  math(EXPR allowed "${loss_1_micro} * ${LOSS_TOLERANCE_PPM} / 1000000 + 1")
  if(loss_diff GREATER allowed)
    message(FATAL_ERROR "epoch ${e}: mean loss ${loss_1} (1 rank) and ${loss_2} (2 ranks) differ "
                        "by ${loss_diff} millionths, more than ${allowed}")
  endif()
  string(REPLACE "." "" accuracy_1_tenk "${accuracy_1}")
  string(REPLACE "." "" accuracy_2_tenk "${accuracy_2}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" accuracy_1_tenk "${accuracy_1_tenk}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" accuracy_2_tenk "${accuracy_2_tenk}")
  math(EXPR correct_diff "(${accuracy_1_tenk} - ${accuracy_2_tenk}) * ${images}")
  if(correct_diff LESS 0)
    math(EXPR correct_diff "0 - ${correct_diff}")
  endif()
  # One image is 10000 / images ten-thousandths; each printed accuracy is rounded by up
  # to half of one.
  math(EXPR one_image "10000 + ${images}")
  if(correct_diff GREATER one_image)
    message(FATAL_ERROR "epoch ${e}: test accuracy ${accuracy_1} (1 rank) and ${accuracy_2} "
                        "(2 ranks) differ by more than one image")
  endif()
  message(STATUS "epoch ${e}: mean loss ${loss_1} / ${loss_2}, test accuracy ${accuracy_1} / "
                 "${accuracy_2} (1 / 2 ranks)")
endforeach()
