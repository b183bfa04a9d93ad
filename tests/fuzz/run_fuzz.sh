#!/usr/bin/env bash
# tests/fuzz/run_fuzz.sh — runs one libFuzzer target over its committed seed corpus for a bounded time (the
# `fuzz` meson suite; docs/fuzzing-and-sanitizers.md). New inputs go to a scratch corpus under the build
# directory, never into tests/fuzz/corpus; a crash leaves its input in BUILD/fuzz-artifacts/TARGET/.
# Usage: run_fuzz.sh TARGET_EXE SEED_CORPUS_DIR WORK_DIR [libFuzzer flags...]
set -euo pipefail
exe="$1" seeds="$2" work="$3"
shift 3
name="$(basename "$exe")"
mkdir -p "$work/corpus/$name" "$work/artifacts/$name"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
exec "$exe" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/$name/" "$@" "$work/corpus/$name" "$seeds"
