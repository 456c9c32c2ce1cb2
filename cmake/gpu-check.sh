#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The whole GPU check in one call, on a machine with an NVIDIA GPU, over a folder
# made by cmake/gpu-pack.sh:
#   cmake/gpu-check.sh [carry=.carry] [logs=${OUT:-gpu-logs}]
#                      [what=tests,memcheck,racecheck,synccheck,initcheck,pytorch,bench,anchor]
# Runs the CUDA unit tests, compute-sanitizer memcheck on them, racecheck / synccheck /
# initcheck on the team-scratch kernels' tests, the PyTorch comparison, kcnn_perf (JSON
# too) and the cuDNN anchor; writes each log under the logs folder and prints a summary.
# (racecheck, synccheck, initcheck take KCNN_<TOOL>_FILTER; pytorch runs
# unit_tests/pytorch/compare_with_pytorch.py over kcnn_case_runner.) Other steps:
# quickstart; resusage (registers, stack, spills of kcnn_perf's kernels, from cuobjdump,
# with the stack frames of kcnn's kernels in the summary); sass (SASS of all of
# kcnn_perf, gzipped, into sass_kcnn_perf.txt.gz).
# lenet5 (examples/lenet5: infer on the 10,000 test images with the packed weights, and
# with KCNN_LENET5_TRAIN_EPOCHS=E also train from scratch for E epochs).
# Environment: KCNN_MEMCHECK_FILTER (gtest filter for memcheck), KCNN_RACECHECK_FILTER,
# KCNN_SYNCCHECK_FILTER, KCNN_INITCHECK_FILTER (for those tools), KCNN_PERF_ARGS.
set -uo pipefail
carry=${1:-.carry}
logs=${2:-${OUT:-gpu-logs}}
what=${3:-tests,memcheck,racecheck,synccheck,initcheck,pytorch,bench,anchor}
mkdir -p "$logs"
if [[ -f $carry/bundle.tar.xz && ! -d $carry/bin ]]; then
  tar -C "$carry" -xJf "$carry/bundle.tar.xz" || { echo "gpu-check: cannot unpack the bundle"; exit 1; }
fi
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=$logs/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
has() { [[ ,$what, == *,$1,* ]]; }

note "date: $(date -u +%FT%TZ)"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"

if has tests; then
  "$carry/bin/kcnn_unit_tests" --gtest_output="xml:$logs/unit_tests.xml" >"$logs/unit_tests.log" 2>&1
  note "unit tests: exit $? | $(grep -E '^\[  (PASSED|FAILED)  \]' "$logs/unit_tests.log" | tr '\n' ' ')"
fi
if has memcheck; then
  # Every test but the ones past 2^31 elements (33 s natively, far beyond a call's time
  # under memcheck; the `tests` step runs them).
  compute-sanitizer --tool memcheck --error-exitcode 99 "$carry/bin/kcnn_unit_tests" \
    --gtest_filter="${KCNN_MEMCHECK_FILTER:--LargeTensors.*}" >"$logs/memcheck.log" 2>&1
  note "memcheck: exit $? | $(grep -E 'ERROR SUMMARY' "$logs/memcheck.log" | tail -n 1)"
fi
# The other compute-sanitizer tools, for the team-scratch kernels (Tiled, ImplicitGemm,
# TensorCoreGemm, pooling): shared-memory races (racecheck), barriers reached by only
# part of a block (synccheck), reads of device memory never written (initcheck). Slow,
# so each takes a gtest filter: KCNN_RACECHECK_FILTER, KCNN_SYNCCHECK_FILTER,
# KCNN_INITCHECK_FILTER.
sanitize() {
  local tool=$1 code=$2 filter=$3
  shift 3
  compute-sanitizer --tool "$tool" "$@" --error-exitcode "$code" "$carry/bin/kcnn_unit_tests" \
    ${filter:+--gtest_filter=$filter} >"$logs/$tool.log" 2>&1
  note "$tool: exit $? | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$logs/$tool.log" | tail -n 1)"
}
# Default: every test of the team-scratch and pooling kernels (1,239 on the H100,
# 2026-11-26: racecheck 286 s, the others 15 s each), but the ones past 2^31 elements
# ("ConvAndPool...": under racecheck they would take far beyond a call's time).
scratch_tests='*Tiled*:*Pool*:*ImplicitGemm*:*TensorCore*:ExtremeInputs.*-LargeTensors.*'
has racecheck && sanitize racecheck 98 "${KCNN_RACECHECK_FILTER:-$scratch_tests}" --racecheck-report all
has synccheck && sanitize synccheck 97 "${KCNN_SYNCCHECK_FILTER:-$scratch_tests}"
has initcheck && sanitize initcheck 96 "${KCNN_INITCHECK_FILTER:-$scratch_tests}"
if has pytorch && [[ -x $carry/bin/kcnn_case_runner ]]; then
  # PyTorch (float64) as a second, independent reference: random problems of every
  # operation through kcnn_case_runner (KCNN_PYTORCH_CASES of them, default 400).
  OMP_PROC_BIND=${OMP_PROC_BIND:-false} \
    python3 "$(dirname "${BASH_SOURCE[0]}")/../unit_tests/pytorch/compare_with_pytorch.py" \
    "$carry/bin/kcnn_case_runner" --cases "${KCNN_PYTORCH_CASES:-400}" \
    --workdir "$logs/pytorch_cases" >"$logs/pytorch.log" 2>&1
  note "pytorch: exit $? | $(grep -E '^pytorch comparison: [0-9]+ cases' "$logs/pytorch.log")"
fi
if has quickstart; then
  "$carry/bin/kcnn_quickstart" 10000 >"$logs/quickstart.log" 2>&1
  note "quickstart: exit $? | $(tail -n 1 "$logs/quickstart.log")"
fi
if has resusage; then
  cuobjdump -res-usage "$carry/bin/kcnn_perf" >"$logs/resusage.txt" 2>&1
  note "resusage: exit $? | kcnn kernels with a stack frame: $(grep -A1 'Function.*kcnn' \
    "$logs/resusage.txt" | grep -c 'STACK:[1-9]')"
fi
if has sass; then
  cuobjdump -sass "$carry/bin/kcnn_perf" 2>&1 | gzip >"$logs/sass_kcnn_perf.txt.gz"
  note "sass: exit ${PIPESTATUS[0]}"
fi
if has lenet5 && [[ -x $carry/bin/lenet5 ]]; then
  weights=$carry/lenet5_weights.bin
  "$carry/bin/lenet5" infer --data "$carry/data" --weights "$weights" --batch 10000 \
    >"$logs/lenet5_infer.log" 2>&1
  note "lenet5 infer: exit $? | $(grep -iE 'accuracy' "$logs/lenet5_infer.log" | tail -n 1)"
  if [[ -n ${KCNN_LENET5_TRAIN_EPOCHS:-} ]]; then
    "$carry/bin/lenet5" train --data "$carry/data" --epochs "$KCNN_LENET5_TRAIN_EPOCHS" \
      --out "$logs/lenet5_trained.bin" >"$logs/lenet5_train.log" 2>&1
    note "lenet5 train: exit $? | $(grep -iE 'accuracy' "$logs/lenet5_train.log" | tail -n 2 | tr '\n' ' ')"
  fi
fi
if has bench; then
  "$carry/bin/kcnn_perf" --benchmark_out="$logs/kcnn_perf.json" --benchmark_out_format=json \
    ${KCNN_PERF_ARGS:-} >"$logs/kcnn_perf.log" 2>&1
  note "kcnn_perf: exit $?"
  grep -E '^conv2d|^im2col|^pool' "$logs/kcnn_perf.log" | tee -a "$summary"
fi
if has anchor && [[ -f $carry/anchors/cudnn_anchor.py ]]; then
  PYTHONUNBUFFERED=1 python3 "$carry/anchors/cudnn_anchor.py" >"$logs/cudnn_anchor.log" 2>&1
  note "cudnn anchor: exit $?"
  cat "$logs/cudnn_anchor.log" >>"$summary"
fi
