// tests/runtime/train/test_train_mpi.cpp — data parallelism over MPI: `mpirun -np 2 ptsim train` with
// micro-batch B equals one rank with the same global batch (micro-batch 2B, or micro-batch B with
// --grad-accum 2), step by step and in the final weights, within fp32 tolerance. Suite 'mpi'.
//
// Why the comparison can be this tight: BERT's MLM loss is a mean over the masked tokens of a micro-batch.
// Ranks average their gradients (sum / 2), so 2 ranks compute ½(mean over rank 0's tokens + mean over
// rank 1's), which equals the mean over all tokens only when both halves have the same number of masked
// tokens. The test data is prepared with --max-predictions 1 so that every instance has exactly one masked
// token: then the two are equal in exact arithmetic and only fp32 rounding (GEMMs over 8 rows vs 4, the
// all-reduce's sum order, ×0.5) differs. With ordinary data (5 ± 1 masked tokens per instance here) the
// 1-rank and 2-rank runs differ by the weighting, not by rounding: docs/training.md gives the numbers.
// Dropout is off (--no-dropout): its masks depend on the row's place in the micro-batch.
// Rank r of 2 takes permutation positions r, r+2, ... (BatchLoader), so both runs see the same instances
// in every step (one epoch of 437 instances holds the 10 steps × 8 used here).
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/checkpoint/safetensors.hpp"
#include "tests/runtime/train/gpt2_test_support.hpp"

using namespace ptsim::test;
namespace rt = ptsim::runtime;

namespace {

CommandResult run_shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string mpirun(int ranks) {
  return std::string(PTSIM_MPIRUN) + " --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) + " " +
         PTSIM_BINARY + " ";
}

double max_weight_difference(const fs::path& a, const fs::path& b) {
  const auto x = rt::read_safetensors(a.string());
  const auto y = rt::read_safetensors(b.string());
  REQUIRE(x.tensors.size() == y.tensors.size());
  double worst = 0;
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    REQUIRE(x.tensors[i].name == y.tensors[i].name);
    const auto u = x.tensors[i].to_f32(a.string());
    const auto v = y.tensors[i].to_f32(b.string());
    REQUIRE(u.size() == v.size());
    for (size_t k = 0; k < u.size(); ++k) worst = std::max(worst, std::fabs(static_cast<double>(u[k]) - v[k]));
  }
  return worst;
}

}  // namespace

TEST_CASE("mpi: 2 ranks × micro-batch 4 equal 1 rank × micro-batch 8 (and 1 rank × 4 × accum 2)") {
  const TinySetup s = make_tiny_setup("mpi", "--max-predictions 1");
  const std::string flags = "train --model " + quote(s.model) + " --data " + quote(s.data) +
                            " --steps 10 --lr 5e-2 --optimizer lamb --no-dropout --quiet --threads 1";
  auto run = [&](const std::string& prefix, const std::string& extra, const std::string& name) {
    const auto r = run_shell(prefix + flags + " " + extra + " --metrics " + quote(s.dir / (name + ".jsonl")) +
                             " --checkpoint-dir " + quote(s.dir / name));
    REQUIRE_MESSAGE(r.exit_code == 0, name << ":\n" << r.output);
  };
  run(std::string(PTSIM_BINARY) + " ", "--micro-batch 8", "one_rank");
  run(std::string(PTSIM_BINARY) + " ", "--micro-batch 4 --grad-accum 2", "one_rank_accum");
  run(mpirun(2), "--micro-batch 4", "two_ranks");

  const auto one = read_metrics(s.dir / "one_rank.jsonl");
  const auto accum = read_metrics(s.dir / "one_rank_accum.jsonl");
  const auto two = read_metrics(s.dir / "two_ranks.jsonl");  // rank 0 writes; losses averaged over ranks
  REQUIRE(one.size() == 10);
  REQUIRE(two.size() == 10);
  REQUIRE(accum.size() == 10);
  // Tolerance: 2e-5 absolute on losses of ~6.7, i.e. ~40 fp32 ulps (ulp(6.7) = 4.8e-7) — room for rounding
  // differences that 10 LAMB steps carry forward. Measured: at most 2.4e-7 (one ulp).
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(two[i].step == one[i].step);
    CHECK_MESSAGE(std::fabs(two[i].loss - one[i].loss) <= 2e-5, "step " << one[i].step << ": " << one[i].loss << " vs " << two[i].loss);
    CHECK_MESSAGE(std::fabs(accum[i].loss - one[i].loss) <= 2e-5, "step " << one[i].step << ": " << one[i].loss << " vs " << accum[i].loss);
  }
  // Final weights after 10 steps, largest absolute difference over all 0.03M parameters. Weights are
  // O(0.02..1); tolerance 1e-5. Measured: 6e-7.
  const double d2 = max_weight_difference(s.dir / "one_rank" / "step_10" / "model.safetensors",
                                          s.dir / "two_ranks" / "step_10" / "model.safetensors");
  const double da = max_weight_difference(s.dir / "one_rank" / "step_10" / "model.safetensors",
                                          s.dir / "one_rank_accum" / "step_10" / "model.safetensors");
  MESSAGE("max |w(1 rank) - w(2 ranks)| = " << d2 << ", max |w(1 rank) - w(1 rank, accum 2)| = " << da);
  CHECK(d2 <= 1e-5);
  CHECK(da <= 1e-5);
}

TEST_CASE("mpi: a 2-rank run resumes bit-identically and checkpoints once (rank 0)") {
  const TinySetup s = make_tiny_setup("mpi_resume");
  const std::string flags = "train --model " + quote(s.model) + " --data " + quote(s.data) +
                            " --steps 8 --micro-batch 4 --quiet --threads 1";
  auto r = run_shell(mpirun(2) + flags + " --metrics " + quote(s.dir / "a.jsonl") + " --checkpoint-dir " + quote(s.dir / "a"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_shell(mpirun(2) + flags + " --metrics " + quote(s.dir / "b.jsonl") + " --checkpoint-dir " + quote(s.dir / "b") +
                " --stop-after 4");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_shell(mpirun(2) + flags + " --metrics " + quote(s.dir / "b.jsonl") + " --checkpoint-dir " + quote(s.dir / "b") +
                " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto a = read_metrics(s.dir / "a.jsonl");
  const auto b = read_metrics(s.dir / "b.jsonl");
  REQUIRE(a.size() == 8);
  REQUIRE(b.size() == 8);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].loss == b[i].loss);
  CHECK(max_weight_difference(s.dir / "a" / "step_8" / "model.safetensors", s.dir / "b" / "step_8" / "model.safetensors") == 0);
  // A world size change is refused (the data cursor and the averaging depend on it).
  r = run_shell(std::string(PTSIM_BINARY) + " " + flags + " --checkpoint-dir " + quote(s.dir / "b") + " --resume");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.output.find("world_size = 2") != std::string::npos, r.output);
}

TEST_CASE("mpi: bucket all-reduces overlapped with backward give the same bits as after it (2 ranks)") {
  // 32 KiB buckets cut the tiny model's gradients into several buckets, so most of them start while backward
  // is still running; grad-accum 2 overlaps on the second micro-step only; dropout on, LAMB with clipping.
  // With 2 ranks each element's sum is a + b in either path, so losses, weights and optimizer state must be
  // equal to the bit (the comparison is exact: ==, and byte-equal checkpoint files).
  const TinySetup s = make_tiny_setup("mpi_overlap");
  const std::string flags = "train --model " + quote(s.model) + " --data " + quote(s.data) +
                            " --steps 6 --micro-batch 4 --grad-accum 2 --optimizer lamb --bucket-mib 0.03125 --quiet "
                            "--threads 1";
  auto run = [&](const std::string& extra, const std::string& name) {
    const auto r = run_shell(mpirun(2) + flags + " " + extra + " --metrics " + quote(s.dir / (name + ".jsonl")) +
                             " --checkpoint-dir " + quote(s.dir / name) + " --op-times " + quote(s.dir / (name + ".ops.json")));
    REQUIRE_MESSAGE(r.exit_code == 0, name << ":\n" << r.output);
  };
  run("", "overlap");
  run("--no-comm-overlap", "after");
  const auto a = read_metrics(s.dir / "overlap.jsonl");
  const auto b = read_metrics(s.dir / "after.jsonl");
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 6);
  for (size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(a[i].loss == b[i].loss, "step " << a[i].step);
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string x = read_file(s.dir / "overlap" / "step_6" / file);
    const std::string y = read_file(s.dir / "after" / "step_6" / file);
    CHECK_MESSAGE(!x.empty(), file);
    CHECK_MESSAGE(x == y, file << " differs between the overlapped and the non-overlapped run");
  }
  // The op-times file lists one all_reduce per bucket: more than one, or nothing was overlapped.
  const std::string ops = read_file(s.dir / "overlap.ops.json");
  size_t buckets = 0;
  for (size_t at = ops.find("\"all_reduce\""); at != std::string::npos; at = ops.find("\"all_reduce\"", at + 1)) ++buckets;
  CHECK_MESSAGE(buckets > 1, ops.substr(0, 400));
}

TEST_CASE("mpi: GPT-2, 2 ranks × micro-batch 4 equal 1 rank × micro-batch 8") {
  // The LM loss is a mean over every position of a micro-batch (all blocks full: B × S labels), so the
  // ranks' ½(mean + mean) is the 8-block mean exactly, without BERT's --max-predictions 1 device; rank r
  // takes block positions r, r+2, ... (CausalLmLoader), so both runs see the same blocks in every step.
  // Tolerances and their reasons: the BERT case's above (2e-5 on losses, 1e-5 on weights). Measured: weights
  // 4.8e-7 apart after 6 LAMB steps (a few fp32 ulps).
  const TinySetup s = make_tiny_gpt2_setup("mpi_gpt2");
  const std::string flags = "train --model " + quote(s.model) + " --data " + quote(s.data) +
                            " --steps 6 --lr 5e-2 --optimizer lamb --no-dropout --quiet --threads 1";
  auto run = [&](const std::string& prefix, const std::string& extra, const std::string& name) {
    const auto r = run_shell(prefix + flags + " " + extra + " --metrics " + quote(s.dir / (name + ".jsonl")) +
                             " --checkpoint-dir " + quote(s.dir / name));
    REQUIRE_MESSAGE(r.exit_code == 0, name << ":\n" << r.output);
  };
  run(std::string(PTSIM_BINARY) + " ", "--micro-batch 8", "one_rank");
  run(mpirun(2), "--micro-batch 4", "two_ranks");
  const auto one = read_jsonl(s.dir / "one_rank.jsonl");
  const auto two = read_jsonl(s.dir / "two_ranks.jsonl");
  REQUIRE(one.size() == 6);
  REQUIRE(two.size() == 6);
  for (size_t i = 0; i < one.size(); ++i) {
    const double a = one[i].at("lm_loss").get<double>(), b = two[i].at("lm_loss").get<double>();
    CHECK_MESSAGE(std::fabs(a - b) <= 2e-5, "step " << i + 1 << ": " << a << " vs " << b);
  }
  const double d = max_weight_difference(s.dir / "one_rank" / "step_6" / "model.safetensors",
                                         s.dir / "two_ranks" / "step_6" / "model.safetensors");
  MESSAGE("GPT-2: max |w(1 rank) - w(2 ranks)| = " << d);
  CHECK(d <= 1e-5);
}
