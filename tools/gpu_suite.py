#!/usr/bin/env python3
"""tools/gpu_suite.py — tools/gpu_check.sh's helper for meson's `gpu` suite (standard library only).

  gpu_suite.py targets BUILD            the ninja targets the check needs: every gpu-suite executable,
                                        ptsim, ptsim_golden_outputs and the backend-ops harness
  gpu_suite.py run BUILD LOGS BUDGET    runs the gpu suite's tests straight from `meson introspect --tests`
                                        (command, environment, working directory), JOBS at a time (env
                                        SUITE_JOBS, default 4; tests meson marks not parallel run alone
                                        afterwards), most diagnostic first, each under its own time limit
                                        (TEST_BUDGET_S, default 120; TEST_BUDGET_<name>=seconds per test) and
                                        all inside BUDGET seconds; a test that would start with under 5 s left
                                        is reported `skipped`. Each test's output goes to LOGS/test-<name>.log;
                                        one line per test on stdout, tab-separated: name, result (passed,
                                        failed, skipped, timeout, not-built), seconds, first failing message
                                        (for a skip: its reason). Exit 0 when none failed or timed out, else 1.
  gpu_suite.py first-failure LOG        the first line of LOG that reads as a failure (else its last line)
  gpu_suite.py check-build BUILD SOURCE CAP
                                        whether a build made elsewhere (GPU_CHECK_BUILD_DIR) can run here: it
                                        was configured for SOURCE (build directories are not relocatable), with
                                        the CUDA backend, and with SASS for sm_CAP or PTX of an older arch;
                                        exit 2 with the reason when not

A test's timeout kills its whole process group (mpirun's ranks included). Exit status 77 is meson's skip.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

# Most diagnostic first: single kernels, then the kernels that other tests lean on, then whole models, the
# CLI and communication (tests not named here run after these, in meson's order).
PRIORITY = [
    "runtime_backend_ops_gpu", "runtime_attention_tc_gpu", "runtime_optimizer_backend_gpu",
    "runtime_16bit_storage_cuda", "runtime_backend_ops_16bit_gpu", "runtime_model_steps_cuda",
    "runtime_golden_cuda", "runtime_train_cuda", "nccl_all_reduce_1rank", "nccl_all_reduce_2ranks",
]
# (not a bare "error": build logs compile error.cpp)
FAILURE = re.compile(r"\bFAIL|ERROR|[Ee]rror:|\bfailed\b|exception|what\(\)|terminate called|is NOT correct|"
                     r"Assertion|Segmentation|illegal|out of bound|Aborted|core dumped|ran past")


def first_failure(path):
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip() and not line.startswith("$ ")]  # not the command
    except OSError:
        return "(no log)"
    for line in lines:
        if FAILURE.search(line) and not line.startswith("[doctest] Status: SUCCESS"):
            return line[:200]
    return lines[-1][:200] if lines else "(empty log)"


def gpu_tests(build):
    out = subprocess.run(["meson", "introspect", build, "--tests"], check=True, capture_output=True, text=True)
    tests = [t for t in json.loads(out.stdout) if any(s == "gpu" or s.endswith(":gpu") for s in t["suite"])]
    rank = {name: i for i, name in enumerate(PRIORITY)}
    return sorted(tests, key=lambda t: rank.get(t["name"], len(PRIORITY)))


def targets(build):
    build = os.path.abspath(build)
    wanted = {"tools/ptsim", "tests/runtime/ptsim_golden_outputs", "tests/runtime/test_backend_ops"}
    for t in gpu_tests(build):
        for arg in t["cmd"]:
            if arg.startswith(build + "/"):
                wanted.add(os.path.relpath(arg, build))
    print("\n".join(sorted(wanted)))


def missing_executable(build, test):
    build = os.path.abspath(build)
    for arg in test["cmd"]:
        if arg.startswith(build + "/") and not os.path.exists(arg):
            return os.path.relpath(arg, build)
    return None


def run_one(build, logs, test, limit):
    name = test["name"]
    log = os.path.join(logs, f"test-{name}.log")
    missing = missing_executable(build, test)
    if missing:
        with open(log, "w") as f:
            f.write(f"gpu_suite: {missing} was not built (see the build stage's log)\n")
        return name, "not-built", 0, f"{missing} was not built"
    env = dict(os.environ)
    env.update(test.get("env") or {})
    t0 = time.monotonic()
    with open(log, "w") as f:
        f.write(f"$ {' '.join(test['cmd'])}   (limit {limit:.0f} s)\n")
        f.flush()
        p = subprocess.Popen(test["cmd"], stdout=f, stderr=subprocess.STDOUT, env=env,
                             cwd=test.get("workdir") or build, start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
    seconds = time.monotonic() - t0
    if rc is None:
        with open(log, "a") as f:
            f.write(f"gpu_suite: {name} ran past its {limit:.0f} s limit and was killed\n")
        return name, "timeout", seconds, f"ran past {limit:.0f} s; last line: {last_line(log, skip=1)}"
    if rc == 0:
        return name, "passed", seconds, ""
    if rc == 77:
        return name, "skipped", seconds, skip_reason(log)
    return name, "failed", seconds, f"exit {rc}: {first_failure(log)}"


def skip_reason(path):
    """The first line that says why the test skipped (mpirun adds its own lines after the ranks')."""
    with open(path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()][1:]
    said = [line for line in lines if "skip" in line.lower()]
    return (said or lines or ["(no output)"])[0][:200]


def last_line(path, skip=0):
    with open(path, errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    lines = lines[1:len(lines) - skip] if len(lines) > 1 else []
    return lines[-1][:200] if lines else "(no output)"


def limit_of(name):
    return float(os.environ.get(f"TEST_BUDGET_{name}", os.environ.get("TEST_BUDGET_S", "120")))


def run(build, logs, budget):
    deadline = time.monotonic() + budget
    tests = gpu_tests(build)
    parallel = [t for t in tests if t.get("is_parallel", True)]
    serial = [t for t in tests if not t.get("is_parallel", True)]
    results = {}
    lock = threading.Lock()

    def worker(queue):
        while True:
            with lock:
                if not queue:
                    return
                test = queue.pop(0)
            left = deadline - time.monotonic()
            if left < 5:
                r = (test["name"], "skipped", 0, f"the suite's {budget:.0f} s budget was spent")
            else:
                r = run_one(build, logs, test, min(limit_of(test["name"]), left))
            message = r[3].replace(os.path.abspath(build) + "/", "")  # paths inside the build, shorter
            with lock:
                results[r[0]] = r
                print("\t".join([r[0], r[1], f"{r[2]:.0f}", message]), flush=True)

    jobs = max(1, int(os.environ.get("SUITE_JOBS", "4")))
    threads = [threading.Thread(target=worker, args=(parallel,)) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    worker(serial)
    bad = [r for r in results.values() if r[1] in ("failed", "timeout", "not-built")]
    return 1 if bad else 0


def check_build(build, source, cap):
    with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
        configured = json.load(f)["directories"]["source"]
    if os.path.realpath(configured) != os.path.realpath(source):
        return (f"{build} was configured for the source tree {configured}, this checkout is {source}: meson build "
                "directories are not relocatable (the tests run PTSIM_BINARY and read PTSIM_SOURCE_DIR by absolute "
                "path); configure it at this path, or unset GPU_CHECK_BUILD_DIR")
    out = subprocess.run(["meson", "introspect", build, "--buildoptions"], check=True, capture_output=True, text=True)
    opts = {o["name"]: o["value"] for o in json.loads(out.stdout)}
    archs = [a for a in str(opts.get("gpu_arch", "")).split(";") if a]
    print(f"gpu_suite: reused build {build}: cuda={opts.get('cuda')}, gpu_arch={';'.join(archs)}, "
          f"buildtype={opts.get('buildtype')}")
    if opts.get("cuda") == "disabled":
        return f"{build} has -Dcuda=disabled: there is no CUDA backend to check"
    if cap and cap not in archs:
        if not archs or int(archs[-1]) > int(cap):
            return f"{build} has SASS for sm_{archs} and PTX for the last: nothing this sm_{cap} GPU can run"
        print(f"gpu_suite: no SASS for sm_{cap}: the kernels are JIT-compiled from sm_{archs[-1]} PTX at first "
              "launch (a slow first start)")
    return None


def main(argv):
    if len(argv) == 5 and argv[1] == "check-build":
        problem = check_build(argv[2], argv[3], argv[4])
        if problem:
            print(f"gpu_check: {problem}", file=sys.stderr)
            return 2
        return 0
    if len(argv) == 3 and argv[1] == "targets":
        targets(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "first-failure":
        print(first_failure(argv[2]))
        return 0
    if len(argv) == 5 and argv[1] == "run":
        try:
            budget = float(argv[4])
        except ValueError:
            budget = -1
        if budget <= 0:
            print(f"gpu_suite.py run: BUDGET '{argv[4]}' is not a positive number of seconds", file=sys.stderr)
            return 2
        return run(argv[2], argv[3], budget)
    print("usage: gpu_suite.py targets BUILD | run BUILD LOGS BUDGET_S | first-failure LOG | check-build BUILD SOURCE CAP",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
