// tests/runtime/train/test_train_fused.cpp — `ptsim train --fuse-softmax-dropout --fuse-bias-dropout-residual`:
// the graph then runs the fused dropout ops (docs/executor.md, "Fused dropout ops"), which draw the unfused
// graph's masks; 3 bert-tiny steps with dropout on give the unfused run's losses within a stated tolerance;
// a flag that does not apply is exit 2.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "core/json_reader.hpp"  // defines: load_json_file
#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;

namespace {

const TinySetup& setup() {
  static const TinySetup s = make_tiny_setup("tiny_fused");
  return s;
}

// 3 AdamW steps of the built-in bert-tiny (L2 H128) on the tiny dataset (seq 32), dropout on.
std::string three_steps(const TinySetup& s, const fs::path& dir, const std::string& name, const std::string& extra) {
  return "train --model bert-tiny --data " + quote(s.data) + " --threads 1 --quiet --steps 3 --micro-batch 8 " +
         "--optimizer adamw --lr 1e-3 --metrics " + quote(dir / (name + ".jsonl")) + " --op-times " +
         quote(dir / (name + ".ops.json")) + " " + extra;
}

std::set<std::string> op_kinds(const fs::path& op_times) {
  std::set<std::string> kinds;
  const auto j = ptsim::core::load_json_file(op_times.string());
  for (const auto& op : j.at("ops"))
    kinds.insert(op.at("kind").get<std::string>());
  return kinds;
}

}  // namespace

TEST_CASE("train: the fused dropout ops give the unfused losses over 3 bert-tiny steps") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("fused_losses");
  auto r = run_ptsim(three_steps(s, dir, "plain", ""));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(three_steps(s, dir, "fused", "--fuse-softmax-dropout --fuse-bias-dropout-residual"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);

  const std::set<std::string> plain = op_kinds(dir / "plain.ops.json"), fused = op_kinds(dir / "fused.ops.json");
  CHECK(plain.count("softmax_dropout") == 0);
  CHECK(plain.count("dropout") == 1);
  for (const char* kind : {"softmax_dropout", "softmax_dropout_backward", "bias_dropout_residual",
                           "bias_dropout_residual_backward"})
    CHECK_MESSAGE(fused.count(kind) == 1, std::string(kind));
  CHECK(fused.count("softmax") == 0);  // every softmax has dropout to fuse

  const auto a = read_metrics(dir / "plain.jsonl"), b = read_metrics(dir / "fused.jsonl");
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  // The same masks and the same element formulas: what may differ is f32 rounding — where the bias joins
  // the output linear's sum (OpenBLAS adds its k-blocks onto the pre-filled bias; the fused op adds it after
  // the product) and the order of the bias-gradient column sums — relative 1e-7 per value, carried through
  // 3 AdamW steps. Bound: 2e-5 relative on losses near ln(397·2) = 6.7, i.e. ~1.3e-4 nats. Measured
  // (2026-12-01, OpenBLAS, --threads 1): the losses equal to the bit, the gradient norms within 1e-11
  // relative (docs/executor.md, "Fused dropout ops").
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(b[i].loss == doctest::Approx(a[i].loss).epsilon(2e-5));
    CHECK(b[i].mlm_loss == doctest::Approx(a[i].mlm_loss).epsilon(2e-5));
  }
}

TEST_CASE("train: --fuse-softmax-dropout with --no-dropout is exit 2 naming both flags") {
  const TinySetup& s = setup();
  const auto r = run_ptsim("train --model bert-tiny --data " + quote(s.data) +
                           " --threads 1 --quiet --steps 1 --no-dropout --fuse-softmax-dropout");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--fuse-softmax-dropout") != std::string::npos);
  CHECK(r.output.find("--no-dropout") != std::string::npos);
}

TEST_CASE("train: --fuse-softmax-dropout with --fused-attention is exit 2 naming both flags") {
  // The fused attention kernel already holds the softmax and its dropout: the second flag would do nothing.
  const TinySetup& s = setup();
  const auto r = run_ptsim("train --model bert-tiny --data " + quote(s.data) +
                           " --threads 1 --quiet --steps 1 --fused-attention --fuse-softmax-dropout");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--fuse-softmax-dropout") != std::string::npos);
  CHECK(r.output.find("--fused-attention") != std::string::npos);
}
