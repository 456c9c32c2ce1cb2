#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Times one layer in an outside project built exactly as the README says (install, then
# find_package(kcnn) with no flags of its own) beside the project's own build, in one run:
#   perf_tests/outside_project/compare.sh [build-dir=build/openmp] [shape=8,64,56,56,64,3,3,1,1]
# Builds the outside project twice against the installed package: as the README says,
# and with -DKCNN_HOST_ARCH=OFF (what an outside project got before kcnn carried the
# architecture flag). Then alternates, three rounds: kcnn_perf's Auto row for the shape
# (--shape, NCHW) and the two outside builds, and prints every median.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build/openmp}" && pwd)
shape=${2:-8,64,56,56,64,3,3,1,1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
deps=$(sed -n 's/^KCNN_DEPS_PREFIX:PATH=//p' "$build/CMakeCache.txt")
kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' "$build/CMakeCache.txt")
kernels_dir=$(sed -n 's/^KokkosKernels_DIR:PATH=//p' "$build/CMakeCache.txt")
prefixes="$work/kcnn;${deps:-$kokkos_dir/../../..;$kernels_dir/../../..}"

cmake --install "$build" --prefix "$work/kcnn" >/dev/null
for variant in readme no_arch; do
  extra=()
  [[ $variant == no_arch ]] && extra=(-DKCNN_HOST_ARCH=OFF)
  cmake -S "$root/perf_tests/outside_project" -B "$work/$variant" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_PREFIX_PATH=$prefixes" "${extra[@]}" >"$work/$variant.log" 2>&1 ||
    { cat "$work/$variant.log"; exit 1; }
  cmake --build "$work/$variant" >>"$work/$variant.log" 2>&1 || { cat "$work/$variant.log"; exit 1; }
done

export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
echo "shape $shape (NCHW, fp32, bias + ReLU), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for round in 1 2 3; do
  "$build/perf_tests/kcnn_perf" --shape "$shape" --benchmark_filter="custom/.*/NCHW/Auto" 2>/dev/null |
    awk -v r="$round" '/^conv2d\/custom/ {printf "round %s  project build (kcnn_perf)   %s %s  %s\n", r, $2, $3, $NF}'
  echo "round $round  outside, README recipe  $("$work/readme/outside_bench" "$shape" 2>/dev/null)"
  echo "round $round  outside, no arch flag   $("$work/no_arch/outside_bench" "$shape" 2>/dev/null)"
done
