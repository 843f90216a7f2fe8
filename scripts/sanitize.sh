#!/usr/bin/env bash
# parplan under AddressSanitizer and UndefinedBehaviorSanitizer, in a
# build directory of its own (docs/building.md#sanitizers), built with
# clang the way LLVM builds itself for fuzzing: -DLLVM_USE_SANITIZER=
# "Address;Undefined" -DLLVM_USE_SANITIZE_COVERAGE=ON. The same build
# serves bench/fuzz.sh, whose targets it makes libFuzzer binaries.
#
#   scripts/sanitize.sh               configure (first run), build all, run ctest
#   scripts/sanitize.sh -R unit       ctest's arguments after the script's
#   scripts/sanitize.sh --build T...  configure and build targets T only
#
# Every finding fails its test: UBSan does not recover, ASan stops at the
# first error. Leaks are reported (LeakSanitizer) except those of the
# libraries listed in scripts/sanitize-leaks.supp (Open MPI keeps its
# allocations to the end of the process). The LLVM/MLIR libraries are
# Debian's, not instrumented: what parplan's own code does with them is.
# Environment: PARPLAN_SANITIZE_BUILD_DIR (default build-sanitize),
# PARPLAN_TEST_TIME_SCALE (factor on the integration tests' time limits,
# default 8).
# The first run installs clang-22 and its runtime libraries (libFuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PARPLAN_SANITIZE_BUILD_DIR:-build-sanitize}

missing=()
for package in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "sanitize: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# Paths under the checkout hashed relative to it, as scripts/setup.sh does.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [[ ! -f $build_dir/build.ninja ]]; then
  llvm_bin=$(llvm-config-22 --bindir)
  # Release with line tables (HandleLLVMOptions adds -gline-tables-only
  # and -fno-omit-frame-pointer): reports name files and lines. CUDA off
  # (nvcc is not clang), mimalloc off (it would hide allocations from
  # ASan). vptr is off in LLVM's UBSan flags: it needs RTTI, which LLVM's
  # libraries, and so parplan, build without.
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$llvm_bin/clang" -DCMAKE_CXX_COMPILER="$llvm_bin/clang++" \
    -DMLIR_DIR="$(llvm-config-22 --prefix)/lib/cmake/mlir" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld" \
    -DLLVM_USE_SANITIZER="Address;Undefined" -DLLVM_USE_SANITIZE_COVERAGE=ON \
    -DPARPLAN_ENABLE_CUDA=OFF -DPARPLAN_MIMALLOC=OFF >/dev/null
fi
# Instrumented, the integration tests take several times their usual
# time (and 8 MPI ranks share 2 cores): their limits are 8 times longer.
cmake "$build_dir" -DPARPLAN_TEST_TIME_SCALE="${PARPLAN_TEST_TIME_SCALE:-8}" >/dev/null
if [[ ${1:-} == --build ]]; then
  shift
  ninja -C "$build_dir" -j"$(nproc)" "$@"
  exit 0
fi
ninja -C "$build_dir" -j"$(nproc)"

# allow_user_poisoning=0: LLVM's and MLIR's libraries are Debian's, not
# instrumented, while their headers poison allocator memory in code that
# is; half of that bookkeeping runs, and reads of memory the other half
# handed out would look like use-after-poison.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Whole stacks (no fast unwinding), so that a leak inside Open MPI, whose
# libraries keep no frame pointers, is matched by its library.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/sanitize-leaks.supp:print_suppressions=0:fast_unwind_on_malloc=0}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(llvm-config-22 --bindir)/llvm-symbolizer}
ctest --test-dir "$build_dir" --output-on-failure "$@"
