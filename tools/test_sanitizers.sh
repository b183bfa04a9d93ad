#!/usr/bin/env bash
# tools/test_sanitizers.sh — the `cpu` suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
# on), then the `fuzz` suite (each libFuzzer target for a bounded time over its seed corpus), in one build
# directory made with Debian's clang 14: debugoptimized, -Db_sanitize=address,undefined, -Dfuzz=enabled.
# .ci/run calls it after tools/test.sh; docs/fuzzing-and-sanitizers.md has the timings.
# Usage: tools/test_sanitizers.sh [BUILD_DIR]   (default build-asan; run tools/bootstrap.sh first for clang)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-asan}"
cxx="$(command -v clang++-14 || command -v clang++ || true)"
[ -n "$cxx" ] || { echo "test_sanitizers: clang++ not found: run tools/bootstrap.sh (it installs clang-14 and libclang-rt-14-dev)" >&2; exit 2; }
cd "$here"
if [ ! -f "$build/build.ninja" ]; then
  # -Dcuda=disabled: the instrumentation here is clang's while nvcc's host compiler is g++; the ordinary build
  # (tools/test.sh) compiles the CUDA backend and tools/gpu_check.sh tests it (docs/cuda-backend.md).
  CXX="$cxx" meson setup "$build" --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=enabled -Dcuda=disabled
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ninja -C "$build"
start=$(date +%s)
meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 4 --suite cpu
echo "test_sanitizers: cpu suite under ASan+UBSan took $(($(date +%s) - start)) s"
start=$(date +%s)
meson test -C "$build" --no-rebuild --print-errorlogs --suite fuzz
echo "test_sanitizers: fuzz suite took $(($(date +%s) - start)) s"
