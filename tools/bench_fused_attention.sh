#!/usr/bin/env bash
# tools/bench_fused_attention.sh — ptsim's CPU training step with and without --fused-attention, side by side
# on this machine (docs/cpu-performance.md, "Fused attention", holds the measured table). A benchmark, not a
# test: it asserts nothing. Same recipe as tools/bench_cpu_step.sh (fp32, AdamW, dropout 0.1, seq 128, the
# demo corpus's 8,000-token vocab): bert-tiny at micro-batch 32 and bert-base at micro-batch 8. Unfused and
# fused runs alternate (unfused, fused, unfused, ...) so drifting load hits both alike; each run times STEPS
# steps after one warm-up step and reports its median; the table shows the median over REPEATS runs and the
# ratio, plus the attention ops' share of the last runs' op times (--op-times).
# Usage: tools/bench_fused_attention.sh [WORKDIR]   (default data/bench; shares bench_cpu_step.sh's data)
#   env: THREADS (2), REPEATS (5), STEPS (tiny 5, base 3), SHAPES ("tiny base"), PTSIM (build/tools/ptsim)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-data/bench}"
ptsim="${PTSIM:-$here/../build/tools/ptsim}"
threads="${THREADS:-2}"
repeats="${REPEATS:-5}"
shapes="${SHAPES:-tiny base}"
if [ ! -x "$ptsim" ]; then
  echo "bench_fused_attention: no ptsim at $ptsim (tools/bootstrap.sh builds it; or set PTSIM=...)" >&2
  exit 2
fi
mkdir -p "$work"
[ -s "$work/kjv_corpus.txt" ] || "$here/make_corpus.sh" "$work/kjv_corpus.txt"
[ -s "$work/kjv_vocab.txt" ] || "$ptsim" data vocab --corpus "$work/kjv_corpus.txt" --vocab-size 8000 \
  --out "$work/kjv_vocab.txt" >/dev/null
[ -s "$work/kjv128/manifest.json" ] || "$ptsim" data prepare --corpus "$work/kjv_corpus.txt" \
  --vocab "$work/kjv_vocab.txt" --out "$work/kjv128" --seq-len 128 >/dev/null

model_of() { case "$1" in tiny) echo bert-tiny ;; base) echo bert-base ;; esac; }
batch_of() { case "$1" in tiny) echo 32 ;; base) echo 8 ;; esac; }
steps_of() { if [ -n "${STEPS:-}" ]; then echo "$STEPS"; else case "$1" in tiny) echo 5 ;; base) echo 3 ;; esac; fi; }

# One run (variant: unfused | fused): prints the median step_seconds after the warm-up step.
run_ptsim() {
  local shape=$1 variant=$2 steps
  steps=$(steps_of "$shape")
  local flag=""
  [ "$variant" = fused ] && flag="--fused-attention"
  rm -f "$work/fa_metrics_$shape.jsonl"
  "$ptsim" train --backend cpu --model "$(model_of "$shape")" --data "$work/kjv128" --steps $((steps + 1)) \
    --micro-batch "$(batch_of "$shape")" --optimizer adamw --lr 1e-4 --schedule constant --seed 1 \
    --threads "$threads" --metrics "$work/fa_metrics_$shape.jsonl" --op-times "$work/fa_op_times_${shape}_$variant.json" \
    --quiet $flag
  python3 -c '
import json, statistics, sys
t = [json.loads(l)["step_seconds"] for l in open(sys.argv[1])][1:]
print(statistics.median(t))' "$work/fa_metrics_$shape.jsonl"
}

results="$work/fa_results.txt"
: >"$results"
for r in $(seq 1 "$repeats"); do
  for shape in $shapes; do
    u=$(run_ptsim "$shape" unfused); f=$(run_ptsim "$shape" fused)
    echo "$shape $u $f" >>"$results"
    echo "bench_fused_attention: run $r/$repeats $shape: unfused $u s, fused $f s" >&2
  done
done

python3 - "$results" "$work" "$threads" "$shapes" <<'PY'
import collections, json, statistics, sys
results, work, threads, shapes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
runs = collections.defaultdict(lambda: ([], []))
for line in open(results):
    shape, u, f = line.split()
    runs[shape][0].append(float(u))
    runs[shape][1].append(float(f))
names = {"tiny": ("bert-tiny (L2 H128 A2)", 32), "base": ("bert-base (L12 H768 A12)", 8)}
attention = {"batched_gemm", "softmax", "softmax_backward", "fused_attention", "fused_attention_backward"}
print(f"fp32, AdamW, dropout 0.1, seq 128, {threads} threads; medians of {len(runs[shapes[0]][0])} alternating runs\n")
print("| shape | micro-batch | unfused s/step | fused s/step | fused speed vs unfused |")
print("|---|---:|---:|---:|---:|")
for s in shapes:
    u, f = (statistics.median(v) for v in runs[s])
    print(f"| {names[s][0]} | {names[s][1]} | {u:.3f} | {f:.3f} | {u / f:.2f}x |")
for s in shapes:
    for variant in ("unfused", "fused"):
        doc = json.load(open(f"{work}/fa_op_times_{s}_{variant}.json"))
        by_kind = collections.Counter()
        for op in doc["ops"]:
            by_kind[op["kind"]] += op["seconds"]
        att = sum(v for k, v in by_kind.items() if k in attention)
        drop = sum(op["seconds"] for op in doc["ops"] if "attn_dropout" in op["name"])
        print(f"{names[s][0]} {variant}: step {doc['step_seconds']:.3f} s; attention ops {att:.3f} s "
              f"(batched GEMMs + softmax or the fused ops) + attention dropout {drop:.3f} s")
PY
