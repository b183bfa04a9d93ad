// tests/reports/test_sweep.cpp — `ptsim sweep` as a library: axis and range parsing, expansion order,
// cached predictions equal to uncached ones, infeasible configurations with their reasons, the frontier and
// recommendations on hand-made results, and --auto-recipe keeping the global batch within memory.
#include <doctest/doctest.h>

#include <cmath>

#include "hwprofiles/profiles.hpp"
#include "reports/auto_recipe.hpp"
#include "reports/prediction.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_output.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }

SweepSpec t4_spec(const std::vector<std::string>& axes, const std::vector<std::string>& overrides = {}) {
  SweepSpec spec;
  spec.base = load_base_scenario("t4-academic-cluster", overrides, &spec.base_source, &spec.base_edits);
  for (const auto& a : axes) spec.axes.push_back(parse_axis(a));
  return spec;
}

std::vector<size_t> all_indices(const SweepSpec& spec) {
  std::vector<size_t> v(configuration_count(spec));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

// A feasible result with the figures the analysis reads.
ConfigResult made(size_t index, double days, std::optional<double> rental, std::optional<double> ownership = {}) {
  ConfigResult r;
  r.index = index;
  r.evaluated = r.feasible = true;
  r.time_to_train_seconds = days * 86400;
  r.rental_usd = rental;
  r.ownership_usd = ownership;
  r.gpus = 8;
  return r;
}

}  // namespace

TEST_CASE("axes: lists, ranges and their errors name the axis") {
  SweepAxis a = parse_axis("cluster.nodes=1..64x2");
  CHECK(a.key == "cluster.nodes");
  REQUIRE(a.values.size() == 7);  // 1, 2, 4, …, 64
  CHECK(a.values.front() == 1);
  CHECK(a.values.back() == 64);
  CHECK(parse_axis("cluster.nodes=4..10+3").values == std::vector<core::Json>{4, 7, 10});
  CHECK(parse_axis("cluster.nodes=2..4").values == std::vector<core::Json>{2, 3, 4});
  SweepAxis mixed = parse_axis("cluster.network=10gbe-tcp,ib-edr");
  CHECK(mixed.values == std::vector<core::Json>{"10gbe-tcp", "ib-edr"});
  CHECK(parse_axis("recipe.recompute=true,false").values == std::vector<core::Json>{true, false});
  auto fails_with = [](const std::string& text, const std::string& part) {
    try {
      parse_axis(text);
    } catch (const core::InputError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
      return;
    }
    FAIL("no error for " << text);
  };
  fails_with("cluster.nodes", "expected KEY=V1,V2");
  fails_with("cluster.nodes=8..4", "ends before it starts");
  fails_with("cluster.nodes=1..8x1", "factor >= 2");
  fails_with("cluster.nodes=1..8+0", "step >= 1");
  fails_with("cluster.nodes=a..8", "'a' is not an integer");
  fails_with("cluster.nodes=1,,2", "empty value");
  fails_with("cluster..nodes=1", "dotted scenario key");
  fails_with("cluster.nodes=1..1000000", "more than 100000 values");
}

TEST_CASE("durations and objectives") {
  CHECK(parse_duration_seconds("21d", "--deadline") == 21 * 86400.0);
  CHECK(parse_duration_seconds("36h", "--deadline") == 36 * 3600.0);
  CHECK(parse_duration_seconds("90min", "--deadline") == 90 * 60.0);
  CHECK(parse_duration_seconds("90m", "--deadline") == 90 * 60.0);
  CHECK(parse_duration_seconds("2w", "--deadline") == 14 * 86400.0);
  CHECK(parse_duration_seconds("3600", "--deadline") == 3600.0);
  CHECK_THROWS_AS(parse_duration_seconds("-3d", "--deadline"), core::InputError);
  CHECK_THROWS_AS(parse_duration_seconds("soon", "--deadline"), core::InputError);
  CHECK_THROWS_AS(parse_duration_seconds("1e400s", "--deadline"), core::InputError);
  // 1e306 fits a double, 1e306 × 86400 s does not: refused, not an infinite deadline every plan meets.
  CHECK_THROWS_WITH_AS(parse_duration_seconds("1e306d", "--deadline"), doctest::Contains("does not fit a double"),
                       core::InputError);
  CHECK(parse_objective("gpu_hours", "--objective") == SweepObjective::gpu_hours);
  CHECK_THROWS_AS(parse_objective("cheap", "--objective"), core::InputError);
}

TEST_CASE("expansion: the last axis varies fastest; the count is the product") {
  SweepSpec spec = t4_spec({"cluster.nodes=8,16,32", "cluster.network=10gbe-tcp,ib-edr"});
  CHECK(configuration_count(spec) == 6);
  auto s = configuration_settings(spec, 3);  // (16, ib-edr)
  CHECK(s[0].second == 16);
  CHECK(s[1].second == "ib-edr");
  core::Json j = configuration_json(spec, 3);
  CHECK(j["cluster"]["nodes"] == 16);
  CHECK(j["cluster"]["network"] == "ib-edr");
  spec.axes.push_back(parse_axis("phases.0.grad_accum=1..100000"));
  spec.axes.push_back(parse_axis("phases.1.grad_accum=1..100000"));
  CHECK_THROWS_AS(configuration_count(spec), core::InputError);  // 6 × 10^10 > the 10^7 cap
}

TEST_CASE("a sweep file's values list has the --vary bound: at most kMaxAxisValues values") {
  core::Json values = core::Json::array();
  for (size_t i = 0; i <= kMaxAxisValues; ++i) values.push_back(i + 1);  // one more than the bound
  const core::Json file = {{"base", "t4-academic-cluster"}, {"axes", {{{"key", "cluster.nodes"}, {"values", values}}}}};
  CHECK_THROWS_WITH_AS(parse_sweep_json(file, "sweep.json"), doctest::Contains("at most 100000 values (it has 100001)"),
                       core::InputError);
  values.erase(values.end() - 1);  // exactly the bound is accepted
  const core::Json at_bound = {{"base", "t4-academic-cluster"}, {"axes", {{{"key", "cluster.nodes"}, {"values", values}}}}};
  CHECK(parse_sweep_json(at_bound, "sweep.json").axes.at(0).values.size() == kMaxAxisValues);
}

TEST_CASE("a swept configuration predicts what predict_scenario predicts on its own") {
  // The cache shares graphs, baselines, algorithm choices and alone-on-network all-reduce durations; a
  // reused duration is added to another start time, so agreement is to rounding (1e-9 relative).
  SweepSpec spec = t4_spec({"cluster.nodes=2,4", "cluster.network=10gbe-tcp,ib-edr"});
  const auto results = evaluate_configurations(spec, all_indices(spec), profiles(), 2);
  for (const auto& r : results) {
    REQUIRE_MESSAGE(r.feasible, r.reason);
    const Prediction alone = predict_scenario(parse_scenario(configuration_json(spec, r.index), "test"), profiles());
    CHECK(r.time_to_train_seconds == doctest::Approx(alone.time_to_train_seconds).epsilon(1e-9));
    CHECK(*r.rental_usd == doctest::Approx(*alone.cost.rental_usd).epsilon(1e-9));
    CHECK(r.gpu_hours == doctest::Approx(alone.gpus * alone.time_to_train_seconds / 3600).epsilon(1e-12));
  }
}

TEST_CASE("infeasible configurations come back with their reasons, and the sweep goes on") {
  SweepSpec spec = t4_spec({"recipe.precision=bf16,fp16", "phases.1.micro_batch=8,64"}, {"cluster.nodes=2"});
  spec.constraints.max_gpus = 64;
  const auto results = evaluate_configurations(spec, all_indices(spec), profiles(), 1);
  REQUIRE(results.size() == 4);
  CHECK(results[0].infeasible_kind == "precision");  // the T4 has no bf16 (its profile's peak is 0)
  CHECK(results[0].reason.find("bf16") != std::string::npos);
  CHECK(results[2].feasible);                         // fp16, micro-batch 8: the shipped recipe
  CHECK(results[3].infeasible_kind == "memory");      // fp16, seq 512 × micro-batch 64 on a 16 GB T4
  CHECK(results[3].over_bytes > 0);
  CHECK(results[3].reason.find("does not fit") != std::string::npos);
  SweepSpec big = t4_spec({"cluster.nodes=4,16"});
  big.constraints.max_gpus = 64;                      // 16 nodes × 8 = 128 GPUs
  const auto capped = evaluate_configurations(big, all_indices(big), profiles(), 1);
  CHECK(capped[0].feasible);
  CHECK(capped[1].infeasible_kind == "constraint");
  CHECK_FALSE(capped[1].evaluated);
}

TEST_CASE("frontier, deadline and budget answers on results derived by hand") {
  // (days, rental $): #0 (10, 100) #1 (5, 300) #2 (7, 150) #3 (6, 400) #4 (5, 250) #5 infeasible.
  // Fastest first, keep a point only if it is cheaper than every faster one: #4 (5, 250), #2 (7, 150),
  // #0 (10, 100). #1 ties #4 on time but costs more; #3 is slower than #4 and dearer.
  std::vector<ConfigResult> results = {made(0, 10, 100), made(1, 5, 300), made(2, 7, 150),
                                       made(3, 6, 400),  made(4, 5, 250), ConfigResult{}};
  results[5].index = 5;
  results[5].infeasible_kind = "memory";
  SweepSpec spec;
  spec.constraints.deadline_seconds = 8 * 86400.0;  // #1, #2, #3, #4 meet it
  spec.constraints.budget_usd = 200;                // #0, #2 are within it
  const SweepAnalysis a = analyse_sweep(spec, results);
  CHECK(a.frontier.at("rental") == std::vector<size_t>{4, 2, 0});
  CHECK(a.feasible == 5);
  CHECK(a.infeasible_by_kind.at("memory") == 1);
  CHECK(a.cheapest_meeting_deadline == 2);  // $150 among #1–#4
  CHECK(a.fastest_within_budget == 2);      // 7 days among #0, #2
  CHECK(a.recommended == 2);                // objective rental within both: only #2
  CHECK(results[2].on_frontier.count("rental"));
  CHECK_FALSE(results[1].on_frontier.count("rental"));
  spec.objective = SweepObjective::time;
  spec.constraints.budget_usd.reset();
  const SweepAnalysis fastest = analyse_sweep(spec, results);
  CHECK(fastest.recommended == 4);          // 5 days like #1, and cheaper: ties go to the cheaper
  CHECK(fastest.frontier.at("ownership").empty());
}

TEST_CASE("validation refuses a bad axis before any work, naming it") {
  auto fails_with = [](SweepSpec spec, const std::string& part) {
    try {
      validate_sweep(spec, profiles());
    } catch (const core::InputError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
      return;
    }
    FAIL("no error");
  };
  fails_with(t4_spec({"cluster.nodse=8,16"}), "--vary cluster.nodse");
  fails_with(t4_spec({"cluster.node=t4-8x-pcie,no-such-node"}), "no-such-node");
  fails_with(t4_spec({"cluster.nodes=0,8"}), "--vary cluster.nodes: value 0");
  // A T4 GPU-hour price the user names does not pay for a V100 node (the hint says how to sweep node types);
  // the scenario's own T4 price gives way (test_node_retarget.cpp).
  fails_with(t4_spec({"cluster.node=t4-8x-pcie,dgx-1"}, {"prices.rental=gcp-t4-on-demand-2020"}),
             "--set prices.set=SET");
  CHECK_NOTHROW(validate_sweep(t4_spec({"cluster.node=t4-8x-pcie,dgx-1"}), profiles()));
  SweepSpec automatic = t4_spec({"phases.0.micro_batch=16,32"});
  automatic.auto_recipe = true;
  fails_with(automatic, "--auto-recipe chooses");
  fails_with(t4_spec({}), "nothing to vary");
  // The later axis used to overwrite the earlier in every configuration: 4 rows of 2 distinct clusters.
  fails_with(t4_spec({"cluster.nodes=1,2", "cluster.nodes=3,4"}), "--vary cluster.nodes: the key cluster.nodes is varied twice");
  fails_with(t4_spec({"cluster.node=dgx-1", "cluster.node+recipe.stack=dgx-a100:pytorch-ngc20.06"}),
             "the key cluster.node is varied twice");
  fails_with(t4_spec({"cluster.nodes=1,2,1"}), "--vary cluster.nodes: value 1 is listed twice");
  fails_with(t4_spec({"cluster.nodes=1..4", "cluster.network=ib-edr,ib-edr"}), "value \"ib-edr\" is listed twice");
}

TEST_CASE("--auto-recipe keeps each phase's global batch and fits memory, and says why others lost") {
  // The base trains 32 × 4 × 256 = 32,768 (seq 128) and 8 × 4 × 256 = 8,192 (seq 512) sequences per step.
  const Scenario base = load_scenario("t4-academic-cluster");
  const auto globals = phase_global_batches(base, profiles());
  REQUIRE(globals == std::vector<int64_t>{32768, 8192});
  // BERT-base on 16 T4s, not BERT-large on 64: the planner searches ZeRO-3, hybrid sharding and sequence
  // parallelism too (docs/planning.md), and this case must stay cheap under the sanitizers.
  Scenario eight = load_scenario("t4-academic-cluster", {"cluster.nodes=2", "model=bert-base"});
  PredictionCache cache;
  const AutoRecipe choice = choose_recipe(eight, globals, profiles(), cache);
  for (size_t i = 0; i < 2; ++i) {
    const PhaseSpec& ph = choice.scenario.phases[i];
    CHECK(ph.micro_batch * ph.grad_accum * 16 == globals[i]);
  }
  // What it chose must fit, and predict like any scenario.
  const Prediction p = predict_scenario(choice.scenario, profiles());
  CHECK(p.memory_per_gpu_bytes <= hwprofiles::find_gpu(profiles(), "t4").memory_bytes);
  REQUIRE(choice.notes.size() >= 2);
  CHECK(choice.notes[0].find("phase1-seq128: micro-batch") == 0);
  CHECK(choice.notes[1].find("does not fit") != std::string::npos);  // the next larger micro-batch
  // A model no layout of 16 T4s holds (GPT-3 175B: its model states alone need about 180 of them,
  // tests/reports/test_plan_search.cpp) is refused. (Megatron 8.3B, refused here before pipelines were
  // searched, now fits: tensor × pipeline parallel.)
  Scenario tiny = eight;
  tiny.model = "gpt3-175b";
  for (auto& ph : tiny.phases) ph.seq_len = 512;
  CHECK_THROWS_AS(choose_recipe(tiny, globals, profiles(), cache), core::InfeasibleError);
}

TEST_CASE("--auto-recipe's sweep output is the same with the bound's op costs derived or built, on 1 or 2 threads") {
  // The bound's reduced graphs of the costed candidates are derived from two builds per layout and phase
  // (models/micro_batch_ops.hpp), the cache computes each key once however many threads ask
  // (reports/once_cache.hpp): neither may change a byte of the output. The reference: one thread, every
  // reduced graph from a built graph (CacheLimits::derive_op_costs false), as before the derivation. BERT-base
  // on one node of 8 T4s over two networks (the second finds the first's reduced graphs), cheap enough for
  // the sanitizer run.
  SweepSpec spec = t4_spec({"cluster.nodes=1", "cluster.network=10gbe-tcp,ib-edr"}, {"model=bert-base"});
  spec.auto_recipe = true;
  spec.constraints.deadline_seconds = 21 * 86400.0;
  spec.constraints.budget_usd = 30000;
  CacheLimits built_limits;
  built_limits.derive_op_costs = false;
  PredictionCache built_cache(built_limits);
  std::vector<ConfigResult> built;
  built.push_back(evaluate_configuration(spec, 0, profiles(), built_cache));
  const long built_first_graphs = built_cache.counts().graph_builds;
  built.push_back(evaluate_configuration(spec, 1, profiles(), built_cache));
  std::vector<ConfigResult> derived = evaluate_configurations(spec, all_indices(spec), profiles(), 2);
  REQUIRE(built.size() == 2);
  CHECK(built_cache.counts().bound_graphs_derived == 0);
  const SweepAnalysis built_analysis = analyse_sweep(spec, built), derived_analysis = analyse_sweep(spec, derived);
  CHECK(sweep_to_json(spec, derived, derived_analysis).dump(1) == sweep_to_json(spec, built, built_analysis).dump(1));
  CHECK(sweep_to_csv(spec, derived) == sweep_to_csv(spec, built));
  CHECK(sweep_to_text(spec, derived, derived_analysis) == sweep_to_text(spec, built, built_analysis));
  REQUIRE(built[0].feasible);
  CHECK(built[0].recipe_notes.size() >= 4);  // the plan and its runners-up, with the bound's percentages
  // And the derivation did the bound's work: a cache of its own plans the first configuration again.
  PredictionCache derived_cache;
  evaluate_configuration(spec, 0, profiles(), derived_cache);
  CHECK(derived_cache.counts().bound_graphs_derived > 0);
  CHECK(derived_cache.counts().graph_builds < built_first_graphs);
  MESSAGE("graph builds for the first configuration: ", built_first_graphs, " with the bound's graphs built, ",
          derived_cache.counts().graph_builds, " with them derived");
}

TEST_CASE("a configuration result survives the JSON round trip the MPI ranks use") {
  SweepSpec spec = t4_spec({"cluster.nodes=2", "recipe.precision=fp16,bf16"});
  auto results = evaluate_configurations(spec, all_indices(spec), profiles(), 1);
  for (const auto& r : results) {
    const ConfigResult back = config_result_from_json(config_result_to_json(r));
    CHECK(config_result_to_json(back) == config_result_to_json(r));
  }
}
