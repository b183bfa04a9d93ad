// tests/reports/test_plan_search.cpp — the planner (reports/plan_search): on cases small enough to
// enumerate every layout × micro-batch by brute force (one node; two nodes, where ZeRO-3 is also searched
// hybrid), it finds the brute-force optimum, and its lower bound never exceeds a simulated step of any
// layout it searches (ZeRO 0–3, hybrid sharding, ZeRO-1 with pipelines, sequence parallelism); the bound's
// communication terms are non-zero where the simulator cannot hide communication; a model no layout can hold
// is refused with the fix; the sweep's --auto-recipe applies what it finds.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "reports/auto_recipe.hpp"
#include "reports/cache_bytes.hpp"
#include "reports/plan_bound.hpp"
#include "reports/plan_search.hpp"
#include "reports/prediction.hpp"
#include "sim/memory_check.hpp"
#include "sim/pipeline_step.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }

// GPT-2 124M, bf16 AdamW, on `nodes` DGX A100 nodes of `gpus` GPUs each, one pretraining phase.
Scenario gpt_scenario(const char* name, int nodes, int gpus, int seq_len, int micro_batch, int global_batch) {
  return parse_scenario(core::Json::parse(fmt::format(R"({{
    "name": "{}", "model": "gpt2-124m",
    "cluster": {{"node": "dgx-a100", "nodes": {}, "gpus_per_node": {}}},
    "recipe": {{"precision": "bf16", "optimizer": "adamw"}},
    "phases": [{{"name": "pretraining", "seq_len": {}, "micro_batch": {}, "global_batch": {}, "steps": 1000}}]}})",
                                                      name, nodes, gpus, seq_len, micro_batch, global_batch)),
                        "test");
}

// GPT-2 124M (12 layers, 12 heads) on 4 A100s of one DGX A100, 16 sequences of 256 per step: TP ∈ {1, 2, 4},
// PP ∈ {1, 2, 4}, per-rank batches of at most 16 — a few hundred candidates in all.
Scenario small_gpt() { return gpt_scenario("small-gpt", 1, 4, 256, 4, 16); }

// GPT-2 124M on two nodes of two A100s (DGX A100 nodes cut to 2 GPUs: the data-parallel traffic crosses
// InfiniBand), 8 sequences of 128 per step: D = 4 > 2 GPUs per node, so ZeRO-3 is searched hybrid too.
Scenario two_node_gpt() { return gpt_scenario("two-node-gpt", 2, 2, 128, 2, 8); }

struct BruteForce {
  double best_seconds = std::numeric_limits<double>::infinity();
  Layout best;
  int simulated = 0;
  // Candidates simulated per searched option the bound has terms for (each must be exercised).
  int zero3 = 0, hybrid = 0, zero1_pipeline = 0, sequence_parallel = 0, data_parallel = 0;
  void count(const Layout& l) {
    ++simulated;
    zero3 += l.zero_stage == 3;
    hybrid += l.shard_group > 0;
    zero1_pipeline += l.zero_stage == 1 && l.pipeline_parallel > 1;
    sequence_parallel += l.sequence_parallel;
    data_parallel += l.data_parallel > 1;
  }
};

// Every layout the planner enumerates, every micro-batch that divides the per-rank batch, every one the
// simulator accepts and that fits: simulated, the fastest kept — no bound, no pruning, no binary search.
BruteForce brute_force(const Scenario& s, int64_t global) {
  const Scenario st = with_stack(s, profiles());
  const sim::ClusterConfig config = resolve_cluster(st, profiles());
  PredictionCache cache;
  const auto model = cache.model(st.model);
  BruteForce out;
  for (const Layout& layout : enumerate_layouts(config.gpu_count(), config.cluster.node.gpus_per_node, model->num_layers)) {
    for (int64_t micro = 1; micro <= global / layout.data_parallel; ++micro) {
      if ((global / layout.data_parallel) % micro != 0) continue;
      models::Recipe r = st.recipe;
      layout.apply(r);
      r.seq_len = st.phases[0].seq_len;
      r.micro_batch = micro;
      r.grad_accum = global / (layout.data_parallel * micro);
      if (layout_problem(*model, r)) continue;
      double need = 0, iteration = 0;
      if (r.pipeline_parallel == 1) {
        need = sim::check_memory(cache.graph(*model, r)->plan, config.gpu).needed_bytes;
        if (need > static_cast<double>(config.gpu.memory_bytes)) continue;
        iteration = sim::simulate_step(cache.graph(*model, r)->graph, config).iteration_seconds;
      } else {
        const auto p = cache.pipeline(*model, r);
        need = sim::check_memory(sim::worst_stage(p->stages, config.gpu).plan, config.gpu).needed_bytes;
        if (need > static_cast<double>(config.gpu.memory_bytes)) continue;
        iteration = sim::simulate_pipeline_step(p->chunks, config).iteration_seconds;
      }
      out.count(layout);
      const double bound = step_lower_bound_seconds(*model, r, config, cache);
      CHECK_MESSAGE(bound <= iteration * (1 + 1e-9), layout.label(), " micro-batch ", micro, ": bound ", bound,
                    " > simulated ", iteration);
      const double seconds = 1000 * iteration;  // 1,000 steps whatever the micro-batch (global batch fixed)
      if (seconds < out.best_seconds) out.best_seconds = seconds, out.best = layout;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the planner finds the brute-force optimum of a small GPT case, and its bound holds everywhere") {
  const Scenario s = small_gpt();
  const BruteForce brute = brute_force(s, 16);
  REQUIRE(brute.simulated > 50);  // the case must actually offer choices (pipelines, TP, ZeRO, recompute)
  CHECK(brute.zero3 > 0);
  CHECK(brute.zero1_pipeline > 0);
  CHECK(brute.sequence_parallel > 0);
  PredictionCache cache;
  const PlanSearch search = search_plans(s, {16}, profiles(), cache);
  REQUIRE(search.best() != nullptr);
  // The same simulator on the same recipes: equal to rounding (a reused collective duration, 1e-9).
  CHECK(search.best()->seconds == doctest::Approx(brute.best_seconds).epsilon(1e-9));
  INFO("planner: ", search.best()->layout.label(), "; brute force: ", brute.best.label());
  CHECK(search.simulations < brute.simulated);  // the bound pruned something
  // Every layout is accounted for, and the plan predicts like any scenario.
  CHECK(search.layouts.size() == enumerate_layouts(4, 4, 12).size());
  const Prediction p = predict_scenario(apply_plan(s, *search.best()), profiles());
  CHECK(p.training_seconds == doctest::Approx(search.best()->seconds).epsilon(1e-9));
}

TEST_CASE("two nodes: the planner finds the brute-force optimum with hybrid sharding searched; the bound holds") {
  const Scenario s = two_node_gpt();
  const BruteForce brute = brute_force(s, 8);
  CHECK(brute.hybrid > 0);  // shard group 2 = one node's GPUs ÷ T 1, D 4
  CHECK(brute.zero3 > brute.hybrid);
  CHECK(brute.zero1_pipeline > 0);
  PredictionCache cache;
  const PlanSearch search = search_plans(s, {8}, profiles(), cache);
  REQUIRE(search.best() != nullptr);
  CHECK(search.best()->seconds == doctest::Approx(brute.best_seconds).epsilon(1e-9));
  INFO("planner: ", search.best()->layout.label(), "; brute force: ", brute.best.label());
  CHECK(search.simulations < brute.simulated);
}

TEST_CASE("the bound counts the communication a step cannot hide") {
  // Across two nodes (two_node_gpt), without accumulation: ZeRO-3's first gather has nothing to overlap,
  // a data-parallel step's last bucket is reduced after the last backward op, and a pipeline's stages reduce
  // their gradients after the flush — so each bound exceeds the same recipe's op times alone (the compute-only
  // bound the planner used before), by at least a microsecond (an inter-node collective of a 124M model's
  // buckets takes far longer).
  const Scenario s = with_stack(two_node_gpt(), profiles());
  const sim::ClusterConfig config = resolve_cluster(s, profiles());
  PredictionCache cache;
  const auto model = cache.model(s.model);
  auto recipe = [&](int64_t pp, int zero) {
    models::Recipe r = s.recipe;
    Layout layout;
    layout.pipeline_parallel = pp;
    layout.data_parallel = 4 / pp;
    layout.zero_stage = zero;
    layout.apply(r);
    r.seq_len = 128;
    r.micro_batch = 1;
    r.grad_accum = 8 / layout.data_parallel;
    return r;
  };
  for (int zero : {0, 1, 3}) {
    const models::Recipe r = recipe(1, zero);
    const double compute = cache.single_device(*model, r, config.gpu).step_seconds;
    CHECK_MESSAGE(step_lower_bound_seconds(*model, r, config, cache) > compute + 1e-6, "ZeRO-", zero);
  }
  for (int zero : {0, 1}) {
    // Without the reductions after the flush a pipeline's bound is at most the flush (its passes end by then)
    // plus the optimizer tail; counting them it exceeds the simulated flush.
    const models::Recipe r = recipe(2, zero);
    const sim::StepSimulation simulated = cache.pipeline_step(*model, r, config);
    const double bound = step_lower_bound_seconds(*model, r, config, cache);
    CHECK(bound <= simulated.iteration_seconds * (1 + 1e-9));
    CHECK_MESSAGE(bound > simulated.pipeline_flush_seconds, "pipeline, ZeRO-", zero, ": bound ", bound, ", flush ",
                  simulated.pipeline_flush_seconds, ", iteration ", simulated.iteration_seconds);
  }
}

TEST_CASE("with the pipeline's overlap options the bound still holds (the reductions and gathers may hide)") {
  // overlap_grad_reduce reduces buckets during the last backward and overlap_param_gather gathers before the
  // forwards (docs/parallelism.md): a bound that added them after the flush would exceed the simulated step.
  const Scenario s = with_stack(two_node_gpt(), profiles());
  const sim::ClusterConfig config = resolve_cluster(s, profiles());
  PredictionCache cache;
  const auto model = cache.model(s.model);
  for (int zero : {0, 1}) for (int64_t v : {1, 2}) {
    models::Recipe r = s.recipe;
    Layout layout;
    layout.pipeline_parallel = 2;
    layout.data_parallel = 2;
    layout.zero_stage = zero;
    if (v > 1) layout.schedule = models::PipelineSchedule::interleaved, layout.virtual_stages = v;
    layout.apply(r);
    r.seq_len = 128;
    r.micro_batch = 1;
    r.grad_accum = 4;
    r.overlap_grad_reduce = true;
    r.overlap_param_gather = zero == 1;
    const sim::StepSimulation simulated = cache.pipeline_step(*model, r, config);
    const double bound = step_lower_bound_seconds(*model, r, config, cache);
    CHECK_MESSAGE(bound <= simulated.iteration_seconds * (1 + 1e-9), "ZeRO-", zero, " V ", v, ": bound ", bound,
                  " > simulated ", simulated.iteration_seconds);
  }
}

TEST_CASE("the bound's reduced graphs, kept by GPU, give every network the bound a fresh cache gives it") {
  // The two-node GPT case over three networks, and once on V100 nodes (another GPU): the cache keeps each
  // recipe's reduced graph (reports/bound_graph) by (graph, GPU) and times the collectives per cluster, so a
  // network reached through the kept graph must get, to the bit, what a cache that never saw another network
  // gives (the same op times summed in the same order); and a GPU must never get another GPU's op times.
  const Scenario base = with_stack(two_node_gpt(), profiles());
  std::vector<Scenario> clusters;
  for (const char* network : {"ib-hdr", "10gbe-tcp", "ib-edr"}) {
    Scenario s = base;
    s.network = network;
    clusters.push_back(s);
  }
  Scenario v100 = base;
  v100.node = "dgx-1";
  v100.stack = "";  // the V100's own stack
  clusters.push_back(with_stack(v100, profiles()));
  PredictionCache shared;
  const auto model = shared.model(base.model);
  std::vector<models::Recipe> recipes;
  for (const Layout& layout : {Layout{1, 1, 4}, Layout{2, 1, 2}, Layout{1, 2, 2}}) {
    models::Recipe r = base.recipe;
    layout.apply(r);
    r.seq_len = 128;
    r.micro_batch = 2;
    r.grad_accum = 2;
    r.precision = models::Precision::fp16;  // V100 has no bf16
    recipes.push_back(r);
    r.zero_stage = 3;  // the sharded step's bound (its first gather's readers)
    if (r.pipeline_parallel == 1) recipes.push_back(r);
  }
  for (const Scenario& s : clusters) {
    const sim::ClusterConfig config = resolve_cluster(s, profiles());
    for (const models::Recipe& r : recipes) {
      PredictionCache fresh;
      CAPTURE(recipe_key(s.model, r));
      CAPTURE(s.network);
      CAPTURE(s.node);
      CHECK(step_lower_bound_seconds(*model, r, config, shared) == step_lower_bound_seconds(*model, r, config, fresh));
    }
  }
  // Small enough to keep where graphs are not (the point of keeping it): under a tenth of the graph's
  // estimated bytes (reports/cache_bytes), for the data-parallel recipe.
  const size_t reduced = approximate_bytes(shared.bound_graphs(*model, recipes[0], resolve_cluster(clusters[0], profiles()).gpu)->front());
  const size_t whole = approximate_bytes(shared.graph(*model, recipes[0])->graph);
  MESSAGE("reduced graph ", reduced, " bytes, graph ", whole, " bytes");
  CHECK(reduced * 10 < whole);
  // Each recipe's graph reduced once per GPU: the second and third network found it.
  CHECK(shared.counts().bound_graphs == 2 * static_cast<long>(recipes.size()));
  CHECK(shared.counts().bound_graph_hits == 2 * static_cast<long>(recipes.size()) + 1);  // and the size check
}

TEST_CASE("a runner-up says why it lost") {
  PredictionCache cache;
  const PlanSearch search = search_plans(small_gpt(), {16}, profiles(), cache);
  REQUIRE(search.best() != nullptr);
  bool slower = false, invalid = false;
  for (const auto& p : search.layouts) {
    const std::string why = p.why(*search.best(), search.available_bytes);
    if (p.verdict == PlanVerdict::slower || p.verdict == PlanVerdict::bounded) {
      slower = true;
      CHECK(p.seconds >= search.best()->seconds);
      CHECK(why.find("% slower") != std::string::npos);
    }
    if (p.verdict == PlanVerdict::invalid) {
      invalid = true;
      CHECK(why.find("invalid: ") == 0);
    }
  }
  CHECK(slower);
  CHECK(invalid);  // e.g. ZeRO with a pipeline, which the simulator does not run yet
}

TEST_CASE("GPT-3 175B on one DGX A100 is refused with the GPUs its model states need") {
  // Model states lower bound (reports/plan_space): 96 layers × 12·h² (h = 12,288; ffn 4h) = 1.7396e11
  // weights × 16 bytes (bf16 weight and gradient, fp32 master, two Adam moments) = 2.783e12 bytes over
  // 40 GiB − 1.5 GiB reserved = 41.34e9 usable bytes per GPU: 67.3, so at least 68 GPUs (9 nodes of 8).
  const Scenario s = load_scenario("gpt3-175b-1024gpu", {"cluster.nodes=1"});
  PredictionCache cache;
  const PlanSearch search = search_plans(s, {1536}, profiles(), cache);
  CHECK(search.best() == nullptr);
  try {
    refuse_plan(s, search, profiles());
    FAIL("no refusal");
  } catch (const core::InfeasibleError& e) {
    const std::string what = e.what();
    CHECK(e.kind() == core::Infeasibility::memory);
    CHECK_MESSAGE(what.find("at least 68 GPUs of this kind (cluster.nodes >= 9)") != std::string::npos, what);
    CHECK_MESSAGE(what.find("no plan fits gpt3-175b on 8 × a100-40gb") == 0, what);
  }
  CHECK_THROWS_AS(choose_recipe(s, {1536}, profiles(), cache), core::InfeasibleError);
}

TEST_CASE("the model-states bound counts what the builder stores: fp8 keeps bf16 weights and gradients") {
  // models/task_graph.cpp activation_dtype: fp8 stores weights and gradients in bf16 (only the GEMM operands
  // are 8-bit casts) with fp32 masters, so its bound must equal bf16's exactly, and per parameter it is
  // 2 (weight) + 2 (gradient) + 4 (master) + 8 (Adam moments) = 16 bytes (the bound once counted 4 + 4 for fp8).
  const Scenario s = load_scenario("gpt3-175b-1024gpu");
  PredictionCache cache;
  const auto model = cache.model(s.model);
  const hwprofiles::GpuProfile& gpu = profiles().gpus.at("h100-sxm");
  models::Recipe bf16 = s.recipe, fp8 = s.recipe;
  bf16.precision = models::Precision::bf16;
  fp8.precision = models::Precision::fp8;
  CHECK(model_states_lower_bound(*model, fp8, gpu) == doctest::Approx(model_states_lower_bound(*model, bf16, gpu)).epsilon(1e-12));
  // Per parameter without sharding: (bound − reserved) ÷ (layers ÷ P × layer weights ÷ T) = 16 bytes.
  const double elements = static_cast<double>((model->num_layers + s.recipe.pipeline_parallel - 1) /
                                              s.recipe.pipeline_parallel) *
                          layer_weight_elements(*model) / static_cast<double>(s.recipe.tensor_parallel);
  models::Recipe unsharded = fp8;
  unsharded.zero_stage = 0;
  CHECK((model_states_lower_bound(*model, unsharded, gpu) - gpu.reserved_memory_bytes) / elements ==
        doctest::Approx(16.0).epsilon(1e-12));
}

TEST_CASE("the bound's layer weights are a Llama layer's: GQA's smaller K/V and SwiGLU's three matrices") {
  // Llama 3 405B (8 kv heads of 128): the builder's layer-0 parameters less its two RMSNorm gains, exactly.
  const auto model = models::load_model("llama-3-405b");
  models::Recipe r;
  r.seq_len = 16;
  r.micro_batch = 1;
  r.tensor_parallel = 8;
  const models::TaskGraph g = models::build_task_graph(model, r);
  int64_t layer0 = 0;
  for (const auto& p : g.params)
    if (p.layer == 0) layer0 += p.elements;
  const double norms = 2.0 * static_cast<double>(model.hidden_size);
  CHECK((static_cast<double>(layer0) - norms) * 8 == doctest::Approx(layer_weight_elements(model)).epsilon(1e-15));
}

TEST_CASE("a layout replaces the scenario's own sharding and rank order") {
  models::Recipe r;
  r.zero_stage = 3;
  r.shard_group = 8;
  r.rank_order = models::RankOrder::tp_pp_dp;
  Layout layout;
  layout.tensor_parallel = 2;
  layout.data_parallel = 4;
  layout.apply(r);
  CHECK(r.zero_stage == 0);
  CHECK(r.shard_group == 0);
  CHECK(r.rank_order == models::RankOrder::tp_dp_pp);
}

TEST_CASE("a layout keeps the scenario's pipeline overlap options only where they apply") {
  models::Recipe r;
  r.overlap_grad_reduce = true;
  r.overlap_param_gather = true;
  Layout pipeline;
  pipeline.pipeline_parallel = 2;
  pipeline.data_parallel = 2;
  pipeline.zero_stage = 1;
  models::Recipe kept = r;
  pipeline.apply(kept);
  CHECK(kept.overlap_grad_reduce);
  CHECK(kept.overlap_param_gather);
  pipeline.zero_stage = 0;  // no ZeRO-1 gathers to overlap
  models::Recipe ddp = r;
  pipeline.apply(ddp);
  CHECK(ddp.overlap_grad_reduce);
  CHECK_FALSE(ddp.overlap_param_gather);
  Layout flat;  // no pipeline: the recipe would refuse both (exit 2), so the layout clears them
  flat.data_parallel = 4;
  flat.zero_stage = 1;
  models::Recipe none = r;
  flat.apply(none);
  CHECK_FALSE(none.overlap_grad_reduce);
  CHECK_FALSE(none.overlap_param_gather);
}

TEST_CASE("hybrid ZeRO-2's bound times its collectives in the shard group, and holds") {
  // zero_stage 2 with shard_group 2 on two nodes × 2 GPUs (D 4): each reduce-scatter stays in a node and the
  // shard is all-reduced across the nodes (docs/parallelism.md, "Hybrid sharding"); a bound that timed the
  // reduce-scatter over all four ranks (across InfiniBand) and no replica all-reduce would not be this one.
  const Scenario s = with_stack(two_node_gpt(), profiles());
  const sim::ClusterConfig config = resolve_cluster(s, profiles());
  PredictionCache cache;
  const auto model = cache.model(s.model);
  models::Recipe r = s.recipe;
  Layout layout;
  layout.data_parallel = 4;
  layout.zero_stage = 2;
  layout.apply(r);
  r.shard_group = 2;
  r.seq_len = 128;
  r.micro_batch = 1;
  r.grad_accum = 2;
  const double hybrid_bound = step_lower_bound_seconds(*model, r, config, cache);
  const double hybrid_step = cache.step(*model, r, config).iteration_seconds;
  CHECK(hybrid_bound <= hybrid_step * (1 + 1e-9));
  models::Recipe full = r;
  full.shard_group = 0;
  CHECK(hybrid_bound != doctest::Approx(step_lower_bound_seconds(*model, full, config, cache)).epsilon(1e-6));
}
