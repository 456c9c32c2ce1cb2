#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Packs what a GPU machine needs to test and benchmark the cuda build without
# building anything there: the cuda preset's executables, the Debian shared
# libraries they need that a CUDA image lacks, and the cuDNN anchor script.
#   cmake/gpu-pack.sh [build-dir=build/cuda] [out=.carry]
# Then run cmake/gpu-check.sh on the GPU machine with the out folder carried.
set -euo pipefail
build=${1:-build/cuda}
out=${2:-.carry}
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/anchors"
# (The quickstart example only with KCNN_PACK_QUICKSTART=1: each executable carries every
# GPU kernel, and with it the folder would outgrow the 64 MiB a call may carry.)
# KCNN_PACK_EXES picks the executables (build-relative paths): with the 16-bit kernels the
# three default ones outgrow one call's 64 MiB beside the tree, so pack the unit tests and
# the benchmarks for separate calls, e.g. KCNN_PACK_EXES=unit_tests/kcnn_unit_tests.
exes=${KCNN_PACK_EXES:-"unit_tests/kcnn_unit_tests unit_tests/kcnn_case_runner perf_tests/kcnn_perf examples/lenet5"}
[[ ${KCNN_PACK_QUICKSTART:-0} == 1 ]] && exes+=" examples/kcnn_quickstart"
for exe in $exes; do
  [[ -x $build/$exe ]] && cp "$build/$exe" "$out/bin/"
done
# Shared libraries from Debian packages (not libc, not CUDA's, which the GPU image has).
for exe in "$out"/bin/*; do
  ldd "$exe" | awk '/=> \// {print $3}'
done | sort -u | { grep -E 'libbenchmark|libopenblas|libgfortran|libquadmath|libgtest|libz\.' || true; } |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done  # (none needed is fine)
anchors=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/anchors
[[ -d $anchors ]] && cp "$anchors"/cudnn_anchor.py "$out/anchors/"
# The LeNet-5 example's data and weights (examples/lenet5), when this machine has them.
data=/usr/share/datasets/fashion-mnist
# The test set always; the training set (26 MB) only with KCNN_PACK_TRAIN=1, for
# gpu-check.sh's `lenet5` step with KCNN_LENET5_TRAIN_EPOCHS.
if [[ -d $data ]]; then
  mkdir -p "$out/data" && cp "$data"/t10k-*.gz "$out/data/"
  [[ ${KCNN_PACK_TRAIN:-0} == 1 ]] && cp "$data"/train-*.gz "$out/data/"
fi
weights=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/examples/lenet5/lenet5_weights.bin
[[ -f $weights ]] && cp "$weights" "$out/"
# The carried folder travels within 64 MiB: the executables and libraries go as one
# xz archive (cmake/gpu-check.sh unpacks it).
tar -C "$out" -cf - bin lib | xz -T0 -6 >"$out/bundle.tar.xz" && rm -rf "$out/bin" "$out/lib"
du -sh "$out"
