// tests/reports/test_memory_derivation.cpp — the planner's memory probes derive a recipe's memory totals at
// any micro-batch from its graphs at micro-batch 1 and 2 (models/micro_batch_memory.hpp, through
// PredictionCache::memory). Pinned here: the derived totals equal those of the graph really built at that
// micro-batch (and accumulation), exactly — every field of the memory plan, or of each pipeline stage's —
// over models of the three families, sequence lengths, precisions, tensor/sequence parallelism, pipelines
// (1F1B and interleaved), ZeRO 0–3 (hybrid too), full and selective recomputation and fused attention; and
// the derivation refuses graphs that differ in more than the micro-batch. docs/planning.md, "Memory".
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/micro_batch_memory.hpp"
#include "reports/prediction_cache.hpp"
#include "sim/memory_check.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

// Exact: every total is a sum of integer byte counts (far below 2^53), so the derivation's replay of the
// arena and the real plan agree to the bit or the derivation is wrong.
void check_same_totals(const models::MemoryPlan& derived, const models::MemoryPlan& built) {
  CHECK(derived.weights_bytes == built.weights_bytes);
  CHECK(derived.master_weights_bytes == built.master_weights_bytes);
  CHECK(derived.gradients_bytes == built.gradients_bytes);
  CHECK(derived.optimizer_state_bytes == built.optimizer_state_bytes);
  CHECK(derived.gathered_weights_bytes == built.gathered_weights_bytes);
  CHECK(derived.gathered_gradients_bytes == built.gathered_gradients_bytes);
  CHECK(derived.inputs_bytes == built.inputs_bytes);
  CHECK(derived.activations_peak_bytes == built.activations_peak_bytes);
  CHECK(derived.activations_live_peak_bytes == built.activations_live_peak_bytes);
  CHECK(derived.peak_op == built.peak_op);
  CHECK(derived.workspace_bytes == built.workspace_bytes);
  CHECK(derived.retained_activation_bytes == built.retained_activation_bytes);
}

// The cache's memory summary of `r` (derived: no graph goes through the cache) against the graph built.
void check_derived_equals_built(const models::ModelSpec& model, const models::Recipe& r) {
  PredictionCache cache;
  const auto derived = cache.memory(model, r);
  CHECK(cache.counts().memory_derivations == 1);
  CHECK(cache.counts().graph_builds == 0);  // the summary did not come from the fallback's graph build
  if (r.pipeline_parallel == 1) {
    check_same_totals(derived->plan, models::plan_memory(models::build_task_graph(model, r)));
    return;
  }
  std::vector<models::MemoryPlan> plans;
  for (const auto& chunk : models::build_pipeline_graphs(model, r)) plans.push_back(models::plan_memory(chunk));
  const std::vector<sim::StageMemory> built = sim::plan_pipeline_memory(plans, r);
  REQUIRE(derived->stages.size() == built.size());
  for (size_t s = 0; s < built.size(); ++s) {
    CHECK(derived->stages[s].in_flight == built[s].in_flight);
    check_same_totals(derived->stages[s].plan, built[s].plan);
  }
}

struct Variant {
  const char* model;
  int64_t seq_len;
  void (*apply)(models::Recipe&);
};

// Layout kinds the planner searches (reports/plan_space), each on top of the model's default recipe.
const Variant kVariants[] = {
    {"bert-tiny", 128, [](models::Recipe&) {}},
    {"bert-base", 128, [](models::Recipe& r) { r.data_parallel = 8; r.zero_stage = 1; }},
    {"bert-base", 512, [](models::Recipe& r) { r.recompute_activations = true; }},
    {"bert-base", 128, [](models::Recipe& r) { r.precision = models::Precision::fp32; r.fused_attention = true; }},
    {"bert-large", 128, [](models::Recipe& r) { r.tensor_parallel = 2; r.data_parallel = 4; r.zero_stage = 2; }},
    {"gpt2-124m", 256, [](models::Recipe& r) { r.tensor_parallel = 4; r.sequence_parallel = true; }},
    {"gpt2-124m", 128, [](models::Recipe& r) { r.tensor_parallel = 2; r.selective_recompute = true; }},
    {"gpt2-124m", 128, [](models::Recipe& r) { r.data_parallel = 4; r.zero_stage = 3; r.precision = models::Precision::bf16; r.fused_attention = true; }},
    {"gpt2-124m", 128, [](models::Recipe& r) { r.data_parallel = 8; r.zero_stage = 3; r.shard_group = 4; }},
    {"gpt2-124m", 128, [](models::Recipe& r) { r.pipeline_parallel = 2; r.data_parallel = 2; }},
    {"bert-base", 128, [](models::Recipe& r) { r.pipeline_parallel = 4; r.recompute_activations = true; r.zero_stage = 1; r.data_parallel = 2; }},
    {"gpt2-124m", 128, [](models::Recipe& r) {
       r.pipeline_parallel = 2; r.pipeline_schedule = models::PipelineSchedule::interleaved; r.virtual_stages = 3;
       r.tensor_parallel = 2; r.sequence_parallel = true; }},
    {"llama-2-7b", 256, [](models::Recipe& r) { r.tensor_parallel = 8; r.pipeline_parallel = 4; r.recompute_activations = true; }},
};

}  // namespace

TEST_CASE("derived memory totals equal the built graph's at every micro-batch, for every layout kind") {
  for (const Variant& v : kVariants) {
    const models::ModelSpec model = models::load_model(v.model);
    models::Recipe base;
    base.seq_len = v.seq_len;
    v.apply(base);
    // Micro-batches 1 and 2 are the derivation's own builds; 3, 5, 7, 12 are none of its points (odd, not a
    // power of two); the accumulation varies with them, as in the planner's probes.
    for (int64_t micro : {1, 2, 3, 5, 7, 12}) {
      models::Recipe r = base;
      r.micro_batch = micro;
      r.grad_accum = r.pipeline_parallel * (micro % 3 + 1);  // a multiple of the stages (interleaved needs it)
      CAPTURE(v.model);
      CAPTURE(recipe_key(v.model, r));
      check_derived_equals_built(model, r);
    }
  }
}

namespace {

// The first activation of `g` with a dimension that doubles from `at_one` to `g`, and that dimension.
std::pair<models::Tensor*, size_t> growing_activation(models::TaskGraph& g, const models::TaskGraph& at_one) {
  for (models::Tensor& t : g.tensors)
    if (t.role == models::TensorRole::activation && t.shape.size() >= 2)
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d] == 2 * at_one.tensor(t.id).shape[d]) return {&t, d};
  return {nullptr, 0};
}

}  // namespace

TEST_CASE("the derivation refuses graphs that differ in more than the micro-batch") {
  const models::ModelSpec model = models::load_model("bert-tiny");
  models::Recipe one;
  one.seq_len = 128;
  one.micro_batch = 1;
  models::Recipe two = one;
  two.micro_batch = 2;
  const models::TaskGraph at_one = models::build_task_graph(model, one), at_two = models::build_task_graph(model, two);
  CHECK(models::MicroBatchMemory::from(at_one, at_two).has_value());
  CHECK_FALSE(models::MicroBatchMemory::from(at_two, at_one).has_value());  // the points are micro-batch 1 and 2
  {  // a tensor that triples from micro-batch 1 to 2 is not elements(1) × B
    models::TaskGraph tripled = at_two;
    auto [t, d] = growing_activation(tripled, at_one);
    REQUIRE(t != nullptr);
    t->shape[d] = 3 * at_one.tensor(t->id).shape[d];
    CHECK_FALSE(models::MicroBatchMemory::from(at_one, tripled).has_value());
  }
  {  // nor one with a second dimension doubling too (B², though no dimension more than doubles)
    models::TaskGraph squared = at_two;
    auto [t, d] = growing_activation(squared, at_one);
    REQUIRE(t != nullptr);
    t->shape[d == 0 ? 1 : 0] *= 2;
    CHECK_FALSE(models::MicroBatchMemory::from(at_one, squared).has_value());
  }
  models::Recipe recomputed = two;  // another op sequence
  recomputed.recompute_activations = true;
  CHECK_FALSE(models::MicroBatchMemory::from(at_one, models::build_task_graph(model, recomputed)).has_value());
}
