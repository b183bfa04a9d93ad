// tests/runtime/train/test_model_steps_cuda.cpp — whole training steps on the CUDA backend against the CPU
// backend (model_steps_check.hpp, which derives the tolerances): bert-tiny, a bert-base-shaped model and a
// GPT-2-tiny, same weights and batch, dropout off; losses, logits, every gradient and 3 steps of AdamW and
// of LAMB; and bert-tiny and GPT-2-tiny with the fused dropout ops and dropout 0.1 (with_fused_dropout:
// identical masks from the shared hash) at fp32. Precisions: fp32 (cuBLAS CUBLAS_COMPUTE_32F), tf32 (the graph's GEMMs with tf32_math: cuBLAS
// TF32 tensor cores; the CPU reference computes the same graph in fp32) and bf16 (both backends store bf16
// activations as 16 bits, converted at the op boundary from the same plan: the same rounding points; bert-base-shaped at fp32 and tf32
// only, to keep the gpu suite short); GPT-2-tiny also at fp16, one step. Suite gpu; exits 77 without a GPU (tests/support/gpu_doctest_main.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/runtime/train/model_steps_check.hpp"

using namespace ptsim;
using namespace ptsim::test::steps;

namespace {

void check_model(const ModelCase& c, models::Precision precision) {
  const Side cuda{runtime::BackendKind::cuda, runtime::ComputeType::f32, precision};
  const Side cpu{runtime::BackendKind::cpu, runtime::ComputeType::f32, precision};
  const models::TaskGraph g = models::build_task_graph(c.spec, recipe(c, precision, models::OptimizerKind::adamw));
  const Bounds b = rounding_bounds(g, c, precision);
  Outcome o;
  compare_step(run_step(c, cuda), run_step(c, cpu), b, o);
  for (const models::OptimizerKind k : {models::OptimizerKind::adamw, models::OptimizerKind::lamb})
    compare_step_losses(models::to_string(k), step_losses(c, cuda, k), step_losses(c, cpu, k), b, o);
  const std::string what = c.name + " " + models::to_string(precision) + ", CUDA vs CPU";
  MESSAGE(summary(what, b, o));
  for (const std::string& f : o.failures) FAIL_CHECK(what << ": " << f);
}

}  // namespace

TEST_CASE("model steps on CUDA: bert-tiny equals the CPU backend at fp32, tf32 and bf16") {
  for (const models::Precision p : {models::Precision::fp32, models::Precision::tf32, models::Precision::bf16})
    check_model(bert_tiny(), p);
}

TEST_CASE("model steps on CUDA: GPT-2-tiny equals the CPU backend at fp32, tf32 and bf16") {
  for (const models::Precision p : {models::Precision::fp32, models::Precision::tf32, models::Precision::bf16})
    check_model(gpt2_tiny(), p);
}

// fp16 (dynamic loss scaling: a 3-step run may skip a step on overflow, so one step, as
// test_16bit_storage_cuda.cpp's bert-tiny fp16 case): GPT-2's causal attention, tanh GELU and tied head.
TEST_CASE("model steps on CUDA: GPT-2-tiny equals the CPU backend at fp16 (one step)") {
  const ModelCase c = gpt2_tiny();
  const Side cuda{runtime::BackendKind::cuda, runtime::ComputeType::f32, models::Precision::fp16};
  const Side cpu{runtime::BackendKind::cpu, runtime::ComputeType::f32, models::Precision::fp16};
  const models::TaskGraph g = models::build_task_graph(c.spec, recipe(c, models::Precision::fp16, models::OptimizerKind::adamw));
  const Bounds b = rounding_bounds(g, c, models::Precision::fp16);
  Outcome o;
  compare_step(run_step(c, cuda), run_step(c, cpu), b, o);
  const std::string what = c.name + " fp16, CUDA vs CPU";
  MESSAGE(summary(what, b, o));
  for (const std::string& f : o.failures) FAIL_CHECK(what << ": " << f);
}

TEST_CASE("model steps on CUDA: bert-base-shaped equals the CPU backend at fp32 and tf32") {
  for (const models::Precision p : {models::Precision::fp32, models::Precision::tf32}) check_model(bert_base_shaped(), p);
}

TEST_CASE("model steps on CUDA: the fused dropout ops with dropout 0.1 equal the CPU backend (bert-tiny, GPT-2-tiny)") {
  for (const ModelCase& base : {bert_tiny(), gpt2_tiny()})
    for (const bool fused_attention : {true, false}) check_model(with_fused_dropout(base, fused_attention), models::Precision::fp32);
}
