#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Times two kcnn_perf executables (e.g. before and after a change) on the same machine in
# one call, alternating them round by round so that drift (clocks, temperature, other
# load) falls on both alike, then prints every benchmark's median over the rounds and
# the ratio after / before (compare_builds.py).
#   perf_tests/compare_builds.sh BEFORE AFTER OUT_DIR ROUNDS [kcnn_perf arguments...]
# e.g. ... build-old/perf_tests/kcnn_perf build/cuda/perf_tests/kcnn_perf out 2 \
#          --benchmark_filter='^(conv2d/(lenet|resnet3x3)/)'
set -uo pipefail  # a failed run leaves its JSON out, the others still run
before=$1 after=$2 out=$3 rounds=$4
shift 4
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order="before after"
  ((round % 2 == 0)) && order="after before"  # neither build always runs first
  for which in $order; do
    exe=$before
    [[ $which == after ]] && exe=$after
    "$exe" "$@" --benchmark_out="$out/$which-$round.json" --benchmark_out_format=json \
      >"$out/$which-$round.txt" 2>&1
  done
done
python3 "$(dirname "${BASH_SOURCE[0]}")/compare_builds.py" "$out" | tee "$out/compare.md"
