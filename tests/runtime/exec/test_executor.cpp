// tests/runtime/exec/test_executor.cpp — the Executor on whole TaskGraphs:
//  * d loss / d parameter for sampled elements of EVERY parameter tensor of a tiny BERT (padding mask,
//    erf GELU, MLM + NSP heads, padded vocabulary) and a tiny GPT-2 (causal softmax, tanh GELU), fp64,
//    against central differences (tolerance: gradcheck.hpp, 1e-6 relative + 1e-8 absolute);
//  * the arena really allocated equals the memory plan's peak (×2 in fp64);
//  * dropout masks regenerate identically under recomputation; gradients accumulate over micro-steps;
//  * the step tail: all-reduce averages over ranks, global norm, optimizer updates that train;
//  * bert-tiny at its real size (batch 8, seq 128): initial loss ≈ ln(30522) + ln 2, and its time.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/model_spec.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"
#include "tests/runtime/exec/gradcheck.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;
using ptsim::test::fd_check;
using ptsim::test::randn;
using ptsim::test::test_mix64;
using ptsim::test::tiny_bert;
using ptsim::test::tiny_gpt2;
using ptsim::test::fd_recipe;
using ptsim::test::fill_inputs;

namespace {

// Parameters far from init (std 0.3 matrices, gains 1 ± 0.2, biases ± 0.1) so that every nonlinearity is
// exercised away from zero and no gradient is trivially 0.
void randomize_parameters(Executor& ex, uint64_t seed) {
  const TaskGraph& g = ex.graph();
  for (size_t p = 0; p < g.params.size(); ++p) {
    const std::vector<double> w = ex.read_tensor<double>(g.params[p].weight);
    const bool matrix = g.tensor(g.params[p].weight).shape.size() >= 2;
    const bool gain = w[0] == 1.0;  // init_parameters sets LayerNorm gains to 1 and every other vector to 0
    const auto v = randn(w.size(), seed * 131 + p, matrix ? 0.3 : gain ? 0.2 : 0.1, gain ? 1.0 : 0.0);
    ex.write_tensor<double>(g.params[p].weight, std::vector<double>(v.begin(), v.end()));
  }
}

// d loss / d p for up to 6 elements of every parameter tensor: the element of largest |gradient| plus 5 at
// hashed positions. Returns the number of elements checked.
int check_model_gradients(const ModelSpec& spec, const Recipe& recipe) {
  TaskGraph g = build_task_graph(spec, recipe);
  ExecutorOptions options;
  options.compute = ComputeType::f64;
  options.time_ops = false;
  Executor ex(g, options);
  ex.init_parameters(7);
  randomize_parameters(ex, 3);
  fill_inputs(ex, 11);
  const double loss0 = ex.run_micro_step(0, 0);
  MESSAGE(spec.name << ": loss " << loss0 << " over " << g.params.size() << " parameter tensors");
  CHECK(std::isfinite(loss0));
  std::vector<std::vector<double>> grads;
  for (const Parameter& p : g.params) grads.push_back(ex.read_tensor<double>(p.gradient));
  int checked = 0;
  double worst = 0;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const Parameter& p = g.params[i];
    const auto& gr = grads[i];
    std::vector<size_t> idx;
    size_t biggest = 0;
    for (size_t k = 1; k < gr.size(); ++k)
      if (std::abs(gr[k]) > std::abs(gr[biggest])) biggest = k;
    idx.push_back(biggest);
    CHECK_MESSAGE(std::abs(gr[biggest]) > 0, p.name << " has an all-zero gradient");
    for (uint64_t k = 0; k < 5 && k + 1 < gr.size(); ++k) idx.push_back(test_mix64(i * 97 + k) % gr.size());
    // fd_check perturbs a host copy of the weight; each loss evaluation copies it in first.
    std::vector<double> w = ex.read_tensor<double>(p.weight);
    auto loss = [&] {
      ex.write_tensor<double>(p.weight, w);
      return ex.run_micro_step(0, 0);
    };
    worst = std::max(worst, fd_check(w.data(), w.size(), loss, gr.data(), p.name, idx));
    ex.write_tensor<double>(p.weight, w);  // fd_check restored every element it moved
    checked += static_cast<int>(idx.size());
  }
  MESSAGE(spec.name << ": " << checked << " parameter elements checked, worst relative error " << worst);
  return checked;
}

}  // namespace

TEST_CASE("tiny BERT: d loss / d every parameter tensor matches finite differences (fp64)") {
  CHECK(check_model_gradients(tiny_bert(), fd_recipe()) > 100);
}

TEST_CASE("bert-tiny's real shape (L=2, H=128, A=2, FFN 512): every parameter tensor matches finite differences") {
  // The shipped models/specs/bert-tiny.json with the vocabulary cut to 100 tokens, as `ptsim train` does when the
  // dataset's vocab is small (docs/training.md) — the 30,522-row embedding would only make this slower.
  ModelSpec m = load_model("bert-tiny");
  m.vocab_size = 100;
  CHECK(check_model_gradients(m, fd_recipe()) > 100);
}

TEST_CASE("tiny GPT-2: d loss / d every parameter tensor matches finite differences (fp64, causal, tanh GELU)") {
  CHECK(check_model_gradients(tiny_gpt2(), fd_recipe()) > 50);
}

TEST_CASE("tiny BERT with recomputation: d loss / d every parameter tensor matches finite differences") {
  Recipe r = fd_recipe();
  r.recompute_activations = true;
  CHECK(check_model_gradients(tiny_bert(), r) > 100);
}

TEST_CASE("fp32 and fp64 execution agree (fp32 kernels use Eigen's SIMD exp/erf/tanh)") {
  // Same init (rounded to f32) and inputs. fp32 rounding is 6e-8 per operation; over ~100 chained ops and
  // row reductions of ≤ 104 terms the loss agrees to ~1e-6 and each gradient tensor, as a vector, to ~1e-5.
  // Bounds: 1e-5 (loss), 1e-4 (gradient tensors, relative L2).
  for (const ModelSpec& spec : {tiny_bert(), tiny_gpt2()}) {
    CAPTURE(spec.name);
    TaskGraph g = build_task_graph(spec, fd_recipe());
    ExecutorOptions o64;
    o64.compute = ComputeType::f64;
    Executor a(g, {}), b(g, o64);
    a.init_parameters(8);
    b.init_parameters(8);
    fill_inputs(a, 6);
    fill_inputs(b, 6);
    const double la = a.run_micro_step(0, 0), lb = b.run_micro_step(0, 0);
    CHECK(la == doctest::Approx(lb).epsilon(1e-5));
    for (const Parameter& p : g.params) {
      const std::vector<float> ga = a.read_tensor<float>(p.gradient);
      const std::vector<double> gb = b.read_tensor<double>(p.gradient);
      double diff = 0, norm = 0;
      for (size_t k = 0; k < gb.size(); ++k) {
        diff += (ga[k] - gb[k]) * (ga[k] - gb[k]);
        norm += gb[k] * gb[k];
      }
      INFO(p.name << ": |g32 - g64| = " << std::sqrt(diff) << ", |g64| = " << std::sqrt(norm));
      CHECK(std::sqrt(diff) <= 1e-4 * std::sqrt(norm) + 1e-8);  // floor: key biases have gradient 0 analytically (softmax shift invariance)
    }
  }
}

TEST_CASE("the arena is the memory plan's peak (×2 in fp64); graphs the CPU cannot run are refused") {
  TaskGraph g = build_task_graph(tiny_bert(), fd_recipe());
  const MemoryPlan plan = plan_memory(g);
  Executor f32(g, {});
  CHECK(f32.allocated_activation_bytes() == static_cast<size_t>(plan.activations_peak_bytes));
  CHECK(f32.plan().activations_peak_bytes == plan.activations_peak_bytes);
  ExecutorOptions o64;
  o64.compute = ComputeType::f64;
  Executor f64(g, o64);
  CHECK(f64.allocated_activation_bytes() == 2 * static_cast<size_t>(plan.activations_peak_bytes));
  // init: padded vocabulary rows (100..103) of the word table are 0, real rows are not.
  f32.init_parameters(1);
  const std::vector<float> table = f32.read_tensor<float>(g.params[0].weight);
  REQUIRE(g.params[0].name == "bert.embeddings.word_embeddings.weight");
  CHECK(table[99 * 16] != 0.0f);
  for (size_t k = 100 * 16; k < table.size(); ++k) REQUIRE(table[k] == 0.0f);

  Recipe half = fd_recipe();
  half.precision = Precision::fp16;
  CHECK_NOTHROW(Executor(build_task_graph(tiny_bert(), half), {}));  // f32 compute, 16-bit rounding
  CHECK_THROWS_AS(Executor(build_task_graph(tiny_bert(), half), o64), ptsim::core::InputError);  // f64: fp32 only
  Recipe tp = fd_recipe();
  tp.tensor_parallel = 2;
  CHECK_THROWS_AS(Executor(build_task_graph(tiny_bert(), tp), {}), ptsim::core::InputError);
  Recipe fp8 = fd_recipe();
  fp8.precision = Precision::fp8;  // Transformer Engine casts and E4M3/E5M2 GEMMs: simulator only
  CHECK_THROWS_WITH_AS(Executor(build_task_graph(tiny_bert(), fp8), {}),
                       doctest::Contains("the CPU runtime does not run fp8 graphs"), ptsim::core::InputError);
}

TEST_CASE("dropout: recomputation regenerates the forward's masks; same step → same loss; new micro-step → new masks") {
  Recipe r = fd_recipe();
  r.include_dropout = true;
  Recipe rr = r;
  rr.recompute_activations = true;
  TaskGraph plain = build_task_graph(tiny_bert(), r), recomputed = build_task_graph(tiny_bert(), rr);
  int recomputed_dropouts = 0;
  for (const Op& op : recomputed.ops) recomputed_dropouts += op.kind == OpKind::dropout && op.phase == Phase::recompute;
  REQUIRE(recomputed_dropouts > 0);
  ExecutorOptions o;
  o.compute = ComputeType::f64;
  Executor a(plain, o), b(recomputed, o);
  for (Executor* ex : {&a, &b}) {
    ex->init_parameters(5);
    fill_inputs(*ex, 21);
  }
  const double la = a.run_micro_step(3, 1), lb = b.run_micro_step(3, 1);
  CHECK(la == lb);
  for (size_t p = 0; p < plain.params.size(); ++p) {
    const std::vector<double> ga = a.read_tensor<double>(plain.params[p].gradient);
    const std::vector<double> gb = b.read_tensor<double>(recomputed.params[p].gradient);
    for (size_t k = 0; k < ga.size(); ++k) {
      INFO(plain.params[p].name << "[" << k << "]");
      REQUIRE(ga[k] == doctest::Approx(gb[k]).epsilon(1e-12));
    }
  }
  CHECK(a.run_micro_step(3, 1) == la);  // bit-identical rerun (resume)
  CHECK(a.run_micro_step(3, 0) != la);  // another micro-step draws other masks
}

TEST_CASE("gradients accumulate over micro-steps and are zeroed at micro-step 0") {
  ExecutorOptions o;
  o.compute = ComputeType::f64;
  Executor ex(build_task_graph(tiny_bert(), fd_recipe()), o);
  const TaskGraph& g = ex.graph();
  ex.init_parameters(9);
  fill_inputs(ex, 5, 1.0);
  ex.run_micro_step(0, 0);
  std::vector<std::vector<double>> once;
  for (const Parameter& p : g.params) once.push_back(ex.read_tensor<double>(p.gradient));
  fill_inputs(ex, 5, 0.5);  // loss_grad = 1/micro_steps
  ex.run_micro_step(1, 0);
  ex.run_micro_step(1, 1);
  for (size_t p = 0; p < g.params.size(); ++p) {
    const std::vector<double> gr = ex.read_tensor<double>(g.params[p].gradient);
    for (size_t k = 0; k < gr.size(); ++k) REQUIRE(gr[k] == doctest::Approx(once[p][k]).epsilon(1e-12));
  }
}

namespace {
// Two ranks holding identical gradients: the sum doubles them. Counts calls (one per gradient bucket).
class TwinCommunicator final : public Communicator {
 public:
  using Communicator::all_reduce_sum;
  int calls = 0;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(std::span<float> data) override {
    ++calls;
    for (float& v : data) v *= 2;
  }
  void all_reduce_sum(std::span<double> data) override {
    ++calls;
    for (double& v : data) v *= 2;
  }
  void barrier() override {}
};
}  // namespace

TEST_CASE("step tail: all-reduce averages over ranks (one call per bucket), global norm, skip on NaN") {
  Recipe r = fd_recipe();
  r.data_parallel = 2;
  r.bucket_bytes = 4096;  // several buckets
  TaskGraph g = build_task_graph(tiny_bert(), r);
  int buckets = 0;
  for (const Op& op : g.ops) buckets += op.kind == OpKind::all_reduce;
  REQUIRE(buckets > 1);
  Executor ex(g, {});
  ex.init_parameters(1);
  fill_inputs(ex, 2);
  ex.run_micro_step(0, 0);
  std::vector<std::vector<float>> before;
  double sum_sq = 0;
  for (const Parameter& p : g.params) {
    before.push_back(ex.read_tensor<float>(p.gradient));
    for (float v : before.back()) sum_sq += static_cast<double>(v) * v;
  }
  TwinCommunicator comm;
  ex.run_step_tail(&comm, nullptr, 0.0);
  CHECK(comm.calls == buckets);
  for (size_t p = 0; p < g.params.size(); ++p) {
    const std::vector<float> gr = ex.read_tensor<float>(g.params[p].gradient);
    for (size_t k = 0; k < gr.size(); ++k) REQUIRE(gr[k] == before[p][k]);  // (2·g)/2 is exact in binary
  }
  CHECK(ex.last_grad_norm() == doctest::Approx(std::sqrt(sum_sq)).epsilon(1e-12));
  CHECK_FALSE(ex.last_step_skipped());
  CHECK_THROWS_AS(ex.run_step_tail(nullptr, nullptr, 0.0), ptsim::core::InputError);  // dp = 2 needs a communicator

  // A NaN gradient: the optimizer must not touch the weights.
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::lamb), ex.param_slots());
  const int w0 = g.params[0].weight;
  const float before_w = ex.read_tensor<float>(w0)[0];
  std::vector<float> grad3 = ex.read_tensor<float>(g.params[3].gradient);
  grad3[0] = std::nanf("");
  ex.write_tensor<float>(g.params[3].gradient, grad3);
  ex.run_step_tail(&comm, opt.get(), 1e-3);
  CHECK(ex.last_step_skipped());
  CHECK(ex.read_tensor<float>(w0)[0] == before_w);
  CHECK(opt->step_count() == 0);
}

TEST_CASE("training: LAMB (lr 0.1) through the executor's tail memorises one batch") {
  Executor ex(build_task_graph(tiny_bert(), fd_recipe()), {});
  ex.init_parameters(3);
  fill_inputs(ex, 4);
  auto config = default_optimizer_config(OptimizerKind::lamb);
  auto opt = make_optimizer(ex.backend(), config, ex.param_slots());
  const double first = ex.run_micro_step(0, 0);
  ex.run_step_tail(nullptr, opt.get(), 0.1);
  double last = first;
  for (int step = 1; step < 30; ++step) {
    last = ex.run_micro_step(step, 0);
    ex.run_step_tail(nullptr, opt.get(), 0.1);
  }
  MESSAGE("tiny BERT on one batch: loss " << first << " → " << last << " after 30 LAMB steps");
  CHECK(opt->step_count() == 30);
  // ln(100) + ln(2) ≈ 5.3 at init; with LAMB's per-tensor trust ratio lr 0.1 moves every tensor by ~10% per step,
  // enough to memorise 5 MLM and 2 NSP labels in 30 steps (loss < 0.1 when tried; 0.5× is a loose bound).
  CHECK(last < 0.5 * first);
  // Timers: every body op ran 30 times.
  for (const Op& op : ex.graph().ops)
    if (op.phase == Phase::forward) REQUIRE(ex.op_executions()[static_cast<size_t>(op.id)] == 30);
  ex.reset_timers();
  CHECK(ex.op_executions()[0] == 0);
}

TEST_CASE("bert-tiny at batch 8, seq 128 (fp32): initial loss ≈ ln(30522) + ln(2); one micro-step's time") {
  Recipe r;
  r.precision = Precision::fp32;
  r.micro_batch = 8;
  r.seq_len = 128;
  TaskGraph g = build_task_graph(load_model("bert-tiny"), r);
  Executor ex(g, {});
  CHECK(ex.allocated_activation_bytes() == static_cast<size_t>(ex.plan().activations_peak_bytes));
  ex.init_parameters(1234);
  fill_inputs(ex, 1);
  // At init the decoder's logits have std ≈ sqrt(128)·0.02 ≈ 0.23 (LayerNorm output · N(0, 0.02) rows), so the
  // MLM loss is ln(30522) + 0.23²/2 ≈ 10.35 and NSP ≈ ln 2 = 0.693: total ≈ 11.04. Allow ±0.3 for sampling.
  const double loss = ex.run_micro_step(0, 0);
  CHECK(loss == doctest::Approx(std::log(30522.0) + std::log(2.0) + 0.026).epsilon(0.3 / 11.0));
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ex.run_micro_step(0, i + 1);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double forward = 0, backward = 0;
  for (const Op& op : g.ops) {
    if (op.phase == Phase::forward) forward += ex.op_seconds()[static_cast<size_t>(op.id)];
    if (op.phase == Phase::backward) backward += ex.op_seconds()[static_cast<size_t>(op.id)];
  }
  MESSAGE("bert-tiny b8 s128 fp32: initial loss " << loss << "; one micro-step (forward+backward) " << best * 1e3
          << " ms (best of 3); forward " << forward / 4 * 1e3 << " ms, backward " << backward / 4 * 1e3
          << " ms per step (mean of 4); arena " << ex.allocated_activation_bytes() / 1048576.0 << " MiB");
}

TEST_CASE("kept scalars: the loss and each cross-entropy loss come back after the micro-step; loss = MLM + NSP") {
  Executor ex(build_task_graph(tiny_bert(), fd_recipe()), {});
  const TaskGraph& g = ex.graph();
  ex.init_parameters(4);
  fill_inputs(ex, 9);
  const double loss = ex.run_micro_step(0, 0);
  REQUIRE(ex.has_scalar_output(g.loss_tensor));
  CHECK(ex.scalar_output(g.loss_tensor) == loss);
  std::vector<int> parts;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::cross_entropy) parts.push_back(op.outputs.at(0));
  REQUIRE(parts.size() == 2);  // MLM and NSP
  double sum = 0;
  for (int id : parts) {
    REQUIRE(ex.has_scalar_output(id));
    sum += ex.scalar_output(id);
  }
  // The "loss" add op sums the two fp32 parts: one fp32 rounding (2^-24 relative) apart at most.
  CHECK(sum == doctest::Approx(loss).epsilon(1e-6));
  CHECK_FALSE(ex.has_scalar_output(g.params[0].weight));
  CHECK_THROWS_AS(ex.scalar_output(g.params[0].weight), std::invalid_argument);
  // Copies in and out refuse the wrong type and size.
  CHECK_THROWS_AS(ex.read_tensor<double>(g.params[0].weight), std::invalid_argument);  // f32 executor
  CHECK_THROWS_AS(ex.read_tensor<int32_t>(g.params[0].weight), std::invalid_argument);
  CHECK_THROWS_AS(ex.write_parameter(0, std::vector<float>(3)), std::invalid_argument);
}
