// tests/reports/test_bound_derivation.cpp — the step bound's reduced graphs of a costed candidate are derived
// from the recipe's graphs at micro-batch 1 and 2 (models/micro_batch_ops.hpp, through
// PredictionCache::bound_graphs), with no graph built at the candidate's micro-batch. Pinned here: the derived
// reduced graph equals the one reduced from the graph really built at that micro-batch and accumulation,
// exactly — every op time, collective, dependency and count — over the layout kinds of
// test_memory_derivation.cpp plus fp8 and GQA; the derivation refuses what is not exactly derivable; and the
// cache's derivations are keyed on every recipe and model field a graph depends on (one changed field is a
// miss), but not on the micro-batch and accumulation the derivation covers. docs/sweep.md, "Speed of
// --auto-recipe".
#include <doctest/doctest.h>

#include <functional>

#include "models/builder.hpp"
#include "models/micro_batch_ops.hpp"
#include "reports/bound_graph.hpp"
#include "reports/prediction_cache.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

hwprofiles::GpuProfile gpu(const std::string& name) {
  return hwprofiles::device_profile(test::shipped_profiles(), name,
                                    hwprofiles::default_stack_for(test::shipped_profiles(), name));
}

// Exact: the derivation runs the builder's cost function on the same integers, so every double is the
// build's to the bit or the derivation is wrong.
void check_same_bound_graph(const BoundGraph& derived, const BoundGraph& built) {
  CHECK(derived.micro_steps == built.micro_steps);
  REQUIRE(derived.ops.size() == built.ops.size());
  for (size_t i = 0; i < built.ops.size(); ++i) {
    const BoundOp &d = derived.ops[i], &b = built.ops[i];
    CAPTURE(i);
    CHECK(d.compute_seconds == b.compute_seconds);
    CHECK(d.id == b.id);
    CHECK(d.comm == b.comm);
    CHECK(d.kind == b.kind);
    CHECK(d.phase == b.phase);
  }
  REQUIRE(derived.comms.size() == built.comms.size());
  for (size_t c = 0; c < built.comms.size(); ++c) {
    CHECK(derived.comms[c].group == built.comms[c].group);
    CHECK(derived.comms[c].group_size == built.comms[c].group_size);
    CHECK(derived.comms[c].bytes == built.comms[c].bytes);
    CHECK(derived.comms[c].bucket == built.comms[c].bucket);
  }
  CHECK(derived.sources == built.sources);
  CHECK(derived.first_gather_readers == built.first_gather_readers);
}

// The cache's reduced graphs of `r` (derived: no graph goes through the cache) against the graph built.
void check_derived_equals_built(const models::ModelSpec& model, const models::Recipe& r,
                                const hwprofiles::GpuProfile& device) {
  PredictionCache cache;
  const auto derived = cache.bound_graphs(model, r, device);
  CHECK(cache.counts().bound_graphs_derived == 1);
  CHECK(cache.counts().graph_builds == 0);  // not from the fallback's graph build
  std::vector<models::TaskGraph> built;
  if (r.pipeline_parallel > 1) built = models::build_pipeline_graphs(model, r);
  else built.push_back(models::build_task_graph(model, r));
  REQUIRE(derived->size() == built.size());
  for (size_t c = 0; c < built.size(); ++c) check_same_bound_graph((*derived)[c], bound_graph(built[c], device));
}

struct Variant {
  const char* model;
  int64_t seq_len;
  const char* gpu;
  void (*apply)(models::Recipe&);
};

// test_memory_derivation.cpp's layout kinds, and the precisions whose ops differ (fp32 and TF32 GEMMs, fp8's
// casts and scale updates), on a GPU that runs each.
const Variant kVariants[] = {
    {"bert-tiny", 128, "t4", [](models::Recipe&) {}},
    {"bert-base", 128, "t4", [](models::Recipe& r) { r.data_parallel = 8; r.zero_stage = 1; }},
    {"bert-base", 512, "t4", [](models::Recipe& r) { r.recompute_activations = true; }},
    {"bert-base", 128, "v100-sxm2-16gb", [](models::Recipe& r) { r.precision = models::Precision::fp32; r.fused_attention = true; }},
    {"bert-large", 128, "t4", [](models::Recipe& r) { r.tensor_parallel = 2; r.data_parallel = 4; r.zero_stage = 2; }},
    {"gpt2-124m", 256, "a100-40gb", [](models::Recipe& r) { r.tensor_parallel = 4; r.sequence_parallel = true; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) { r.tensor_parallel = 2; r.selective_recompute = true; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) { r.data_parallel = 4; r.zero_stage = 3; r.precision = models::Precision::bf16; r.fused_attention = true; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) { r.data_parallel = 8; r.zero_stage = 3; r.shard_group = 4; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) { r.precision = models::Precision::tf32; r.fused_softmax_dropout = true; r.fused_bias_dropout_residual = true; }},
    {"gpt2-124m", 128, "h100-sxm", [](models::Recipe& r) { r.precision = models::Precision::fp8; r.data_parallel = 2; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) { r.pipeline_parallel = 2; r.data_parallel = 2; }},
    {"bert-base", 128, "t4", [](models::Recipe& r) { r.pipeline_parallel = 4; r.recompute_activations = true; r.zero_stage = 1; r.data_parallel = 2; }},
    {"gpt2-124m", 128, "a100-40gb", [](models::Recipe& r) {
       r.pipeline_parallel = 2; r.pipeline_schedule = models::PipelineSchedule::interleaved; r.virtual_stages = 3;
       r.tensor_parallel = 2; r.sequence_parallel = true; }},
    {"llama-2-7b", 256, "a100-80gb", [](models::Recipe& r) { r.tensor_parallel = 8; r.pipeline_parallel = 4; r.recompute_activations = true; }},
};

}  // namespace

TEST_CASE("derived reduced graphs equal the built graph's at every micro-batch, for every layout kind") {
  for (const Variant& v : kVariants) {
    const models::ModelSpec model = models::load_model(v.model);
    const hwprofiles::GpuProfile device = gpu(v.gpu);
    models::Recipe base;
    base.seq_len = v.seq_len;
    v.apply(base);
    // Micro-batches 1 and 2 are the derivation's own builds; 3, 5, 7, 12 are none of its points (odd, not a
    // power of two); the accumulation varies with them, as in the planner's candidates.
    for (int64_t micro : {1, 2, 3, 5, 7, 12}) {
      models::Recipe r = base;
      r.micro_batch = micro;
      r.grad_accum = r.pipeline_parallel * (micro % 3 + 1);  // a multiple of the stages (interleaved needs it)
      const std::string gpu_name = v.gpu;
      CAPTURE(gpu_name);
      CAPTURE(recipe_key(v.model, r));
      check_derived_equals_built(model, r, device);
    }
  }
}

TEST_CASE("the op derivation refuses graphs whose costs are not exactly derivable") {
  const models::ModelSpec model = models::load_model("bert-tiny");
  models::Recipe one;
  one.seq_len = 128;
  one.micro_batch = 1;
  models::Recipe two = one;
  two.micro_batch = 2;
  const models::TaskGraph at_one = models::build_task_graph(model, one), at_two = models::build_task_graph(model, two);
  REQUIRE(models::MicroBatchOps::from(at_one, at_two).has_value());
  CHECK_FALSE(models::MicroBatchOps::from(at_two, at_one).has_value());  // the points are micro-batch 1 and 2
  auto first_gemm = [](const models::TaskGraph& g) {
    for (const models::Op& op : g.ops)
      if (op.kind == models::OpKind::gemm) return static_cast<size_t>(op.id);
    throw std::logic_error("no GEMM");
  };
  const size_t gemm = first_gemm(at_one);
  {  // a GEMM size that triples from micro-batch 1 to 2 is not size(1) × B
    models::TaskGraph tripled = at_two;
    tripled.ops[gemm].attrs.gemm.m = 3 * at_one.ops[gemm].attrs.gemm.m;
    CHECK_FALSE(models::MicroBatchOps::from(at_one, tripled).has_value());
  }
  {  // an op whose cost is not what the recorded fields give (as if the cost read a field left unrecorded)
    models::TaskGraph other = at_two;
    other.ops[gemm].flops += 1;
    CHECK_FALSE(models::MicroBatchOps::from(at_one, other).has_value());
  }
  {  // a collective whose bucket changes with the micro-batch
    models::Recipe dp = one;
    dp.data_parallel = 2;
    models::Recipe dp_two = dp;
    dp_two.micro_batch = 2;
    const models::TaskGraph dp_one = models::build_task_graph(model, dp);
    CHECK(models::MicroBatchOps::from(dp_one, models::build_task_graph(model, dp_two)).has_value());
    models::TaskGraph rebucketed = models::build_task_graph(model, dp_two);
    bool changed = false;
    for (models::Op& op : rebucketed.ops)
      if (models::is_communication(op.kind)) {
        op.attrs.comm.bucket += 1;
        changed = true;
      }
    REQUIRE(changed);
    CHECK_FALSE(models::MicroBatchOps::from(dp_one, rebucketed).has_value());
  }
  models::Recipe fused = two;  // another op sequence
  fused.fused_attention = true;
  CHECK_FALSE(models::MicroBatchOps::from(at_one, models::build_task_graph(model, fused)).has_value());
}

namespace {

// One field a graph depends on: `prepare` (when given) sets what the field needs to matter, then `apply`
// changes the field alone (each gives a buildable recipe).
struct Change {
  const char* field;
  std::function<void(models::Recipe&)> apply;
  std::function<void(models::Recipe&)> prepare = [](models::Recipe&) {};
};

}  // namespace

TEST_CASE("derivations are keyed on every field the graph depends on, and on neither micro-batch nor accumulation") {
  const models::ModelSpec model = models::load_model("gpt2-124m");
  const hwprofiles::GpuProfile device = gpu("a100-40gb");
  models::Recipe base;  // a pipeline, so that its fields matter; data parallel, so that ZeRO's do
  base.seq_len = 128;
  base.micro_batch = 4;
  base.grad_accum = 4;
  base.pipeline_parallel = 2;
  base.data_parallel = 2;
  using R = models::Recipe;
  auto zero_one = [](R& r) { r.zero_stage = 1; };  // ZeRO-2 and 3 are not simulated with a pipeline
  auto zero_three = [](R& r) { r.pipeline_parallel = 1; r.data_parallel = 4; r.zero_stage = 3; };
  const std::vector<Change> changes = {
      {"precision", [](R& r) { r.precision = models::Precision::bf16; }},
      {"seq_len", [](R& r) { r.seq_len = 256; }},
      {"optimizer", [](R& r) { r.optimizer = models::OptimizerKind::adamw; }},
      {"data_parallel", [](R& r) { r.data_parallel = 4; }},
      {"tensor_parallel", [](R& r) { r.tensor_parallel = 2; }},
      {"pipeline_parallel", [](R& r) { r.pipeline_parallel = 4; }},
      {"pipeline_schedule", [](R& r) { r.pipeline_schedule = models::PipelineSchedule::gpipe; }},
      {"virtual_stages", [](R& r) { r.virtual_stages = 2; },
       [](R& r) { r.pipeline_schedule = models::PipelineSchedule::interleaved; r.virtual_stages = 3; }},
      {"stage_layers", [](R& r) { r.stage_layers = {5, 7}; }},
      {"rank_order", [](R& r) { r.rank_order = models::RankOrder::tp_pp_dp; }},
      {"overlap_grad_reduce", [](R& r) { r.overlap_grad_reduce = true; }},
      {"overlap_param_gather", [](R& r) { r.overlap_param_gather = true; }, zero_one},
      {"zero_stage", [](R& r) { r.zero_stage = 1; }},
      {"shard_group", [](R& r) { r.shard_group = 2; }, zero_three},
      {"recompute_activations", [](R& r) { r.recompute_activations = true; }},
      {"sequence_parallel", [](R& r) { r.sequence_parallel = true; }, [](R& r) { r.tensor_parallel = 2; }},
      {"selective_recompute", [](R& r) { r.selective_recompute = true; }},
      {"bucket_bytes", [](R& r) { r.bucket_bytes = 1 << 20; }},
      {"max_predictions", [](R& r) { r.max_predictions = 7; }},
      {"gradient_clipping", [](R& r) { r.gradient_clipping = false; }},
      {"include_dropout", [](R& r) { r.include_dropout = false; }},
      {"fused_attention", [](R& r) { r.fused_attention = true; }},
      {"multi_tensor_optimizer", [](R& r) { r.multi_tensor_optimizer = false; }},
      {"fused_softmax_dropout", [](R& r) { r.fused_softmax_dropout = true; }},
      {"fused_bias_dropout_residual", [](R& r) { r.fused_bias_dropout_residual = true; }},
  };
  for (const Change& change : changes) {
    PredictionCache cache;  // its own: what another change derived must not answer this one
    models::Recipe r = base;
    change.prepare(r);
    cache.bound_graphs(model, r, device);  // the recipe before the change
    change.apply(r);
    const std::string field = change.field;
    CAPTURE(field);
    CAPTURE(recipe_key(model.name, r));
    const long before = cache.counts().memory_derivations;
    const auto derived = cache.bound_graphs(model, r, device);
    CHECK(cache.counts().memory_derivations == before + 1);  // a miss: derived anew, not another recipe's
    // And what it derived is this recipe's own (the build's), so the field does reach the graph.
    std::vector<models::TaskGraph> built;
    if (r.pipeline_parallel > 1) built = models::build_pipeline_graphs(model, r);
    else built.push_back(models::build_task_graph(model, r));
    REQUIRE(derived->size() == built.size());
    for (size_t c = 0; c < built.size(); ++c) check_same_bound_graph((*derived)[c], bound_graph(built[c], device));
  }
  PredictionCache cache;
  cache.bound_graphs(model, base, device);
  REQUIRE(cache.counts().memory_derivations == 1);
  // A model field: another model of the same shape but one field (its vocabulary) is another derivation.
  models::ModelSpec wider = model;
  wider.vocab_size += 64;
  const long before_model = cache.counts().memory_derivations;
  cache.bound_graphs(wider, base, device);
  CHECK(cache.counts().memory_derivations == before_model + 1);
  // What the derivation covers: another micro-batch or accumulation is the same derivation (a hit).
  const long before_hits = cache.counts().memory_derivation_hits;
  for (auto [micro, accumulation] : {std::pair<int64_t, int64_t>{8, 2}, {3, 6}, {4, 2}}) {
    models::Recipe r = base;
    r.micro_batch = micro;
    r.grad_accum = accumulation;
    cache.bound_graphs(model, r, device);
  }
  CHECK(cache.counts().memory_derivation_hits == before_hits + 3);
  // And another GPU reuses the derivation but not the GPU-specific reduced graph.
  const long graphs_before = cache.counts().bound_graphs, hits_before = cache.counts().memory_derivation_hits;
  cache.bound_graphs(model, base, gpu("a100-80gb"));
  CHECK(cache.counts().bound_graphs == graphs_before + 1);
  CHECK(cache.counts().memory_derivation_hits == hits_before + 1);
}
