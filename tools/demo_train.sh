#!/usr/bin/env bash
# tools/demo_train.sh — the `ptsim train` demonstration of docs/training.md: the King James Bible (Debian
# package bible-kjv-text) → WordPiece vocab (8,000) → BERT shards (seq 128) → bert-tiny (L=2, H=128, A=2)
# trained on the CPU for a few minutes; the MLM loss falls from about ln(8000) = 8.99.
# Usage: tools/demo_train.sh [WORKDIR] [STEPS]   (defaults: data/demo, 400)
# Needs: a built ptsim (PTSIM=path, default build/tools/ptsim) and `apt-get install bible-kjv-text`.
# Writes WORKDIR/{kjv_corpus.txt, kjv_vocab.txt, kjv128/, checkpoints/, metrics.jsonl, op_times.json,
# loss_curve.md}. Interrupt it with Ctrl-C: it checkpoints; run it again to resume.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-data/demo}"
steps="${2:-400}"
ptsim="${PTSIM:-$here/../build/tools/ptsim}"
threads="${THREADS:-$(nproc)}"
if [ ! -x "$ptsim" ]; then
  echo "demo_train: no ptsim at $ptsim (build it: meson setup build && ninja -C build; or set PTSIM=...)" >&2
  exit 2
fi
mkdir -p "$work"
[ -s "$work/kjv_corpus.txt" ] || "$here/make_corpus.sh" "$work/kjv_corpus.txt"
[ -s "$work/kjv_vocab.txt" ] || "$ptsim" data vocab --corpus "$work/kjv_corpus.txt" --vocab-size 8000 --out "$work/kjv_vocab.txt"
[ -s "$work/kjv128/manifest.json" ] || "$ptsim" data prepare --corpus "$work/kjv_corpus.txt" --vocab "$work/kjv_vocab.txt" \
  --out "$work/kjv128" --seq-len 128
resume=()
[ -s "$work/checkpoints/latest" ] && resume=(--resume)
"$ptsim" train --backend cpu --model bert-tiny --data "$work/kjv128" --steps "$steps" --micro-batch 32 \
  --optimizer lamb --lr 1e-2 --warmup 0.05 --schedule poly --seed 1234 --threads "$threads" \
  --checkpoint-dir "$work/checkpoints" --checkpoint-every 100 --metrics "$work/metrics.jsonl" \
  --op-times "$work/op_times.json" --progress-every 20 "${resume[@]}"
# The curve as a Markdown table (every 50 steps; the last line of a step wins if a resume repeated it).
python3 - "$work/metrics.jsonl" >"$work/loss_curve.md" <<'PY'
import json, math, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["step"]] = r
steps = sorted(rows)
print(f"ln(vocab) = ln(8000) = {math.log(8000):.3f}\n")
print("| step | loss | MLM loss | NSP loss | lr | elapsed |")
print("|---:|---:|---:|---:|---:|---:|")
for s in steps:
    if s == 1 or s % 50 == 0 or s == steps[-1]:
        r = rows[s]
        f = lambda k: "—" if r.get(k) is None else f"{r[k]:.3f}"
        print(f"| {s} | {r['loss']:.3f} | {f('mlm_loss')} | {f('nsp_loss')} | {r['lr']:.2e} | {r['elapsed_seconds']:.0f} s |")
PY
cat "$work/loss_curve.md"
