#!/usr/bin/env python3
"""tools/bench_torch_step.py — the PyTorch side of tools/bench_cpu_step.sh: times BERT pretraining steps in
PyTorch eager on the CPU and prints the median step time, for comparison with `ptsim train` on the same model.

"The same model" means the same computation as ptsim's TaskGraph (models/builder.cpp, docs/taskgraph.md):
BERT with transformers' module layout (post-LayerNorm, erf GELU, dropout on embeddings, attention
probabilities and both residual branches), the MLM head on the gathered masked positions only (20 per
sequence at seq 128, as NVIDIA's and DeepSpeed's BERT do; transformers' BertForPreTraining would run it over
every position), the decoder tied to the word embeddings, NSP on the pooled [CLS] row, global-norm gradient
clipping at 1.0 and torch.optim.AdamW, fp32, in training mode. Inputs are random token ids (the timing does
not depend on their values). Not a correctness reference: tools/torch_reference.py is that.

Usage: /usr/bin/python3 tools/bench_torch_step.py --model models/specs/bert-tiny.json --vocab 8000 --micro-batch 32 \
           --seq 128 --predictions 20 --threads 2 --steps 5
Prints one JSON line: {"median_step_seconds": ..., "step_seconds": [...], "torch": ..., "blas": ...}.
Needs torch (Debian: apt-get install python3-torch libopenblas0-pthread; without an optimised BLAS torch
uses the reference BLAS and is about 9x slower, which is not a fair baseline).
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    """One post-LN BERT encoder layer, as transformers' BertLayer (with its dropouts)."""

    def __init__(self, c, p):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.ln1 = nn.Linear(h, h), nn.LayerNorm(h, eps=c["layer_norm_eps"])
        self.inter, self.out = nn.Linear(h, c["intermediate_size"]), nn.Linear(c["intermediate_size"], h)
        self.ln2, self.p = nn.LayerNorm(h, eps=c["layer_norm_eps"]), p

    def split(self, x):
        b, s, h = x.shape
        return x.view(b, s, self.heads, h // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        b, s, h = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads) + additive_mask
        probs = F.dropout(F.softmax(scores, dim=-1), self.p, self.training)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.ln1(F.dropout(self.attn_out(context), self.p, self.training) + x)
        y = self.out(F.gelu(self.inter(x)))
        return self.ln2(F.dropout(y, self.p, self.training) + x)


class Bert(nn.Module):
    def __init__(self, c, vocab, p=0.1):
        super().__init__()
        h = c["hidden_size"]
        self.word = nn.Embedding(vocab, h)
        self.position = nn.Embedding(c["max_position_embeddings"], h)
        self.token_type = nn.Embedding(c["type_vocab_size"], h)
        self.ln = nn.LayerNorm(h, eps=c["layer_norm_eps"])
        self.layers = nn.ModuleList([Layer(c, p) for _ in range(c["num_layers"])])
        self.pooler = nn.Linear(h, h)
        self.transform, self.transform_ln = nn.Linear(h, h), nn.LayerNorm(h, eps=c["layer_norm_eps"])
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        self.nsp = nn.Linear(h, 2)
        self.p = p

    def forward(self, ids, types, mask, masked_positions):
        b, s = ids.shape
        positions = torch.arange(s).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(types)
        x = F.dropout(self.ln(x), self.p, self.training)
        additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, additive)
        flat = x.reshape(b * s, -1)
        rows = flat.index_select(0, masked_positions)  # the masked positions only (ptsim: gather_rows)
        t = self.transform_ln(F.gelu(self.transform(rows)))
        mlm_logits = F.linear(t, self.word.weight, self.decoder_bias)  # tied decoder
        nsp_logits = self.nsp(torch.tanh(self.pooler(x[:, 0])))
        return mlm_logits, nsp_logits


def loaded_blas():
    """Which BLAS library file this process mapped: Debian's torch links libblas.so.3 (BLAS_INFO=generic),
    which the alternatives system points at OpenBLAS or at the slow reference BLAS."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line.lower() and "/" in line}
    names = sorted(p for p in paths if "blas" in p.rsplit("/", 1)[-1].lower())
    return ", ".join(names) if names else "none mapped"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="ptsim model JSON (models/specs/*.json)")
    ap.add_argument("--vocab", type=int, required=True, help="vocabulary size (ptsim takes it from the data)")
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--predictions", type=int, default=20, help="masked positions per sequence")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5, help="timed steps, after one warm-up step")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    with open(args.model) as f:
        c = json.load(f)
    model = Bert(c, args.vocab).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    b, s, p = args.micro_batch, args.seq, args.predictions
    ids = torch.randint(0, args.vocab, (b, s))
    types = torch.zeros(b, s, dtype=torch.int64)
    mask = torch.ones(b, s, dtype=torch.int64)
    positions = torch.stack([torch.randperm(s)[:p] + r * s for r in range(b)]).reshape(-1)
    mlm_labels = torch.randint(0, args.vocab, (b * p,))
    nsp_labels = torch.randint(0, 2, (b,))

    def step():
        opt.zero_grad(set_to_none=True)
        mlm_logits, nsp_logits = model(ids, types, mask, positions)
        loss = F.cross_entropy(mlm_logits, mlm_labels) + F.cross_entropy(nsp_logits, nsp_labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss)

    step()  # warm-up: allocations, first-touch pages, OpenBLAS buffers
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    blas = loaded_blas()
    print(json.dumps({"median_step_seconds": statistics.median(times), "step_seconds": times,
                      "torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    sys.exit(main())
