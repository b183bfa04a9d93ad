#!/usr/bin/env python3
# tests/cuda_emu/test_rewrite_launches.py — rewrite_launches.py's refusal of a __shared__ it does not rewrite
# (docs/cuda-emulation.md "How it works"): the declarations it takes, the ones it must stop on with FILE:LINE,
# and that a stopped run writes no output; and the kernel address each rewritten launch passes (its dynamic
# shared memory limit is that kernel's). Exit status 0 when every check holds.
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import rewrite_launches  # noqa: E402

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)


def taken(text):
    """Every __shared__ of text is rewritten (none left over)."""
    return rewrite_launches.unrewritten_shared_lines(text) == []


# What the rewrites take, and mentions outside code.
check(taken("  __shared__ float a[4], b;\n"), "a static declaration starting its line")
check(taken("\t__shared__ __align__(16) T tile[kTile][kD + 1];\n"), "a tab-indented array of arrays")
check(taken("extern __shared__ __align__(16) unsigned char smem[];\n"), "extern __shared__")
check(taken("x = 1;  // the __shared__ tile\n/* __shared__ float y; */\n"), "comments")
check(taken('const char* s = "static __shared__";\n'), "a string literal")

# What they do not take: each is reported on its own line.
lines = rewrite_launches.unrewritten_shared_lines
check(lines("static __shared__ float x;\n") == [1], "static __shared__ refused")
check(lines("int a;\n{ __shared__ float t[8];\n") == [2], "__shared__ after a brace refused, line 2")
check(lines("/* c */ __shared__ float y;\n") == [1], "__shared__ after a comment refused")
check(lines("__shared__ float ok;\nint b; __shared__ int late;\n  __shared__ int fine;\n") == [2],
      "only the declaration not starting its line")

# End to end: the script stops with FILE:LINE and writes nothing.
with tempfile.TemporaryDirectory() as d:
    source, output = os.path.join(d, "bad.cu"), os.path.join(d, "bad.emu.cpp")
    with open(source, "w", encoding="utf-8") as f:
        f.write("__global__ void k() {\n  static __shared__ float x;\n}\n")
    run = subprocess.run([sys.executable, os.path.join(HERE, "rewrite_launches.py"), source, output],
                         capture_output=True, text=True, check=False)
    check(run.returncode != 0, "the script exits non-zero")
    check(f"{source}:2:" in run.stderr, f"the message names FILE:2 (got {run.stderr!r})")
    check(not os.path.exists(output), "no output written")

# Launches: the kernel's address for cudaFuncSetAttribute's per-kernel limit, nullptr where template
# arguments are deduced (no address to name).
LAUNCHES = """template <class T>
__global__ void deduced(T* x) {}
template <int kD>
__global__ void __launch_bounds__(128)
    tiled(float* x) {}
__global__ void plain(float* x) {}
void go(float* x, cudaStream_t s) {
  deduced<<<1, 32>>>(x);
  tiled<64><<<2, 128, 1024, s>>>(x);
  plain<<<1, 1>>>(x);
  auto* k = tiled<128>;
  k<<<1, 1, 50000>>>(x);
}
"""
rewritten = rewrite_launches.rewrite(LAUNCHES)
check("::cuda_emu::launch(nullptr, 1, 32, 0, nullptr, [&] { deduced(x); })" in rewritten,
      f"a deduced template kernel passes nullptr (got {rewritten!r})")
check("::cuda_emu::launch(::cuda_emu::kernel_entry(tiled<64>), 2, 128, 1024, s, [&] { tiled<64>(x); })" in rewritten,
      "explicit template arguments (after __launch_bounds__) pass that instantiation")
check("::cuda_emu::launch(::cuda_emu::kernel_entry(plain), 1, 1, 0, nullptr," in rewritten, "a plain kernel")
check("::cuda_emu::launch(::cuda_emu::kernel_entry(k), 1, 1, 50000, nullptr," in rewritten,
      "a kernel pointer passes itself")

for f in FAILURES:
    print("FAILED:", f)
print(f"test_rewrite_launches: {len(FAILURES)} failing checks")
sys.exit(1 if FAILURES else 0)
