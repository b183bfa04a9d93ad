#!/usr/bin/env python3
"""tools/torch_reference.py — the PyTorch side of ptsim's golden check (docs/golden-tests.md).

A BertForPreTraining written out in PyTorch with HuggingFace's module tree, so its parameter names and
layouts are transformers' own (bert.encoder.layer.0.attention.self.query.weight is an nn.Linear weight
[out, in]; the MLM decoder is tied to the word embeddings and its bias to cls.predictions.bias). It loads a
ptsim safetensors checkpoint (parsed here: 8-byte little-endian header length, JSON header, raw
little-endian data) with strict key matching — every tensor used, none missing, every shape equal — then,
on one fixed batch with dropout off (eval mode):
  * the MLM and NSP losses and their sum, computed as transformers does (prediction scores over every
    position, labels -100 except at the masked positions, nn.CrossEntropyLoss; NSP on the pooled [CLS]);
  * the MLM logits at the masked-position slots [B*P, vocab] and the NSP logits [B, 2];
  * the gradient of the summed loss for every parameter;
  * 11 losses of 10 optimizer steps on that batch (the loss before each step, then after the last):
    AdamW as torch.optim.AdamW, and NVLAMB written out as docs/optimizers-and-checkpoints.md specifies it
    (torch has no LAMB), both at a constant learning rate from the same starting weights.
It writes them to one safetensors file (F32; grad.<parameter name> for gradients).

Needs only torch and numpy (Debian: python3-torch python3-numpy); no transformers.
  /usr/bin/python3 tools/torch_reference.py --dir tests/data/golden/bert \
      --out tests/data/golden/bert/torch_golden.safetensors
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------- safetensors

_DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "F16": "<f2", "U8": "u1", "I8": "i1"}


def read_safetensors(path):
    """Returns ({name: numpy array}, metadata). Checks the layout the format requires."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        sys.exit(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        sys.exit(f"{path}: header length {n} exceeds the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors, end = {}, 0
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = entry["data_offsets"]
        if begin != end:
            sys.exit(f"{path}: tensor {name} does not start where the previous one ends")
        dtype = np.dtype(_DTYPES[entry["dtype"]])
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if stop - begin != count * dtype.itemsize:
            sys.exit(f"{path}: tensor {name}: {stop - begin} bytes for shape {entry['shape']}")
        tensors[name] = np.frombuffer(body[begin:stop], dtype=dtype).reshape(entry["shape"]).copy()
        end = stop
    if end != len(body):
        sys.exit(f"{path}: {len(body) - end} trailing bytes after the last tensor")
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """tensors: {name: numpy array} (F32 or I32), written in the given order."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, array in tensors.items():
        code = "F32" if array.dtype.kind == "f" else "I32"
        blob = np.ascontiguousarray(array, dtype=_DTYPES[code]).tobytes()
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)

# ---------------------------------------------------------------------------------------------- the model
# Module names and structure follow transformers' modeling_bert.py (BertForPreTraining), so that
# named_parameters() yields exactly the names transformers saves.


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).unsqueeze(0), persistent=False)

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, :input_ids.shape[1]]
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["num_attention_heads"]
        self.head_dim = c["hidden_size"] // self.heads
        self.query = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.key = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.value = nn.Linear(c["hidden_size"], c["hidden_size"])

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + additive_mask
        context = torch.matmul(F.softmax(scores, dim=-1), v)
        b, _, s, _ = context.shape
        return context.permute(0, 2, 1, 3).reshape(b, s, self.heads * self.head_dim)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, x, additive_mask):
        return self.output(self.self(x, additive_mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))  # hidden_act "gelu": the erf form


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, x, additive_mask):
        a = self.attention(x, additive_mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x, additive_mask):
        for layer in self.layer:
            x = layer(x, additive_mask)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        x = self.embeddings(input_ids, token_type_ids)
        dtype = x.dtype  # transformers' get_extended_attention_mask: (1 - mask) * finfo.min, added to scores
        additive = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        x = self.encoder(x, additive)
        return x, self.pooler(x)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x):
        return self.LayerNorm(F.gelu(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.decoder.bias = self.bias  # as transformers ties them

    def forward(self, x):
        return self.decoder(self.transform(x))


class BertPreTrainingHeads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)

    def forward(self, sequence, pooled):
        return self.predictions(sequence), self.seq_relationship(pooled)


class BertForPreTraining(nn.Module):
    TIED = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
            "cls.predictions.decoder.bias": "cls.predictions.bias"}

    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = BertPreTrainingHeads(c)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_weights()

    def forward(self, input_ids, token_type_ids, attention_mask):
        sequence, pooled = self.bert(input_ids, token_type_ids, attention_mask)
        return self.cls(sequence, pooled)


def load_strict(model, weights, path):
    """Every checkpoint tensor is a parameter of the model and every parameter is in the checkpoint, with
    equal shapes (the tied decoder weight/bias are the same tensors as their targets, as transformers
    saves them once). Exits naming every difference otherwise."""
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(weights))
    unexpected = sorted(set(weights) - set(params))
    wrong = sorted(n for n in set(params) & set(weights) if tuple(params[n].shape) != weights[n].shape)
    if missing or unexpected or wrong:
        lines = [f"missing: {n} {tuple(params[n].shape)}" for n in missing]
        lines += [f"unexpected: {n} {weights[n].shape}" for n in unexpected]
        lines += [f"shape: {n} checkpoint {weights[n].shape} model {tuple(params[n].shape)}" for n in wrong]
        sys.exit(f"{path}: does not match BertForPreTraining:\n  " + "\n  ".join(lines))
    state = {n: torch.from_numpy(weights[n]) for n in params}
    for tied, target in BertForPreTraining.TIED.items():
        state[tied] = state[target]
    model.load_state_dict(state, strict=True)  # torch's own check, with the tied names filled in

# ---------------------------------------------------------------------------------------------- the batch


def batch_tensors(batch):
    ids = torch.from_numpy(batch["input_ids"].astype(np.int64))
    types = torch.from_numpy(batch["token_type_ids"].astype(np.int64))
    mask = torch.from_numpy(batch["attention_mask"].astype(np.int64))
    positions = batch["masked_positions"].astype(np.int64)
    labels = batch["masked_labels"].astype(np.int64)
    mlm_labels = torch.full(ids.shape, -100, dtype=torch.int64)  # transformers' ignore index
    for b in range(labels.shape[0]):
        for j in range(labels.shape[1]):
            if labels[b, j] >= 0:
                mlm_labels[b, positions[b, j]] = int(labels[b, j])
    nsp = torch.from_numpy(batch["nsp_labels"].astype(np.int64))
    return ids, types, mask, torch.from_numpy(positions), mlm_labels, nsp


def losses(model, batch):
    ids, types, mask, positions, mlm_labels, nsp = batch
    scores, nsp_scores = model(ids, types, mask)
    vocab = scores.shape[-1]
    mlm = F.cross_entropy(scores.view(-1, vocab), mlm_labels.view(-1), ignore_index=-100)
    nsp_loss = F.cross_entropy(nsp_scores.view(-1, 2), nsp.view(-1))
    slots = scores[torch.arange(ids.shape[0])[:, None], positions]  # [B, P, V]: the masked-position slots
    return mlm, nsp_loss, slots.reshape(-1, vocab), nsp_scores

# ---------------------------------------------------------------------------------------------- optimizers


def no_decay(name):
    """Biases and LayerNorm parameters get no weight decay (transformers' and NVIDIA's BERT scripts)."""
    return "bias" in name or "LayerNorm" in name


class NvLamb:
    """NVLAMB exactly as docs/optimizers-and-checkpoints.md specifies it (apex FusedLAMB, use_nvlamb=True):
    g ← g / (‖g‖/max) when the global norm ‖g‖ > max (1.0); Adam moments with bias correction;
    u = m̂/(√v̂ + ε) + λ·w; w ← w − η·(‖w‖/‖u‖)·u on every tensor (ratio 1 when either norm is 0)."""

    def __init__(self, named, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, max_grad_norm=1.0):
        self.named, self.lr, self.betas, self.eps = named, lr, betas, eps
        self.wd, self.max_norm, self.t = weight_decay, max_grad_norm, 0
        self.state = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in named}

    @torch.no_grad()
    def step(self):
        self.t += 1
        b1, b2 = self.betas
        norm = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for _, p in self.named))
        clip = norm / self.max_norm if norm > self.max_norm else 1.0
        bc1, bc2 = 1.0 - b1 ** self.t, 1.0 - b2 ** self.t
        for name, p in self.named:
            m, v = self.state[name]
            g = p.grad / clip
            m.mul_(b1).add_(g, alpha=1.0 - b1)
            v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
            lam = 0.0 if no_decay(name) else self.wd
            u = (m / bc1) / ((v / bc2).sqrt() + self.eps) + lam * p
            w_norm, u_norm = float(p.double().norm()), float(u.double().norm())
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            p.sub_(self.lr * ratio * u)


def make_optimizer(kind, model, lr):
    named = list(model.named_parameters())
    if kind == "adamw":  # ptsim's AdamW defaults: β (0.9, 0.999), ε 1e-8, λ 0.01, no clipping
        groups = [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": 0.01},
                  {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    return NvLamb(named, lr)


def train_losses(kind, config, weights, batch, lr, steps, dtype, source):
    model = fresh_model(config, weights, dtype, source)
    opt = make_optimizer(kind, model, lr)
    out = []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        mlm, nsp, _, _ = losses(model, batch)
        loss = mlm + nsp
        loss.backward()
        opt.step()
        out.append(float(loss))
    with torch.no_grad():
        mlm, nsp, _, _ = losses(model, batch)
    out.append(float(mlm + nsp))
    return out


def fresh_model(config, weights, dtype, source):
    model = BertForPreTraining(config)
    load_strict(model, weights, source)
    return model.to(dtype).eval()  # eval: dropout off

# ---------------------------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="directory with config.json, model.safetensors, batch.safetensors")
    ap.add_argument("--out", required=True, help="golden file to write (safetensors)")
    ap.add_argument("--adamw-lr", type=float, default=1e-3)
    ap.add_argument("--lamb-lr", type=float, default=1e-2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                    help="float64: an exact-arithmetic stand-in, to measure fp32 rounding (not the shipped golden)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # nothing is random; set anyway
    dtype = getattr(torch, args.dtype)

    with open(f"{args.dir}/config.json") as f:
        config = json.load(f)
    if config.get("hidden_act") != "gelu":
        sys.exit(f"{args.dir}/config.json: hidden_act {config.get('hidden_act')!r}; this reference implements 'gelu'")
    source = f"{args.dir}/model.safetensors"
    weights, _ = read_safetensors(source)
    batch = batch_tensors(read_safetensors(f"{args.dir}/batch.safetensors")[0])

    model = fresh_model(config, weights, dtype, source)
    mlm, nsp, mlm_logits, nsp_logits = losses(model, batch)
    (mlm + nsp).backward()
    out = {"loss": np.array([float(mlm + nsp)]), "mlm_loss": np.array([float(mlm)]), "nsp_loss": np.array([float(nsp)]),
           "mlm_logits": mlm_logits.detach().double().numpy(), "nsp_logits": nsp_logits.detach().double().numpy()}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.double().numpy()
    for kind, lr in (("adamw", args.adamw_lr), ("lamb", args.lamb_lr)):
        out[f"{kind}.losses"] = np.array(train_losses(kind, config, weights, batch, lr, args.steps, dtype, source))
    metadata = {"ptsim_golden": "torch", "torch": torch.__version__, "dtype": args.dtype,
                "adamw_lr": repr(args.adamw_lr), "lamb_lr": repr(args.lamb_lr), "steps": str(args.steps),
                "command": "tools/torch_reference.py " + " ".join(sys.argv[1:])}
    write_safetensors(args.out, out, metadata)
    print(f"{args.out}: loss {out['loss'][0]:.7f} (mlm {out['mlm_loss'][0]:.7f}, nsp {out['nsp_loss'][0]:.7f}); "
          f"adamw {out['adamw.losses'][0]:.5f} -> {out['adamw.losses'][-1]:.5f}; "
          f"lamb {out['lamb.losses'][0]:.5f} -> {out['lamb.losses'][-1]:.5f}")


if __name__ == "__main__":
    main()
