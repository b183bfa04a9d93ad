#!/usr/bin/env bash
# tools/gpu_check.sh — on a machine with an NVIDIA GPU, everything issue 8 checks there, in order of value,
# each stage under its own time budget so that the whole run fits in ~9 minutes on an H200 with 16 cores,
# then one summary table (per stage: passed / failed / skipped, seconds, key numbers). Stages:
#   1. build      configure (-Dcuda=enabled, -Dgpu_arch of this GPU only) and build what the later stages run
#   2. gpu-suite  meson's gpu suite: the backend-ops harness (every op kind, CUDA f32 vs CPU f64), whole-model
#                 steps CUDA vs CPU (bert-tiny, bert-base-shaped, GPT-2-tiny; fp32, tf32, bf16; and the fused
#                 dropout ops with dropout 0.1), the golden PyTorch files through the CUDA backend, the NCCL
#                 all-reduce tests
#   3. op-table   the backend-ops harness again on cuda and cpu, for the per-op-kind table below
#   4. hf-check   ptsim (CUDA) against HuggingFace transformers on the golden inputs (tools/hf_crosscheck.py)
#   5. bench      BERT-large throughput, ptsim vs transformers eager vs torch.compile (tools/bench_gpu_bert.py),
#                 with `ptsim calibrate measured` on ptsim's measured op times
# docs/cuda-backend.md describes each stage and lists what has not run on a GPU yet.
# Usage: tools/gpu_check.sh [BUILD_DIR]   (default build-gpu)
#   env: GPU_ARCH (default: this GPU's compute capability from nvidia-smi, else meson's default 75;80;90)
#        JOBS (ninja -j; default: all cores); PYTHON (default: python3 if it imports torch, else /usr/bin/python3)
#        GPU_CHECK_FAST=1: the benchmark at seq 128 only, without torch.compile (the slow stages' short form)
#        GPU_CHECK_SKIP="hf-check bench": stages to skip (any of gpu-suite op-table hf-check bench)
#        budgets in seconds: BUILD_BUDGET_S (180) SUITE_BUDGET_S (150) OPS_BUDGET_S (30) HF_BUDGET_S (60)
#        BENCH_BUDGET_S (150); BENCH_CONFIGS (128:256,512:64), BENCH_PRECISION (bf16 on sm_80+, else fp32)
# Exit: 0 no stage failed; 1 a stage failed; 2 no GPU / no nvcc (nothing was checked).
# NOT YET RUN ON A GPU: written and shellchecked on a machine without one.
# shellcheck disable=SC2317  # the stage functions run through run_stage's `bash -c`, which shellcheck cannot see
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
cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')" || cap=""
arch="${GPU_ARCH:-${cap:-75;80;90}}"
jobs="${JOBS:-$(nproc)}"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if python3 -c 'import torch' >/dev/null 2>&1; then python=python3; else python=/usr/bin/python3; fi
fi
skip=" ${GPU_CHECK_SKIP:-} "
bench_precision="${BENCH_PRECISION:-}"
if [ -z "$bench_precision" ]; then
  if [ -n "$cap" ] && [ "$cap" -ge 80 ]; then bench_precision=bf16; else bench_precision=fp32; fi
fi
bench_configs="${BENCH_CONFIGS:-128:256,512:64}"
bench_systems=ptsim,eager,compile
if [ "${GPU_CHECK_FAST:-0}" = 1 ]; then bench_configs="${bench_configs%%,*}"; bench_systems=ptsim,eager; fi
logs="$build/gpu_check"
mkdir -p "$logs"
# The 2-rank NCCL test runs mpirun, which refuses root unless told (containers often run as root).
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
echo "gpu_check: $gpu_name, -Dgpu_arch=$arch, build dir $build, python $python"

# ---- stages: each row of the summary is one `record` line (stage, result, seconds, key numbers) ----
rows=()
failed=0
# An empty key-numbers field shows the last line of the stage's log instead.
record() {
  local key=$4
  [ -n "$key" ] || key="$(tail -n1 "$logs/$1.log" 2>/dev/null || true)"
  rows+=("$(printf '%-10s %-8s %6s s  %s' "$1" "$2" "$3" "$key")")
  [ "$2" = passed ] || [ "$2" = skipped ] || failed=1
}
# run_stage NAME BUDGET CMD...: CMD under `timeout BUDGET`, output to $logs/NAME.log; sets stage_rc, stage_s.
run_stage() {
  local name=$1 budget=$2 t0
  shift 2
  t0=$(date +%s)
  stage_rc=0
  # bash -c: CMD may be one of this script's functions (exported below), which `timeout` cannot run itself.
  timeout --kill-after=15 "$budget" bash -c '"$@"' run_stage "$@" >"$logs/$name.log" 2>&1 || stage_rc=$?
  stage_s=$(($(date +%s) - t0))
  if [ "$stage_rc" = 124 ] || [ "$stage_rc" = 137 ]; then echo "gpu_check: $name ran past its ${budget} s budget" >>"$logs/$name.log"; fi
  echo "gpu_check: $name finished (exit $stage_rc, ${stage_s} s; log $logs/$name.log)"
}
skipped() { [[ $skip == *" $1 "* ]]; }
# exit 0 passed, 77 skipped (the tools' "cannot run here"), 124/137 timeout, else failed
verdict() {
  case "$stage_rc" in
    0) echo passed ;;
    77) echo skipped ;;
    124 | 137) echo timeout ;;
    *) echo failed ;;
  esac
}

summary() {
  echo
  echo "gpu_check summary ($gpu_name, sm_$arch)"
  echo "stage      result   seconds  key numbers"
  printf '%s\n' "${rows[@]}"
  if [ -f "$logs/op-table.txt" ]; then
    echo
    echo "backend  op kind                  outputs         failing   worst error"
    cat "$logs/op-table.txt"
  fi
  if [ -f "$logs/bench.md" ]; then echo; cat "$logs/bench.md"; fi
  if [ "$failed" -eq 0 ]; then echo "gpu_check: PASSED (logs in $logs)"; else echo "gpu_check: FAILED (logs in $logs)"; fi
}

# 1. build: only what the stages run (the gpu suite's executables, ptsim, the golden writer).
build_targets() {
  meson introspect "$build" --tests | "$python" -c '
import json, os, sys
build = os.path.abspath(sys.argv[1])
targets = {"tools/ptsim", "tests/runtime/ptsim_golden_outputs", "tests/runtime/test_backend_ops"}
for t in json.load(sys.stdin):
    if "gpu" in t["suite"] or any(s.endswith(":gpu") for s in t["suite"]):
        for arg in t["cmd"]:
            if arg.startswith(build + "/"):
                targets.add(os.path.relpath(arg, build))
print("\n".join(sorted(targets)))' "$build"
}
configure_and_build() {
  if [ -f "$build/build.ninja" ]; then
    meson configure "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
  else
    meson setup "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
  fi
  local targets
  targets="$(build_targets)"
  echo "gpu_check: building $(echo "$targets" | wc -l) targets"
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$build" -j "$jobs" $targets
}
export build arch jobs python logs
export -f build_targets configure_and_build
run_stage build "${BUILD_BUDGET_S:-180}" configure_and_build
record build "$(verdict)" "$stage_s" "-Dgpu_arch=$arch, $(grep -c '^\[' "$logs/build.log" || true) ninja steps"
if [ "$stage_rc" != 0 ]; then tail -n 30 "$logs/build.log"; summary; exit 1; fi

# 2. the gpu suite. Key numbers: meson's counts and each model-steps comparison's worst errors.
if skipped gpu-suite; then record gpu-suite skipped 0 "GPU_CHECK_SKIP"; else
  run_stage gpu-suite "${SUITE_BUDGET_S:-150}" meson test -C "$build" --no-rebuild --print-errorlogs --suite gpu
  counts="$(grep -E '^(Ok|Fail|Skipped|Timeout): ' "$logs/gpu-suite.log" | awk '{printf "%s %s  ", $1, $2}')"
  record gpu-suite "$(verdict)" "$stage_s" "$counts"
  grep -h -o '[a-z0-9-]* [a-z0-9]*, CUDA vs CPU: bounds.*' "$build/meson-logs/testlog.txt" 2>/dev/null |
    sed 's/^/             /' >"$logs/model-steps.txt" || true
  grep -h -o '^optimizer_backend_check cuda: .*' "$build/meson-logs/testlog.txt" 2>/dev/null |
    sed 's/^/             /' >>"$logs/model-steps.txt" || true
  while IFS= read -r line; do rows+=("$line"); done <"$logs/model-steps.txt"
fi

# 3. the harness's per-op-kind table (CUDA f32 and CPU f32, each against CPU f64).
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
op_table() {
  local rc=0
  "$build/tests/runtime/test_backend_ops" cuda >"$logs/backend_ops_cuda.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || return "$rc"
  "$build/tests/runtime/test_backend_ops" cpu >"$logs/backend_ops_cpu.txt" 2>&1
}
export -f op_table
if skipped op-table; then record op-table skipped 0 "GPU_CHECK_SKIP"; else
  run_stage op-table "${OPS_BUDGET_S:-30}" op_table
  if [ "$stage_rc" = 0 ]; then
    { summarise "$logs/backend_ops_cuda.txt" cuda; summarise "$logs/backend_ops_cpu.txt" cpu; } >"$logs/op-table.txt"
  fi
  record op-table "$(verdict)" "$stage_s" "$(tail -n1 "$logs/backend_ops_cuda.txt" 2>/dev/null || true)"
fi

# 4. ptsim on the CUDA backend against transformers, both golden models. Exit 77: transformers missing.
hf_check() {
  local m rc=0 status=0
  for m in bert gpt2; do
    "$build/tests/runtime/ptsim_golden_outputs" "$m" cuda "$logs/ptsim_cuda_$m.safetensors" || return $?
    "$python" tools/hf_crosscheck.py --dir "tests/data/golden/$m" --ptsim "$logs/ptsim_cuda_$m.safetensors" \
      --report "$logs/hf_crosscheck_$m.json" || rc=$?
    if [ "$rc" = 77 ]; then return 77; fi
    [ "$rc" = 0 ] || status=1
    rc=0
  done
  return "$status"
}
export -f hf_check
if skipped hf-check; then record hf-check skipped 0 "GPU_CHECK_SKIP"; else
  run_stage hf-check "${HF_BUDGET_S:-60}" hf_check
  record hf-check "$(verdict)" "$stage_s" "$(grep -h '^hf_crosscheck' "$logs/hf-check.log" | sed 's/^hf_crosscheck: //' | tr '\n' ';')"
fi

# 5. the benchmark (and the calibration fit of ptsim's measured op times).
if skipped bench; then record bench skipped 0 "GPU_CHECK_SKIP"; else
  budget="${BENCH_BUDGET_S:-150}"
  run_stage bench "$budget" "$python" tools/bench_gpu_bert.py --ptsim "$build/tools/ptsim" --work "$build/bench" \
    --configs "$bench_configs" --systems "$bench_systems" --precision "$bench_precision" --ptsim-also tf32 \
    --budget-seconds $((budget - 20)) --out-json "$logs/bench.json" --out-md "$logs/bench.md"
  key="$("$python" - "$logs/bench.json" <<'PY' 2>/dev/null || true
import json, sys
doc = json.load(open(sys.argv[1]))
parts = []
for r in doc["rows"]:
    if r["system"] == "ptsim" and r.get("status") == "ok":
        ratio = f", {r['ptsim_over_compile']:.2f}x compile" if "ptsim_over_compile" in r else ""
        parts.append(f"ptsim {r['precision']} s{r['seq']} {r['seq_per_s']:.0f} seq/s{ratio}")
parts.append("calibrate " + doc["calibration"]["status"])
print("; ".join(parts))
PY
)"
  record bench "$(verdict)" "$stage_s" "$key"
fi

summary
exit "$failed"
