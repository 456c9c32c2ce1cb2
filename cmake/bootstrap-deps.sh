#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Builds kcnn's dependencies from the distribution's packages:
#   cmake/bootstrap-deps.sh <openmp|cuda|fuzz>
#
# Variants: openmp (Kokkos OpenMP + Serial, g++), cuda (Kokkos CUDA, nvcc_wrapper), fuzz
# (Kokkos Serial alone, clang++: the fuzz preset's libFuzzer harness is compiled by
# clang, and one OpenMP runtime per process needs one compiler).
#
# 1. Installs the Debian packages the build needs (when missing; openmp: Open MPI too).
# 2. Fetches Debian's `trilinos` source package (which vendors Kokkos 3.4.01 and
#    Kokkos Kernels 3.4.01) through a private apt configuration, so the system's
#    apt files are never touched, and extracts only those two packages.
# 3. Patches Kokkos for CUDA 13 and Hopper (cmake/patches/), builds and installs
#    Kokkos and Kokkos Kernels into a cached prefix:
#      ${KCNN_DEPS_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/kcnn/deps/<variant>}
#    The presets find that prefix on their own. A finished prefix is not rebuilt.
#
# Environment: KCNN_DEPS_PREFIX (install prefix), KCNN_DEPS_JOBS (build jobs),
# CUDA_HOME or nvcc on PATH (cuda variant).
set -euo pipefail

variant=${1:-}
case "$variant" in
  openmp | cuda | fuzz) ;;
  *)
    echo "usage: $0 <openmp|cuda|fuzz>" >&2
    exit 2
    ;;
esac

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/kcnn
prefix=${KCNN_DEPS_PREFIX:-$cache_root/deps/$variant}
work=$cache_root/work
jobs=${KCNN_DEPS_JOBS:-$(nproc)}
patch_file=$repo_root/cmake/patches/kokkos-3.4.01-cuda13-hopper.patch

log() { printf '[kcnn bootstrap] %s\n' "$*"; }
die() {
  printf '[kcnn bootstrap] error: %s\n' "$*" >&2
  exit 1
}

# The stamp records how the prefix was built; a different recipe rebuilds it.
recipe_id() {
  {
    echo "variant=$variant"
    sed -n '/^# BUILD-RECIPE-BEGIN/,/^# BUILD-RECIPE-END/p' "${BASH_SOURCE[0]}"
    cat "$patch_file"
  } | sha256sum | cut -c1-16
}
stamp=$prefix/.kcnn-deps-stamp
# ---------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------
# (Checked on every run, also where the prefix is finished: a package added here reaches
# machines that bootstrapped before.)
packages=(cmake ninja-build g++ make patch xz-utils dpkg-dev libgtest-dev libbenchmark-dev
  libopenblas-dev libdnnl-dev dataset-fashion-mnist zlib1g-dev)
# libFuzzer and the sanitizer runtimes come with clang's runtime package.
[[ $variant == fuzz ]] && packages+=(clang libclang-rt-dev)
# Open MPI: the openmp preset builds kcnn::parallel (KCNN_ENABLE_MPI) and its tests.
[[ $variant == openmp ]] && packages+=(libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ -f $stamp && $(cat "$stamp") == "$(recipe_id)" ]]; then
  log "dependencies for '$variant' already installed in $prefix"
  exit 0
fi

# ---------------------------------------------------------------------------
# 2. Kokkos and Kokkos Kernels sources from Debian's trilinos source package
# ---------------------------------------------------------------------------
# Prints "URI SUITE [SIGNED_BY]" of the system's main Debian archive, read from
# its apt sources (one-line and deb822 formats); security/updates/backports
# suites are skipped because the source package lives in the release itself.
system_archive() {
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f $f ]] || continue
      # deb [options] URI SUITE COMPONENTS...
      awk '$1 == "deb" {
             i = 2; signed = "";
             if ($2 ~ /^\[/) { while (i <= NF) { if ($i ~ /signed-by=/) { s = $i; sub(/.*signed-by=/, "", s); sub(/\].*/, "", s); signed = s }
                                                 if ($i ~ /\]$/) { i++; break } i++ } }
             print $i, $(i + 1), signed }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -f $f ]] || continue
      awk 'function flush() { if (types ~ /(^| )deb( |$)/ && uris != "") { n = split(suites, s, " "); for (k = 1; k <= n; k++) print uris, s[k], signed }
                              types = uris = suites = signed = "" }
           /^[[:space:]]*$/ { flush(); next }
           /^Types:/ { sub(/^Types:[[:space:]]*/, ""); types = $0 }
           /^URIs:/ { sub(/^URIs:[[:space:]]*/, ""); split($0, u, " "); uris = u[1] }
           /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0 }
           /^Signed-By:/ { sub(/^Signed-By:[[:space:]]*/, ""); signed = $0 }
           END { flush() }' "$f"
    done
  } | awk '$2 !~ /-(security|updates|backports|proposed-updates)$/ && $2 !~ /\// && $1 ~ /debian/' | head -n 1
}

src_dir=$work/src
if [[ ! -f $src_dir/.extracted ]]; then
  read -r uri suite signed_by < <(system_archive) || true
  [[ -n ${uri:-} && -n ${suite:-} ]] || die "no Debian archive found in /etc/apt/sources.list{,.d}"
  log "fetching the trilinos source package from $uri ($suite)"
  apt_dir=$work/apt
  rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/download"
  opts=""
  [[ -n ${signed_by:-} && -f ${signed_by} ]] && opts="[signed-by=$signed_by] "
  echo "deb-src ${opts}$uri $suite main" >"$apt_dir/sources.list"
  apt_private=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$apt_dir/lists" -o "APT::Sandbox::User=root")
  apt-get "${apt_private[@]}" update -qq
  (cd "$apt_dir/download" && apt-get "${apt_private[@]}" source --download-only -qq trilinos)
  tarball=$(ls "$apt_dir"/download/trilinos_*.orig.tar.* | head -n 1)
  [[ -f $tarball ]] || die "trilinos source tarball not downloaded"
  log "extracting packages/kokkos and packages/kokkos-kernels from $(basename "$tarball")"
  rm -rf "$src_dir" && mkdir -p "$src_dir"
  tar -xf "$tarball" -C "$src_dir" --strip-components=2 --wildcards --no-wildcards-match-slash \
    '*/packages/kokkos' '*/packages/kokkos-kernels'
  grep -q '3.4.01' "$src_dir/kokkos/master_history.txt" || die "unexpected Kokkos version in $tarball"
  log "applying $(basename "$patch_file")"
  patch -d "$src_dir/kokkos" -p1 --forward --quiet <"$patch_file"
  rm -rf "$apt_dir"
  touch "$src_dir/.extracted"
fi

# ---------------------------------------------------------------------------
# 3. Build and install
# ---------------------------------------------------------------------------
# BUILD-RECIPE-BEGIN
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_TESTS=OFF
  -DKokkos_ENABLE_EXAMPLES=OFF -DKokkos_ENABLE_DEPRECATED_CODE_3=OFF)
[[ $variant == fuzz ]] || kokkos_opts+=(-DKokkos_ENABLE_OPENMP=ON)
# Kokkos Kernels without explicit template instantiation: kernels are instantiated
# where kcnn calls them, so the library builds in seconds. BLAS goes to OpenBLAS on
# the host; on CUDA, cuBLAS is enabled by Kokkos Kernels itself. cuSPARSE is off:
# Kokkos Kernels 3.4 calls cuSPARSE APIs that CUDA 12 removed, and kcnn needs none.
kernels_opts=(-DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF
  -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
  -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF
  -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF
  -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
  -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
  -DKokkosKernels_ENABLE_TPL_BLAS=ON -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
  -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
  -DBLAS_LIBRARIES=openblas -DBLAS_LIBRARY_DIRS=/usr/lib/x86_64-linux-gnu)
if [[ $variant == cuda ]]; then
  nvcc_path=$(command -v nvcc || true)
  [[ -n $nvcc_path ]] || nvcc_path=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
  [[ -x $nvcc_path ]] || die "the cuda variant needs nvcc (on PATH or in \$CUDA_HOME/bin)"
  export PATH="$(dirname "$nvcc_path"):$PATH"
  # nvcc_wrapper's default -arch (sm_35) is rejected by nvcc 13: name Hopper here
  # so that CMake's compiler checks pass, and through Kokkos_ARCH_HOPPER90 (added
  # by our patch) for everything Kokkos compiles.
  compiler=(-DCMAKE_CXX_COMPILER="$src_dir/kokkos/bin/nvcc_wrapper" -DCMAKE_CXX_FLAGS=-arch=sm_90)
  kokkos_opts+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_HOPPER90=ON)
  kernels_opts+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON)
elif [[ $variant == fuzz ]]; then
  compiler=(-DCMAKE_CXX_COMPILER=clang++)
else
  compiler=(-DCMAKE_CXX_COMPILER=g++)
fi
# BUILD-RECIPE-END

build_dir=$work/build-$variant
rm -rf "$build_dir" "$prefix"
log "building Kokkos ($variant) into $prefix with $jobs jobs"
cmake -S "$src_dir/kokkos" -B "$build_dir/kokkos" "${common[@]}" "${compiler[@]}" "${kokkos_opts[@]}" >"$build_dir.kokkos.log" 2>&1 ||
  { tail -n 40 "$build_dir.kokkos.log"; die "configuring Kokkos failed (log: $build_dir.kokkos.log)"; }
cmake --build "$build_dir/kokkos" -j "$jobs" >>"$build_dir.kokkos.log" 2>&1 &&
  cmake --install "$build_dir/kokkos" >>"$build_dir.kokkos.log" 2>&1 ||
  { tail -n 40 "$build_dir.kokkos.log"; die "building Kokkos failed (log: $build_dir.kokkos.log)"; }

log "building Kokkos Kernels ($variant)"
cmake -S "$src_dir/kokkos-kernels" -B "$build_dir/kernels" "${common[@]}" "${compiler[@]}" \
  -DKokkos_ROOT="$prefix" "${kernels_opts[@]}" >"$build_dir.kernels.log" 2>&1 ||
  { tail -n 40 "$build_dir.kernels.log"; die "configuring Kokkos Kernels failed (log: $build_dir.kernels.log)"; }
cmake --build "$build_dir/kernels" -j "$jobs" >>"$build_dir.kernels.log" 2>&1 &&
  cmake --install "$build_dir/kernels" >>"$build_dir.kernels.log" 2>&1 ||
  { tail -n 40 "$build_dir.kernels.log"; die "building Kokkos Kernels failed (log: $build_dir.kernels.log)"; }

rm -rf "$build_dir"
recipe_id >"$stamp"
log "done: Kokkos and Kokkos Kernels ($variant) in $prefix"
