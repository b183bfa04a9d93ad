// tests/sim/test_pipeline.cpp — pipeline parallelism: the schedules' bubbles against the closed forms of
// Narayanan et al. 2021 (equal stages, free transfers: the bubble emerges from the dependencies), the
// activations each schedule holds in flight, per-stage memory, and a stage boundary across nodes costing
// exactly the send time the network model gives that message. Real models are small (GPT-2 124M shapes).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "sim/collectives.hpp"
#include "sim/memory_check.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/pipeline_step.hpp"

using namespace ptsim;
using models::PipelineSchedule;
using sim::PipelineShape;

namespace {

PipelineShape shape(PipelineSchedule schedule, int P, int M, int V = 1) {
  PipelineShape s;
  s.schedule = schedule;
  s.stages = P;
  s.micro_batches = M;
  s.virtual_stages = V;
  return s;
}

// Equal chunks: a stage's forward takes tf and its backward tb, split evenly over its V chunks.
double bubble(const PipelineShape& s, double tf, double tb) {
  const std::vector<double> f(static_cast<size_t>(s.chunks()), tf / s.virtual_stages);
  const std::vector<double> b(static_cast<size_t>(s.chunks()), tb / s.virtual_stages);
  return sim::simulate_pipeline_schedule(s, f, b).bubble_fraction(0);
}

models::ModelSpec small_gpt() {
  models::ModelSpec m = models::load_model("gpt2-124m");
  return m;
}

models::Recipe pipeline_recipe(int64_t P, int64_t M, PipelineSchedule schedule = PipelineSchedule::one_f_one_b,
                               int64_t V = 1) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 256;
  r.grad_accum = M;
  r.pipeline_parallel = P;
  r.pipeline_schedule = schedule;
  r.virtual_stages = V;
  return r;
}

sim::ClusterConfig cluster(const std::string& node, int nodes, int gpus_per_node) {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  sim::ClusterConfig c;
  c.cluster.node = hwprofiles::find_node(profiles, node);
  c.cluster.node.gpus_per_node = gpus_per_node;
  c.cluster.node.nics_per_node = std::min(c.cluster.node.nics_per_node, gpus_per_node);
  c.cluster.network = hwprofiles::find_network(profiles, c.cluster.node.default_network);
  c.cluster.nodes = nodes;
  // The GPU with its one fitted software stack applied (docs/stacks.md), as a prediction without recipe.stack.
  c.gpu = hwprofiles::device_profile(profiles, c.cluster.node.gpu, hwprofiles::default_stack_for(profiles, c.cluster.node.gpu));
  return c;
}

}  // namespace

TEST_CASE("GPipe and 1F1B leave a bubble of (P-1)/(M+P-1) with equal stages and free transfers") {
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int P : {2, 4, 8})
      for (int M : {1, 3, 8, 32})
        for (double tb : {1.0, 2.0, 3.7}) {
          CAPTURE(models::to_string(schedule));
          CAPTURE(P);
          CAPTURE(M);
          CAPTURE(tb);
          const double expected = (P - 1.0) / (M + P - 1.0);
          CHECK(bubble(shape(schedule, P, M), 1.0, tb) == doctest::Approx(expected).epsilon(0.01));
        }
}

TEST_CASE("interleaved 1F1B leaves a bubble of (P-1)/(V·M+P-1)") {
  for (int P : {2, 4, 8})
    for (int V : {2, 3, 4})
      for (int groups : {1, 2, 4}) {
        const int M = groups * P;  // Megatron: micro-batches a multiple of the stages
        CAPTURE(P);
        CAPTURE(V);
        CAPTURE(M);
        const double expected = (P - 1.0) / (V * M + P - 1.0);
        CHECK(bubble(shape(PipelineSchedule::interleaved, P, M, V), 1.0, 2.0) == doctest::Approx(expected).epsilon(0.01));
      }
}

TEST_CASE("the activations each schedule holds in flight") {
  const int P = 4, M = 8, V = 2;
  for (int d = 0; d < P; ++d) {
    CAPTURE(d);
    CHECK(sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::gpipe, P, M), d)) == M);
    CHECK(sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::one_f_one_b, P, M), d)) == P - d);
    // Megatron's warm-up 2(P−d−1) + (V−1)P forwards, plus the steady state's one: in chunks of 1/V stage.
    CHECK(sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::interleaved, P, M, V), d)) ==
          P * V + P - 1 - 2 * d);
  }
  // Fewer micro-batches than stages: 1F1B holds them all; interleaved with M = P runs every forward first.
  CHECK(sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::one_f_one_b, 8, 3), 0)) == 3);
  CHECK(sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::interleaved, 4, 4, 2), 0)) == 8);
  // Korthikanti et al. 2022: the first interleaved stage holds P(1 + (P−1)/(PV)) stage-equivalents.
  const double first = sim::peak_in_flight(sim::pipeline_order(shape(PipelineSchedule::interleaved, P, M, V), 0)) /
                       static_cast<double>(V);
  CHECK(first == doctest::Approx(P * (1 + (P - 1.0) / (P * V))));
}

TEST_CASE("every order runs each forward and backward once, forward before backward") {
  for (auto s : {shape(PipelineSchedule::gpipe, 4, 6), shape(PipelineSchedule::one_f_one_b, 4, 6),
                 shape(PipelineSchedule::interleaved, 4, 8, 3)})
    for (int d = 0; d < s.stages; ++d) {
      const auto order = sim::pipeline_order(s, d);
      CHECK(order.size() == static_cast<size_t>(2 * s.virtual_stages * s.micro_batches));
      for (size_t i = 0; i < order.size(); ++i) {
        CHECK(order[i].chunk % s.stages == d);
        if (!order[i].backward) continue;
        const auto fwd = std::find_if(order.begin(), order.begin() + static_cast<long>(i), [&](const sim::PipelineTask& t) {
          return !t.backward && t.chunk == order[i].chunk && t.micro == order[i].micro;
        });
        CHECK(fwd != order.begin() + static_cast<long>(i));
      }
    }
}

TEST_CASE("a stage's memory: its chunks' weights, and P (1F1B) or M (GPipe) micro-batches of activations") {
  const models::ModelSpec m = small_gpt();
  const int64_t P = 4, M = 8;
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    CAPTURE(models::to_string(schedule));
    const models::Recipe r = pipeline_recipe(P, M, schedule);
    const auto chunks = models::build_pipeline_graphs(m, r);
    REQUIRE(chunks.size() == static_cast<size_t>(P));
    std::vector<models::MemoryPlan> plans;
    for (const auto& g : chunks) plans.push_back(models::plan_memory(g));
    const auto stages = sim::plan_pipeline_memory(plans, r);
    for (int d = 0; d < P; ++d) {
      const auto& plan = plans[static_cast<size_t>(d)];
      const int held = schedule == PipelineSchedule::gpipe ? static_cast<int>(M) : static_cast<int>(P) - d;
      CHECK(stages[static_cast<size_t>(d)].in_flight == held);
      CHECK(stages[static_cast<size_t>(d)].plan.weights_bytes == plan.weights_bytes);
      // held − 1 micro-batches wait while the running one uses the whole one-micro-step arena.
      CHECK(stages[static_cast<size_t>(d)].plan.activations_peak_bytes ==
            doctest::Approx((held - 1) * plan.retained_activation_bytes + plan.activations_peak_bytes));
    }
    // The middle stages hold only their layers' weights: a quarter of the transformer layers each.
    models::Recipe whole = r;
    whole.pipeline_parallel = 1;
    whole.pipeline_schedule = PipelineSchedule::one_f_one_b;
    const models::MemoryPlan full = models::plan_memory(models::build_task_graph(m, whole));
    double weights = 0;
    for (const auto& p : plans) weights += p.weights_bytes;
    // Every stage's weights add up to the model's, plus the last stage's copy of the tied word embeddings.
    const auto& tied = chunks.back().params[static_cast<size_t>(chunks.back().chunk.tied_embedding_param)];
    CHECK(weights == doctest::Approx(full.weights_bytes + static_cast<double>(chunks.back().tensor(tied.weight).bytes())));
  }
}

TEST_CASE("model chunks: embeddings first, heads last, activations and gradients exchanged") {
  const models::ModelSpec m = small_gpt();
  const auto chunks = models::build_pipeline_graphs(m, pipeline_recipe(3, 3));
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[0].chunk.recv_activation < 0);
  CHECK(chunks[0].chunk.send_activation >= 0);
  CHECK(chunks[0].chunk.send_gradient < 0);
  CHECK(chunks[1].chunk.recv_activation >= 0);
  CHECK(chunks[1].chunk.send_gradient >= 0);
  CHECK(chunks[2].chunk.send_activation < 0);
  CHECK(chunks[2].loss_tensor >= 0);
  CHECK(chunks[2].chunk.tied_embedding_param >= 0);
  CHECK(chunks[0].chunk.first_layer == 0);
  CHECK(chunks[1].chunk.first_layer == 4);
  CHECK(chunks[2].chunk.end_layer == 12);
  for (const auto& g : chunks) CHECK(g.is_acyclic_in_order());
  // Explicit split.
  models::Recipe r = pipeline_recipe(2, 2);
  r.stage_layers = {5, 7};
  const auto uneven = models::build_pipeline_graphs(m, r);
  CHECK(uneven[0].chunk.end_layer == 5);
  CHECK(uneven[1].chunk.first_layer == 5);
}

TEST_CASE("pipeline inputs Megatron refuses are input errors") {
  const models::ModelSpec m = small_gpt();
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, pipeline_recipe(5, 5)), core::InputError);  // 12 layers ÷ 5
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, pipeline_recipe(4, 6, PipelineSchedule::interleaved, 3)),
                  core::InputError);  // M % P
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, pipeline_recipe(4, 8, PipelineSchedule::interleaved, 2)),
                  core::InputError);  // 12 layers ÷ 8 chunks
  CHECK_NOTHROW(models::build_pipeline_graphs(m, pipeline_recipe(2, 4, PipelineSchedule::interleaved, 3)));
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, pipeline_recipe(2, 4, PipelineSchedule::one_f_one_b, 2)),
                  core::InputError);  // virtual stages without interleaving
  models::Recipe r = pipeline_recipe(2, 2);
  r.stage_layers = {5, 6};
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, r), core::InputError);
  r.stage_layers = {12};
  CHECK_THROWS_AS(models::build_pipeline_graphs(m, r), core::InputError);
  CHECK_THROWS_AS(models::build_task_graph(m, pipeline_recipe(2, 2)), core::InputError);
  // The cluster must hold data × tensor × pipeline parallel GPUs.
  const auto chunks = models::build_pipeline_graphs(m, pipeline_recipe(2, 2));
  CHECK_THROWS_AS(sim::simulate_pipeline_step(chunks, cluster("dgx-a100", 1, 4)), core::InputError);
}

TEST_CASE("a stage boundary across nodes adds exactly the send time the network model predicts") {
  const models::ModelSpec m = small_gpt();
  const auto chunks = models::build_pipeline_graphs(m, pipeline_recipe(2, 1));
  const double bytes = static_cast<double>(chunks[0].tensor(chunks[0].chunk.send_activation).bytes());
  auto send_seconds = [&](const sim::ClusterConfig& c) {
    sim::CollectiveSpec spec;
    spec.kind = sim::CollectiveKind::send_recv;
    spec.bytes = bytes;
    spec.ranks = {0, 1};
    spec.channels = std::max(2, c.cluster.node.nics_per_node);
    spec.mode = sim::SimulationMode::replicated;
    return sim::simulate_collective(c.cluster, spec).duration_seconds();
  };
  const sim::ClusterConfig one_node = cluster("dgx-a100", 1, 2), two_nodes = cluster("dgx-a100", 2, 1);
  const sim::StepSimulation inside = sim::simulate_pipeline_step(chunks, one_node, true);
  const sim::StepSimulation across = sim::simulate_pipeline_step(chunks, two_nodes, true);
  const double cross = send_seconds(two_nodes), local = send_seconds(one_node);
  CHECK(cross > 2 * local);  // InfiniBand is slower than NVLink
  // One micro-batch: F0, send, F1, B1, send, B0 — the passes are the same on both clusters.
  for (const auto* step : {&inside, &across}) {
    REQUIRE(step->stages.size() == 2);
    const double passes = step->stages[0].busy_seconds + step->stages[1].busy_seconds;
    const double send = step == &inside ? local : cross;
    CHECK(step->pipeline_flush_seconds == doctest::Approx(passes + 2 * send).epsilon(1e-9));
    CHECK(step->pipeline_send_seconds == doctest::Approx(2 * send).epsilon(1e-9));
  }
  CHECK(across.pipeline_flush_seconds - inside.pipeline_flush_seconds == doctest::Approx(2 * (cross - local)).epsilon(1e-6));
  // Recorded sends take the same time.
  for (const auto& span : across.pipeline_timeline)
    if (span.send) CHECK(span.end_seconds - span.start_seconds == doctest::Approx(cross).epsilon(1e-9));
}

TEST_CASE("rank_order tp-pp-dp keeps stage neighbours in a node: sends and all-reduces cost what the network says") {
  // Two DGX A100 nodes of 2 GPUs, P = 2, D = 2. tp-dp-pp: stage 0 is node 0 (ranks 0, 1), stage 1 node 1, so the
  // sends (pairs 0→2, 1→3) cross InfiniBand and each stage's all-reduce stays on NVLink. tp-pp-dp: rank = d·P + s,
  // so the sends (0→1, 2→3) stay in a node and the all-reduces (ranks 0, 2 and 1, 3) cross nodes.
  const models::ModelSpec m = small_gpt();
  models::Recipe r = pipeline_recipe(2, 1);
  r.data_parallel = 2;
  const sim::ClusterConfig c = cluster("dgx-a100", 2, 2);
  const double bytes = [&] {
    const auto chunks = models::build_pipeline_graphs(m, r);
    return static_cast<double>(chunks[0].tensor(chunks[0].chunk.send_activation).bytes());
  }();
  auto network_seconds = [&](sim::CollectiveKind kind, double size, std::vector<std::vector<int>> groups) {
    sim::CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = size;
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.channels = std::max(2, c.cluster.node.nics_per_node);
    spec.mode = sim::SimulationMode::replicated;
    return sim::simulate_collective(c.cluster, spec).duration_seconds();
  };
  const double across = network_seconds(sim::CollectiveKind::send_recv, bytes, {{0, 2}, {1, 3}});
  const double inside = network_seconds(sim::CollectiveKind::send_recv, bytes, {{0, 1}, {2, 3}});
  CHECK(across > 2 * inside);  // InfiniBand is slower than NVLink
  std::vector<double> dp_seconds;
  for (const models::RankOrder order : {models::RankOrder::tp_dp_pp, models::RankOrder::tp_pp_dp}) {
    CAPTURE(models::to_string(order));
    r.rank_order = order;
    const auto chunks = models::build_pipeline_graphs(m, r);
    const sim::StepSimulation step = sim::simulate_pipeline_step(chunks, c, true);
    const double send = order == models::RankOrder::tp_dp_pp ? across : inside;
    int sends = 0;
    for (const auto& span : step.pipeline_timeline)
      if (span.send) {
        CHECK(span.end_seconds - span.start_seconds == doctest::Approx(send).epsilon(1e-9));
        ++sends;
      }
    CHECK(sends == 2);
    dp_seconds.push_back(step.stages[0].data_parallel_comm_seconds);
  }
  // Stage 0's data-parallel time: its gradient all-reduces over a pair across nodes (tp-pp-dp) take longer
  // than over NVLink, even though its tied-embedding all-reduce with stage 1 (also counted) moves the other way.
  CHECK(dp_seconds[1] > dp_seconds[0]);
}

TEST_CASE("each stage all-reduces its gradients after its last backward; the bubble comes from the schedule") {
  const models::ModelSpec m = small_gpt();
  models::Recipe r = pipeline_recipe(4, 8);
  r.data_parallel = 2;
  const auto chunks = models::build_pipeline_graphs(m, r);
  const sim::StepSimulation step = sim::simulate_pipeline_step(chunks, cluster("dgx-a100", 1, 8), true);
  REQUIRE(step.stages.size() == 4);
  std::vector<int> reduces(4, 0);
  for (const auto& span : step.timeline) {
    if (span.stream != sim::Stream::communication || span.op < 0) continue;
    ++reduces[static_cast<size_t>(span.stage)];
    CHECK(span.start_seconds >= step.stages[static_cast<size_t>(span.stage)].last_backward_end_seconds);
  }
  for (int n : reduces) CHECK(n > 0);
  // The last stage finishes its backward passes first, the first stage last.
  CHECK(step.stages[3].last_backward_end_seconds < step.stages[0].last_backward_end_seconds);
  // Near-equal stages on NVLink: close to the formula (the first and last stage hold embeddings and head).
  CHECK(step.pipeline_bubble_fraction == doctest::Approx(3.0 / 11.0).epsilon(0.15));
  CHECK(step.iteration_seconds > step.pipeline_flush_seconds);
}
