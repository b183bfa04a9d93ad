#!/usr/bin/env bash
# tools/fuzz_long.sh — the long fuzz run (docs/fuzzing-and-sanitizers.md): each libFuzzer target for RUNS
# executions (default 10^6) over its committed seed corpus, then a table of target, executions, seconds,
# crashes. Needs a -Dfuzz=enabled build (default build-asan, as tools/test_sanitizers.sh makes it).
# Usage: tools/fuzz_long.sh [-runs=N] [BUILD_DIR] [TARGET...]   e.g. tools/fuzz_long.sh build-asan model shards
# Exit status 1 when any target crashed; its inputs are left in BUILD_DIR/tests/fuzz/long/artifacts/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=1000000
if [[ "${1:-}" == -runs=* ]]; then runs="${1#-runs=}"; shift; fi
build="${1:-build-asan}"
shift $(($# > 0 ? 1 : 0))
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(scenario model hwprofile safetensors shards vocab op_times sweep); fi
[ -d "$build/tests/fuzz" ] || { echo "fuzz_long: $build has no fuzz targets: configure it with -Dfuzz=enabled (tools/test_sanitizers.sh does)" >&2; exit 2; }
ninja -C "$build" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}") >/dev/null
work="$build/tests/fuzz/long"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
status=0
rows=()
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  log="$work/$t.log"
  start=$(date +%s%N)
  rc=0
  "$build/tests/fuzz/fuzz_$t" -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" "$work/corpus/$t" "$here/tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  crashes=$(find "$work/artifacts/$t" -type f | wc -l)
  if ((rc != 0)); then status=1; fi
  rows+=("$(printf '%-12s %12s %7d.%d %8s' "$t" "${execs:-?}" $((tenths / 10)) $((tenths % 10)) "$crashes")")
  echo "fuzz_long: $t done (exit $rc, log $log)" >&2
done
printf '%-12s %12s %9s %8s\n' target executions seconds crashes
printf '%s\n' "${rows[@]}"
exit $status
