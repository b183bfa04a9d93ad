#!/usr/bin/env python3
"""tests/runtime/bench/test_bench_gpu_bert_dry_run.py — tools/bench_gpu_bert.py end to end without a GPU:
`--dry-run` (bert-tiny on the CPU: ptsim --backend cpu; torch eager where this python has torch) into a
temporary directory, then checks what it wrote: the JSON's format and one row per planned run (2 lengths ×
ptsim, eager, compile, ptsim fused attention, ptsim tensor-core attention: that one skipped on the CPU backend
saying why, the flag never passed), every ptsim row measured (seq/s > 0, model TFLOP/s and MFU from the stated formula,
an op-times file in ptsim.op_times.v1 format), the ptsim / eager ratio where eager ran, `ptsim calibrate
measured` run on the op times, the markdown table with a line per row; and that bad flags exit 2.
Usage (meson, suite cpu): test_bench_gpu_bert_dry_run.py PTSIM
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # importing the sibling tools must not leave __pycache__ in the source tree
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(ROOT, "tools", "bench_gpu_bert.py")
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def main():
    ptsim = sys.argv[1]
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import bench_gpu_bert
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    with tempfile.TemporaryDirectory(prefix="bench_gpu_bert_") as work:
        out_json, out_md = os.path.join(work, "b.json"), os.path.join(work, "b.md")
        r = subprocess.run([sys.executable, BENCH, "--dry-run", "--ptsim", ptsim, "--work", work, "--out-json", out_json,
                            "--out-md", out_md], capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, f"--dry-run exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        if r.returncode != 0:
            return
        doc = json.load(open(out_json))
        check(doc["format"] == "ptsim.bench_gpu_bert.v1", f"format {doc['format']}")
        rows = doc["rows"]
        check(len(rows) == 10, f"{len(rows)} rows, expected 10 (seq 32 and 64 × ptsim, eager, compile, ptsim fused "
              "attention, ptsim tensor-core attention)")
        check([r["system"] for r in rows[-4:]] == ["ptsim fused attention"] * 2 + ["ptsim tensor-core attention"] * 2,
              f"the attention variants are not the last rows: {[r['system'] for r in rows]}")
        with open(os.path.join(ROOT, "models", "specs", "bert-tiny.json")) as f:
            model = json.load(f)
        for row in rows:
            what = f"{row['system']} seq {row['seq']}"
            if row["system"] == "ptsim tensor-core attention":
                check(row["status"].startswith("skipped: --attention-kernel tensor-core needs --backend cuda")
                      and "command" not in row, f"{what}: {row}")
            elif row["system"] in ("ptsim", "ptsim fused attention"):
                check(row["system"] == "ptsim" or "--fused-attention" in row.get("command", ""), f"{what}: {row}")
                check(row["status"] == "ok", f"{what}: {row['status']} (log {row.get('log')}: "
                      f"{open(row['log']).read()[-2000:] if os.path.exists(row.get('log', '')) else ''})")
                if row["status"] != "ok":
                    continue
                check(row["seq_per_s"] > 0 and len(row["step_seconds"]) == 2, f"{what}: {row}")
                flops = bench_gpu_bert.model_flops_per_sequence(model, row["seq"])
                # 6·N·s + 12·L·h·s² with N = L·(4h² + 2h·f): bert-tiny (L 2, h 128, f 512) at seq 32 is 43.5 MFLOP
                if row["seq"] == 32:
                    check(flops == 6 * 2 * (4 * 128 * 128 + 2 * 128 * 512) * 32 + 12 * 2 * 128 * 32 * 32, f"FLOPs {flops}")
                check(abs(row["model_tflops"] - row["seq_per_s"] * flops / 1e12) <= 1e-12 * row["model_tflops"] + 1e-15,
                      f"{what}: model TFLOP/s {row['model_tflops']}")
                check(row["mfu"] > 0, f"{what}: MFU {row['mfu']}")
                op_times = json.load(open(row["op_times"]))
                check(op_times.get("schema") == "ptsim.op_times.v1" and len(op_times["ops"]) > 0, f"{what}: op times")
            elif row["system"] == "transformers eager" and have_torch:
                check(row["status"] == "ok", f"{what}: {row['status']}")
                ptsim_row = next(p for p in rows if p["system"] == "ptsim" and p["seq"] == row["seq"])
                if row["status"] == "ok" and ptsim_row["status"] == "ok":
                    ratio = ptsim_row["seq_per_s"] / row["seq_per_s"]
                    check(abs(ptsim_row.get("ptsim_over_eager", -1) - ratio) <= 1e-9 * ratio, f"{what}: ratio")
            elif row["system"] == "transformers+compile":
                check(row["status"] == "ok" or row["status"].startswith("skipped") or not have_torch,
                      f"{what}: {row['status']}")
        check(doc["calibration"]["status"] == "ok", f"calibrate measured: {doc['calibration']}")
        table = open(out_md).read()
        check(table.count("\n| ptsim |") == 2 and table.count("\n| transformers") == 4, f"markdown table:\n{table}")
        for bad in (["--configs", "128"], ["--systems", "ptsim,jax"], ["--ptsim-also", "fp8"], ["--model", "no-such"],
                    ["--steps", "0"], ["--dry-run", "--model", "bert-base"], ["--ptsim-attention", "tc"]):
            r = subprocess.run([sys.executable, BENCH, "--device", "cpu", "--ptsim", ptsim, "--work", work] + bad,
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 2 and "bench_gpu_bert:" in r.stderr, f"{bad}: exit {r.returncode}, {r.stderr}")
        r = subprocess.run([sys.executable, BENCH, "--ptsim", os.path.join(work, "none"), "--work", work],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "--ptsim" in r.stderr, f"missing ptsim: exit {r.returncode}, {r.stderr}")


if __name__ == "__main__":
    main()
    for f in failures:
        print("FAIL", f)
    print("test_bench_gpu_bert_dry_run:", "passed" if not failures else f"{len(failures)} failures")
    sys.exit(1 if failures else 0)
