#!/usr/bin/env python3
"""tools/hf_crosscheck.py — ptsim against HuggingFace transformers itself (docs/golden-tests.md, "The
transformers cross-check"): the golden inputs of tests/data/golden/<bert|gpt2> (config.json,
model.safetensors, batch.safetensors) loaded into transformers' BertForPreTraining / GPT2LMHeadModel with
strict key matching (every checkpoint tensor a parameter, every parameter in the checkpoint, equal shapes;
GPT-2 converted from ptsim's layout as tools/torch_reference.py converts it), eager attention, dropout off
(eval mode), fp32 on the CPU; then exactly what tools/torch_reference.py computes — the MLM logits at the
masked slots (GPT-2: the first sequence's logits), both losses, every gradient, 10 steps of AdamW and of
NVLAMB — and the comparison with ptsim's results on the same inputs (a file written by
build/tests/runtime/ptsim_golden_outputs, CPU or CUDA backend) under the golden test's fp32 tolerances.

The loader, the batch conversion, the losses, the optimizers and the file format are torch_reference.py's
(imported, not copied): only the module is transformers'. `--implementation reference` swaps in
torch_reference.py's own module trees instead, which needs no transformers: that is how the comparison path
is tested on machines without it (tests/runtime/golden/test_hf_crosscheck.cpp).

Usage:
  build/tests/runtime/ptsim_golden_outputs bert cuda /tmp/ptsim_bert.safetensors
  /usr/bin/python3 tools/hf_crosscheck.py --dir tests/data/golden/bert --ptsim /tmp/ptsim_bert.safetensors \
      [--report report.json] [--out hf_golden.safetensors] [--implementation transformers|reference]
Exit: 0 every quantity within tolerance; 1 some is not (each named); 2 bad input (missing or mismatched
files, keys or shapes); 77 --implementation transformers without transformers installed (says so).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # importing the sibling tools must not leave __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The golden test's fp32 tolerances, read from the file the C++ golden test reads
# (tests/data/golden/tolerances.json; tests/runtime/golden/golden_check.hpp derives them).
TOLERANCES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "tests", "data", "golden", "tolerances.json")


def read_tolerances(path):
    """The tolerance fields of `path`; exit 2 naming the file and the field when one is missing or wrong."""
    fields = ("loss_rel", "logit_max", "grad_max", "grad_l2", "key_bias_noise", "step_loss_rel")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"hf_crosscheck: cannot read the golden tolerances {path}: {e}", file=sys.stderr)
        sys.exit(2)
    if not isinstance(data, dict) or data.get("format") != "ptsim.golden_tolerances.v1":
        print(f"hf_crosscheck: {path}: expected format ptsim.golden_tolerances.v1", file=sys.stderr)
        sys.exit(2)
    for k in fields:
        v = data.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            print(f"hf_crosscheck: {path}: field {k} must be a positive number, got {v!r}", file=sys.stderr)
            sys.exit(2)
    return {k: float(data[k]) for k in fields}


_TOL = read_tolerances(TOLERANCES_FILE)
LOSS_REL = _TOL["loss_rel"]              # losses
STEP_LOSS_REL = _TOL["step_loss_rel"]    # each of the 11 step losses
LOGIT_MAX = _TOL["logit_max"]            # max |Δ| / max |ref| per logits tensor
GRAD_MAX = _TOL["grad_max"]              # max |Δ| / max |ref| per gradient tensor
GRAD_L2 = _TOL["grad_l2"]                # ‖Δ‖₂ / ‖ref‖₂ per gradient tensor
KEY_BIAS_NOISE = _TOL["key_bias_noise"]  # attention key biases (0 in exact arithmetic): max |g| / max |∂L/∂W_key|, both sides


def fail(message, code=2):
    print(f"hf_crosscheck: {message}", file=sys.stderr)
    sys.exit(code)


def families(implementation):
    """(Bert, Gpt2) family classes for the implementation: torch_reference's own, or subclasses whose
    module is transformers' (imported here, so that a missing transformers is exit 77, not a traceback)."""
    import torch_reference as ref
    if implementation == "reference":
        return ref.Bert, ref.Gpt2
    try:
        import transformers
    except ImportError:
        print("hf_crosscheck: transformers is not installed for this python "
              f"({sys.executable}): skipped (pip install transformers; or --implementation reference)")
        sys.exit(77)

    def eager(config_class, c):
        """The config with eager attention (plain matmul-softmax-matmul, as the reference computes it):
        transformers' constructor keyword, or the attribute on versions whose constructor lacks it."""
        config = config_class(**c, attn_implementation="eager")
        if getattr(config, "_attn_implementation", "eager") != "eager":
            config._attn_implementation = "eager"
        return config

    class HfBert(ref.Bert):
        TIED = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                "cls.predictions.decoder.bias": "cls.predictions.bias"}

        def build(self):
            return transformers.BertForPreTraining(eager(transformers.BertConfig, self.c))

        def logits(self, model, b):
            out = model(input_ids=b["ids"], token_type_ids=b["types"], attention_mask=b["mask"])
            return out.prediction_logits, out.seq_relationship_logits

    class HfGpt2(ref.Gpt2):
        TIED = {"lm_head.weight": "transformer.wte.weight"}

        def build(self):
            return transformers.GPT2LMHeadModel(eager(transformers.GPT2Config, self.c))

        def logits(self, model, b):
            return model(input_ids=b["ids"]).logits

    return HfBert, HfGpt2


def tied_for_model(model, tied):
    """The ties that exist in this model: transformers' named_parameters() yields a tied tensor once, under
    its first name; the aliases must be the same tensors, or the strict load would be wrong."""
    def parameter(name):
        try:
            return model.get_parameter(name)
        except AttributeError:
            return None
    present = {}
    for alias, target in tied.items():
        p = parameter(alias)
        if p is None:
            continue  # this version has no such alias (e.g. a decoder without its own bias attribute)
        if p is not parameter(target):
            fail(f"{type(model).__name__}: {alias} is not tied to {target} in this version")
        present[alias] = target
    return present


# ---------------------------------------------------------------------------------------------- comparison

def max_abs(a):
    return float(np.max(np.abs(a))) if a.size else 0.0


def tensor_errors(got, want):
    got, want = np.asarray(got, dtype=np.float64).ravel(), np.asarray(want, dtype=np.float64).ravel()
    if got.shape != want.shape:
        return None
    d = got - want
    scale, norm = max_abs(want), float(np.linalg.norm(want))
    return (max_abs(d) / scale if scale > 0 else max_abs(d)), (float(np.linalg.norm(d)) / norm if norm > 0 else float(np.linalg.norm(d)))


def compare(hf, ptsim):
    """(rows, failures): one row per compared quantity {name, kind, error, tolerance, ok}."""
    rows, failures = [], []
    missing = sorted(set(hf) - set(ptsim))
    extra = sorted(set(ptsim) - set(hf))
    if missing or extra:
        fail("ptsim's file does not hold the same quantities as transformers' results: "
             + "; ".join([f"missing {n}" for n in missing] + [f"unexpected {n}" for n in extra]))

    def add(name, kind, error, tolerance):
        ok = error is not None and error <= tolerance
        rows.append({"name": name, "kind": kind, "error": error, "tolerance": tolerance, "ok": ok})
        if not ok:
            failures.append(f"{name} ({kind}): error {error} > {tolerance}" if error is not None else f"{name}: shapes differ")

    for name in sorted(hf):
        want, got = np.asarray(hf[name], dtype=np.float64).ravel(), np.asarray(ptsim[name], dtype=np.float64).ravel()
        if name.endswith("loss") or name.endswith(".losses"):
            tol = STEP_LOSS_REL if name.endswith(".losses") else LOSS_REL
            if got.shape != want.shape:
                add(name, "loss", None, tol)
                continue
            add(name, "loss relative", float(np.max(np.abs(got - want) / np.abs(want))), tol)
        elif name.endswith("logits"):
            e = tensor_errors(got, want)
            add(name, "logits max", e and e[0], LOGIT_MAX)
        elif name.endswith(".key.bias"):
            key_weight = hf[name[:-len("bias")] + "weight"]
            add(name, "key-bias noise", max(max_abs(got), max_abs(want)) / max_abs(key_weight), KEY_BIAS_NOISE)
        elif name.startswith("grad."):
            e = tensor_errors(got, want)
            add(name, "grad max", e and e[0], GRAD_MAX)
            add(name, "grad L2", e and e[1], GRAD_L2)
        else:
            fail(f"ptsim's file holds {name}, which is not a golden quantity")
    return rows, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="golden directory: config.json, model.safetensors, batch.safetensors")
    ap.add_argument("--ptsim", required=True, help="ptsim's results on those inputs (ptsim_golden_outputs)")
    ap.add_argument("--implementation", choices=["transformers", "reference"], default="transformers",
                    help="whose modules: transformers' (the cross-check) or tools/torch_reference.py's (a test of this script)")
    ap.add_argument("--report", help="write the per-quantity comparison here (JSON)")
    ap.add_argument("--out", help="also write transformers' results here (torch_golden.safetensors layout)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = ap.parse_args()
    for f in ("config.json", "model.safetensors", "batch.safetensors"):
        if not os.path.isfile(os.path.join(args.dir, f)):
            fail(f"--dir {args.dir}: no {f} (expected a golden directory such as tests/data/golden/bert)")
    if not os.path.isfile(args.ptsim):
        fail(f"--ptsim {args.ptsim}: no such file (build/tests/runtime/ptsim_golden_outputs writes it)")

    bert_class, gpt2_class = families(args.implementation)  # exits 77 without transformers
    import torch
    import torch_reference as ref
    torch.set_num_threads(args.threads)
    config, kind, weights, raw_batch, source = ref.read_case(args.dir)
    family = (bert_class if kind == "bert" else gpt2_class)(config)
    family.TIED = tied_for_model(family.build(), family.TIED)
    batch = family.batch(raw_batch)
    ptsim, meta = ref.read_safetensors(args.ptsim)
    if meta.get("model_type") not in (None, kind):
        fail(f"--ptsim {args.ptsim}: results for {meta.get('model_type')!r}, but {args.dir} is {kind!r}")
    steps = int(meta.get("steps", "10"))
    adamw_lr, lamb_lr = float(meta.get("adamw_lr", "1e-3")), float(meta.get("lamb_lr", "1e-2"))
    hf = ref.golden_outputs(family, weights, batch, torch.float32, source, adamw_lr, lamb_lr, steps)
    if args.out:
        ref.write_safetensors(args.out + ".tmp", hf, {"ptsim_golden": args.implementation, "model_type": kind,
                                                      "dtype": "float32", "steps": str(steps), "adamw_lr": repr(adamw_lr),
                                                      "lamb_lr": repr(lamb_lr)})
        os.replace(args.out + ".tmp", args.out)  # atomic: a reader never sees half a file
    rows, failures = compare(hf, ptsim)
    worst = {}
    for r in rows:
        if r["error"] is not None and r["error"] > worst.get(r["kind"], (-1, ""))[0]:
            worst[r["kind"]] = (r["error"], r["name"])
    version = "reference modules" if args.implementation == "reference" else f"transformers {__import__('transformers').__version__}"
    summary = {"model": kind, "implementation": version, "torch": torch.__version__, "ptsim_backend": meta.get("backend"),
               "compared": len(rows), "failed": len(failures), "passed": not failures,
               "worst": {k: {"error": v[0], "name": v[1]} for k, v in worst.items()}, "rows": rows}
    if args.report:
        tmp = args.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, args.report)
    line = ", ".join(f"{k} {v[0]:.2g}" for k, v in sorted(worst.items()))
    print(f"hf_crosscheck: {kind}, ptsim ({meta.get('backend', '?')}) vs {version}: {len(rows)} quantities, "
          f"{len(failures)} failing; worst: {line}")
    for f in failures:
        print(f"  FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
