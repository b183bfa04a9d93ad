#!/usr/bin/env python3
"""tools/bench_gpu_bert.py — BERT pretraining throughput, ptsim against HuggingFace transformers (eager and
torch.compile), side by side on one GPU in one run (issue 8's benchmark; docs/cuda-backend.md, "Benchmark").
A benchmark, not a test: it asserts nothing, it measures and writes a JSON and a markdown table.

For each (seq, batch) configuration, on the same device, batch, precision and optimizer:
  * ptsim: `ptsim train --backend cuda` on a dataset that `ptsim data prepare` made from a generated corpus
    (a deterministic pseudo-word text, so no download is needed); seq/s from its --metrics JSONL (median
    step_seconds of the steps after the warm-up ones); its --op-times file is kept and fed to
    `ptsim calibrate measured` (the device profile's fit to these measured op times);
  * transformers eager: BertForPreTraining (SDPA attention, MLM labels on the masked positions only but
    prediction scores over every position, as transformers computes them), the same model dimensions and
    vocabulary as ptsim's dataset, dropout 0.1 as ptsim's graph, random token ids;
  * transformers + torch.compile (default mode; compilation happens in the warm-up steps).
  Each runs in its own process (an out-of-memory or a compiler failure ends that run, not the benchmark),
  under a time limit; on out-of-memory the batch is halved and the run retried (the table shows the batch
  each system really ran). Timing: torch.cuda.synchronize() before and after each step, median of the
  timed steps after the warm-up steps.
Optimizer: AdamW on both sides (β 0.9/0.999, ε 1e-8 on torch / ptsim's AdamW defaults, weight decay 0.01
except biases and LayerNorm, global-norm clipping at 1.0, constant lr 1e-4); torch's is `fused=True` on CUDA
(the same update in one kernel), ptsim's is its backend optimizer (on the CUDA backend today: the CPU
reference on host copies, docs/cuda-backend.md).
Precision (--precision): bf16 — torch under bf16 autocast (fp32 weights, bf16 GEMMs on tensor cores);
ptsim `--precision bf16`, which on the CUDA backend today stores bf16 values in fp32 and computes in fp32
(docs/cuda-backend.md): the same numerics contract, not the same math units. tf32 — torch fp32 with
TF32 matmuls allowed; ptsim `--precision tf32` (its GEMMs on TF32 tensor cores). fp32 — both strict fp32.
--ptsim-also PRECISION adds ptsim runs at another precision (e.g. tf32, ptsim's fastest CUDA mode today).
--ptsim-attention (default fused,tensor-core) adds ptsim runs at --precision with `--fused-attention`: "fused"
the fp32 fused-attention kernel (on the 16-bit operands' fp32 copies at bf16), "tensor-core" with
`--attention-kernel tensor-core` too (the tensor-core kernels; bf16/fp16 on --backend cuda only: elsewhere the
row is marked skipped, saying why, and the flag is never passed). They come last, after --ptsim-also's runs.
Model FLOPs per sequence (docs/cuda-backend.md, "Benchmark"; the accounting of docs/taskgraph.md): forward +
backward = 3 × forward (2 FLOPs per multiply-add), over the encoder only: 6·N·s for its weight matrices
(N = L·(4h² + 2h·f): query, key, value, output and the two FFN matrices; Kaplan et al. 2020's 6·N per token)
plus 12·L·h·s² for attention's scores and context (12·L·h·s per token). Embeddings, the pooler, the heads
and the MLM decoder are not counted: the systems do different amounts of decoder work (ptsim on the masked
positions, transformers on every position), so counting it would credit transformers for extra work.
MFU = model TFLOP/s ÷ the device profile's peak at the precision (hwprofiles/gpus/<profile>.json:
peak_bf16_tensor, peak_tf32, peak_fp32).

Usage (on the GPU machine; tools/gpu_check.sh runs it):
  /usr/bin/python3 tools/bench_gpu_bert.py --ptsim build-gpu/tools/ptsim --work build-gpu/bench \
      --configs 128:256,512:64 --precision bf16 --out-json bench.json --out-md bench.md
  --dry-run: the whole pipeline on the CPU with bert-tiny, tiny batches and 2+2 steps (ptsim --backend cpu,
  torch eager on the CPU, and tools/bench_torch_step.py's BERT in transformers' place where transformers is
  not installed): what the cpu test suite runs, so that the script itself is tested without a GPU.
Exit: 0 the table was written (a failed or skipped run is a row saying so); 2 bad arguments or no ptsim.
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing the sibling tools must not leave __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---------------------------------------------------------------------------------------------- the data


def write_corpus(path, words, seed=1):
    """A deterministic pseudo-English corpus in `ptsim data prepare`'s format (one sentence per line, a blank
    line between documents): Zipf-distributed words from a generated lexicon of 40,000 pseudo-words (enough
    distinct words that `ptsim data vocab` reaches BERT's 30,522 tokens from 600,000 words)."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
    lexicon = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(45000)})[:40000]
    rng.shuffle(lexicon)
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]
    tmp = path + ".tmp"
    written = 0
    with open(tmp, "w") as f:
        while written < words:
            for _ in range(rng.randint(8, 30)):  # one document
                n = rng.randint(6, 24)
                f.write(" ".join(rng.choices(lexicon, weights, k=n)) + " .\n")
                written += n
            f.write("\n")
    os.replace(tmp, path)


def run(cmd, log, timeout):
    """Runs cmd with its output in `log`; returns (exit code or 'timeout', seconds)."""
    t0 = time.time()
    with open(log, "w") as out:
        # Its own process group, so that a timeout also ends what it started (torch.compile's workers).
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
    return rc, time.time() - t0


def prepare_data(args, seq):
    """A dataset for `seq` under --work (reused when present): corpus → vocab → shards."""
    os.makedirs(args.work, exist_ok=True)
    corpus, vocab = os.path.join(args.work, "corpus.txt"), os.path.join(args.work, "vocab.txt")
    if not os.path.exists(corpus):
        write_corpus(corpus, args.corpus_words)
    if not os.path.exists(vocab):
        rc, _ = run([args.ptsim, "data", "vocab", "--corpus", corpus, "--vocab-size", str(args.vocab_size), "--out", vocab],
                    os.path.join(args.work, "vocab.log"), 600)
        if rc != 0:
            sys.exit(f"bench_gpu_bert: ptsim data vocab failed ({rc}); see {args.work}/vocab.log")
    data = os.path.join(args.work, f"data{seq}")
    if not os.path.exists(os.path.join(data, "manifest.json")):
        rc, _ = run([args.ptsim, "data", "prepare", "--corpus", corpus, "--vocab", vocab, "--out", data,
                     "--seq-len", str(seq), "--dup-factor", str(args.dup_factor)], os.path.join(args.work, f"prepare{seq}.log"), 600)
        if rc != 0:
            sys.exit(f"bench_gpu_bert: ptsim data prepare failed ({rc}); see {args.work}/prepare{seq}.log")
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(data, "vocab.txt")) as f:
        vocab_size = sum(1 for _ in f)
    return data, vocab_size, manifest

# ---------------------------------------------------------------------------------------------- ptsim


def out_of_memory(log):
    with open(log, errors="replace") as f:
        text = f.read().lower()
    return "out of memory" in text or "bad_alloc" in text or "outofmemory" in text


# The ptsim attention variants: (name in --ptsim-attention, the table's system, the extra ptsim train flags).
ATTENTION_VARIANTS = {
    "fused": ("ptsim fused attention", ["--fused-attention"]),
    "tensor-core": ("ptsim tensor-core attention", ["--fused-attention", "--attention-kernel", "tensor-core"]),
}


def ptsim_system(attention):
    return ATTENTION_VARIANTS[attention][0] if attention else "ptsim"


def attention_skip_reason(args, attention, precision):
    """Why this ptsim attention variant cannot run here (None when it can): the tensor-core kernels need the
    CUDA backend and 16-bit storage, and `ptsim train` refuses the flag otherwise."""
    if attention != "tensor-core":
        return None
    if args.ptsim_backend != "cuda":
        return f"skipped: --attention-kernel tensor-core needs --backend cuda (this run's ptsim backend is {args.ptsim_backend})"
    if precision not in ("bf16", "fp16"):
        return f"skipped: --attention-kernel tensor-core needs --precision bf16 or fp16 (this run's is {precision})"
    return None


def ptsim_run(args, seq, batch, precision, data, attention=None):
    """One `ptsim train` run; returns a result row (seq/s from the metrics JSONL). attention: None (the unfused
    graph) or an ATTENTION_VARIANTS name."""
    tag = f"ptsim_{precision}{'_' + attention if attention else ''}_s{seq}_b{batch}"
    metrics, op_times, log = (os.path.join(args.work, f"{tag}.{ext}") for ext in ("metrics.jsonl", "op_times.json", "log"))
    for p in (metrics, op_times):
        if os.path.exists(p):
            os.remove(p)
    cmd = [args.ptsim, "train", "--backend", args.ptsim_backend, "--model", args.model, "--data", data,
           "--steps", str(args.warmup + args.steps), "--micro-batch", str(batch), "--optimizer", "adamw", "--lr", "1e-4",
           "--schedule", "constant", "--precision", precision, "--seed", "1", "--metrics", metrics, "--op-times", op_times,
           "--quiet"] + (ATTENTION_VARIANTS[attention][1] if attention else [])
    rc, seconds = run(cmd, log, args.run_limit)
    row = {"system": ptsim_system(attention), "precision": precision, "seq": seq, "batch": batch, "command": " ".join(cmd), "log": log,
           "wall_seconds": round(seconds, 1)}
    if rc != 0:
        row.update(status="oom" if out_of_memory(log) else f"failed ({rc})")
        return row
    with open(metrics) as f:
        steps = [json.loads(line)["step_seconds"] for line in f if line.strip()]
    timed = steps[args.warmup:]
    row.update(status="ok", step_seconds=timed, median_step_seconds=statistics.median(timed), op_times=op_times)
    return row


def calibrate(args, op_times):
    """`ptsim calibrate measured` on one measured op-times file: the fit's output (not written to the profile)."""
    log = os.path.join(args.work, "calibrate.log")
    rc, _ = run([args.ptsim, "calibrate", "measured", "--op-times", op_times, "--profile", args.profile], log, 300)
    with open(log, errors="replace") as f:
        text = f.read()
    return {"status": "ok" if rc == 0 else f"failed ({rc})", "log": log, "tail": text.strip().splitlines()[-6:]}

# ---------------------------------------------------------------------------------------------- torch


def set_tf32(torch, enabled):
    """TF32 for fp32 matmuls and convolutions on or off. PyTorch 2.9 introduced the fp32_precision settings
    and announces allow_tf32's deprecation after it (a warning naming the new settings), so the new settings
    where they exist (the benchmark machine's PyTorch 2.11), the old flags before."""
    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn
    if hasattr(matmul, "fp32_precision") and hasattr(getattr(conv, "conv", None), "fp32_precision"):
        matmul.fp32_precision = conv.conv.fp32_precision = "tf32" if enabled else "ieee"
    else:
        matmul.allow_tf32 = conv.allow_tf32 = enabled


def torch_worker(spec):
    """Runs in a child process: times one torch configuration; prints one JSON line."""
    import torch
    import torch.nn.functional as F
    device = torch.device(spec["device"])
    torch.manual_seed(1234)
    prec = spec["precision"]
    if device.type == "cuda":
        set_tf32(torch, prec == "tf32")
    else:
        torch.set_num_threads(spec["threads"])
    with open(spec["model_json"]) as f:
        c = json.load(f)
    b, s, p, vocab = spec["batch"], spec["seq"], spec["predictions"], spec["vocab"]
    try:
        import transformers
        config = transformers.BertConfig(vocab_size=vocab, hidden_size=c["hidden_size"], num_hidden_layers=c["num_layers"],
                                         num_attention_heads=c["num_heads"], intermediate_size=c["intermediate_size"],
                                         max_position_embeddings=c["max_position_embeddings"],
                                         type_vocab_size=c["type_vocab_size"], layer_norm_eps=c["layer_norm_eps"],
                                         hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        model = transformers.BertForPreTraining(config)
        implementation = f"transformers {transformers.__version__} BertForPreTraining"
    except ImportError:
        if device.type == "cuda":
            print(json.dumps({"status": "skipped: transformers is not installed"}))
            return
        sys.path.insert(0, HERE)
        import bench_torch_step  # the dry run without transformers: the same computation as ptsim's graph
        model = bench_torch_step.Bert(c, vocab)
        implementation = "tools/bench_torch_step.py Bert (transformers not installed)"
    model = model.to(device).train()
    no_decay = [q for n, q in model.named_parameters() if "bias" in n or "LayerNorm" in n or n.startswith("ln") or ".ln" in n]
    ids_nd = {id(q) for q in no_decay}
    groups = [{"params": [q for q in model.parameters() if id(q) not in ids_nd], "weight_decay": 0.01},
              {"params": no_decay, "weight_decay": 0.0}]
    # fused on CUDA: the same AdamW update in one kernel per step (as docs/references.md's H200 baseline ran)
    fused = {"fused": True} if device.type == "cuda" else {}
    opt = torch.optim.AdamW(groups, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, **fused)
    ids = torch.randint(5, vocab, (b, s), device=device)
    types = torch.zeros(b, s, dtype=torch.int64, device=device)
    mask = torch.ones(b, s, dtype=torch.int64, device=device)
    positions = torch.stack([torch.randperm(s - 1)[:p] + 1 for _ in range(b)]).to(device)
    labels = torch.full((b, s), -100, dtype=torch.int64, device=device)
    labels.scatter_(1, positions, torch.randint(5, vocab, (b, p), device=device))
    nsp = torch.randint(0, 2, (b,), device=device)
    flat_positions = (positions + torch.arange(b, device=device)[:, None] * s).reshape(-1)
    flat_labels = labels.gather(1, positions).reshape(-1)
    hf = implementation.startswith("transformers")

    def loss_of(m):
        if hf:
            return m(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsp).loss
        mlm_logits, nsp_logits = m(ids, types, mask, flat_positions)
        return F.cross_entropy(mlm_logits, flat_labels) + F.cross_entropy(nsp_logits, nsp)

    if spec["compile"] and not hasattr(torch, "compile"):
        print(json.dumps({"status": f"skipped: torch {torch.__version__} has no torch.compile"}))
        return
    forward = torch.compile(model) if spec["compile"] else model
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=prec == "bf16")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_of(forward)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    times = []
    try:
        for i in range(spec["warmup"] + spec["steps"]):
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            if i >= spec["warmup"]:
                times.append(time.perf_counter() - t0)
    except torch.cuda.OutOfMemoryError:
        print(json.dumps({"status": "oom"}))
        return
    blas = None
    if device.type == "cpu":  # Debian's torch maps libblas.so.3: OpenBLAS, or the ~9x slower reference BLAS
        sys.path.insert(0, HERE)
        import bench_torch_step
        blas = bench_torch_step.loaded_blas()
    print(json.dumps({"status": "ok", "step_seconds": times, "median_step_seconds": statistics.median(times),
                      "implementation": implementation, "torch": torch.__version__, "blas": blas,
                      "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None}))


def torch_run(args, seq, batch, compiled, vocab, predictions):
    system = "transformers+compile" if compiled else "transformers eager"
    tag = f"torch_{'compile' if compiled else 'eager'}_{args.precision}_s{seq}_b{batch}"
    spec = {"device": args.device, "precision": args.precision, "seq": seq, "batch": batch, "predictions": predictions,
            "vocab": vocab, "model_json": args.model_json, "compile": compiled, "warmup": args.warmup + (2 if compiled else 0),
            "steps": args.steps, "threads": args.threads}
    log = os.path.join(args.work, f"{tag}.log")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    rc, seconds = run(cmd, log, args.run_limit)
    row = {"system": system, "precision": args.precision, "seq": seq, "batch": batch, "log": log, "wall_seconds": round(seconds, 1)}
    result = None
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("{"):
                result = json.loads(line)
    if rc != 0 or result is None:
        row.update(status="oom" if out_of_memory(log) else f"failed ({rc})")
    else:
        row.update(result)
    return row


def with_batch_fallback(run_one, batch, min_batch):
    """Runs at `batch`, halving on out-of-memory down to min_batch; returns the last row."""
    while True:
        row = run_one(batch)
        if row["status"] != "oom" or batch // 2 < min_batch:
            return row
        batch //= 2

# ---------------------------------------------------------------------------------------------- the table


def model_flops_per_sequence(c, seq):
    """Forward + backward model FLOPs of the encoder for one sequence: 3 × forward; forward = 2 FLOPs per
    multiply-add over the encoder layers' weight matrices (N_layers weights per token) plus attention's
    scores and context (2·2·s²·h per layer): 6·N·s + 12·L·h·s² (docs/cuda-backend.md, "Benchmark")."""
    h, f, layers = c["hidden_size"], c["intermediate_size"], c["num_layers"]
    n_layer_weights = layers * (4 * h * h + 2 * h * f)
    return 6 * n_layer_weights * seq + 12 * layers * h * seq * seq


def peak_tflops(profile_path, precision):
    """(peak TFLOP/s or None when the profile has none for this precision, the profile key)."""
    key = {"bf16": "peak_bf16_tensor", "tf32": "peak_tf32", "fp32": "peak_fp32"}[precision]
    with open(profile_path) as f:
        value = json.load(f).get(key, {}).get("value")
    return (float(value) if value else None), key


def finish(rows, args, c, profile_path):
    peak, peak_key = peak_tflops(profile_path, args.precision)
    for r in rows:
        if r.get("status") == "ok":
            r["seq_per_s"] = r["batch"] / r["median_step_seconds"]
            r["model_tflops"] = r["seq_per_s"] * model_flops_per_sequence(c, r["seq"]) / 1e12
            row_peak = peak_tflops(profile_path, r["precision"])[0]
            if row_peak:
                r["mfu"] = r["model_tflops"] / row_peak
    for seq in sorted({r["seq"] for r in rows}):
        best = {r["system"]: r for r in rows if r["seq"] == seq and r.get("status") == "ok" and r["precision"] == args.precision}
        for p in (r for system, r in best.items() if system.startswith("ptsim")):  # each attention variant too
            for other, key in (("transformers+compile", "ptsim_over_compile"), ("transformers eager", "ptsim_over_eager")):
                if other in best:
                    p[key] = p["seq_per_s"] / best[other]["seq_per_s"]
    return peak, peak_key


def markdown(rows, meta):
    lines = [f"BERT pretraining throughput on {meta['device_name']} ({meta['model']}, vocab {meta['vocab']}, AdamW, "
             f"{meta['precision']}; median of {meta['steps']} steps after {meta['warmup']} warm-up; peak {meta['peak_tflops'] or 'n/a'} "
             f"TFLOP/s = {meta['peak_key']} of {meta['profile']})", "",
             "| system | precision | seq | batch | seq/s | model TFLOP/s | MFU | ptsim / compile | ptsim / eager | status |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ok = r.get("status") == "ok"
        cell = lambda k, fmt: (fmt.format(r[k]) if k in r else "—")
        lines.append(f"| {r['system']} | {r['precision']} | {r['seq']} | {r['batch']} | "
                     f"{cell('seq_per_s', '{:.1f}') if ok else '—'} | {cell('model_tflops', '{:.3g}') if ok else '—'} | "
                     f"{cell('mfu', '{:.1%}') if ok else '—'} | {cell('ptsim_over_compile', '{:.2f}×')} | "
                     f"{cell('ptsim_over_eager', '{:.2f}×')} | {r['status']} |")
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def device_name(device):
    if device == "cpu":
        return "CPU"
    import torch
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"


def default_profile(name):
    for needle, profile in (("H200", "h200"), ("H100", "h100-sxm"), ("A100-SXM4-40GB", "a100-40gb"), ("A100", "a100-80gb"),
                            ("V100", "v100-sxm2-16gb"), ("T4", "t4"), ("CPU", "cpu-xeon-2c")):
        if needle in name:
            return profile
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--ptsim", default=os.path.join(ROOT, "build-gpu", "tools", "ptsim"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build-gpu", "bench"))
    # The flags --dry-run fixes default to None, so that giving one with --dry-run is an error.
    ap.add_argument("--model", help="built-in ptsim model (models/specs/<name>.json; default bert-large)")
    ap.add_argument("--configs", help="seq:batch,... (default 128:256,512:64; batch halves on out-of-memory)")
    ap.add_argument("--precision", choices=["bf16", "tf32", "fp32"], help="default bf16")
    ap.add_argument("--ptsim-also", help="more ptsim precisions to run, comma-separated (e.g. tf32)")
    ap.add_argument("--ptsim-attention", default="fused,tensor-core",
                    help="ptsim runs with fused attention to add last: fused, tensor-core, both (default) or ''")
    ap.add_argument("--systems", default="ptsim,eager,compile", help="which of ptsim, eager, compile to run")
    ap.add_argument("--warmup", type=int, help="untimed steps first (default 3; torch.compile 2 more)")
    ap.add_argument("--steps", type=int, help="timed steps (default 5)")
    ap.add_argument("--min-batch", type=int, help="stop halving the batch below this (default 8)")
    ap.add_argument("--run-timeout", type=int, default=240, help="seconds per run at most")
    ap.add_argument("--budget-seconds", type=int, default=3600,
                    help="the whole benchmark's time; runs that no longer fit are rows marked skipped")
    ap.add_argument("--vocab-size", type=int, help="WordPiece vocab to learn (default BERT's 30,522)")
    ap.add_argument("--corpus-words", type=int, help="generated corpus size (default 600,000 words)")
    ap.add_argument("--dup-factor", type=int, default=1)
    ap.add_argument("--device", choices=["cuda", "cpu"], help="default cuda")
    ap.add_argument("--threads", type=int, help="torch CPU threads (--device cpu only; default 2)")
    ap.add_argument("--profile", help="hwprofiles/gpus profile for the peak (default: from the device name)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, bert-tiny, seq 32 batch 4 / seq 64 batch 2, 2+2 steps")
    ap.add_argument("--out-json", default=None)
    ap.add_argument("--out-md", default=None)
    args = ap.parse_args()
    if args.worker:
        torch_worker(json.loads(args.worker))
        return 0
    fixed = {"device": "cpu", "model": "bert-tiny", "configs": "32:4,64:2", "warmup": 2, "steps": 2, "vocab_size": 2000,
             "corpus_words": 60_000, "min_batch": 1, "precision": "fp32", "ptsim_also": ""}
    defaults = {"device": "cuda", "model": "bert-large", "configs": "128:256,512:64", "warmup": 3, "steps": 5,
                "vocab_size": 30522, "corpus_words": 600_000, "min_batch": 8, "precision": "bf16", "ptsim_also": ""}
    given = [k for k in fixed if getattr(args, k) is not None]
    if args.dry_run and given:
        print(f"bench_gpu_bert: --dry-run fixes {', '.join('--' + k.replace('_', '-') for k in given)} "
              "(it runs bert-tiny on the CPU); drop them or drop --dry-run", file=sys.stderr)
        return 2
    for k, v in (fixed if args.dry_run else defaults).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.threads is not None and args.device != "cpu":
        print("bench_gpu_bert: --threads sets torch's CPU threads and applies to --device cpu only", file=sys.stderr)
        return 2
    args.threads = args.threads or 2
    for k in ("warmup", "steps", "vocab_size", "corpus_words", "min_batch"):
        if getattr(args, k) < (0 if k == "warmup" else 1):
            print(f"bench_gpu_bert: --{k.replace('_', '-')} {getattr(args, k)}: must be a positive integer", file=sys.stderr)
            return 2
    args.ptsim_backend = "cuda" if args.device == "cuda" else "cpu"
    if not (os.path.isfile(args.ptsim) and os.access(args.ptsim, os.X_OK)):
        print(f"bench_gpu_bert: --ptsim {args.ptsim}: not an executable (build ptsim first)", file=sys.stderr)
        return 2
    args.model_json = os.path.join(ROOT, "models", "specs", f"{args.model}.json")
    if not os.path.isfile(args.model_json):
        print(f"bench_gpu_bert: --model {args.model}: no {args.model_json}", file=sys.stderr)
        return 2
    try:
        configs = [tuple(int(x) for x in item.split(":")) for item in args.configs.split(",")]
        assert all(len(t) == 2 and t[0] > 0 and t[1] > 0 for t in configs)
    except (ValueError, AssertionError):
        print(f"bench_gpu_bert: --configs {args.configs!r}: expected seq:batch[,seq:batch...] of positive integers", file=sys.stderr)
        return 2
    systems = set(args.systems.split(","))
    if not systems <= {"ptsim", "eager", "compile"}:
        print(f"bench_gpu_bert: --systems {args.systems!r}: expected a comma-separated subset of ptsim,eager,compile", file=sys.stderr)
        return 2
    extra = [p for p in args.ptsim_also.split(",") if p]
    if any(p not in ("bf16", "tf32", "fp32") for p in extra):
        print(f"bench_gpu_bert: --ptsim-also {args.ptsim_also!r}: expected bf16, tf32 or fp32", file=sys.stderr)
        return 2
    attentions = [a for a in args.ptsim_attention.split(",") if a]
    if any(a not in ATTENTION_VARIANTS for a in attentions):
        print(f"bench_gpu_bert: --ptsim-attention {args.ptsim_attention!r}: expected a comma-separated subset of "
              "fused,tensor-core (or '')", file=sys.stderr)
        return 2
    name = device_name(args.device)
    args.profile = args.profile or default_profile(name)
    profile_path = os.path.join(ROOT, "hwprofiles", "gpus", f"{args.profile}.json")
    if not args.profile or not os.path.isfile(profile_path):
        print(f"bench_gpu_bert: no hwprofiles/gpus profile for device {name!r} (--profile NAME)", file=sys.stderr)
        return 2
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    with open(args.model_json) as f:
        c = json.load(f)

    # The runs, most valuable first, so that a --budget-seconds cut drops the least useful: ptsim and eager
    # at every length (both ratios' common part), then torch.compile (the slowest to start; the issue's
    # target ratio), then ptsim's extra precisions, then ptsim's fused-attention variants (fp32 kernel, then the
    # tensor-core kernels: unverified on a GPU, so the least certain to tell anything).
    plan = []
    for seq, batch in configs:
        plan += [(seq, batch, "ptsim", args.precision, None)] if "ptsim" in systems else []
        plan += [(seq, batch, "eager", args.precision, None)] if "eager" in systems else []
    plan += [(seq, batch, "compile", args.precision, None) for seq, batch in configs if "compile" in systems]
    plan += [(seq, batch, "ptsim", p, None) for p in extra if p != args.precision and "ptsim" in systems for seq, batch in configs]
    plan += [(seq, batch, "ptsim", args.precision, a) for a in attentions if "ptsim" in systems for seq, batch in configs]
    deadline = time.time() + args.budget_seconds
    rows, datasets = [], {}
    for seq, batch, kind, precision, attention in plan:
        why_not = attention_skip_reason(args, attention, precision)
        if why_not:
            rows.append({"system": ptsim_system(attention), "precision": precision, "seq": seq, "batch": batch,
                         "status": why_not})
            print(f"bench_gpu_bert: {ptsim_system(attention)} {precision} seq {seq}: {why_not}", flush=True)
            continue
        if seq not in datasets:
            datasets[seq] = prepare_data(args, seq)
        data, vocab, manifest = datasets[seq]
        predictions = int(manifest.get("max_predictions", max(1, round(seq * 0.15))))
        left = deadline - time.time()
        if left < 30:
            rows.append({"system": ptsim_system(attention) if kind == "ptsim" else f"transformers {kind}".replace(" compile", "+compile"),
                         "precision": precision, "seq": seq, "batch": batch, "status": "skipped: --budget-seconds spent"})
            continue
        args.run_limit = min(args.run_timeout, left)
        if kind == "ptsim":
            row = with_batch_fallback(lambda b: ptsim_run(args, seq, b, precision, data, attention), batch, args.min_batch)
        else:
            row = with_batch_fallback(lambda b: torch_run(args, seq, b, kind == "compile", vocab, predictions), batch, args.min_batch)
        rows.append(row)
        print(f"bench_gpu_bert: {row['system']} {precision} seq {seq} batch {row['batch']}: {row['status']} "
              f"({row.get('wall_seconds', 0)} s)", flush=True)
    vocab = datasets[configs[0][0]][1] if datasets else None
    peak, peak_key = finish(rows, args, c, profile_path)
    measured = [r for r in rows if r["system"].startswith("ptsim") and r.get("status") == "ok"]
    calibration = {"status": "skipped: no ptsim run succeeded"}
    for r in measured:  # the first run whose op times the profile can fit (e.g. a CPU profile has no bf16)
        calibration = dict(calibrate(args, r["op_times"]), op_times=r["op_times"])
        if calibration["status"] == "ok":
            break
    meta = {"device_name": name, "model": args.model, "vocab": vocab, "precision": args.precision, "steps": args.steps,
            "warmup": args.warmup, "peak_tflops": peak, "peak_key": peak_key, "profile": f"hwprofiles/gpus/{args.profile}.json",
            "flops_formula": "6·N_layers·s + 12·L·h·s² per sequence (forward + backward; encoder only)"}
    document = {"format": "ptsim.bench_gpu_bert.v1", "meta": meta, "rows": rows, "calibration": calibration,
                "dry_run": args.dry_run}
    out_json = args.out_json or os.path.join(args.work, "bench_gpu_bert.json")
    out_md = args.out_md or os.path.join(args.work, "bench_gpu_bert.md")
    write_atomic(out_json, json.dumps(document, indent=1) + "\n")
    table = markdown(rows, meta)
    write_atomic(out_md, table)
    print(table)
    print(f"bench_gpu_bert: calibrate measured: {calibration['status']}; wrote {out_json} and {out_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
