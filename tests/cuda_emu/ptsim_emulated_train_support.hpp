// tests/cuda_emu/ptsim_emulated_train_support.hpp — what the `ptsim_emulated train` tests share
// (test_ptsim_emulated_train.cpp: one rank against the CPU backend; test_ptsim_emulated_nccl_train.cpp: two ranks
// over the emulated NCCL against two over MPI): the run's shape, the tiny BERT / GPT-2 data, and the per-step
// bounds a cuda run's losses and gradient norms must keep from the CPU backend's.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "models/recipe.hpp"
#include "tests/runtime/train/gpt2_test_support.hpp"
#include "tests/runtime/train/model_steps_check.hpp"  // defines: rounding_bounds, ModelCase

namespace ptsim::test::emulated_train {

constexpr int kSteps = 4, kMicroBatch = 4, kGradAccum = 2, kSeqLen = 32;  // make_tiny_setup's --seq-len 32

inline const TinySetup& bert_setup() {
  static const TinySetup s = make_tiny_setup("ptsim_emulated_bert");
  return s;
}
inline const TinySetup& gpt2_setup() {
  static const TinySetup s = make_tiny_gpt2_setup("ptsim_emulated_gpt2");
  return s;
}

// model_steps_check.hpp's bounds (rounding_bounds: forward F = √K·D_fwd·u for fp32 rounding plus √D_fwd·u of the
// 16-bit format; backward B likewise over D_fwd + D_bwd) for the tiny model's graph as ptsim train builds it
// (micro-batch 4, seq 32, dropout on), read as bounds on what --metrics shows of a step:
//   * the loss: relative ≤ F (model_steps_check.hpp's loss check);
//   * grad_norm, ‖g‖₂ of the step's gradient: that file bounds ‖Δg‖₂ ≤ 3B·‖g‖₂ per parameter, so by the triangle
//     inequality the whole norm moves by ≤ 3B relative. At init the logits are ~0 and the loss hardly moves with
//     the weights (a GEMM off by 1e-3 moved it by ~1e-6), so the norm is the sharper check.
struct StepBounds {
  double loss = 0, grad_norm = 0;
  // A measured regression limit on step 1's grad_norm (0: none), tighter than the derived bound, so a subtle
  // change in the 16-bit paths fails; where it comes from is said where it is set.
  double step1_grad_norm_measured = 0;
};
// fused_attention: the graph of `--fused-attention` (each fused op counted as the unfused chain it replaces).
inline StepBounds step_bounds(const TinySetup& s, const std::string& precision, bool fused_attention = false) {
  steps::ModelCase c{s.model, ptsim::models::load_model(s.model), kMicroBatch, kSeqLen};
  c.spec.vocab_size = s.vocab_size;
  c.dropout = true;
  c.fused_attention = fused_attention;
  const auto p = ptsim::models::parse_precision(precision, "precision");
  const auto g = ptsim::models::build_task_graph(c.spec, steps::recipe(c, p, ptsim::models::OptimizerKind::lamb));
  const steps::Bounds b = steps::rounding_bounds(g, c, p);
  return {b.forward, 3 * b.backward};
}

// Step k's value on both sides within k × its one-step bound. Step 1's bound is derived (rounding_bounds); the
// k × growth is a heuristic, not derived: it follows model_steps_check.hpp's 3-step losses (≤ 3F: each step
// adds its own rounding, and the weights differ by the updates' differences, which the next step carries), but
// LAMB's early updates (~ m/√v) can amplify tiny gradient differences for near-zero elements beyond any linear
// growth; it has held with wide margin here (docs/cuda-emulation.md's test table). fp16 steps skipped for an
// overflow (grad_norm null) must be skipped on both sides.
inline void check_steps_agree(const std::vector<ptsim::core::Json>& ref, const std::vector<ptsim::core::Json>& got,
                              const StepBounds& bounds) {
  REQUIRE(ref.size() == got.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double k = static_cast<double>(i + 1);
    for (const auto& [key, bound] : {std::pair{std::string("loss"), bounds.loss}, std::pair{std::string("grad_norm"), bounds.grad_norm}}) {
      CAPTURE(key);
      REQUIRE(ref[i].at(key).is_null() == got[i].at(key).is_null());
      if (ref[i].at(key).is_null()) continue;
      const double r = ref[i].at(key).get<double>(), x = got[i].at(key).get<double>();
      const double rel = std::abs(x - r) / std::abs(r);
      CHECK_MESSAGE(rel <= k * bound, "step " << k << ": cpu " << r << ", emulated cuda " << x << ", relative " << rel
                                              << " > " << k << " × " << bound);
      MESSAGE("step " << k << " " << key << ": relative " << rel << " (bound " << k * bound << ")");
      if (i == 0 && key == "grad_norm" && bounds.step1_grad_norm_measured > 0)
        CHECK_MESSAGE(rel <= bounds.step1_grad_norm_measured, "step 1 grad_norm: relative " << rel << " > the measured "
                      "limit " << bounds.step1_grad_norm_measured);
    }
  }
}

}  // namespace ptsim::test::emulated_train
