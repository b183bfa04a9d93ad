#!/usr/bin/env bash
# tools/gpu_check.sh — on a machine with an NVIDIA GPU: configure a build with the CUDA backend required,
# build it, run the `gpu` suite (the backend-ops harness: every op kind on CUDA f32 against CPU f64) and
# the harness's CPU f32 run for comparison, then print one summary table (per op kind: cases, outputs,
# worst error in units of u·S against the allowed bound). docs/cuda-backend.md describes the harness.
# NOT YET RUN ON A GPU: written and shellchecked on a machine without one (docs/cuda-backend.md lists what
# is unverified). Not covered yet (issue 8): whole-model steps, the PyTorch cross-check, the benchmark.
# Usage: tools/gpu_check.sh [BUILD_DIR]   (default build-gpu)
#   env: GPU_ARCH (default: this GPU's compute capability from nvidia-smi, else meson's default 75;80;90),
#        JOBS (ninja -j; default: all cores)
# Exit: 0 all passed; 1 a build step or a test failed; 2 no GPU / no nvcc (nothing was checked).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-gpu}"
cd "$here"

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null 2>&1 || { echo "gpu_check: nvcc not found (install the CUDA toolkit or add it to PATH)" >&2; exit 2; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi -L fails): nothing to check" >&2
  exit 2
fi
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
arch="${GPU_ARCH:-}"
if [ -z "$arch" ]; then
  cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')" || cap=""
  arch="${cap:-75;80;90}"
fi
jobs="${JOBS:-$(nproc)}"

echo "gpu_check: $gpu_name, -Dgpu_arch=$arch, build dir $build"
if [ -f "$build/build.ninja" ]; then
  meson configure "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
else
  meson setup "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
fi
start=$(date +%s)
# Everything: the gpu suite also holds the NCCL tests (in an NCCL build), whose binaries a target list would miss.
ninja -C "$build" -j "$jobs"
echo "gpu_check: build took $(($(date +%s) - start)) s"

logs="$build/gpu_check"
mkdir -p "$logs"
status=0
# The 2-rank NCCL test runs mpirun, which refuses root unless told (containers often run as root).
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
meson test -C "$build" --no-rebuild --print-errorlogs --suite gpu || status=1
"$build/tests/runtime/test_backend_ops" cuda >"$logs/backend_ops_cuda.txt" 2>&1 || status=1
"$build/tests/runtime/test_backend_ops" cpu >"$logs/backend_ops_cpu.txt" 2>&1 || status=1
"$build/tests/runtime/optimizer_backend_check" cuda >"$logs/optimizer_cuda.txt" 2>&1 || status=1

# One row per op kind: cases, outputs failing / checked, worst error (units of u·S) and its allowed bound.
summarise() {
  awk -v label="$2" '
    /^(ok|FAIL) / {
      split($0, parts, ": ");
      split(parts[2], words, " "); kind = words[1];
      match($0, /error [^ ]+/); err = substr($0, RSTART + 6, RLENGTH - 6); sub(/·u·S/, "", err);
      match($0, /allowed [^)]+/); allowed = substr($0, RSTART + 8, RLENGTH - 8);
      n[kind]++; if ($1 == "FAIL") bad[kind]++;
      if (!(kind in worst) || err + 0 > worst[kind] + 0) { worst[kind] = err; bound[kind] = allowed; }
    }
    END {
      for (k in n) printf "%-8s %-24s %3d outputs %3d failing   worst %10s u·S (allowed %s)\n", label, k, n[k], bad[k] + 0, worst[k], bound[k];
    }' "$1" | sort -k2
}

echo
echo "gpu_check summary ($gpu_name, sm_$arch)"
echo "backend  op kind                  outputs         failing   worst error"
summarise "$logs/backend_ops_cuda.txt" cuda
summarise "$logs/backend_ops_cpu.txt" cpu
tail -n1 "$logs/backend_ops_cuda.txt"
tail -n1 "$logs/optimizer_cuda.txt"  # optimizer kernels vs the CPU reference (its per-rule lines are in the log)
if [ "$status" -eq 0 ]; then echo "gpu_check: PASSED"; else echo "gpu_check: FAILED (logs in $logs)"; fi
exit "$status"
