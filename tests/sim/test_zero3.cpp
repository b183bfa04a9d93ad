// tests/sim/test_zero3.cpp — ZeRO stage 3 / FSDP FULL_SHARD (docs/parallelism.md): the model states per GPU
// against the ZeRO paper's (2 + 2 + K)Ψ/N plus the gathered working set counted by hand from GPT-2's shapes;
// the communication per step against the closed form (1.5× an all-reduce's, from the network model's
// decomposition); and the step on the network: all-gathers prefetched one unit ahead on the communication
// stream, running while the compute stream computes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/shard_units.hpp"
#include "reports/scenario.hpp"
#include "reports/trace.hpp"
#include "sim/collectives.hpp"
#include "sim/network.hpp"
#include "sim/step_simulator.hpp"
#include "tests/sim/zero_test_support.hpp"

using namespace ptsim;
using testing::bytes_sent_by_rank0;
using testing::dgx_a100;

namespace {

models::Recipe zero3_recipe(int64_t dp, int64_t accum = 1) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 256;
  r.grad_accum = accum;
  r.data_parallel = dp;
  r.zero_stage = 3;
  return r;
}

double overlap(double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

}  // namespace

TEST_CASE("ZeRO-3 memory: (2 + 2 + K)Ψ/N of model states plus the gathered units, counted from GPT-2's shapes") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const models::TaskGraph g = models::build_task_graph(m, zero3_recipe(8));
  const models::MemoryPlan plan = models::plan_memory(g);
  const double psi = static_cast<double>(g.parameter_count());
  // The paper's formula (Rajbhandari et al. 2020 §5, K = 12 for mixed-precision Adam), N = 8: the shards alone.
  const double shards = plan.weights_bytes - plan.gathered_weights_bytes + plan.gradients_bytes -
                        plan.gathered_gradients_bytes + plan.master_weights_bytes + plan.optimizer_state_bytes;
  CHECK(shards == doctest::Approx((2 + 2 + 12) * psi / 8).epsilon(1e-12));
  // The working set by hand (fp16, 2 bytes): a GPT-2 block has 12H² + 13H parameters (QKV 3H² + 3H, projection
  // H² + H, MLP 8H² + 5H, two LayerNorms 4H); the root unit the padded vocabulary's and the 1024 positions'
  // embeddings and the final LayerNorm, (V + 1024)H + 2H. Gathered: the root and two blocks (the running one
  // and the prefetched one); gradients: the root's and one block's.
  const double H = static_cast<double>(m.hidden_size);
  const double block = 12 * H * H + 13 * H;
  const double root = (static_cast<double>(m.padded_vocab_size()) + 1024) * H + 2 * H;
  CHECK(plan.gathered_weights_bytes == doctest::Approx(2 * (root + 2 * block)).epsilon(1e-12));
  CHECK(plan.gathered_gradients_bytes == doctest::Approx(2 * (root + block)).epsilon(1e-12));
  // Activations are not sharded: as without ZeRO.
  models::Recipe ddp = zero3_recipe(8);
  ddp.zero_stage = 0;
  CHECK(plan.activations_peak_bytes == models::plan_memory(models::build_task_graph(m, ddp)).activations_peak_bytes);
}

TEST_CASE("ZeRO-3 moves 1.5× what an all-reduce moves: all-gathers before forward and backward, one reduce-scatter") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(1);
  models::Recipe ddp_recipe = zero3_recipe(8);
  ddp_recipe.zero_stage = 0;
  const models::TaskGraph ddp = models::build_task_graph(m, ddp_recipe);
  const models::TaskGraph z3 = models::build_task_graph(m, zero3_recipe(8));
  double gradient_bytes = 0;
  for (const auto& p : ddp.params) gradient_bytes += static_cast<double>(ddp.tensor(p.gradient).bytes());
  // Ring all-reduce: 2(p−1)/p of the buffer per rank; ZeRO-3 per micro-step: two all-gathers of the fp16
  // parameters and a reduce-scatter of the fp16 gradients, (p−1)/p each — 3(p−1)/p, 1.5× (the ZeRO paper §7.2.2).
  const double all_reduce = bytes_sent_by_rank0(ddp, c);
  CHECK(all_reduce == doctest::Approx(2 * 7.0 / 8 * gradient_bytes).epsilon(1e-9));
  CHECK(bytes_sent_by_rank0(z3, c) == doctest::Approx(1.5 * all_reduce).epsilon(1e-9));
  // One all-gather per unit and pass, one reduce-scatter per unit: root + 12 blocks.
  int gathers = 0, scatters = 0;
  for (const auto& op : z3.ops) {
    gathers += op.kind == models::OpKind::all_gather;
    scatters += op.kind == models::OpKind::reduce_scatter;
    CHECK(op.kind != models::OpKind::all_reduce);
  }
  CHECK(gathers == 2 * 13);
  CHECK(scatters == 13);
}

TEST_CASE("a ZeRO-3 step gathers every micro-step, prefetches one unit ahead, and overlaps the gathers with compute") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(2);
  const models::TaskGraph g = models::build_task_graph(m, zero3_recipe(16, 2));
  const sim::StepSimulation s = sim::simulate_step(g, c, true);
  std::vector<const sim::TimelineSpan*> gathers, scatters, compute;
  for (const auto& span : s.timeline) {
    const models::OpKind kind = g.op(span.op).kind;
    if (span.stream == sim::Stream::communication) (kind == models::OpKind::all_gather ? gathers : scatters).push_back(&span);
    else compute.push_back(&span);
  }
  // Two micro-steps, each gathering every unit twice and reducing each once.
  CHECK(gathers.size() == 2 * 26);
  CHECK(scatters.size() == 2 * 13);
  // The communication stream runs one collective at a time, and (as a unit's gather is issued when the
  // previous unit starts) far less of it is exposed than runs: the first gather (the root's) is exposed,
  // later ones mostly hide behind the blocks' compute.
  double gather_seconds = 0, hidden = 0;
  for (const auto* gs : gathers) {
    gather_seconds += gs->end_seconds - gs->start_seconds;
    for (const auto* cs : compute) hidden += overlap(gs->start_seconds, gs->end_seconds, cs->start_seconds, cs->end_seconds);
  }
  CHECK(gather_seconds > 0);
  // Of the 52 gathers, the only ones with nothing to overlap are the step's first (nothing computes before
  // the root's parameters arrive); so well over half the gather time runs under compute.
  CHECK(hidden > 0.5 * gather_seconds);
  // A block's forward gather is prefetched: it ends before that block's first op starts, and it started
  // before the previous unit's compute ended (issued as that unit began).
  std::map<std::pair<int, int>, double> first_op_start;  // (layer, micro) → first forward op start
  for (const auto* cs : compute) {
    const models::Op& op = g.op(cs->op);
    if (op.phase != models::Phase::forward) continue;
    auto key = std::make_pair(op.layer, cs->micro_step);
    if (!first_op_start.count(key)) first_op_start[key] = cs->start_seconds;
  }
  int prefetched = 0;
  for (const auto* gs : gathers) {
    const models::Op& op = g.op(gs->op);
    if (op.layer < 1 || op.name.find("forward") == std::string::npos) continue;
    const double block_start = first_op_start.at({op.layer, gs->micro_step});
    CHECK(gs->end_seconds <= block_start + 1e-12);
    CHECK(gs->start_seconds < first_op_start.at({op.layer - 1, gs->micro_step}) + 1e-3 * s.iteration_seconds);
    ++prefetched;
  }
  CHECK(prefetched == 2 * 11);
  // Less than serial: the step is shorter than its compute plus its communication.
  CHECK(s.iteration_seconds < s.compute_seconds + s.data_parallel_comm_seconds);
  CHECK(s.iteration_seconds >= s.compute_seconds);
}

TEST_CASE("the Perfetto trace of a ZeRO-3 step has the all-gathers on the communication track during compute") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const models::TaskGraph g = models::build_task_graph(m, zero3_recipe(16));
  const sim::StepSimulation s = sim::simulate_step(g, dgx_a100(2), true);
  const nlohmann::json trace = reports::chrome_trace(s, g);
  std::vector<std::pair<double, double>> compute, gathers;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    if (e["tid"] == 0) compute.emplace_back(ts, end);
    if (e["tid"] == 1 && e["cat"] == "all_gather") gathers.emplace_back(ts, end);
  }
  int concurrent = 0;
  for (const auto& gs : gathers) {
    bool any = false;
    for (const auto& cs : compute) any = any || overlap(gs.first, gs.second, cs.first, cs.second) > 0;
    concurrent += any;
  }
  // 26 all-gathers; all but the step's first run while some compute op runs.
  CHECK(gathers.size() == 26);
  CHECK(concurrent >= 25);
}

TEST_CASE("hybrid sharding (FSDP HYBRID_SHARD): memory over the shard group, volume in and across groups") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(2);
  models::Recipe hybrid = zero3_recipe(16);
  hybrid.shard_group = 8;  // the 8 data-parallel ranks of a DGX A100, replicated across the 2 nodes
  const models::TaskGraph g = models::build_task_graph(m, hybrid);
  const models::MemoryPlan plan = models::plan_memory(g);
  const double psi = static_cast<double>(g.parameter_count());
  // (2 + 2 + K)Ψ/S with S = 8, not D = 16: each node holds one whole copy of the model states.
  const double shards = plan.weights_bytes - plan.gathered_weights_bytes + plan.gradients_bytes -
                        plan.gathered_gradients_bytes + plan.master_weights_bytes + plan.optimizer_state_bytes;
  CHECK(shards == doctest::Approx((2 + 2 + 12) * psi / 8).epsilon(1e-12));
  CHECK(plan.gathered_weights_bytes == models::plan_memory(models::build_task_graph(m, zero3_recipe(16))).gathered_weights_bytes);
  // Volume per rank and micro-step: two gathers and a reduce-scatter in the group of S, (S−1)/S × 2Ψ each, then
  // the all-reduce of the rank's 2Ψ/S across the R = D/S replicas, 2(R−1)/R of it (ring closed forms,
  // docs/network-model.md).
  const double S = 8, R = 2;
  const double expected = 3 * (S - 1) / S * 2 * psi + 2 * (R - 1) / R * 2 * psi / S;
  CHECK(bytes_sent_by_rank0(g, c) == doctest::Approx(expected).epsilon(1e-9));
  int replica_all_reduces = 0;
  for (const auto& op : g.ops) replica_all_reduces += op.attrs.comm.group == models::CommGroup::shard_replicas;
  CHECK(replica_all_reduces == 13);  // one per unit, after its reduce-scatter
}

TEST_CASE("hybrid sharding keeps the gathers inside a node: each takes what it takes on one node alone") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  models::Recipe hybrid = zero3_recipe(16);
  hybrid.shard_group = 8;
  const models::TaskGraph two_nodes = models::build_task_graph(m, hybrid);
  const models::TaskGraph one_node = models::build_task_graph(m, zero3_recipe(8));
  const sim::StepSimulation h = sim::simulate_step(two_nodes, dgx_a100(2), true);
  const sim::StepSimulation o = sim::simulate_step(one_node, dgx_a100(1), true);
  std::map<std::string, double> one_node_gather;
  for (const auto& s : o.timeline)
    if (one_node.op(s.op).kind == models::OpKind::all_gather) one_node_gather[one_node.op(s.op).name] = s.end_seconds - s.start_seconds;
  // The two nodes' shard groups gather at once, each on its own NVLink: the same duration as one node's
  // (the communication stream runs one collective at a time and without TP nothing else is on the network).
  int compared = 0;
  for (const auto& s : h.timeline) {
    const models::Op& op = two_nodes.op(s.op);
    if (op.kind != models::OpKind::all_gather) continue;
    CHECK(s.end_seconds - s.start_seconds == doctest::Approx(one_node_gather.at(op.name)).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared == 26);
  // Full sharding over both nodes instead crosses InfiniBand in every gather: slower per gather.
  const models::TaskGraph full = models::build_task_graph(m, zero3_recipe(16));
  const sim::StepSimulation f = sim::simulate_step(full, dgx_a100(2), true);
  for (const auto& s : f.timeline)
    if (full.op(s.op).kind == models::OpKind::all_gather)
      CHECK(s.end_seconds - s.start_seconds > one_node_gather.at(full.op(s.op).name));
}

TEST_CASE("shard_group must divide the data-parallel ranks; stage 1 has none (tests/sim/test_zero2.cpp)") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  models::Recipe r = zero3_recipe(16);
  r.shard_group = 3;
  CHECK_THROWS_AS(models::build_task_graph(m, r), core::InputError);
  r.shard_group = 8;
  r.zero_stage = 1;
  CHECK_THROWS_AS(models::build_task_graph(m, r), core::InputError);
}

TEST_CASE("Megatron's distributed optimizer is ZeRO 1 over each TP position's data-parallel ranks: 4 + 12/d bytes") {
  const core::Json on = core::Json::parse(R"({"model": "gpt2-124m", "recipe": {"distributed_optimizer": true},
                                              "phases": [{"steps": 1}]})");
  const reports::Scenario s = reports::parse_scenario(on, "s.json");
  CHECK(s.recipe.zero_stage == 1);
  const core::Json clash = core::Json::parse(R"({"model": "gpt2-124m", "recipe": {"distributed_optimizer": true,
                                                 "zero_stage": 3}, "phases": [{"steps": 1}]})");
  CHECK_THROWS_WITH_AS(reports::parse_scenario(clash, "s.json"), doctest::Contains("recipe.distributed_optimizer"),
                       core::InputError);
  // With TP 2 × DP 4: each rank's Ψ is its TP slice; 16-bit parameters and gradients replicated over the
  // data-parallel ranks, fp32 masters and both moments (12 bytes) sharded over d = 4.
  const models::ModelSpec m = models::load_model("gpt2-124m");
  models::Recipe r = zero3_recipe(4);
  r.zero_stage = s.recipe.zero_stage;
  r.tensor_parallel = 2;
  const models::TaskGraph g = models::build_task_graph(m, r);
  const models::MemoryPlan plan = models::plan_memory(g);
  const double psi = static_cast<double>(g.parameter_count());
  CHECK(plan.persistent_bytes() == doctest::Approx((2 + 2) * psi + 12 * psi / 4).epsilon(1e-12));
  // Its traffic is an all-reduce's (reduce-scatter + all-gather, ring closed form 2(d−1)/d of the gradients).
  double gradient_bytes = 0;
  for (const auto& p : g.params) gradient_bytes += static_cast<double>(g.tensor(p.gradient).bytes());
  CHECK(bytes_sent_by_rank0(g, dgx_a100(1)) == doctest::Approx(2 * 3.0 / 4 * gradient_bytes).epsilon(1e-9));
}
