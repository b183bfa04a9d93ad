// tests/runtime/train/test_train_fused_attention.cpp — `ptsim train --fused-attention` runs the graph with
// one fused_attention op per layer (runtime/exec/cpu_fused_attention.cpp) and trains as the unfused graph:
// 3 bert-tiny steps (L=2, H=128, A=2: head dim 64) on the test corpus (seq 32), with dropout off and on
// (the fused kernel draws the unfused dropout op's mask: same stream, same element index).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;

namespace {

const TinySetup& setup() {
  static const TinySetup s = make_tiny_setup("fused_attention");
  return s;
}

std::vector<MetricsLine> train_losses(const std::string& name, const std::string& extra) {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir(name);
  const auto r = run_ptsim("train --model bert-tiny --data " + quote(s.data) + " --threads 1 --quiet --steps 3 " +
                           "--micro-batch 4 --lr 1e-2 --metrics " + quote(dir / "m.jsonl") + " " + extra);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return read_metrics(dir / "m.jsonl");
}

// The two graphs differ only in the order of floating-point operations inside attention (online softmax
// over key tiles vs one softmax pass; OpenBLAS tile products vs the batched GEMMs): each op's f32 results agree
// to a few u = 2^-24 ≈ 6e-8 relative (tests/runtime/exec/test_fused_attention.cpp, the backend-ops
// harness), and 3 small-LR steps do not amplify that much. Allowed: 1e-6 relative, ~16 ulp of f32 at a
// loss of ~6.7 (measured: the two runs' f32 losses are bitwise equal, dropout off and on). A wrong dropout
// stream in the fused op (tried by hand: rng_stream + 1000 in models/builder.cpp) moved the step-1 loss by
// 6.6e-5 relative, 66× the allowance.
constexpr double kLossTolerance = 1e-6;

void check_same_losses(const std::string& extra) {
  const auto unfused = train_losses("unfused", extra);
  const auto fused = train_losses("fused", extra + " --fused-attention");
  REQUIRE(unfused.size() == 3);
  REQUIRE(fused.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const double a = unfused[i].loss, b = fused[i].loss;
    CHECK_MESSAGE(std::abs(a - b) <= kLossTolerance * std::abs(a),
                  "step " << i + 1 << ": unfused " << a << ", fused " << b << " (" << extra << ")");
  }
  CHECK(unfused[2].loss != unfused[0].loss);  // the steps moved the weights: a real comparison
}

}  // namespace

TEST_CASE("train --fused-attention: 3 bert-tiny steps match the unfused graph, dropout off") {
  check_same_losses("--no-dropout");
}

TEST_CASE("train --fused-attention: 3 bert-tiny steps match the unfused graph, dropout on") {
  check_same_losses("");
}

TEST_CASE("train: --resume refuses a checkpoint written with the other attention graph") {
  // --fused-attention is part of the run's identity: resuming without it (or with it, after a run without)
  // would change the graph mid-run. Exit 2 naming the field.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("resume_identity");
  const std::string flags = "train --model bert-tiny --data " + quote(s.data) + " --threads 1 --quiet --steps 2 " +
                            "--micro-batch 4 --checkpoint-dir " + quote(dir / "ckpt");
  auto r = run_ptsim(flags + " --fused-attention --stop-after 1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(flags + " --resume");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fused_attention") != std::string::npos);
}

// --attention-kernel (docs/cli.md): tensor-core applies only with --backend cuda, --fused-attention and
// --precision bf16/fp16; each missing condition is exit 2 naming the flag, what it needs and what was given.
// Checked before --backend cuda looks for a GPU (cmd_train.cpp), so the cuda rows give these answers on any
// machine, this one (no GPU) included. A valid tensor-core run: the emu and gpu suites
// (test_ptsim_emulated_attention_tc.cpp, test_train_cuda.cpp).
TEST_CASE("train: --attention-kernel that does not apply is exit 2 naming the flag, its need and what was given") {
  const TinySetup& s = setup();
  struct Row {
    std::string flags, needs, given;
  };
  const std::vector<Row> rows = {
      {"--backend cpu --fused-attention --precision bf16 --attention-kernel tensor-core", "it needs --backend cuda",
       "given --backend cpu"},
      {"--backend cuda --precision bf16 --attention-kernel tensor-core", "it needs --fused-attention",
       "given no --fused-attention"},
      {"--backend cuda --attention-kernel fp32", "it needs --fused-attention", "given no --fused-attention"},
      {"--backend cuda --fused-attention --precision fp32 --attention-kernel tensor-core",
       "it needs --precision bf16 or fp16", "given --precision fp32"},
      {"--backend cuda --fused-attention --precision tf32 --attention-kernel tensor-core",
       "it needs --precision bf16 or fp16", "given --precision tf32"},
      {"--backend cuda --fused-attention --precision bf16 --attention-kernel tc", "--attention-kernel 'tc' is unknown",
       "expected fp32 | tensor-core"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.flags);
    const auto r = run_ptsim("train --model bert-tiny --data " + quote(s.data) + " --quiet --steps 1 " + row.flags);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("--attention-kernel") != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find(row.needs) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find(row.given) != std::string::npos, r.output);
  }
}

TEST_CASE("train: --attention-kernel fp32 with --fused-attention on the cpu backend trains, and the header says so") {
  const TinySetup& s = setup();
  const auto r = run_ptsim("train --model bert-tiny --data " + quote(s.data) +
                           " --threads 1 --steps 1 --micro-batch 4 --fused-attention --attention-kernel fp32");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK_MESSAGE(r.output.find("\n  attention fused: fp32 kernel\n") != std::string::npos, r.output);
}
