// tests/cuda_emu/test_ptsim_emulated_nccl_train.cpp — data-parallel `ptsim train --backend cuda` over the emulated
// NCCL (docs/cuda-emulation.md, "ptsim_emulated"): `mpirun -np 2 ptsim_emulated train --backend cuda` (auto →
// NCCL, runtime/comm/comm_choice.hpp; bucketed gradient all-reduces on the communication stream) against
// `mpirun -np 2 ptsim train --backend cpu` (the MPI communicator), both binaries run as a user runs them:
//   * per-step losses and gradient norms of the same 2-rank run (dropout on, grad-accum 2, a --bucket-mib small
//     enough for several buckets) within the one-rank comparison's bounds (ptsim_emulated_train_support.hpp), fp32
//     and bf16, with and without --no-comm-overlap;
//   * a 2-rank cuda run stopped and resumed on 2 ranks repeats the straight 2-rank cuda run bit for bit;
//   * an injected NCCL fault (PTSIM_EMU_NCCL_FAULT: rank 1 hangs, or rank 0's all-reduce fails) ends the whole job
//     non-zero with "communication failed" naming the collective, leaving only whole metrics lines and whole
//     checkpoints; so does a hang every rank meets inside a compute-stream sync (--no-comm-overlap);
//   * `--comm nccl` on one rank, without mpirun, trains as the single-process run does.
// PTSIM_BINARY is the real ptsim, PTSIM_EMULATED_BINARY ptsim_emulated, PTSIM_MPIRUN mpirun; the meson test sets
// PTSIM_EMU_CUDA_DEVICES=2 so that each rank finds its emulated GPU.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/cuda_emu/ptsim_emulated_train_support.hpp"

using namespace ptsim::test;
using namespace ptsim::test::emulated_train;

namespace {

// 2 ranks × kSteps × grad-accum 2, the one-rank comparison's run on each rank (each 2-rank emulated run ~10 s
// here). 0.02 MiB buckets: the tiny BERT's ~0.12 MB of fp32 gradients in several buckets (bucket_count).
constexpr int kNcclSteps = kSteps;
constexpr double kBucketMib = 0.02;

enum class Side { cpu_mpi, emulated_cuda_nccl };

std::string mpirun_2() { return std::string(PTSIM_MPIRUN) + " --allow-run-as-root --oversubscribe -np 2 "; }

// `ptsim train` on 2 ranks: the real ptsim with --backend cpu --threads 1 over MPI, or ptsim_emulated with
// --backend cuda (auto: NCCL). `env`: variables for the job (mpirun passes its environment to the ranks).
CommandResult train_2ranks(Side side, const std::string& precision, const std::string& extra, const std::string& env = "") {
  const TinySetup& s = bert_setup();
  const std::string flags = " --model " + quote(s.model) + " --data " + quote(s.data) + " --precision " + precision +
                            " --steps " + std::to_string(kNcclSteps) + " --micro-batch " + std::to_string(kMicroBatch) +
                            " --grad-accum " + std::to_string(kGradAccum) + " --bucket-mib " + std::to_string(kBucketMib) +
                            " --seed 11 --lr 1e-2 " + extra + " 2>&1";
  const std::string job = env + (env.empty() ? "" : " ") + mpirun_2();
  if (side == Side::cpu_mpi) return run_command(job + PTSIM_BINARY + " train --backend cpu --threads 1" + flags);
  return run_command(job + PTSIM_EMULATED_BINARY + " train --backend cuda" + flags);
}

// The one-rank bounds (step_bounds) hold for the 2-rank runs' metrics:
//   * loss: the logged loss is the mean of the ranks' losses (docs/training.md); each rank's is within F relative
//     of the CPU's on the same shard (same data, same masks: both read dataset positions r, r+2, …), and a mean of
//     positive values each within F relative is within F relative.
//   * grad_norm: both sides reduce the same way — fp32 buckets summed in fp32; a bf16 bucket summed in bf16, in
//     place (MPI's 16-bit MPI_Op and the NCCL shim's ncclBfloat16 both add in fp32 and round once to bf16),
//     then ×½ in fp32 and rounded back (exact: bf16 has fp32's exponent range), which is the value the fp32
//     staging of 16-bit buckets gave before (docs/executor.md, "Mixed precision"), so these bounds are
//     unchanged. With two ranks fl(a + b) = fl(b + a), so MPI and NCCL give the same bits for the same inputs
//     (the shim: docs/cuda-emulation.md, "Sums"); only the inputs differ. ‖Δ(g₀ + g₁)‖ ≤ ‖Δg₀‖ + ‖Δg₁‖ ≤ 3B(‖g₀‖ + ‖g₁‖), which
//     is 3B‖g₀ + g₁‖ when the ranks' gradients point the same way and up to 3B·κ, κ = (‖g₀‖ + ‖g₁‖)/‖g₀ + g₁‖,
//     otherwise. κ ≤ 2 is assumed (the ranks' gradients on the same weights do not cancel to less than half):
//     it is not measured here (ptsim does not log a rank's own norm). The sum's own rounding: the fp32 add on
//     each side ≤ 2u₃₂ relative (fp32 runs; kept at bf16, where it is slack: that add is exact or below bf16's
//     rounding), and at bf16 the rounding of the sum to 16 bits (once per side, of values already apart) adds
//     ≤ 2u₁₆ more (|rn(x) − rn(y)| ≤ |x − y| + u|x| + u|y|); the ×½ is exact.
// The gradient all-reduces of one step of the trainer's 2-rank graph (runtime/train/trainer.cpp's recipe:
// data_parallel 2, --bucket-mib, grad-accum 2): one all_reduce op per bucket.
int64_t bucket_count(const std::string& precision) {
  const TinySetup& s = bert_setup();
  steps::ModelCase c{s.model, ptsim::models::load_model(s.model), kMicroBatch, kSeqLen};
  c.spec.vocab_size = s.vocab_size;
  c.dropout = true;
  auto r = steps::recipe(c, ptsim::models::parse_precision(precision, "precision"), ptsim::models::OptimizerKind::lamb);
  r.grad_accum = kGradAccum;
  r.data_parallel = 2;
  r.bucket_bytes = kBucketMib * 1024 * 1024;
  int64_t n = 0;
  for (const auto& op : ptsim::models::build_task_graph(c.spec, r).ops) n += op.kind == ptsim::models::OpKind::all_reduce;
  return n;
}

StepBounds two_rank_bounds(const std::string& precision) {
  StepBounds b = step_bounds(bert_setup(), precision);
  const double u32 = 0x1p-24, u16 = precision == "bf16" ? 0x1p-8 : precision == "fp16" ? 0x1p-11 : 0.0;
  b.grad_norm = 2 * b.grad_norm + 2 * u32 + 2 * u16;
  return b;
}

// The emulated run's own evidence that it trained on its emulated GPUs: every rank's progress header is rank 0's
// only, so the header check is the emulated device; NCCL itself shows in the fault cases below (the shim's
// "emulated fault" text comes back through the product's CommFailure).
void check_emulated_header(const CommandResult& r) {
  CHECK_MESSAGE(r.output.find("\n  backend cuda: GPU 0 (CUDA emulator") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("× 2 rank(s)") != std::string::npos, r.output);
}

void check_two_ranks_agree(const std::string& precision) {
  const fs::path dir = fresh_dir("ptsim_emulated_nccl_" + precision);
  const auto cpu = train_2ranks(Side::cpu_mpi, precision, "--quiet --metrics " + quote(dir / "cpu.jsonl"));
  REQUIRE_MESSAGE(cpu.exit_code == 0, cpu.output);
  const auto ref = read_jsonl(dir / "cpu.jsonl");
  REQUIRE(ref.size() == static_cast<size_t>(kNcclSteps));
  for (const std::string overlap : {"", "--no-comm-overlap"}) {
    CAPTURE(overlap);
    const fs::path metrics = dir / ("cuda" + overlap + ".jsonl");
    const auto cuda = train_2ranks(Side::emulated_cuda_nccl, precision, overlap + " --metrics " + quote(metrics));
    REQUIRE_MESSAGE(cuda.exit_code == 0, cuda.output);
    check_emulated_header(cuda);
    check_steps_agree(ref, read_jsonl(metrics), two_rank_bounds(precision));
  }
}

}  // namespace

TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda (NCCL) fp32: losses and gradient norms equal 2-rank MPI's within bounds") {
  check_two_ranks_agree("fp32");
}
TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda (NCCL) bf16: losses and gradient norms equal 2-rank MPI's within bounds") {
  check_two_ranks_agree("bf16");
}

// Stopped after step 2 and resumed, both on 2 ranks: the straight 2-rank cuda run's metrics (==) and final tensors
// (bytes), docs/training.md's resume promise, here through NCCL's bucket sums.
TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda (NCCL): --stop-after 2 then --resume repeats the straight run bit for bit") {
  const fs::path dir = fresh_dir("ptsim_emulated_nccl_resume");
  const auto [straight, resumed] = run_straight_and_split_with(
      [&](const std::string& extra) {
        const auto r = train_2ranks(Side::emulated_cuda_nccl, "fp32", "--quiet" + extra);
        REQUIRE_MESSAGE(r.exit_code == 0, r.output);
      },
      dir, 2);
  REQUIRE(straight.size() == static_cast<size_t>(kNcclSteps));
  REQUIRE(resumed.size() == straight.size());
  for (size_t i = 0; i < straight.size(); ++i) {
    CAPTURE(i);
    for (const char* key : {"loss", "grad_norm"}) CHECK(resumed[i].at(key) == straight[i].at(key));
  }
  const std::string last = "step_" + std::to_string(kNcclSteps);
  check_same_checkpoint_tensors(dir / "straight" / last, dir / "split" / last);
}

namespace {

// What a failed run leaves (docs/training.md: metrics lines written and flushed whole by rank 0, checkpoints
// built in a temp dir and renamed): every metrics line parses (read_jsonl throws on a torn one), and every entry
// of the checkpoint dir is `latest` or a step_N directory whose model and optimizer load.
void check_nothing_half_written(const fs::path& dir) {
  if (fs::exists(dir / "m.jsonl")) CHECK_NOTHROW(read_jsonl(dir / "m.jsonl"));
  if (!fs::exists(dir / "ckpt")) return;
  for (const auto& entry : fs::directory_iterator(dir / "ckpt")) {
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    if (name == "latest") continue;
    REQUIRE(name.rfind("step_", 0) == 0);
    CHECK(name.find(".tmp") == std::string::npos);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"})
      CHECK_NOTHROW(ptsim::runtime::read_safetensors((entry.path() / file).string()));
  }
}

// The NCCL all-reduces a healthy 2-rank run makes, counted as the shim counts them for PTSIM_EMU_NCCL_FAULT: per
// step one per gradient bucket (once per optimizer step: the buckets start on the last micro-step only) and the
// trainer's host sum of [loss, mlm, nsp, stop flag]; per checkpoint one host sum of the replica check's 8 doubles.
int64_t all_reduces_per_step(const std::string& precision, bool checkpoint_every_step) {
  return bucket_count(precision) + 1 + (checkpoint_every_step ? 1 : 0);
}

// The Nth all-reduce (from 1) of one 2-rank fp32 cuda run fails: PTSIM_EMU_NCCL_FAULT=`kind`:`rank`:N (`rank`
// a number or "all"), PTSIM_COMM_TIMEOUT_S=2, a checkpoint every step, `flags` added. Returns the output and the
// seconds the job took.
std::pair<CommandResult, double> run_faulty_job(const fs::path& dir, const std::string& kind, const std::string& rank,
                                                int64_t n, const std::string& flags = "") {
  const std::string fault = kind + ":" + rank + ":" + std::to_string(n);
  const auto start = std::chrono::steady_clock::now();
  const auto r = train_2ranks(Side::emulated_cuda_nccl, "fp32",
                              "--quiet --checkpoint-every 1 --checkpoint-dir " + quote(dir / "ckpt") + " --metrics " +
                                  quote(dir / "m.jsonl") + " " + flags,
                              "PTSIM_EMU_NCCL_FAULT=" + fault + " PTSIM_COMM_TIMEOUT_S=2");
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace

// The fault strikes step 3's first all-reduce (a gradient bucket): steps 1 and 2 are logged and checkpointed, and
// nothing of step 3 is written. Bounds: a healthy 4-step run takes ~10 s here; the error is seen at once, the hang
// at the 2 s deadline, and MPI_Abort ends the other rank: 60 s leaves room for a loaded machine yet fails a job
// left waiting for the 600 s default deadline. The message: "error: communication failed: rank R: ncclAllReduce …"
// (cmd_train's end_all_ranks_if_parallel around NcclCommunicator's CommFailure); for the hang either rank may
// report first (both reach their deadline), for the error rank 0 does (rank 1 is still within its 2 s).
TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda: an NCCL hang or error ends the whole job, files whole") {
  const int64_t n = 2 * all_reduces_per_step("fp32", true) + 1;
  for (const auto& [kind, rank, reporter] : {std::tuple{std::string("hang"), std::string("1"), std::string("rank ")},
                                             std::tuple{std::string("async-error"), std::string("0"), std::string("rank 0")}}) {
    CAPTURE(kind);
    const fs::path dir = fresh_dir("ptsim_emulated_nccl_fault_" + kind);
    const auto [r, seconds] = run_faulty_job(dir, kind, rank, n);
    CAPTURE(r.output);
    CHECK(r.exit_code != 0);
    CHECK(seconds < 60);
    const std::string message = "error: communication failed: " + reporter;
    const size_t at = r.output.find(message);
    REQUIRE_MESSAGE(at != std::string::npos, "expected '" << message << "'");
    CHECK(r.output.find("ncclAllReduce", at) != std::string::npos);
    CHECK(r.output.find(kind == "hang" ? "did not finish within 2.000 s" : "emulated fault (PTSIM_EMU_NCCL_FAULT=") !=
          std::string::npos);
    check_nothing_half_written(dir);
    CHECK(read_jsonl(dir / "m.jsonl").size() == 2);
    CHECK(fs::exists(dir / "ckpt" / "step_2"));
    CHECK(!fs::exists(dir / "ckpt" / "step_3"));
  }
}

// docs/nccl.md, "Host waits behind a collective": with --no-comm-overlap the step tail's bucket all-reduces are
// enqueued and never host-waited by the communicator; the compute stream waits on them with events and the
// host next waits inside a compute-stream sync (the step's timing or state read). hang:all: every rank's step-3
// first bucket hangs on the device (what every survivor sees when a peer dies mid-collective), so every rank is
// in that sync: on a GPU, and in the emulator (stalled streams), it blocks for good without the guard; with it
// the job ends at the 2 s deadline naming the all-reduce and the wait. Bounds as in the test above.
TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda --no-comm-overlap: a hang behind a compute-stream sync "
          "ends the whole job at the deadline") {
  const int64_t n = 2 * all_reduces_per_step("fp32", true) + 1;
  const fs::path dir = fresh_dir("ptsim_emulated_nccl_fault_sync");
  const auto [r, seconds] = run_faulty_job(dir, "hang", "all", n, "--no-comm-overlap");
  CAPTURE(r.output);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 60);
  const size_t at = r.output.find("error: communication failed: rank ");
  REQUIRE(at != std::string::npos);
  CHECK(r.output.find("ncclAllReduce #" + std::to_string(n) + " (", at) != std::string::npos);  // the hung one
  CHECK(r.output.find("waits behind, did not finish within 2.000 s", at) != std::string::npos);
  check_nothing_half_written(dir);
  CHECK(read_jsonl(dir / "m.jsonl").size() == 2);
  CHECK(fs::exists(dir / "ckpt" / "step_2"));
  CHECK(!fs::exists(dir / "ckpt" / "step_3"));
}

// The product path's collectives counted through the shim: a fault on the last all-reduce a healthy run makes
// (all_reduces_per_step × steps) fails the run, one past it never strikes. A bucket reduced twice (or per
// micro-step under accumulation) or one skipped moves the count and fails one of the two.
TEST_CASE("mpirun -np 2 ptsim_emulated train --backend cuda: NCCL all-reduces once per bucket per optimizer step") {
  const int64_t total = kNcclSteps * all_reduces_per_step("fp32", true);
  MESSAGE("buckets per step: " << bucket_count("fp32") << ", all-reduces per run: " << total);
  REQUIRE(bucket_count("fp32") >= 3);  // "several buckets"
  const auto [last, s1] = run_faulty_job(fresh_dir("ptsim_emulated_nccl_count_last"), "async-error", "0", total);
  CHECK_MESSAGE(last.exit_code != 0, last.output);
  CHECK_MESSAGE(last.output.find("ncclAllReduce #" + std::to_string(total) + " failed") != std::string::npos, last.output);
  const auto [past, s2] = run_faulty_job(fresh_dir("ptsim_emulated_nccl_count_past"), "async-error", "0", total + 1);
  CHECK_MESSAGE(past.exit_code == 0, past.output);
}

// docs/nccl.md: one GPU runs NCCL without MPI. The same one-rank run with --comm nccl and with the default (the
// single-process communicator): one rank sums nothing (the trainer skips its host sums, the executor has no
// buckets), so the metrics are equal. NCCL did start: the shim reads PTSIM_EMU_NCCL_FAULT at ncclCommInitRankConfig,
// so a malformed value fails the nccl run (naming the variable) and not the default one.
TEST_CASE("ptsim_emulated train --backend cuda --comm nccl on one rank, without mpirun, trains as the default does") {
  const TinySetup& s = bert_setup();
  const fs::path dir = fresh_dir("ptsim_emulated_nccl_1rank");
  auto run = [&](const std::string& extra, const std::string& env) {
    return run_command(env + " " + PTSIM_EMULATED_BINARY + " train --backend cuda --quiet --model " + quote(s.model) +
                       " --data " + quote(s.data) + " --steps 1 --micro-batch 4 --seed 11 " + extra + " 2>&1");
  };
  const std::string malformed = "PTSIM_EMU_NCCL_FAULT=sometimes";
  const auto single = run("--metrics " + quote(dir / "single.jsonl"), malformed);
  REQUIRE_MESSAGE(single.exit_code == 0, single.output);
  const auto nccl = run("--comm nccl --metrics " + quote(dir / "nccl.jsonl"), "");
  REQUIRE_MESSAGE(nccl.exit_code == 0, nccl.output);
  const auto a = read_jsonl(dir / "single.jsonl"), b = read_jsonl(dir / "nccl.jsonl");
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  for (const char* key : {"loss", "grad_norm"}) CHECK(a[0].at(key) == b[0].at(key));
  const auto faulty = run("--comm nccl", malformed);
  CHECK(faulty.exit_code != 0);
  CHECK_MESSAGE(faulty.output.find("PTSIM_EMU_NCCL_FAULT") != std::string::npos, faulty.output);
}
