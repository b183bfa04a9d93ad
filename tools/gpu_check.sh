#!/usr/bin/env bash
# tools/gpu_check.sh — on a machine with an NVIDIA GPU, everything issue 8 checks there, in triage order
# (what tells the most per second first), each stage under its own time budget and all of them under one
# deadline, so that a first run fits one ~10-minute command on an H200; then one summary table naming every
# stage and every gpu-suite test with passed / failed / skipped / timeout and its first failing message.
# Every stage runs whatever an earlier one did (a failed build runs what did build). Stages:
#   1. build      configure (-Dcuda=enabled, -Dgpu_arch of this GPU only) and build the smoke's harness; or,
#                 with GPU_CHECK_BUILD_DIR, reuse a build configured elsewhere (no configure); the other
#                 stages' targets (only those) then build in the background while the smoke runs (build-rest)
#   2. smoke      device query, then one tiny case per op kind through the backend-ops harness
#                 (`test_backend_ops cuda --smoke`, CUDA_LAUNCH_BLOCKING=1): which kernel families launch and
#                 agree, within the first minute; a failing kind is rerun alone (a sticky CUDA error in one
#                 kind fails every later one in the same process)
#   3. gpu-suite  meson's gpu suite, test by test (tools/gpu_suite.py: 4 at once, each with its own limit)
#   4. sanitizer  compute-sanitizer where the toolkit has it: memcheck on the smoke cases, racecheck and
#                 synccheck on one small tensor-core attention case (its WMMA barriers)
#   5. hf-check   ptsim (CUDA) against HuggingFace transformers on the golden inputs (tools/hf_crosscheck.py)
#   6. bench      BERT-large throughput, ptsim vs transformers eager vs torch.compile (tools/bench_gpu_bert.py),
#                 with `ptsim calibrate measured` on ptsim's measured op times
# docs/cuda-backend.md ("Running it on a GPU") describes each stage and lists what has not run on a GPU yet.
# Usage: tools/gpu_check.sh [BUILD_DIR]   (default build-gpu; GPU_CHECK_BUILD_DIR overrides it)
#   env: GPU_CHECK_BUILD_DIR=dir: a build made elsewhere, at this checkout's path (meson build directories
#          are not relocatable), -Dcuda=enabled with an arch this GPU runs: no configure, ninja on the
#          needed targets only (nothing to do when it is up to date)
#        GPU_ARCH (default: this GPU's compute capability); JOBS (ninja -j; default: all cores)
#        PYTHON (default: python3 if it imports torch, else /usr/bin/python3)
#        GPU_CHECK_SKIP="sanitizer bench": stages to skip (smoke gpu-suite sanitizer hf-check bench)
#        GPU_CHECK_FAST=1: the benchmark at seq 128 only, without torch.compile
#        GPU_CHECK_LOGS (default BUILD_DIR/gpu_check): the logs and summary.txt, rewritten after each stage
#        GPU_CHECK_DEADLINE_S (540): the whole run; each stage gets min(its budget, what is left), and one
#          with under 10 s left is skipped, so the summary prints before an outer limit ends the run
#        budgets in seconds: BUILD_BUDGET_S (200) SMOKE_BUDGET_S (45) SUITE_BUDGET_S (180) SANITIZER_BUDGET_S
#          (90) HF_BUDGET_S (60) BENCH_BUDGET_S (120); per gpu test: TEST_BUDGET_S (120),
#          TEST_BUDGET_<test name>; SUITE_JOBS (4); RACECHECK_CASE ("S=130 d=64 padded causal dropout")
#        BENCH_CONFIGS (128:256,512:64), BENCH_PRECISION (bf16 on sm_80+, else fp32), BENCH_ATTENTION
#          (fused,tensor-core: ptsim's fused-attention runs, after the others; '' for none)
# Exit: 0 no stage failed and all ran; 1 a stage or test failed or timed out, or the deadline left some unrun
#   (INCOMPLETE); 2 no GPU / no nvcc / a reused build dir that cannot run here.
# NOT YET RUN ON A GPU: written and shellchecked on a machine without one (docs/cuda-backend.md).
# shellcheck disable=SC2317  # the stage functions run through run_stage's `bash -c`, which shellcheck cannot see
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPU_CHECK_BUILD_DIR:-${1:-build-gpu}}"
reuse_build=0
[ -z "${GPU_CHECK_BUILD_DIR:-}" ] || reuse_build=1
cd "$here"
t_start=$(date +%s)
deadline=$((t_start + ${GPU_CHECK_DEADLINE_S:-540}))

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null 2>&1 || { echo "gpu_check: nvcc not found (install the CUDA toolkit or add it to PATH)" >&2; exit 2; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi -L fails): nothing to check" >&2
  exit 2
fi
if [ "$reuse_build" = 1 ] && [ ! -f "$build/build.ninja" ]; then
  echo "gpu_check: GPU_CHECK_BUILD_DIR=$build is not a configured meson build directory (no build.ninja)" >&2
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
helper="$here/tools/gpu_suite.py"  # standard library only: any python3
skip=" ${GPU_CHECK_SKIP:-} "
bench_precision="${BENCH_PRECISION:-}"
if [ -z "$bench_precision" ]; then
  if [ -n "$cap" ] && [ "$cap" -ge 80 ]; then bench_precision=bf16; else bench_precision=fp32; fi
fi
bench_configs="${BENCH_CONFIGS:-128:256,512:64}"
bench_systems=ptsim,eager,compile
if [ "${GPU_CHECK_FAST:-0}" = 1 ]; then bench_configs="${bench_configs%%,*}"; bench_systems=ptsim,eager; fi
logs="${GPU_CHECK_LOGS:-$build/gpu_check}"
mkdir -p "$logs"
# The 2-rank NCCL test runs mpirun, which refuses root unless told (containers often run as root).
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
echo "gpu_check: $gpu_name (sm_$cap), build dir $build ($([ "$reuse_build" = 1 ] && echo reused || echo "-Dgpu_arch=$arch")), python $python"

# ---- the summary: one row per stage and per gpu-suite test (name, result, seconds, key numbers or the
# first failing message); rewritten to $logs/summary.txt after every stage ----
rows=()
failed=0
incomplete=0  # a stage or test not run for lack of time: the run cannot say PASSED
record() {
  rows+=("$(printf '%-32s %-9s %5s s  %s' "$1" "$2" "$3" "$4")")
  case "$2" in passed | skipped) ;; *) failed=1 ;; esac
  case "$4" in *"deadline is"* | *"budget was spent"*) incomplete=1 ;; esac
  summary >"$logs/summary.txt"
}
summary() {
  echo
  echo "gpu_check summary ($gpu_name, sm_$cap, build $build, $(($(date +%s) - t_start)) s)"
  printf '%-32s %-9s %7s  %s\n' "stage / test" result seconds "key numbers / first failing message"
  printf '%s\n' "${rows[@]}"
  if [ -s "$logs/op-table.txt" ]; then
    echo
    echo "backend  op kind                  outputs         failing   worst error"
    cat "$logs/op-table.txt"
  fi
  if [ -f "$logs/bench.md" ]; then echo; cat "$logs/bench.md"; fi
  if [ "$failed" = 1 ]; then echo "gpu_check: FAILED (logs in $logs)"
  elif [ "$incomplete" = 1 ]; then echo "gpu_check: INCOMPLETE, nothing failed but the deadline left stages or tests unrun (logs in $logs)"
  else echo "gpu_check: PASSED (logs in $logs)"; fi
}
first_failure() { "$helper" first-failure "$1"; }
# min(BUDGET, seconds left before the deadline)
capped() {
  local left=$((deadline - $(date +%s)))
  if [ "$1" -le "$left" ]; then echo "$1"; else echo "$left"; fi
}

# run_stage NAME BUDGET CMD...: CMD under `timeout min(BUDGET, time left)`, output to $logs/NAME.log; sets
# stage_rc and stage_s. With under 10 s left it does not start (stage_rc 75: skipped for the deadline).
run_stage() {
  local name=$1 budget=$2 t0 left
  shift 2
  t0=$(date +%s)
  left=$((deadline - t0))
  stage_rc=0 stage_s=0
  if [ "$left" -lt 10 ]; then
    echo "gpu_check: $name not started: the ${GPU_CHECK_DEADLINE_S:-540} s deadline is ${left} s away" | tee "$logs/$name.log"
    stage_rc=75
    return
  fi
  [ "$budget" -le "$left" ] || budget=$left
  # bash -c: CMD may be one of this script's functions (exported below), which `timeout` cannot run itself.
  # The log is opened for appending (O_APPEND): a child that outlives its killed parent (ninja after its
  # shell) cannot overwrite the line appended below.
  : >"$logs/$name.log"
  timeout --kill-after=10 "$budget" bash -c '"$@"' run_stage "$@" >>"$logs/$name.log" 2>&1 || stage_rc=$?
  stage_s=$(($(date +%s) - t0))
  if [ "$stage_rc" = 124 ] || [ "$stage_rc" = 137 ]; then echo "gpu_check: $name ran past its ${budget} s budget" >>"$logs/$name.log"; fi
  echo "gpu_check: $name finished (exit $stage_rc, ${stage_s} s; log $logs/$name.log)"
}
skipped() { [[ $skip == *" $1 "* ]]; }
# exit 0 passed, 77 skipped (the tools' "cannot run here"), 75 not started (deadline), 124/137 timeout
verdict() {
  case "$stage_rc" in
    0) echo passed ;;
    77 | 75) echo skipped ;;
    124 | 137) echo timeout ;;
    *) echo failed ;;
  esac
}
# The summary's message for a stage: KEY when it passed, else the first failing line of its log.
stage_message() {
  if [ "$stage_rc" = 0 ] && [ -n "$1" ]; then echo "$1"
  elif [ "$stage_rc" = 0 ] || [ "$stage_rc" = 77 ] || [ "$stage_rc" = 75 ]; then tail -n 1 "$logs/$2.log"
  else echo "exit $stage_rc: $(first_failure "$logs/$2.log")"; fi
}
export build arch jobs python logs reuse_build here helper
export -f first_failure

# 1. build, in two parts so that the smoke starts early: first the smoke's one target (the harness; most of
# it is the runtime library), then the rest in the background while the smoke runs on the GPU. Only what
# the stages run; `ninja -k 0` so that one broken target does not stop the others.
configure_and_build_smoke() {
  if [ "$reuse_build" = 1 ]; then
    "$helper" check-build "$build" "$here" "$cap" || return 2
  elif [ -f "$build/build.ninja" ]; then
    meson configure "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
  else
    meson setup "$build" -Dcuda=enabled "-Dgpu_arch=$arch"
  fi
  ninja -C "$build" -k 0 -j "$jobs" tests/runtime/test_backend_ops
}
build_rest() {
  local targets
  targets="$("$helper" targets "$build")"
  echo "gpu_check: building $(echo "$targets" | wc -l) targets: $(echo "$targets" | tr '\n' ' ')"
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$build" -k 0 -j "$jobs" $targets
}
export cap
export -f configure_and_build_smoke build_rest
build_budget="${BUILD_BUDGET_S:-200}"
run_stage build "$build_budget" configure_and_build_smoke
if [ "$stage_rc" = 2 ]; then tail -n 5 "$logs/build.log" >&2; exit 2; fi
build_used=$stage_s
record build "$(verdict)" "$stage_s" "$(stage_message "test_backend_ops: $(grep -c '^\[' "$logs/build.log" || true) ninja steps$([ "$reuse_build" = 1 ] && echo ", reused build" || echo ", -Dgpu_arch=$arch")" build)"
[ "$stage_rc" = 0 ] || tail -n 20 "$logs/build.log"
rest_budget="$(capped $((build_budget - build_used > 10 ? build_budget - build_used : 10)))"
rest_t0=$(date +%s)
: >"$logs/build-rest.log"
timeout --kill-after=10 "$rest_budget" bash -c build_rest >>"$logs/build-rest.log" 2>&1 &
rest_pid=$!
# After the smoke: wait for the rest of the build and record it.
finish_build_rest() {
  local rc=0
  wait "$rest_pid" || rc=$?
  stage_rc=$rc stage_s=$(($(date +%s) - rest_t0))
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "gpu_check: build-rest ran past its ${rest_budget} s budget" >>"$logs/build-rest.log"; fi
  echo "gpu_check: build-rest finished (exit $rc, ${stage_s} s, beside the smoke; log $logs/build-rest.log)"
  record build-rest "$(verdict)" "$stage_s" "$(stage_message "$(grep -c '^\[' "$logs/build-rest.log" || true) ninja steps (the other stages' targets)" build-rest)"
  [ "$rc" = 0 ] || tail -n 20 "$logs/build-rest.log"
}

# 2. smoke: the device as the driver and the binary see it, then one tiny case per op kind.
smoke() {
  nvidia-smi --query-gpu=name,compute_cap,memory.total,memory.used,driver_version --format=csv
  nvcc --version | tail -n 2
  command -v cuobjdump >/dev/null 2>&1 && { cuobjdump --list-elf "$build/tests/runtime/test_backend_ops" | head -n 5 || true; }
  local rc=0 kinds kind
  CUDA_LAUNCH_BLOCKING=1 "$build/tests/runtime/test_backend_ops" cuda --smoke || rc=$?
  [ "$rc" = 1 ] || return "$rc"
  # Each failing kind alone, in a fresh process (CUDA context): which failures are its own.
  kinds="$(sed -n 's/^smoke \([a-z_0-9]*\): FAIL.*/\1/p' "$logs/smoke.log" 2>/dev/null || true)"
  for kind in $kinds; do
    CUDA_LAUNCH_BLOCKING=1 "$build/tests/runtime/test_backend_ops" cuda --smoke --kind "$kind" | sed -n 's/^smoke /alone: /p' || true
  done
  return 1
}
export -f smoke
if skipped smoke; then record smoke skipped 0 "GPU_CHECK_SKIP"; else
  run_stage smoke "${SMOKE_BUDGET_S:-45}" smoke
  smoke_key="$(grep -h '^test_backend_ops smoke' "$logs/smoke.log" | sed 's/^test_backend_ops smoke on [^:]*: //' || true)"
  alone_ok="$(grep -h '^alone: [a-z_0-9]*: ok' "$logs/smoke.log" | sed 's/^alone: \([a-z_0-9]*\).*/\1/' | tr '\n' ' ' || true)"
  [ -z "$alone_ok" ] || smoke_key="$smoke_key; pass alone (a sticky error from another kind): $alone_ok"
  if [ "$stage_rc" = 1 ]; then
    record smoke failed "$stage_s" "$smoke_key; first: $(grep -h -m1 '^smoke [a-z_0-9]*: FAIL' "$logs/smoke.log" | cut -c1-160)"
  else
    record smoke "$(verdict)" "$stage_s" "$(stage_message "$smoke_key" smoke)"
  fi
fi

finish_build_rest

# 3. the gpu suite, one row per test; the model-steps comparisons' bounds and worst errors as extra rows.
if skipped gpu-suite; then record gpu-suite skipped 0 "GPU_CHECK_SKIP"; else
  suite_budget="$(capped "${SUITE_BUDGET_S:-180}")"
  run_stage gpu-suite "$((suite_budget + 15))" "$helper" run "$build" "$logs" "$suite_budget"
  suite_counts="$(awk -F '\t' 'NF >= 3 {n[$2]++} END {for (r in n) printf "%s %d  ", r, n[r]}' "$logs/gpu-suite.log")"
  [ -n "$suite_counts" ] || suite_counts="$(stage_message "" gpu-suite)"
  record gpu-suite "$(verdict)" "$stage_s" "$suite_counts"  # the failing tests' own rows follow
  while IFS=$'\t' read -r name result seconds message; do
    [ -n "${result:-}" ] || continue
    record "  $name" "$result" "$seconds" "$message"
  done < <(grep -P '^[a-z0-9_]+\t' "$logs/gpu-suite.log" || true)
  for f in "$logs"/test-runtime_model_steps_cuda.log "$logs"/test-runtime_16bit_storage_cuda.log; do
    [ -f "$f" ] || continue
    while IFS= read -r line; do rows+=("    $line"); done < <(grep -h -o '[a-z0-9-]*[a-z0-9 ().,+-]* [a-z0-9]*, CUDA vs CPU[^:]*: bounds.*' "$f" | cut -c1-200 || true)
  done
  if [ -f "$logs/test-runtime_backend_ops_gpu.log" ]; then
    awk -v label=cuda '
      /^(ok|FAIL) / {
        split($0, parts, ": "); split(parts[2], words, " "); kind = words[1];
        match($0, /error [^ ]+/); err = substr($0, RSTART + 6, RLENGTH - 6); sub(/·u·S/, "", err);
        match($0, /allowed [^)]+/); allowed = substr($0, RSTART + 8, RLENGTH - 8);
        n[kind]++; if ($1 == "FAIL") bad[kind]++;
        if (!(kind in worst) || err + 0 > worst[kind] + 0) { worst[kind] = err; bound[kind] = allowed; }
      }
      END { for (k in n) printf "%-8s %-24s %3d outputs %3d failing   worst %10s u·S (allowed %s)\n", label, k, n[k], bad[k] + 0, worst[k], bound[k]; }
    ' "$logs/test-runtime_backend_ops_gpu.log" | sort -k2 >"$logs/op-table.txt"
  fi
fi

# 4. compute-sanitizer (part of the CUDA toolkit; not every install has it).
sanitizer_bin="$(command -v compute-sanitizer || true)"
[ -n "$sanitizer_bin" ] || [ ! -x /usr/local/cuda/bin/compute-sanitizer ] || sanitizer_bin=/usr/local/cuda/bin/compute-sanitizer
sanitize() {
  local total=$1 rc=0 status=0 dtype=bf16 case_label="${RACECHECK_CASE:-S=130 d=64 padded causal dropout}"
  [ -z "$cap" ] || [ "$cap" -ge 80 ] || dtype=fp16
  local cs=("$sanitizer_bin" --error-exitcode 99 --print-limit 20) skips=0
  # status: 1 when a tool failed (99: it found errors; 124/137: out of time; else the program failed)
  note() {
    echo "== $1 exit $2"
    case "$2" in 0) ;; 77) skips=$((skips + 1)) ;; *) status=1 ;; esac
  }
  echo "== memcheck: test_backend_ops cuda --smoke"
  timeout $((total * 4 / 10)) "${cs[@]}" --tool memcheck "$build/tests/runtime/test_backend_ops" cuda --smoke || rc=$?
  note memcheck "$rc"
  for tool in racecheck synccheck; do
    rc=0
    echo "== $tool: attention_tc_gpu_check --only '$case_label' --dtype $dtype"
    timeout $((total * 3 / 10)) "${cs[@]}" --tool "$tool" "$build/tests/runtime/attention_tc_gpu_check" --only "$case_label" --dtype "$dtype" || rc=$?
    note "$tool" "$rc"
  done
  [ "$status" = 1 ] || [ "$skips" != 3 ] || return 77  # the programs skip (exit 77): nothing was sanitized
  return "$status"
}
export sanitizer_bin
export -f sanitize
if skipped sanitizer; then record sanitizer skipped 0 "GPU_CHECK_SKIP"
elif [ -z "$sanitizer_bin" ]; then record sanitizer skipped 0 "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
else
  sanitizer_budget="$(capped "${SANITIZER_BUDGET_S:-90}")"
  run_stage sanitizer "$sanitizer_budget" sanitize "$sanitizer_budget"
  findings="$(awk '/^== (memcheck|racecheck|synccheck):/ {tool = $2} /ERROR SUMMARY|RACECHECK SUMMARY/ {sub(/^=+ */, ""); printf "%s %s; ", tool, $0}
                   /^== [a-z]+ exit (124|137)$/ {printf "%s timeout; ", $2; next}
                   /^== [a-z]+ exit [1-9]/ && $4 != 77 {printf "%s exit %s; ", $2, $4}' "$logs/sanitizer.log")"
  record sanitizer "$(verdict)" "$stage_s" "${findings:-$(first_failure "$logs/sanitizer.log")}"
fi

# 5. ptsim on the CUDA backend against transformers, both golden models. Exit 77: transformers missing.
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
  record hf-check "$(verdict)" "$stage_s" "$(stage_message "$(grep -h '^hf_crosscheck' "$logs/hf-check.log" | sed 's/^hf_crosscheck: //' | tr '\n' ';')" hf-check)"
fi

# 6. the benchmark (and the calibration fit of ptsim's measured op times), inside what is left.
bench_budget="$(capped "${BENCH_BUDGET_S:-120}")"
if skipped bench; then record bench skipped 0 "GPU_CHECK_SKIP"
elif [ "$bench_budget" -lt 40 ]; then record bench skipped 0 "the deadline is ${bench_budget} s away (one run needs ~40 s)"
else
  run_stage bench "$bench_budget" "$python" tools/bench_gpu_bert.py --ptsim "$build/tools/ptsim" --work "$build/bench" \
    --configs "$bench_configs" --systems "$bench_systems" --precision "$bench_precision" --ptsim-also tf32 \
    --ptsim-attention "${BENCH_ATTENTION-fused,tensor-core}" \
    --budget-seconds $((bench_budget - 20)) --out-json "$logs/bench.json" --out-md "$logs/bench.md"
  key="$("$python" - "$logs/bench.json" <<'PY' 2>/dev/null || true
import json, sys
doc = json.load(open(sys.argv[1]))
parts = []
for r in doc["rows"]:  # ptsim, and its fused-attention variants (fp32 kernel, tensor-core kernels)
    if not r["system"].startswith("ptsim"):
        continue
    name = r["system"].replace("ptsim fused attention", "ptsim fused-attn").replace("ptsim tensor-core attention", "ptsim tc-attn")
    if r.get("status") == "ok":
        ratio = f", {r['ptsim_over_compile']:.2f}x compile" if "ptsim_over_compile" in r else ""
        parts.append(f"{name} {r['precision']} s{r['seq']} {r['seq_per_s']:.0f} seq/s{ratio}")
    elif r["system"] != "ptsim":
        parts.append(f"{name} {r['precision']} s{r['seq']} {r['status'].split(':')[0]}")
parts.append("calibrate " + doc["calibration"]["status"])
print("; ".join(parts))
PY
)"
  record bench "$(verdict)" "$stage_s" "$(stage_message "$key" bench)"
fi

summary | tee "$logs/summary.txt"
[ "$failed" = 0 ] && [ "$incomplete" = 0 ]
