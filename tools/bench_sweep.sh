#!/usr/bin/env bash
# tools/bench_sweep.sh — benchmark of `ptsim sweep` (a benchmark, not a test; docs/sweep.md records results):
# the 10,080-configuration sweep reports/sweeps/bench-bert-large-10k.json (BERT-large over T4/V100/A100
# nodes, 1–128 nodes, four networks, three precisions, accumulation choices) timed as one `ptsim sweep`
# run, next to the same configurations run as separate `ptsim predict` processes — a sample of them,
# spread evenly over the sweep, timed one after another and scaled to the whole sweep — as a ratio.
# Usage: tools/bench_sweep.sh [BUILD_DIR] [SAMPLES] [REPEATS]   (defaults: build 40 3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
samples="${2:-40}"
repeats="${3:-3}"
ptsim="$build/tools/ptsim"
sweep_file="$here/reports/sweeps/bench-bert-large-10k.json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
[ -x "$ptsim" ] || { echo "bench_sweep: build ptsim first ($ptsim not found)" >&2; exit 2; }

now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

threads="$(nproc)"
echo "machine: $(nproc) cores, $(uname -m); sweep threads: $threads; repeats: $repeats"
: > "$work/sweep_times"
for _ in $(seq "$repeats"); do
  t0=$(now)
  "$ptsim" sweep --file "$sweep_file" --format json --threads "$threads" --no-progress --out "$work/sweep.json" 2>/dev/null
  t1=$(now)
  calc "$t1 - $t0" >> "$work/sweep_times"
done
sweep_seconds=$(median < "$work/sweep_times")

# The sampled configurations as `predict --scenario … --set …` command lines (the sweep file's base + settings).
python3 - "$work/sweep.json" "$sweep_file" "$samples" > "$work/commands" <<'PY'
import json, sys
result = json.load(open(sys.argv[1])); spec = json.load(open(sys.argv[2])); n = int(sys.argv[3])
configs = result["configurations"]
step = max(1, len(configs) // n)
base_sets = [f"{k}={json.dumps(v)}" for k, v in spec.get("set", {}).items()]
for c in configs[::step][:n]:
    sets = base_sets + [f"{k}={json.dumps(v)}" for k, v in c["settings"].items()]
    print(spec["base"] + "\t" + "\t".join(sets))
PY
total=$(python3 -c "import json; print(len(json.load(open('$work/sweep.json'))['configurations']))")
: > "$work/predict_times"
for _ in $(seq "$repeats"); do
  t0=$(now)
  while IFS=$'\t' read -r base rest; do
    args=(predict --scenario "$base" --format json)
    IFS=$'\t' read -r -a sets <<< "$rest"
    for s in "${sets[@]}"; do args+=(--set "$s"); done
    "$ptsim" "${args[@]}" > /dev/null 2>&1 || true   # infeasible configurations exit 2, as in the sweep
  done < "$work/commands"
  t1=$(now)
  calc "($t1 - $t0) / $(wc -l < "$work/commands")" >> "$work/predict_times"
done
per_process=$(median < "$work/predict_times")
separate=$(calc "$per_process * $total")
printf '\n%-44s %12s\n' "what" "seconds"
printf '%-44s %12.1f\n' "ptsim sweep, $total configurations" "$sweep_seconds"
printf '%-44s %12.4f\n' "ptsim predict, one process per configuration" "$per_process"
printf '%-44s %12.1f\n' "  × $total configurations (one at a time)" "$separate"
printf '%-44s %12.1f\n' "ratio (separate processes ÷ sweep)" "$(calc "$separate / $sweep_seconds")"
printf '%-44s %12.2f\n' "sweep milliseconds per configuration" "$(calc "1000 * $sweep_seconds / $total")"
