#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer and UndefinedBehaviorSanitizer,
# in a build directory of its own (docs/building.md#sanitizers).
#
#   scripts/sanitize.sh              configure (first run), build, run ctest
#   scripts/sanitize.sh -R unit      ctest's arguments after the script's
#
# Every finding fails its test: UBSan does not recover, ASan stops at the
# first error. Leaks are reported (LeakSanitizer) except those of the
# libraries listed in scripts/sanitize-leaks.supp (Open MPI keeps its
# allocations to the end of the process). The LLVM/MLIR libraries are
# Debian's, not instrumented: what parplan's own code does with them is.
# Environment: PARPLAN_SANITIZE_BUILD_DIR (default build-sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PARPLAN_SANITIZE_BUILD_DIR:-build-sanitize}
# vptr needs RTTI, which LLVM's libraries and so parplan build without.
# Release with line tables (-g1): reports name files and lines, and the
# MLIR-heavy sources build in less time than with full debug information.
PARPLAN_BUILD_DIR=$build_dir PARPLAN_BUILD_TYPE=Release \
  PARPLAN_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer -g1" \
  ./scripts/setup.sh
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
