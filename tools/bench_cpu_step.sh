#!/usr/bin/env bash
# tools/bench_cpu_step.sh — ptsim's CPU training step against PyTorch eager, side by side on this machine
# (docs/cpu-performance.md holds the measured table). A benchmark, not a test: it asserts nothing.
# Both sides: BERT pretraining (MLM on 20 gathered positions per sequence + NSP), fp32, AdamW, global-norm
# clipping, dropout 0.1, seq 128, the same thread count; shapes bert-tiny at micro-batch 32 and bert-base
# at micro-batch 8, vocabulary 8,000 (the demo corpus's WordPiece vocab). ptsim and PyTorch runs alternate
# (ptsim, torch, ptsim, torch, ...) so drifting load on a shared machine hits both alike; each run times
# STEPS steps after one warm-up step and reports its median; the table shows the median over REPEATS runs.
# ptsim's per-op-kind shares come from the last run's --op-times file.
# ptsim also runs with FUSED_FLAGS (default: the fused dropout ops, --fuse-softmax-dropout
# --fuse-bias-dropout-residual; --fused-attention for the fused attention; FUSED=0 skips it) in the same round,
# so the fused/unfused ratio is measured side by side.
# PyTorch runs twice per round: as installed (the baseline of docs/cpu-performance.md), and with
# OPENBLAS_CORETYPE set to the kernel family ptsim picks for this CPU (runtime/exec/cpu_gemm.cpp), which is
# like for like where the installed OpenBLAS does not know the CPU and falls back to generic kernels.
# Usage: tools/bench_cpu_step.sh [WORKDIR]   (default data/bench)
#   env: THREADS (2), REPEATS (3), STEPS (tiny 5, base 3), SHAPES ("tiny base"), PTSIM (build/tools/ptsim),
#        PYTHON (/usr/bin/python3), SAME_KERNELS (1; 0 skips the second PyTorch run), FUSED (1; 0 skips the
#        fused ptsim run), FUSED_FLAGS (the fused run's train flags, above), TORCH (1; 0 runs ptsim only: the
#        fused/unfused comparison on a busy machine)
# Needs: a built ptsim (tools/bootstrap.sh), the demo corpus (tools/make_corpus.sh: bible-kjv, bible-kjv-text)
# and PyTorch with an optimised BLAS: apt-get install python3-torch python3-numpy libopenblas0-pthread
# (without OpenBLAS, Debian's torch uses the reference BLAS, ~9x slower: not a fair baseline).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-data/bench}"
ptsim="${PTSIM:-$here/../build/tools/ptsim}"
python="${PYTHON:-/usr/bin/python3}"
threads="${THREADS:-2}"
repeats="${REPEATS:-3}"
shapes="${SHAPES:-tiny base}"
same_kernels="${SAME_KERNELS:-1}"
fused="${FUSED:-1}"
read -r -a fused_flags <<<"${FUSED_FLAGS:---fuse-softmax-dropout --fuse-bias-dropout-residual}"
torch="${TORCH:-1}"
# The kernel family cpu_gemm.cpp names for this CPU (same rule: AVX-512 F/BW/DQ/VL, else AVX2 + FMA).
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true) "
coretype=""
if [[ $flags == *" avx512f "* && $flags == *" avx512bw "* && $flags == *" avx512dq "* && $flags == *" avx512vl "* ]]; then
  coretype=SkylakeX
elif [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
  coretype=Haswell
fi
[ -n "$coretype" ] || same_kernels=0
if [ ! -x "$ptsim" ]; then
  echo "bench_cpu_step: no ptsim at $ptsim (tools/bootstrap.sh builds it; or set PTSIM=...)" >&2
  exit 2
fi
if [ "$torch" = 1 ] && ! "$python" -c "import torch" 2>/dev/null; then
  echo "bench_cpu_step: $python cannot import torch: apt-get install python3-torch python3-numpy libopenblas0-pthread" >&2
  exit 2
fi

# The data: the demo corpus, an 8,000-token WordPiece vocab, seq-128 shards (as tools/demo_train.sh).
mkdir -p "$work"
[ -s "$work/kjv_corpus.txt" ] || "$here/make_corpus.sh" "$work/kjv_corpus.txt"
[ -s "$work/kjv_vocab.txt" ] || "$ptsim" data vocab --corpus "$work/kjv_corpus.txt" --vocab-size 8000 \
  --out "$work/kjv_vocab.txt" >/dev/null
[ -s "$work/kjv128/manifest.json" ] || "$ptsim" data prepare --corpus "$work/kjv_corpus.txt" \
  --vocab "$work/kjv_vocab.txt" --out "$work/kjv128" --seq-len 128 >/dev/null
vocab=$(wc -l <"$work/kjv_vocab.txt")

# shape → model file, micro-batch, default steps
model_of() { case "$1" in tiny) echo bert-tiny ;; base) echo bert-base ;; esac; }
batch_of() { case "$1" in tiny) echo 32 ;; base) echo 8 ;; esac; }
steps_of() { if [ -n "${STEPS:-}" ]; then echo "$STEPS"; else case "$1" in tiny) echo 5 ;; base) echo 3 ;; esac; fi; }

# One ptsim run: STEPS+1 steps (the first is warm-up), prints the median step_seconds of the rest.
# $2 (optional): "fused" adds FUSED_FLAGS; its files are *_fused_<shape>.
run_ptsim() {
  local shape=$1 variant=${2:-} model batch steps tag extra=()
  model=$(model_of "$shape"); batch=$(batch_of "$shape"); steps=$(steps_of "$shape")
  tag=$shape
  if [ "$variant" = fused ]; then tag=fused_$shape; extra=("${fused_flags[@]}"); fi
  rm -f "$work/metrics_$tag.jsonl"
  "$ptsim" train --backend cpu --model "$model" --data "$work/kjv128" --steps $((steps + 1)) \
    --micro-batch "$batch" --optimizer adamw --lr 1e-4 --schedule constant --seed 1 --threads "$threads" \
    --metrics "$work/metrics_$tag.jsonl" --op-times "$work/op_times_$tag.json" --quiet "${extra[@]}"
  "$python" -c '
import json, statistics, sys
t = [json.loads(l)["step_seconds"] for l in open(sys.argv[1])][1:]
print(statistics.median(t))' "$work/metrics_$tag.jsonl"
}

run_torch() {
  local shape=$1 core=${2:-}
  env ${core:+OPENBLAS_CORETYPE=$core} "$python" "$here/bench_torch_step.py" --model "$here/../models/specs/$(model_of "$shape").json" --vocab "$vocab" \
    --micro-batch "$(batch_of "$shape")" --seq 128 --predictions 20 --threads "$threads" --steps "$(steps_of "$shape")" |
    "$python" -c 'import json, sys; print(json.load(sys.stdin)["median_step_seconds"])'
}

results="$work/bench_results.txt"
: >"$results"
for r in $(seq 1 "$repeats"); do
  for shape in $shapes; do
    pf=-1  # unfused and fused alternate which runs first, so a load that drifts within a round cancels
    if [ "$fused" = 1 ] && [ $((r % 2)) = 0 ]; then pf=$(run_ptsim "$shape" fused); fi
    p=$(run_ptsim "$shape")
    if [ "$fused" = 1 ] && [ $((r % 2)) = 1 ]; then pf=$(run_ptsim "$shape" fused); fi
    t=-1; t2=-1
    [ "$torch" = 1 ] && t=$(run_torch "$shape")
    [ "$torch" = 1 ] && [ "$same_kernels" = 1 ] && t2=$(run_torch "$shape" "$coretype")
    echo "$shape $p $t $t2 $pf" >>"$results"
    echo "bench_cpu_step: run $r/$repeats $shape: ptsim $p s, fused $pf s, torch $t s, torch ($coretype kernels) $t2 s" >&2
  done
done

# The table, and where ptsim's time goes (by op kind, from the last run's op times).
"$python" - "$results" "$work" "$threads" "$vocab" "$shapes" "${coretype:-none}" "${fused_flags[*]}" <<'PY'
import collections, json, statistics, sys
results, work, threads, vocab, shapes, core = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(), sys.argv[6]
fused_flags = sys.argv[7]
runs = collections.defaultdict(lambda: ([], [], [], []))
for line in open(results):
    shape, p, t, t2, pf = line.split()
    for i, v in enumerate((p, t, t2, pf)):
        runs[shape][i].append(float(v))
names = {"tiny": ("bert-tiny (L2 H128)", 32), "base": ("bert-base (L12 H768)", 8)}
print(f"fp32, AdamW, seq 128, vocab {vocab}, {threads} threads; medians of {len(runs[shapes[0]][0])} alternating runs\n")
print(f"| shape | micro-batch | ptsim s/step | PyTorch s/step | ptsim speed vs PyTorch | PyTorch, {core} kernels | speed vs that |")
print("|---|---:|---:|---:|---:|---:|---:|")
for s in shapes:
    p, t, t2, _ = (statistics.median(v) for v in runs[s])
    same = f"{t2:.3f} | {t2 / p:.2f}x" if t2 > 0 else "— | —"
    plain = f"{t:.3f} | {t / p:.2f}x" if t > 0 else "— | —"
    print(f"| {names[s][0]} | {names[s][1]} | {p:.3f} | {plain} | {same} |")
if all(v > 0 for s in shapes for v in runs[s][3]):
    print(f"\nptsim with {fused_flags}, same rounds:\n")
    print(f"| shape | unfused s/step | fused s/step | fused speed vs unfused | fused vs PyTorch | fused vs PyTorch, {core} kernels | per round: unfused s / fused s |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for s in shapes:
        p, t, t2, pf = (statistics.median(v) for v in runs[s])
        rounds = ", ".join(f"{a / b:.3f}" for a, b in zip(runs[s][0], runs[s][3]))
        same = f"{t2 / pf:.2f}x" if t2 > 0 else "—"
        plain = f"{t / pf:.2f}x" if t > 0 else "—"
        print(f"| {names[s][0]} | {p:.3f} | {pf:.3f} | {p / pf:.3f}x | {plain} | {same} | {rounds} |")
for s in shapes + [f"fused_{s}" for s in shapes if runs[s][3][-1] > 0]:
    doc = json.load(open(f"{work}/op_times_{s}.json"))
    by_kind = collections.Counter()
    for op in doc["ops"]:
        by_kind[op["kind"]] += op["seconds"]
    total = sum(by_kind.values())
    top = ", ".join(f"{k} {v / total:.0%}" for k, v in by_kind.most_common(6))
    print(f"\nptsim {s}: sum of ops {total:.3f} s of step {doc['step_seconds']:.3f} s; {top}")
PY
