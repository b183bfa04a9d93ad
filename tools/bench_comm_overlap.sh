#!/usr/bin/env bash
# tools/bench_comm_overlap.sh — step time of a 2-rank data-parallel `ptsim train` with the gradient-bucket
# all-reduces overlapped with backward (the default) and without (--no-comm-overlap): RUNS runs of each,
# alternating, each run's step time the median of its steps after the first, reported as the median over
# runs. A measurement, not a test (docs/executor.md, "Overlapping the bucket all-reduces", has the numbers).
# Usage: tools/bench_comm_overlap.sh DATA_DIR [MODEL] [RUNS] [EXTRA TRAIN FLAGS...]
#   DATA_DIR: written by `ptsim data prepare` (e.g. the demo's, docs/training.md); MODEL default bert-tiny;
#   RUNS default 5. PTSIM (default build/tools/ptsim) and MPIRUN (default mpirun) may be set.
set -euo pipefail
data="${1:?usage: tools/bench_comm_overlap.sh DATA_DIR [MODEL] [RUNS] [EXTRA TRAIN FLAGS...]}"
model="${2:-bert-tiny}"
runs="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
ptsim="${PTSIM:-build/tools/ptsim}"
mpirun="${MPIRUN:-mpirun}"
[ -d "$data" ] || { echo "bench_comm_overlap: data directory '$data' does not exist (run ptsim data prepare)" >&2; exit 2; }
[ -x "$ptsim" ] || { echo "bench_comm_overlap: '$ptsim' is not an executable (build first or set PTSIM)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# Median of the numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_once() {  # $1: label, $2...: extra flags; prints the run's median step seconds (steps after the first)
  local label="$1"; shift
  "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$ptsim" train --model "$model" --data "$data" --steps 7 \
    --micro-batch 8 --threads 1 --optimizer lamb --quiet --metrics "$work/$label.jsonl" "$@" >/dev/null
  tail -n +2 "$work/$label.jsonl" | sed -n 's/.*"step_seconds":\([0-9.eE+-]*\).*/\1/p' | median
  rm -f "$work/$label.jsonl"
}

declare -a with without
for ((i = 0; i < runs; ++i)); do
  with+=("$(run_once overlap "$@")")
  without+=("$(run_once tail --no-comm-overlap "$@")")
done
m_with="$(printf '%s\n' "${with[@]}" | median)"
m_without="$(printf '%s\n' "${without[@]}" | median)"
echo "runs (s/step) overlapped:     ${with[*]}"
echo "runs (s/step) not overlapped: ${without[*]}"
awk -v a="$m_with" -v b="$m_without" -v m="$model" 'BEGIN {
  printf "%s, 2 ranks: overlapped %.4f s/step, not overlapped %.4f s/step (medians of runs), ratio %.3f\n", m, a, b, b / a }'
