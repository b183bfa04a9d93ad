// tests/reports/test_scenarios.cpp — shipped scenarios, the validation targets, what-ifs, scenario errors,
// and the simulator's replicated (fast) mode against its exact mode.
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"
#include "sim/compute_model.hpp"
#include "sim/step_simulator.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;

namespace {
const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }
}  // namespace

TEST_CASE("every shipped scenario loads and predicts") {
  auto names = reports::builtin_scenario_names();
  CHECK(names.size() >= 8);
  for (const auto& name : names) {
    CAPTURE(name);
    reports::Prediction p = reports::predict_scenario(reports::load_scenario(name), profiles());
    CHECK(p.time_to_train_seconds > 0);
    CHECK(p.phases.size() >= 1);
    for (const auto& ph : p.phases) {
      CHECK(ph.iteration_seconds >= ph.compute_seconds * 0.999);
      CHECK(ph.exposed_comm_seconds >= 0);
    }
  }
}

TEST_CASE("published results are predicted within the issue's tolerances, from one profile set") {
  // Tolerances (issue #3): end-to-end times ±25%, TFLOP/s ±20%, efficiencies ±10 points, rental cost ±5%;
  // each target states its own in its scenario file with the published source.
  // A target with a documented known gap (the T4 paper's 12 days, which is project wall-clock including
  // overheads the paper does not itemise; Megatron 8.3B's PFLOP/s, which inherits the 1.2B baseline's bias)
  // must stay within twice its tolerance — a change that moves it further fails here and must be looked at.
  int checked = 0;
  for (const auto& name : reports::builtin_scenario_names()) {
    reports::Scenario s = reports::load_scenario(name);
    if (s.published.empty()) continue;
    reports::Prediction p = reports::predict_scenario(s, profiles());
    for (const auto& t : s.published) {
      CAPTURE(name);
      CAPTURE(t.metric);
      std::optional<double> v = reports::metric_value(p, t);
      REQUIRE(v.has_value());
      CAPTURE(*v);
      ++checked;
      if (!t.known_gap.empty()) {
        CHECK(std::abs(*v / t.value - 1) <= 2 * t.tolerance);
        continue;
      }
      if (t.metric == "scaling_efficiency") CHECK(std::abs(*v - t.value) <= t.tolerance);
      else CHECK(std::abs(*v / t.value - 1) <= t.tolerance);
    }
  }
  CHECK(checked >= 9);
}

TEST_CASE("T4 what-ifs: accumulation and InfiniBand each help, as the T4 paper argues") {
  auto base = reports::predict_scenario(reports::load_scenario("t4-academic-cluster"), profiles());
  auto no_accum = reports::predict_scenario(reports::load_scenario("t4-no-grad-accum"), profiles());
  auto ib = reports::predict_scenario(reports::load_scenario("t4-infiniband-100g"), profiles());
  // Without accumulation the same gradients cross 10 GbE 4× as often per sample.
  CHECK(no_accum.time_to_train_seconds > 1.5 * base.time_to_train_seconds);
  CHECK(*no_accum.scaling_efficiency < *base.scaling_efficiency - 0.15);
  CHECK(ib.time_to_train_seconds < base.time_to_train_seconds);
  CHECK(*ib.scaling_efficiency > 0.9);
  // Rental arithmetic (T4 paper): 256 GPUs × 288 h × $0.349 = $25,731 ≈ the published $25,739.
  reports::PublishedTarget t;
  t.metric = "rental_usd_at_published_time";
  t.published_hours = 288;
  CHECK(*reports::metric_value(base, t) == doctest::Approx(256 * 288 * 0.349));
}

TEST_CASE("scaling efficiency is 1 for a single GPU and the prediction's JSON has the documented fields") {
  auto s = reports::load_scenario("megatron-1.2b-1gpu");
  auto p = reports::predict_scenario(s, profiles());
  CHECK(*p.scaling_efficiency == doctest::Approx(1.0).epsilon(0.02));
  auto j = reports::prediction_to_json(p);
  for (const char* key : {"time_to_train_seconds", "scaling_efficiency", "tflops_per_gpu", "memory_per_gpu_bytes",
                          "cost", "phases", "simulator_wall_seconds"})
    CHECK(j.contains(key));
  CHECK(j["cost"].contains("rental_usd"));
  CHECK(j["cost"].contains("ownership_usd"));
  for (const char* key : {"name", "seq_len", "global_batch", "micro_batch", "grad_accum", "steps", "iteration_seconds",
                          "compute_seconds", "exposed_comm_seconds", "throughput_seq_per_second", "seconds"})
    CHECK(j["phases"][0].contains(key));
}

TEST_CASE("scenario files: unknown fields, bad overrides and bad references are input errors") {
  core::Json j = core::Json::parse(R"({"model": "bert-base", "phases": [{"steps": 10}], "clustr": {}})");
  CHECK_THROWS_WITH_AS(reports::parse_scenario(j, "s.json"), doctest::Contains("unknown field 'clustr'"), core::InputError);
  core::Json no_steps = core::Json::parse(R"({"model": "bert-base", "phases": [{"seq_len": 128}]})");
  CHECK_THROWS_WITH_AS(reports::parse_scenario(no_steps, "s.json"), doctest::Contains("'steps' or both 'epochs'"),
                       core::InputError);
  CHECK_THROWS_WITH_AS(reports::load_scenario("t4-academic-cluster", {"phases.7.steps=3"}),
                       doctest::Contains("not an index"), core::InputError);
  CHECK_THROWS_WITH_AS(reports::load_scenario("t4-academic-cluster", {"novalue"}), doctest::Contains("key=value"),
                       core::InputError);
  auto bad_price = reports::load_scenario("t4-academic-cluster", {"prices.rental=free-lunch"});
  CHECK_THROWS_WITH_AS(reports::predict_scenario(bad_price, profiles()), doctest::Contains("unknown price 'free-lunch'"),
                       core::InputError);
  auto bad_network = reports::load_scenario("t4-academic-cluster", {"cluster.network=carrier-pigeon"});
  CHECK_THROWS_AS(reports::predict_scenario(bad_network, profiles()), core::InputError);
  CHECK_THROWS_WITH_AS(reports::load_scenario("no-such-scenario"), doctest::Contains("unknown scenario"), core::InputError);
  // --set edits take effect.
  auto ib = reports::load_scenario("t4-academic-cluster", {"cluster.network=ib-edr", "phases.0.grad_accum=1"});
  CHECK(ib.network == "ib-edr");
  CHECK(ib.phases[0].grad_accum == 1);
}

TEST_CASE("replicated simulation agrees with the exact one within 1% on clusters up to 64 GPUs with contention") {
  // Exact mode simulates every flow of every data-parallel group; replicated mode one flow per symmetry class
  // with multiplicity (docs/network-model.md). The 1% bound is the issue's.
  struct Case {
    const char* node;
    const char* network;
    int nodes;
    double oversubscription;
  };
  for (Case c : {Case{"t4-8x-pcie", "10gbe-tcp", 8, 1.0}, Case{"dgx-1", "ib-edr", 8, 2.0},
                 Case{"p3dn-24xlarge", "efa-100g", 4, 1.0}}) {
    sim::ClusterConfig config;
    config.cluster.node = hwprofiles::find_node(profiles(), c.node);
    config.cluster.network = hwprofiles::find_network(profiles(), c.network);
    config.cluster.nodes = c.nodes;
    config.cluster.fabric.oversubscription = c.oversubscription;
    config.cluster.fabric.nodes_per_leaf = c.oversubscription > 1 ? 2 : 0;
    config.gpu = hwprofiles::device_profile(profiles(), config.cluster.node.gpu,
                                            hwprofiles::default_stack_for(profiles(), config.cluster.node.gpu));
    models::Recipe r;
    r.micro_batch = 8;
    r.seq_len = 128;
    r.data_parallel = config.gpu_count();
    models::TaskGraph g = models::build_task_graph(models::load_model("bert-base"), r);
    config.mode = sim::SimulationMode::exact;
    double exact = sim::simulate_step(g, config).iteration_seconds;
    config.mode = sim::SimulationMode::replicated;
    double fast = sim::simulate_step(g, config).iteration_seconds;
    CAPTURE(c.node);
    CHECK(fast == doctest::Approx(exact).epsilon(0.01));
  }
}

TEST_CASE("bucketed all-reduce overlaps backward: exposed communication is less than the all-reduce time") {
  sim::ClusterConfig config;
  config.cluster.node = hwprofiles::find_node(profiles(), "dgx-1");
  config.cluster.network = hwprofiles::find_network(profiles(), "ib-edr");
  config.cluster.nodes = 4;
  config.gpu = hwprofiles::device_profile(profiles(), "v100-sxm2-16gb", "pytorch-apex-ngc19.07");
  models::Recipe r;
  r.micro_batch = 16;
  r.data_parallel = 32;
  models::TaskGraph g = models::build_task_graph(models::load_model("bert-large"), r);
  sim::StepSimulation s = sim::simulate_step(g, config);
  CHECK(s.data_parallel_comm_seconds > 0);
  CHECK(s.exposed_comm_seconds < s.data_parallel_comm_seconds);
  // With accumulation, the all-reduce happens once per 4 micro-steps: compute ×4, communication ×1.
  r.grad_accum = 4;
  sim::StepSimulation a = sim::simulate_step(models::build_task_graph(models::load_model("bert-large"), r), config);
  // compute = micro-steps × body + optimizer tail, so 4 micro-steps add 3 bodies.
  sim::SingleDevicePrediction one = sim::predict_single_device(g, config.gpu);
  CHECK(a.compute_seconds - s.compute_seconds == doctest::Approx(3 * one.micro_step_seconds).epsilon(0.01));
  CHECK(a.data_parallel_comm_seconds == doctest::Approx(s.data_parallel_comm_seconds).epsilon(0.01));
}

TEST_CASE("every shipped scenario names the software stack its source used, and the stack has its GPU") {
  for (const auto& name : reports::builtin_scenario_names()) {
    const reports::Scenario s = reports::load_scenario(name);
    CAPTURE(name);
    REQUIRE_FALSE(s.stack.empty());
    const std::string gpu = hwprofiles::find_node(profiles(), s.node).gpu;
    CHECK_NOTHROW(hwprofiles::device_profile(profiles(), gpu, s.stack));
  }
  // A stack without values for the scenario's GPU is an input error naming both.
  const reports::Scenario t4 = reports::load_scenario("t4-academic-cluster", {"recipe.stack=pytorch-2-sdpa"});
  CHECK_THROWS_WITH_AS(reports::predict_scenario(t4, profiles()),
                       doctest::Contains("stack 'pytorch-2-sdpa' has no values for GPU 't4'"), core::InputError);
}

TEST_CASE("a scenario with sequence parallelism predicts, its one-GPU scaling baseline without it") {
  // megatron-8.3b-512gpu (TP 8) names a one-GPU baseline (Megatron's 1.2B): that run has no tensor-parallel
  // group, so it must drop sequence_parallel rather than be refused for it. Two DGX-2H nodes keep it quick.
  const reports::Prediction tp = reports::predict_scenario(
      reports::load_scenario("megatron-8.3b-512gpu", {"cluster.nodes=2"}), profiles());
  const reports::Prediction sp = reports::predict_scenario(
      reports::load_scenario("megatron-8.3b-512gpu", {"cluster.nodes=2", "recipe.sequence_parallel=true"}), profiles());
  REQUIRE(sp.scaling_efficiency.has_value());
  REQUIRE(tp.scaling_efficiency.has_value());
  // LayerNorm, dropout and residual work on 1/8 of the rows: faster, and less activation memory.
  CHECK(sp.tflops_per_gpu > tp.tflops_per_gpu);
  CHECK(sp.memory_per_gpu_bytes < tp.memory_per_gpu_bytes);
}
