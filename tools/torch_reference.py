#!/usr/bin/env python3
"""tools/torch_reference.py — the PyTorch side of ptsim's golden check (docs/golden-tests.md).

Two models written out in PyTorch with transformers' module trees, so their parameter names and layouts are
transformers' own: BertForPreTraining (nn.Linear weights [out, in]; the MLM decoder tied to the word
embeddings, its bias to cls.predictions.bias) and GPT2LMHeadModel (Conv1D weights [in, out], one fused
attn.c_attn; lm_head tied to wte). It loads a ptsim safetensors checkpoint (parsed here: 8-byte little-endian
header length, JSON header, raw little-endian data) with strict key matching — every tensor used, none
missing, every shape equal. BERT's ptsim names are transformers' names; GPT-2's are converted (ptsim keeps
attn.query/key/value as [out, in] linears: c_attn = [Wqᵀ | Wkᵀ | Wvᵀ], Conv1D = Linearᵀ), strictly in both
directions. Then, on one fixed batch with dropout off (eval mode), computed as transformers does:
  * BERT: the MLM and NSP losses and their sum (prediction scores over every position, labels -100 except at
    the masked positions, cross-entropy; NSP on the pooled first token); the MLM logits at the
    masked-position slots [B*P, vocab] and the NSP logits [B, 2];
    GPT-2: the LM loss (logits shifted against the labels, as GPT2LMHeadModel) and the logits of the first
    sequence [S, vocab];
  * the gradient of the loss for every parameter, under ptsim's names and shapes;
  * 11 losses of 10 optimizer steps on that batch (the loss before each step, then after the last):
    AdamW as torch.optim.AdamW, and NVLAMB written out as docs/optimizers-and-checkpoints.md specifies it
    (torch has none; the trust ratio per ptsim tensor, i.e. per third of GPT-2's c_attn), both at a
    constant learning rate from the same starting weights.
It writes them to one safetensors file (F32; grad.<ptsim parameter name> for gradients).

Needs only torch and numpy (Debian: python3-torch python3-numpy); no transformers.
  /usr/bin/python3 tools/torch_reference.py --dir tests/data/golden/bert \
      --out tests/data/golden/bert/torch_golden.safetensors
  (and likewise for tests/data/golden/gpt2; the model comes from config.json's model_type)
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



class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with the weight stored [in, out]: y = x·W + b."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


def gelu_new(x):
    """GPT-2's activation_function "gelu_new": the tanh approximation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.hidden, self.heads = c["n_embd"], c["n_head"]
        self.head_dim = self.hidden // self.heads
        self.c_attn = Conv1D(3 * self.hidden, self.hidden)
        self.c_proj = Conv1D(self.hidden, self.hidden)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # scale_attn_weights
        s = x.shape[1]
        causal = torch.tril(torch.ones(s, s, dtype=torch.bool))
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        context = torch.matmul(F.softmax(w, dim=-1), v)
        b = x.shape[0]
        return self.c_proj(context.permute(0, 2, 1, 3).reshape(b, s, self.hidden))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c.get("n_inner") or 4 * c["n_embd"]
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    TIED = {"lm_head.weight": "transformer.wte.weight"}

    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tie_word_embeddings

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))

# ---------------------------------------------------------------------------------------------- loading


def strict_differences(expected, got):
    """expected, got: {name: shape}. Lines naming every missing, unexpected and wrongly shaped tensor."""
    lines = [f"missing: {n} {expected[n]}" for n in sorted(set(expected) - set(got))]
    lines += [f"unexpected: {n} {got[n]}" for n in sorted(set(got) - set(expected))]
    lines += [f"shape: {n} checkpoint {got[n]} model {expected[n]}"
              for n in sorted(set(expected) & set(got)) if tuple(expected[n]) != tuple(got[n])]
    return lines


def load_strict(model, state, path, tied=None):
    """Every tensor of `state` is a parameter of the model and every parameter is in `state`, with equal
    shapes (tied weights are the same tensors as their targets, saved once, as transformers does). Exits
    naming every difference otherwise. `tied`: {alias: target} of the model's tied parameter names (default:
    the class's TIED; tools/hf_crosscheck.py passes transformers' ties). Persistent buffers (none in this
    file's models; transformers' versions may have some) keep the model's own values."""
    params = dict(model.named_parameters())
    lines = strict_differences({n: tuple(p.shape) for n, p in params.items()}, {n: a.shape for n, a in state.items()})
    if lines:
        sys.exit(f"{path}: does not match {type(model).__name__}:\n  " + "\n  ".join(lines))
    full = {n: torch.from_numpy(np.ascontiguousarray(state[n])) for n in params}
    for alias, target in (type(model).TIED if tied is None else tied).items():
        full[alias] = full[target]
    own = model.state_dict()
    full.update({n: b for n, b in model.named_buffers() if n in own and n not in full})
    model.load_state_dict(full, strict=True)  # torch's own check, with the tied names filled in


class Gpt2Layout:
    """ptsim's GPT-2 graph tensors ↔ GPT2LMHeadModel's. ptsim's graph: attn.{query,key,value} and every
    projection as nn.Linear-style [out, in]; transformers: one attn.c_attn Conv1D [in, 3·out] and Conv1D
    [in, out]. runtime/checkpoint/hf_gpt2_layout.cpp is the same conversion in C++ (what `ptsim train`
    writes its GPT-2 checkpoints with)."""

    def __init__(self, c):
        self.c = c
        h, inner = c["n_embd"], c.get("n_inner") or 4 * c["n_embd"]
        self.ptsim_shapes = {"transformer.wte.weight": (c["vocab_size"], h), "transformer.wpe.weight": (c["n_positions"], h),
                             "transformer.ln_f.weight": (h,), "transformer.ln_f.bias": (h,)}
        for i in range(c["n_layer"]):
            x = f"transformer.h.{i}"
            for ln in ("ln_1", "ln_2"):
                self.ptsim_shapes.update({f"{x}.{ln}.weight": (h,), f"{x}.{ln}.bias": (h,)})
            for name, out, inp in (("attn.query", h, h), ("attn.key", h, h), ("attn.value", h, h),
                                   ("attn.c_proj", h, h), ("mlp.c_fc", inner, h), ("mlp.c_proj", h, inner)):
                self.ptsim_shapes.update({f"{x}.{name}.weight": (out, inp), f"{x}.{name}.bias": (out,)})

    def to_hf(self, weights, path):
        lines = strict_differences(self.ptsim_shapes, {n: a.shape for n, a in weights.items()})
        if lines:
            sys.exit(f"{path}: does not match ptsim's GPT-2 tensors:\n  " + "\n  ".join(lines))
        hf = {n: a for n, a in weights.items() if ".attn." not in n and ".mlp." not in n}
        for i in range(self.c["n_layer"]):
            x = f"transformer.h.{i}"
            hf[f"{x}.attn.c_attn.weight"] = np.concatenate([weights[f"{x}.attn.{q}.weight"].T for q in ("query", "key", "value")], 1)
            hf[f"{x}.attn.c_attn.bias"] = np.concatenate([weights[f"{x}.attn.{q}.bias"] for q in ("query", "key", "value")])
            for name in ("attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
                hf[f"{x}.{name}.weight"] = weights[f"{x}.{name}.weight"].T
                hf[f"{x}.{name}.bias"] = weights[f"{x}.{name}.bias"]
        return hf

    @staticmethod
    def is_hf(weights):
        """Whether `weights` are already GPT2LMHeadModel's (a `ptsim train` checkpoint's model.safetensors is
        written so: docs/training.md, GPT-2 "Checkpoints"), not the graph's (the golden inputs)."""
        return any(n.endswith(".attn.c_attn.weight") for n in weights)

    def to_ptsim(self, hf):
        """HF-layout arrays (gradients) → ptsim names and shapes."""
        h = self.c["n_embd"]
        out = {n: a for n, a in hf.items() if ".attn." not in n and ".mlp." not in n}
        for i in range(self.c["n_layer"]):
            x = f"transformer.h.{i}"
            for j, q in enumerate(("query", "key", "value")):
                out[f"{x}.attn.{q}.weight"] = hf[f"{x}.attn.c_attn.weight"][:, j * h:(j + 1) * h].T
                out[f"{x}.attn.{q}.bias"] = hf[f"{x}.attn.c_attn.bias"][j * h:(j + 1) * h]
            for name in ("attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
                out[f"{x}.{name}.weight"] = hf[f"{x}.{name}.weight"].T
                out[f"{x}.{name}.bias"] = hf[f"{x}.{name}.bias"]
        return {n: out[n] for n in self.ptsim_shapes}

    def blocks(self, name, param):
        """The ptsim tensors inside one HF parameter, as index expressions (LAMB's per-tensor norms)."""
        if name.endswith("attn.c_attn.weight") or name.endswith("attn.c_attn.bias"):
            h = self.c["n_embd"]
            return [(..., slice(j * h, (j + 1) * h)) for j in range(3)]
        return [(...,)]

# ---------------------------------------------------------------------------------------------- the families


class Bert:
    """BERT on this file's BertForPreTraining. tools/hf_crosscheck.py subclasses it with transformers' own
    model: build() makes the module, tied() names its tied parameters, logits() runs it."""
    TIED = BertForPreTraining.TIED

    def __init__(self, c):
        self.c = c

    def build(self):
        return BertForPreTraining(self.c)

    def logits(self, model, b):
        """(prediction scores [B, S, V], NSP scores [B, 2])."""
        return model(b["ids"], b["types"], b["mask"])

    def model(self, weights, dtype, path):
        m = self.build()
        load_strict(m, weights, path, self.TIED)  # ptsim's names are transformers' names
        return m.to(dtype).eval()                 # eval: dropout off

    def batch(self, b):
        ids = torch.from_numpy(b["input_ids"].astype(np.int64))
        positions = b["masked_positions"].astype(np.int64)
        labels = b["masked_labels"].astype(np.int64)
        mlm_labels = torch.full(ids.shape, -100, dtype=torch.int64)  # transformers' ignore index
        for r in range(labels.shape[0]):
            for j in range(labels.shape[1]):
                if labels[r, j] >= 0:
                    mlm_labels[r, positions[r, j]] = int(labels[r, j])
        return {"ids": ids, "types": torch.from_numpy(b["token_type_ids"].astype(np.int64)),
                "mask": torch.from_numpy(b["attention_mask"].astype(np.int64)), "positions": torch.from_numpy(positions),
                "mlm_labels": mlm_labels, "nsp": torch.from_numpy(b["nsp_labels"].astype(np.int64))}

    def forward(self, model, b):
        """(loss, {scalar parts}, {logits})."""
        scores, nsp_scores = self.logits(model, b)
        vocab = scores.shape[-1]
        mlm = F.cross_entropy(scores.view(-1, vocab), b["mlm_labels"].view(-1), ignore_index=-100)
        nsp = F.cross_entropy(nsp_scores.view(-1, 2), b["nsp"].view(-1))
        slots = scores[torch.arange(b["ids"].shape[0])[:, None], b["positions"]]  # [B, P, V]: the masked slots
        return mlm + nsp, {"mlm_loss": mlm, "nsp_loss": nsp}, {"mlm_logits": slots.reshape(-1, vocab), "nsp_logits": nsp_scores}

    def ptsim_grads(self, model):
        return {n: p.grad.double().numpy() for n, p in model.named_parameters()}

    def blocks(self, name, param):
        return [(...,)]


class Gpt2:
    """GPT-2 on this file's GPT2LMHeadModel (build/tied/logits: as Bert)."""
    TIED = GPT2LMHeadModel.TIED

    def __init__(self, c):
        self.c, self.layout = c, Gpt2Layout(c)

    def build(self):
        return GPT2LMHeadModel(self.c)

    def logits(self, model, b):
        """LM logits [B, S, V]."""
        return model(b["ids"])

    def model(self, weights, dtype, path):
        m = self.build()
        hf = weights if self.layout.is_hf(weights) else self.layout.to_hf(weights, path)
        load_strict(m, hf, path, self.TIED)  # strict: names and shapes either way
        return m.to(dtype).eval()

    def batch(self, b):
        ids = b["input_ids"].astype(np.int64)
        lm = b["lm_labels"].astype(np.int64)
        # ptsim labels each position with the next token; transformers labels each position with its own
        # token and shifts inside the loss. Same thing, if ptsim's labels are the next tokens:
        if not np.all(lm[:, -1] == -1) or not np.all((lm[:, :-1] == -1) | (lm[:, :-1] == ids[:, 1:])):
            sys.exit("batch: lm_labels must be the next token (or -1), and -1 at the last position")
        labels = np.full(ids.shape, -100, dtype=np.int64)
        labels[:, 1:] = np.where(lm[:, :-1] == -1, -100, lm[:, :-1])
        return {"ids": torch.from_numpy(ids), "labels": torch.from_numpy(labels)}

    def forward(self, model, b):
        logits = self.logits(model, b)
        vocab = logits.shape[-1]
        shift_logits, shift_labels = logits[:, :-1, :].contiguous(), b["labels"][:, 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, vocab), shift_labels.view(-1), ignore_index=-100)
        return loss, {}, {"logits": logits[0]}

    def ptsim_grads(self, model):
        return self.layout.to_ptsim({n: p.grad.double().numpy() for n, p in model.named_parameters()})

    def blocks(self, name, param):
        return self.layout.blocks(name, param)

# ---------------------------------------------------------------------------------------------- optimizers


def no_decay(name):
    """Biases and LayerNorm parameters get no weight decay (transformers' and NVIDIA's BERT scripts; GPT-2's
    LayerNorms are ln_1, ln_2, ln_f)."""
    return "bias" in name or "LayerNorm" in name or ".ln_" in name


class NvLamb:
    """NVLAMB exactly as docs/optimizers-and-checkpoints.md specifies it (apex FusedLAMB, use_nvlamb=True):
    g ← g / (‖g‖/max) when the global norm ‖g‖ > max (1.0); Adam moments with bias correction;
    u = m̂/(√v̂ + ε) + λ·w; w ← w − η·(‖w‖/‖u‖)·u on every tensor (ratio 1 when either norm is 0). "Tensor"
    is ptsim's tensor: `blocks` splits a parameter that holds several (GPT-2's c_attn = query|key|value)."""

    def __init__(self, named, blocks, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01, max_grad_norm=1.0):
        self.named, self.blocks, self.lr, self.betas, self.eps = named, blocks, lr, betas, eps
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
            for block in self.blocks(name, p):
                w_norm, u_norm = float(p[block].double().norm()), float(u[block].double().norm())
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
                p[block] -= self.lr * ratio * u[block]


def make_optimizer(kind, family, model, lr):
    named = list(model.named_parameters())
    if kind == "adamw":  # ptsim's AdamW defaults: β (0.9, 0.999), ε 1e-8, λ 0.01, no clipping
        groups = [{"params": [p for n, p in named if not no_decay(n)], "weight_decay": 0.01},
                  {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    return NvLamb(named, family.blocks, lr)


def train_losses(kind, family, weights, batch, lr, steps, dtype, source):
    model = family.model(weights, dtype, source)
    opt = make_optimizer(kind, family, model, lr)
    out = []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        loss, _, _ = family.forward(model, batch)
        loss.backward()
        opt.step()
        out.append(float(loss))
    with torch.no_grad():
        loss, _, _ = family.forward(model, batch)
    out.append(float(loss))
    return out

# ---------------------------------------------------------------------------------------------- main


def read_case(directory):
    """(config, family class for it, weights, raw batch arrays, weights path) of a golden directory; exits
    naming what is wrong when the config asks for a model or activation this file does not implement."""
    with open(f"{directory}/config.json") as f:
        config = json.load(f)
    kind = config.get("model_type")
    if kind == "bert" and config.get("hidden_act") != "gelu":
        sys.exit(f"{directory}/config.json: hidden_act {config.get('hidden_act')!r}; this reference implements 'gelu'")
    if kind == "gpt2" and config.get("activation_function") != "gelu_new":
        sys.exit(f"{directory}/config.json: activation_function {config.get('activation_function')!r}; "
                 "this reference implements 'gelu_new'")
    if kind not in ("bert", "gpt2"):
        sys.exit(f"{directory}/config.json: model_type {kind!r}; expected 'bert' or 'gpt2'")
    source = f"{directory}/model.safetensors"
    weights, _ = read_safetensors(source)
    batch, _ = read_safetensors(f"{directory}/batch.safetensors")
    return config, kind, weights, batch, source


def golden_outputs(family, weights, batch, dtype, source, adamw_lr, lamb_lr, steps):
    """Everything the golden file holds, as {name: numpy array}: losses, logits, grad.<ptsim name>, and the
    AdamW and NVLAMB step losses."""
    model = family.model(weights, dtype, source)
    loss, parts, logits = family.forward(model, batch)
    loss.backward()
    out = {"loss": np.array([float(loss)])}
    out.update({n: np.array([float(v)]) for n, v in parts.items()})
    out.update({n: v.detach().double().numpy() for n, v in logits.items()})
    out.update({"grad." + n: g for n, g in family.ptsim_grads(model).items()})
    for opt, lr in (("adamw", adamw_lr), ("lamb", lamb_lr)):
        out[f"{opt}.losses"] = np.array(train_losses(opt, family, weights, batch, lr, steps, dtype, source))
    return out


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
    dtype = getattr(torch, args.dtype)

    config, kind, weights, raw_batch, source = read_case(args.dir)
    family = Bert(config) if kind == "bert" else Gpt2(config)
    batch = family.batch(raw_batch)
    out = golden_outputs(family, weights, batch, dtype, source, args.adamw_lr, args.lamb_lr, args.steps)
    metadata = {"ptsim_golden": "torch", "model_type": kind, "torch": torch.__version__, "dtype": args.dtype,
                "adamw_lr": repr(args.adamw_lr), "lamb_lr": repr(args.lamb_lr), "steps": str(args.steps),
                "command": "tools/torch_reference.py " + " ".join(sys.argv[1:])}
    write_safetensors(args.out, out, metadata)
    print(f"{args.out}: loss {out['loss'][0]:.7f}; adamw {out['adamw.losses'][0]:.5f} -> {out['adamw.losses'][-1]:.5f}; "
          f"lamb {out['lamb.losses'][0]:.5f} -> {out['lamb.losses'][-1]:.5f}")


if __name__ == "__main__":
    main()
