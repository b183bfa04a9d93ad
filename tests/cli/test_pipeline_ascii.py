#!/usr/bin/env python3
"""tests/cli/test_pipeline_ascii.py — tools/pipeline_ascii.py draws what `ptsim predict --trace` simulated:
for GPT-2 124M on a 4-stage pipeline (each schedule), the bubble it computes from the trace equals the one
ptsim prints (both rounded to 0.1 points, so equal to 0.1), it draws one row per stage of the asked width,
every micro-batch's forward and backward appear on every stage, and a file that is not a trace exits 2.
Usage: test_pipeline_ascii.py PTSIM SCRIPT
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def scenario(schedule):
    recipe = {"stack": "pytorch-ngc20.06", "precision": "bf16", "optimizer": "adamw", "pipeline_parallel": 4,
              "pipeline_schedule": schedule}
    if schedule == "interleaved":
        recipe["virtual_stages"] = 3
    return {"name": f"pp-{schedule}", "description": "test_pipeline_ascii.py", "model": "gpt2-124m",
            "cluster": {"node": "dgx-a100", "nodes": 1}, "recipe": recipe,
            "phases": [{"name": "p", "seq_len": 1024, "micro_batch": 8, "global_batch": 128, "steps": 1}]}


def main():
    ptsim, script = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for schedule in ("gpipe", "1f1b", "interleaved"):
            path, trace = os.path.join(tmp, f"{schedule}.json"), os.path.join(tmp, f"{schedule}-trace.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(scenario(schedule), f)
            out = subprocess.run([ptsim, "predict", "--scenario", path, "--trace", trace], check=True,
                                 capture_output=True, text=True).stdout
            printed = float(re.search(r"bubble ([0-9.]+)% of the flush", out).group(1))
            drawn = subprocess.run([sys.executable, script, trace, "--width", "80"], check=True,
                                   capture_output=True, text=True).stdout.splitlines()
            bubble = float(re.match(r"bubble ([0-9.]+)%", drawn[0]).group(1))
            rows = drawn[1:]
            ok = abs(bubble - printed) <= 0.1 + 1e-9 and len(rows) == 4
            for row in rows:
                cells = row.split("|")[1]
                ok = ok and len(cells) == 80 and all(c in cells for c in "01234567abcdefgh")
            print(f"{'ok' if ok else 'FAIL'} {schedule}: drawn bubble {bubble}%, ptsim {printed}%, {len(rows)} rows")
            failures += not ok
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("{not json")
        rc = subprocess.run([sys.executable, script, bad], capture_output=True, text=True).returncode
        print(f"{'ok' if rc == 2 else 'FAIL'} a file that is not a trace: exit {rc}")
        failures += rc != 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
