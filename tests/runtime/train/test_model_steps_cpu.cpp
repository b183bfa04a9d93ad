// tests/runtime/train/test_model_steps_cpu.cpp — the whole-model step harness of the gpu suite
// (model_steps_check.hpp) run where no GPU is needed: the CPU backend in f64 (the exact stand-in) against
// the CPU backend in f32 on bert-tiny and GPT-2-tiny, fp32 graphs. It shows that the derived fp32 bounds
// hold for one fp32 side on this machine (a CUDA run adds one more fp32 side; the margins are for that),
// prints how far inside them the errors are, and that the comparison rejects a loss or a gradient moved by
// twice its bound and accepts one moved by half of it. The 3-step losses need the optimizer, which runs in
// f32 only; test_model_steps_cuda.cpp compares them (and tf32/bf16) on a GPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/runtime/train/model_steps_check.hpp"

using namespace ptsim;
using namespace ptsim::test::steps;

namespace {

const Side kF64{runtime::BackendKind::cpu, runtime::ComputeType::f64, models::Precision::fp32};
const Side kF32{runtime::BackendKind::cpu, runtime::ComputeType::f32, models::Precision::fp32};

Bounds fp32_bounds(const ModelCase& c) {
  return rounding_bounds(models::build_task_graph(c.spec, recipe(c, models::Precision::fp32, models::OptimizerKind::adamw)),
                         c, models::Precision::fp32);
}

// The largest gradient tensor that is compared elementwise (not a key bias).
std::string largest_gradient(const StepResult& r) {
  std::string best;
  for (const auto& entry : r.grads)
    if (!entry.first.ends_with(".key.bias") && (best.empty() || entry.second.size() > r.grads.at(best).size()))
      best = entry.first;
  return best;
}

}  // namespace

TEST_CASE("model steps harness: CPU f64 vs CPU f32 is inside the derived fp32 bounds (bert-tiny, GPT-2-tiny)") {
  for (const ModelCase& c : {bert_tiny(), gpt2_tiny()}) {
    CAPTURE(c.name);
    const Bounds b = fp32_bounds(c);
    Outcome o;
    compare_step(run_step(c, kF32), run_step(c, kF64), b, o);
    MESSAGE(summary(c.name + " fp32, CPU f32 vs CPU f64", b, o));
    for (const std::string& f : o.failures) FAIL_CHECK(c.name << ": " << f);
    CHECK(o.grad_l2 > 0);  // the two precisions did differ: the comparison saw real rounding
  }
}

TEST_CASE("model steps harness: a loss or gradient moved by twice its bound fails, by half of it passes") {
  const ModelCase c = bert_tiny();
  const Bounds b = fp32_bounds(c);
  const StepResult ref = run_step(c, kF64);
  auto failures_with = [&](double loss_factor, const std::string& grad, double grad_delta) {
    StepResult moved = ref;
    moved.losses.at("loss") *= loss_factor;
    if (!grad.empty()) moved.grads.at(grad).at(0) += grad_delta;
    Outcome o;
    compare_step(moved, ref, b, o);
    return o.failures.size();
  };
  CHECK(failures_with(1.0, "", 0) == 0);
  CHECK(failures_with(1.0 + 2 * b.forward, "", 0) == 1);
  CHECK(failures_with(1.0 + 0.5 * b.forward, "", 0) == 0);
  const std::string g = largest_gradient(ref);
  const std::vector<double>& v = ref.grads.at(g);
  double norm = 0;
  for (double x : v) norm += x * x;
  norm = std::sqrt(norm);
  const double l2_bound = 3 * b.backward * norm, max_bound = 10 * b.backward * max_abs(v);
  CAPTURE(g);
  CHECK(failures_with(1.0, g, 2 * std::max(l2_bound, max_bound)) == 2);    // both norms exceeded
  CHECK(failures_with(1.0, g, 0.5 * std::min(l2_bound, max_bound)) == 0);  // inside both
}

TEST_CASE("model steps harness: the CUDA test's CPU references run here (tf32 graph, bf16, 3-step losses)") {
  const ModelCase c = bert_tiny();
  // The CPU backend computes a tf32 graph's GEMMs in fp32 (tf32_math is a CUDA-only request): bit for bit
  // the fp32 graph's results, which is what the CUDA tf32 comparison takes as its reference.
  Outcome exact;
  compare_step(run_step(c, {runtime::BackendKind::cpu, runtime::ComputeType::f32, models::Precision::tf32}),
               run_step(c, kF32), Bounds{0, 0}, exact);
  for (const std::string& f : exact.failures) FAIL_CHECK("tf32 graph on the CPU vs fp32: " << f);
  // The 3-step runs of both optimizers, fp32 and bf16: they run, and the loss falls (the check
  // compare_step_losses makes of the reference); a run compared with itself has no error.
  for (const models::Precision p : {models::Precision::fp32, models::Precision::bf16}) {
    const Side side{runtime::BackendKind::cpu, runtime::ComputeType::f32, p};
    for (const models::OptimizerKind k : {models::OptimizerKind::adamw, models::OptimizerKind::lamb}) {
      const std::vector<double> losses = step_losses(c, side, k);
      REQUIRE(losses.size() == static_cast<size_t>(kSteps + 1));
      Outcome o;
      compare_step_losses(models::to_string(k), losses, losses, fp32_bounds(c), o);
      const std::string what = std::string(models::to_string(p)) + " " + models::to_string(k);
      CHECK_MESSAGE(o.failures.empty(), what << ": " << (o.failures.empty() ? std::string() : o.failures.front()));
      MESSAGE(what << " losses " << losses.front() << " -> " << losses.back());
    }
  }
}

TEST_CASE("model steps harness: the CUDA test's GPT-2-tiny fp16 reference runs here, near its fp32 step") {
  // test_model_steps_cuda.cpp's fp16 GPT-2-tiny case compares CUDA with this CPU fp16 step. Here: it runs
  // (loss scaling on the CPU backend), and it agrees with the fp32 step inside the fp16 bounds — fp16 vs
  // fp32 rounds every op output on one side only, which the bound's √D·2^-11 term covers (it assumes both
  // sides may round).
  const ModelCase c = gpt2_tiny();
  const models::TaskGraph g = models::build_task_graph(c.spec, recipe(c, models::Precision::fp16, models::OptimizerKind::adamw));
  const Bounds b = rounding_bounds(g, c, models::Precision::fp16);
  Outcome o;
  compare_step(run_step(c, {runtime::BackendKind::cpu, runtime::ComputeType::f32, models::Precision::fp16}), run_step(c, kF32),
               b, o);
  MESSAGE(summary("gpt2-tiny fp16 vs fp32, CPU", b, o));
  for (const std::string& f : o.failures) FAIL_CHECK("gpt2-tiny fp16 vs fp32 on the CPU: " << f);
}

TEST_CASE("model steps harness: the fused dropout ops with dropout 0.1, CPU f64 vs CPU f32, inside the fp32 bounds") {
  // The gpu suite's fused-op cases (with_fused_dropout) here: the f32 side must stay inside the bounds
  // derived with the fused ops' unfused depths, and the 3-step losses the CUDA test compares must fall with
  // dropout on (the reference's condition in compare_step_losses).
  for (const ModelCase& base : {bert_tiny(), gpt2_tiny()})
    for (const bool fused_attention : {true, false}) {
      const ModelCase c = with_fused_dropout(base, fused_attention);
      CAPTURE(c.name);
      // The graph has the fused ops, each dropping with p = 0.1 (so the masks matter).
      const models::TaskGraph g = models::build_task_graph(c.spec, recipe(c, models::Precision::fp32, models::OptimizerKind::adamw));
      int attention = 0, residual = 0;
      for (const models::Op& op : g.ops) {
        const bool is_attention = op.kind == (fused_attention ? models::OpKind::fused_attention : models::OpKind::softmax_dropout);
        const bool is_residual = op.kind == models::OpKind::bias_dropout_residual;
        if ((is_attention || is_residual) && op.attrs.dropout_p == 0.1) (is_attention ? attention : residual)++;
      }
      CHECK(attention == base.spec.num_layers);
      CHECK(residual == 2 * base.spec.num_layers);
      const Bounds b = fp32_bounds(c);
      Outcome o;
      compare_step(run_step(c, kF32), run_step(c, kF64), b, o);
      MESSAGE(summary(c.name + " fp32, CPU f32 vs CPU f64", b, o));
      for (const std::string& f : o.failures) FAIL_CHECK(c.name << ": " << f);
      CHECK(o.grad_l2 > 0);
      // The optimizer needs f32 compute, so the AdamW steps have no f64 reference here (the gpu suite compares
      // them with CUDA's): they must at least train — the loss falls over the steps, with dropout on.
      const std::vector<double> losses = step_losses(c, kF32, models::OptimizerKind::adamw);
      REQUIRE(losses.size() >= 2);
      CHECK_MESSAGE(losses.back() < losses.front(), c.name << ": AdamW loss " << losses.front() << " -> " << losses.back());
    }
}
