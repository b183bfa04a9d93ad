#!/usr/bin/env python3
"""tests/python/test_module.py PTSIM_BINARY — `import ptsim` answers what the CLI prints: predict (a shipped
scenario, --set edits, a dict scenario), a 100-configuration sweep returned as rows, profiles and scenarios;
bad input raises ptsim.InputError with the CLI's message, a configuration that does not fit
ptsim.InfeasibleError; a sweep releases the GIL (another thread runs meanwhile)."""
import json
import subprocess
import sys
import threading

import ptsim

BINARY = sys.argv[1]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def cli_json(*args):
    run = subprocess.run([BINARY, *args, "--format", "json"], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise RuntimeError("ptsim {} failed: {}".format(" ".join(args), run.stderr))
    return json.loads(run.stdout)


def cli_error(*args):
    run = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    return run.returncode, run.stderr.strip().removeprefix("error: ")


def without_wall_time(prediction):
    prediction = dict(prediction)
    prediction.pop("simulator_wall_seconds", None)
    return prediction


# 1. predict: the same library call as `ptsim predict --format json`, so the same numbers, exactly.
check(without_wall_time(ptsim.predict("t4-academic-cluster")) == without_wall_time(cli_json("predict")),
      "ptsim.predict('t4-academic-cluster') differs from ptsim predict --format json")
edited = ptsim.predict("t4-academic-cluster", set={"cluster.nodes": 16, "cluster.network": "ib-edr"})
check(without_wall_time(edited) == without_wall_time(
    cli_json("predict", "--set", "cluster.nodes=16", "--set", "cluster.network=ib-edr")),
    "ptsim.predict with set= differs from ptsim predict --set")
check(edited["gpus"] == 128 and edited["network"] == "ib-edr", "set= was not applied: {} GPUs".format(edited["gpus"]))
inline = {"model": "bert-base", "cluster": {"node": "dgx-a100", "nodes": 2},
          "phases": [{"name": "p", "seq_len": 128, "micro_batch": 32, "steps": 1000}]}
check(ptsim.predict(inline)["stack"] == "pytorch-ngc20.06", "a dict scenario did not predict on its node's stack")

# 2. A 100-configuration sweep, returned as rows: the same JSON `ptsim sweep --format json` prints.
short = {"model": "bert-base", "phases": [{"name": "p", "seq_len": 128, "micro_batch": 32, "steps": 1000}]}
answer = ptsim.sweep("t4-academic-cluster", vary={"cluster.nodes": "1..100"}, set=short, objective="time")
rows = answer["configurations"]
check(len(rows) == 100 and all(r["feasible"] for r in rows), "the sweep has {} rows".format(len(rows)))
cli = cli_json("sweep", "--scenario", "t4-academic-cluster", "--vary", "cluster.nodes=1..100", "--objective", "time",
               "--no-progress", *sum((["--set", "{}={}".format(k, json.dumps(v))] for k, v in short.items()), []))
check(answer == cli, "ptsim.sweep differs from ptsim sweep --format json")

# 3. Errors: ptsim.InputError (a ValueError) with the CLI's message; InfeasibleError for what does not fit.
try:
    ptsim.predict("no-such-scenario")
    check(False, "an unknown scenario raised nothing")
except ptsim.InputError as e:
    code, message = cli_error("predict", "--scenario", "no-such-scenario")
    check(code == 2 and str(e) == message, "InputError {!r}, the CLI says {!r}".format(str(e), message))
    check(isinstance(e, ValueError), "ptsim.InputError is not a ValueError")
try:
    ptsim.predict("t4-academic-cluster", set={"phases.0.micro_batch": 4096})
    check(False, "micro-batch 4096 on a T4 raised nothing")
except ptsim.InfeasibleError as e:
    check("does not fit" in str(e), "InfeasibleError says: " + str(e))
try:
    ptsim.sweep("t4-academic-cluster", vary={"cluster.nodes": "0..2"})
    check(False, "a sweep over 0 nodes raised nothing")
except ptsim.InputError as e:
    check("--vary cluster.nodes: value 0" in str(e), "sweep InputError says: " + str(e))

# 4. Profiles and scenarios.
profiles = ptsim.profiles()
check(any(g["name"] == "h100-sxm" for g in profiles["gpus"]), "ptsim.profiles() has no h100-sxm")
check("t4-academic-cluster" in ptsim.scenarios(), "ptsim.scenarios() lacks t4-academic-cluster")

# 5. The GIL is released while a sweep runs: this thread keeps counting meanwhile.
done = threading.Event()
worker = threading.Thread(target=lambda: (ptsim.sweep("t4-academic-cluster", vary={"cluster.nodes": "1..40"},
                                                       set=short, threads=1), done.set()))
ticks = 0
worker.start()
while not done.is_set():
    ticks += 1
worker.join()
check(ticks > 10000, "only {} ticks of the main thread while a sweep ran: the GIL was held".format(ticks))

if failures:
    print("python module: {} failed".format(len(failures)))
    sys.exit(1)
print("python module: all checks passed (100-configuration sweep, {} main-thread ticks during a sweep)".format(ticks))
