// tests/sim/test_zero2.cpp — ZeRO stage 2 (FSDP SHARD_GRAD_OP) under gradient accumulation and hybrid
// stage 2 (FSDP _HYBRID_SHARD_ZERO2): the reduce-scatter runs in every micro-step (the volume per step against
// the ring closed form from the network model's decomposition, the trace, the step time against stage 1's),
// and hybrid sharding's memory, volume and in-node reduce-scatters (docs/parallelism.md).
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "sim/sharded_step.hpp"
#include "sim/step_simulator.hpp"
#include "tests/sim/zero_test_support.hpp"

using namespace ptsim;
using testing::bytes_sent_by_rank0;
using testing::dgx_a100;

namespace {

models::Recipe zero_recipe(int stage, int64_t dp, int64_t accum) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 256;
  r.grad_accum = accum;
  r.data_parallel = dp;
  r.zero_stage = stage;
  return r;
}

double gradient_bytes(const models::TaskGraph& g) {
  double bytes = 0;
  for (const auto& p : g.params) bytes += static_cast<double>(g.tensor(p.gradient).bytes());
  return bytes;
}

// Seconds the step's gradient collectives of one kind took in one micro-step, from the trace.
double comm_seconds(const sim::StepSimulation& s, const models::TaskGraph& g, models::OpKind kind, int micro) {
  double seconds = 0;
  for (const auto& span : s.timeline)
    if (span.stream == sim::Stream::communication && g.op(span.op).kind == kind && span.micro_step == micro)
      seconds += span.end_seconds - span.start_seconds;
  return seconds;
}

// Bytes rank 0 sends in every collective the step ran (the trace's communication spans), as the network
// model decomposes each (ring, tests/sim/zero_test_support.hpp).
double bytes_sent_in_step(const sim::StepSimulation& s, const models::TaskGraph& g, const sim::ClusterConfig& c) {
  sim::EventEngine engine;
  sim::Network network(engine);
  sim::Topology topology(network, c.cluster);
  double sent = 0;
  for (const auto& span : s.timeline)
    if (span.stream == sim::Stream::communication) sent += bytes_sent_by_rank0(g.op(span.op), topology);
  return sent;
}

}  // namespace

TEST_CASE("ZeRO stage 2 reduce-scatters in every micro-step: volume per step (M + 1)(N − 1)/N of the gradients") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(1);
  for (int64_t accum : {4, 8}) {
    CAPTURE(accum);
    const models::TaskGraph g = models::build_task_graph(m, zero_recipe(2, 8, accum));
    const sim::StepSimulation s = sim::simulate_step(g, c, true);
    // Per micro-step a ring reduce-scatter of the gradients, (N − 1)/N of them; once per step the ring
    // all-gather of the updated parameters (as many bytes: fp16 both), (N − 1)/N (docs/network-model.md).
    const double G = gradient_bytes(g), N = 8, M = static_cast<double>(accum);
    CHECK(bytes_sent_in_step(s, g, c) == doctest::Approx((M + 1) * (N - 1) / N * G).epsilon(1e-9));
    // The trace shows each bucket's reduce-scatter in every micro-step (those the simulator fast-forwards
    // over are its copies of the repeating micro-step).
    std::map<int, int> scatters_per_micro;
    int buckets = 0;
    for (const auto& op : g.ops) buckets += op.kind == models::OpKind::reduce_scatter;
    for (const auto& span : s.timeline)
      if (g.op(span.op).kind == models::OpKind::reduce_scatter) ++scatters_per_micro[span.micro_step];
    CHECK(scatters_per_micro.size() == static_cast<size_t>(accum));
    for (const auto& entry : scatters_per_micro) {
      CAPTURE(entry.first);
      CHECK(entry.second == buckets);
    }
  }
}

TEST_CASE("a stage-2 step with M = 4 costs stage 1's plus at most the M − 1 extra reduce-scatters") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  // One node, micro-batch 4 × 256: each micro-step's reduce-scatters (NVLink) hide behind the next
  // micro-step's forward. Two nodes on 10 GbE (hwprofiles/networks/10gbe-tcp.json), micro-batch 1 × 256:
  // they outlast a micro-step's compute, so they queue and the step is communication-bound.
  for (int nodes : {1, 2}) {
    CAPTURE(nodes);
    sim::ClusterConfig c = dgx_a100(nodes);
    if (nodes == 2) c.cluster.network = hwprofiles::find_network(hwprofiles::load_profiles(), "10gbe-tcp");
    const int64_t dp = 8 * nodes, M = 4;
    models::Recipe r1 = zero_recipe(1, dp, M);
    r1.micro_batch = nodes == 1 ? 4 : 1;
    models::Recipe r2 = r1;
    r2.zero_stage = 2;
    const models::TaskGraph one = models::build_task_graph(m, r1);
    const models::TaskGraph two = models::build_task_graph(m, r2);
    const sim::StepSimulation s1 = sim::simulate_step(one, c, true);
    const sim::StepSimulation s2 = sim::simulate_step(two, c, true);
    // The same ops, each alone on the network (no tensor parallelism): the same compute, and each
    // reduce-scatter takes what stage 1's last-micro-step one takes.
    CHECK(s2.compute_seconds == doctest::Approx(s1.compute_seconds).epsilon(1e-12));
    const double scatter = comm_seconds(s1, one, models::OpKind::reduce_scatter, M - 1);
    for (int micro = 0; micro < M; ++micro) {
      CAPTURE(micro);
      CHECK(comm_seconds(s2, two, models::OpKind::reduce_scatter, micro) == doctest::Approx(scatter).epsilon(1e-9));
    }
    CHECK(s2.data_parallel_comm_seconds - s1.data_parallel_comm_seconds ==
          doctest::Approx((M - 1) * scatter).epsilon(1e-9));
    // Slower than stage 1 by what of the extra reduce-scatters is exposed, at most all of them; the one
    // communication stream runs a collective at a time, so the step lasts at least its busy time.
    CHECK(s2.iteration_seconds >= s1.iteration_seconds * (1 - 1e-12));
    CHECK(s2.iteration_seconds <= s1.iteration_seconds + (M - 1) * scatter * (1 + 1e-12));
    CHECK(s2.iteration_seconds >= s2.data_parallel_comm_seconds);
    // On 10 GbE the M reduce-scatters alone outlast stage 1's whole step (about 0.18 s against 0.11 s): stage 2
    // is slower by more than the reduce-scatters that hid on one node.
    if (nodes == 2) CHECK(s2.data_parallel_comm_seconds > s1.iteration_seconds);
  }
}

TEST_CASE("ZeRO stage 2: grad_accum 1 is stage 1's step; repeated micro-steps add one period each") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(1);
  // At M = 1 the two stages run the same collectives in the same order: the same step, to the last bit the
  // engine computes (1e-12 relative).
  const sim::StepSimulation one = sim::simulate_step(models::build_task_graph(m, zero_recipe(1, 8, 1)), c);
  const sim::StepSimulation two = sim::simulate_step(models::build_task_graph(m, zero_recipe(2, 8, 1)), c);
  CHECK(two.iteration_seconds == doctest::Approx(one.iteration_seconds).epsilon(1e-12));
  // Once a micro-step repeats, each further one adds the same period: the fast-forwarded step of M = 64
  // and the simulated ones of M = 6, 7 agree on it (1e-9 relative: sums of the engine's times).
  std::map<int64_t, double> seconds;
  for (int64_t accum : {6, 7, 64, 1000000})
    seconds[accum] = sim::simulate_step(models::build_task_graph(m, zero_recipe(2, 8, accum)), c).iteration_seconds;
  const double period = seconds[7] - seconds[6];
  CHECK(period > 0);
  CHECK(seconds[64] == doctest::Approx(seconds[7] + 57 * period).epsilon(1e-9));
  CHECK(seconds[1000000] == doctest::Approx(seconds[7] + (1000000 - 7) * period).epsilon(1e-6));
}

TEST_CASE("ZeRO stage 2's fast-forward equals simulating every micro-step") {
  // The fast-forward jumps once a micro-step repeats the previous one (sim/step_simulator.cpp); the reference
  // simulates all M. Same engine, same events: equal to summation rounding (1e-9 relative), on one node
  // (the reduce-scatters hide) and on two nodes over InfiniBand and 10 GbE (they spill into the next micro-step).
  const models::ModelSpec m = models::load_model("gpt2-124m");
  for (int cluster : {0, 1, 2})  // one node; two over InfiniBand; two over 10 GbE
    for (int64_t accum : {8, 16}) {
      const int nodes = cluster == 0 ? 1 : 2;
      sim::ClusterConfig c = dgx_a100(nodes);
      if (cluster == 2) c.cluster.network = hwprofiles::find_network(hwprofiles::load_profiles(), "10gbe-tcp");
      const models::TaskGraph g = models::build_task_graph(m, zero_recipe(2, 8 * nodes, accum));
      const sim::StepSimulation fast = sim::simulate_step(g, c);
      const sim::StepSimulation every = sim::simulate_step_every_micro_step(g, c);
      INFO("cluster ", cluster, ", grad_accum ", accum);
      CHECK(fast.iteration_seconds == doctest::Approx(every.iteration_seconds).epsilon(1e-9));
      CHECK(fast.compute_seconds == doctest::Approx(every.compute_seconds).epsilon(1e-9));
      CHECK(fast.data_parallel_comm_seconds == doctest::Approx(every.data_parallel_comm_seconds).epsilon(1e-9));
    }
}

TEST_CASE("a communication-bound stage-2 step is simulated micro-step by micro-step, at most 4,096 of them") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  sim::ClusterConfig c = dgx_a100(2);
  c.cluster.network = hwprofiles::find_network(hwprofiles::load_profiles(), "10gbe-tcp");
  models::Recipe r = zero_recipe(2, 16, sim::kMaxShardedMicroSteps + 1);
  r.micro_batch = 1;  // each micro-step's reduce-scatters outlast its compute (the test above): they never drain
  CHECK_THROWS_WITH_AS(sim::simulate_step(models::build_task_graph(m, r), c), doctest::Contains("communication-bound"),
                       core::InputError);
}

TEST_CASE("hybrid stage 2 (FSDP _HYBRID_SHARD_ZERO2): memory 2Ψ + (2 + K)Ψ/S, volume in and across groups") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(2);
  models::Recipe hybrid = zero_recipe(2, 16, 2);
  hybrid.shard_group = 8;  // the 8 data-parallel ranks of a DGX A100, replicated across the 2 nodes
  const models::TaskGraph g = models::build_task_graph(m, hybrid);
  const models::MemoryPlan plan = models::plan_memory(g);
  const double psi = static_cast<double>(g.parameter_count());
  // ZeRO paper §5 with N = S = 8: the fp16 parameters whole, gradients and K = 12 bytes of optimizer state
  // sharded over the shard group.
  const double states =
      plan.weights_bytes + plan.gradients_bytes + plan.master_weights_bytes + plan.optimizer_state_bytes;
  CHECK(states == doctest::Approx(2 * psi + (2 + 12) * psi / 8).epsilon(1e-12));
  // Each collective once: the reduce-scatter and the all-gather in the group of S, (S − 1)/S × 2Ψ each, the
  // all-reduce of the rank's 2Ψ/S across the R = D/S replicas, 2(R − 1)/R of it (ring closed forms).
  const double S = 8, R = 2, G = gradient_bytes(g);
  CHECK(G == doctest::Approx(2 * psi));
  CHECK(bytes_sent_by_rank0(g, c) == doctest::Approx(2 * (S - 1) / S * G + 2 * (R - 1) / R * G / S).epsilon(1e-9));
  // Per step with M = 2: the reduce-scatter and the replicas' all-reduce in both micro-steps, the gather once.
  const sim::StepSimulation s = sim::simulate_step(g, c, true);
  const double M = 2;
  CHECK(bytes_sent_in_step(s, g, c) ==
        doctest::Approx(M * ((S - 1) / S * G + 2 * (R - 1) / R * G / S) + (S - 1) / S * G).epsilon(1e-9));
  int replica_all_reduces = 0, scatters = 0;
  for (const auto& op : g.ops) {
    replica_all_reduces += op.attrs.comm.group == models::CommGroup::shard_replicas;
    scatters += op.kind == models::OpKind::reduce_scatter;
  }
  CHECK(replica_all_reduces == scatters);  // one per bucket, after its reduce-scatter
}

TEST_CASE("hybrid stage 2 keeps the reduce-scatters inside a node: each costs what it costs on one node alone") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  models::Recipe hybrid = zero_recipe(2, 16, 2);
  hybrid.shard_group = 8;
  const models::TaskGraph two_nodes = models::build_task_graph(m, hybrid);
  const models::TaskGraph one_node = models::build_task_graph(m, zero_recipe(2, 8, 2));
  const sim::StepSimulation h = sim::simulate_step(two_nodes, dgx_a100(2), true);
  const sim::StepSimulation o = sim::simulate_step(one_node, dgx_a100(1), true);
  std::map<std::string, double> alone;
  for (const auto& s : o.timeline)
    if (one_node.op(s.op).kind == models::OpKind::reduce_scatter)
      alone[one_node.op(s.op).name] = s.end_seconds - s.start_seconds;
  // Both nodes' groups reduce-scatter at once, each on its own NVLink; the communication stream runs one
  // collective at a time, and without TP nothing else is on the network: the same duration (1e-9 relative).
  int compared = 0;
  for (const auto& s : h.timeline) {
    const models::Op& op = two_nodes.op(s.op);
    if (op.kind != models::OpKind::reduce_scatter) continue;
    CHECK(s.end_seconds - s.start_seconds == doctest::Approx(alone.at(op.name)).epsilon(1e-9));
    ++compared;
  }
  CHECK(compared == 2 * static_cast<int>(alone.size()));  // every bucket, in both micro-steps
  // Sharding over both nodes instead crosses InfiniBand in every reduce-scatter: slower.
  const models::TaskGraph full = models::build_task_graph(m, zero_recipe(2, 16, 2));
  const sim::StepSimulation f = sim::simulate_step(full, dgx_a100(2), true);
  for (const auto& s : f.timeline)
    if (full.op(s.op).kind == models::OpKind::reduce_scatter)
      CHECK(s.end_seconds - s.start_seconds > alone.at(full.op(s.op).name));
}

TEST_CASE("shard_group with stage 0 or 1 is refused, saying why") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  models::Recipe r = zero_recipe(1, 16, 1);
  r.shard_group = 8;
  CHECK_THROWS_WITH_AS(models::build_task_graph(m, r),
                       doctest::Contains("neither DeepSpeed nor FSDP has a hybrid stage 1"), core::InputError);
  r.zero_stage = 0;
  CHECK_THROWS_WITH_AS(models::build_task_graph(m, r), doctest::Contains("applies to zero_stage 2"), core::InputError);
}
