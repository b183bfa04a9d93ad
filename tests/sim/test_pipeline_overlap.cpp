// tests/sim/test_pipeline_overlap.cpp — Megatron-LM's --overlap-grad-reduce and --overlap-param-gather with a
// pipeline (docs/parallelism.md, "Overlapping the data-parallel communication with the pipeline"): with free
// communication nothing changes; on a slow network the overlapped step is faster, by no more than the
// communication it hides, and the trace shows the reductions during the last backward passes and the ZeRO-1
// gathers during the forward. GPT-2 124M shapes, two DGX A100 nodes of 2 GPUs, P = 2 × D = 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "sim/pipeline_overlap.hpp"
#include "sim/pipeline_step.hpp"

using namespace ptsim;

namespace {

struct Overlap {
  bool grad_reduce = false, param_gather = false;
};

models::Recipe recipe(int zero_stage, Overlap overlap, models::PipelineSchedule schedule = models::PipelineSchedule::one_f_one_b,
                      int64_t V = 1) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 256;
  r.grad_accum = 4;
  r.data_parallel = 2;
  r.pipeline_parallel = 2;
  r.pipeline_schedule = schedule;
  r.virtual_stages = V;
  // tp-pp-dp: each stage's data-parallel pair spans the two nodes, the pipeline sends stay on NVLink.
  r.rank_order = models::RankOrder::tp_pp_dp;
  r.zero_stage = zero_stage;
  r.overlap_grad_reduce = overlap.grad_reduce;
  r.overlap_param_gather = overlap.param_gather;
  return r;
}

// Two DGX A100 nodes of 2 GPUs each; the network's line rate scaled by `network_scale`.
sim::ClusterConfig cluster(double network_scale) {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  sim::ClusterConfig c;
  c.cluster.node = hwprofiles::find_node(profiles, "dgx-a100");
  c.cluster.node.gpus_per_node = 2;
  c.cluster.node.nics_per_node = 2;
  c.cluster.network = hwprofiles::find_network(profiles, c.cluster.node.default_network);
  c.cluster.network.link_bytes_per_second *= network_scale;
  c.cluster.nodes = 2;
  c.gpu = hwprofiles::device_profile(profiles, c.cluster.node.gpu, hwprofiles::default_stack_for(profiles, c.cluster.node.gpu));
  return c;
}

// Communication for free: every link (NVLink, the GPU-NIC PCIe path, the NICs) 1e18 B/s and no latency, so a 100 MB bucket takes 1e-10 s.
sim::ClusterConfig free_communication() {
  sim::ClusterConfig c = cluster(1);
  c.cluster.node.nvlink_bytes_per_second = 1e18;
  c.cluster.node.pcie_link_bytes_per_second = 1e18;  // the GPU-NIC path
  c.cluster.node.pcie_host_bridge_bytes_per_second = 0;  // none
  c.cluster.node.intra_node_latency_seconds = 0;
  c.cluster.network.link_bytes_per_second = 1e18;
  c.cluster.network.latency_seconds = 0;
  c.cluster.network.per_flow_bytes_per_second = 0;
  return c;
}

sim::StepSimulation step(const models::Recipe& r, const sim::ClusterConfig& c) {
  return sim::simulate_pipeline_step(models::build_pipeline_graphs(models::load_model("gpt2-124m"), r), c, true);
}

bool is_reduction(models::OpKind k) { return k == models::OpKind::all_reduce || k == models::OpKind::reduce_scatter; }

}  // namespace

TEST_CASE("overlapping the pipeline's data-parallel communication changes nothing when it is free") {
  // The reductions and gathers then take ~1e-10 s each, so the step is its passes and optimizer either way;
  // 1e-6 relative covers a few hundred of them against a step of tens of milliseconds.
  const sim::ClusterConfig c = free_communication();
  for (int zero : {0, 1}) {
    CAPTURE(zero);
    const double plain = step(recipe(zero, {}), c).iteration_seconds;
    CHECK(step(recipe(zero, {true, false}), c).iteration_seconds == doctest::Approx(plain).epsilon(1e-6));
    if (zero == 1) CHECK(step(recipe(zero, {true, true}), c).iteration_seconds == doctest::Approx(plain).epsilon(1e-6));
  }
}

TEST_CASE("overlap_grad_reduce on a slow network: faster by at most the reductions, which run during the backward") {
  // Network at 1/50 of InfiniBand HDR: a stage's gradient reductions (~60 MB over the pair) take longer than
  // its passes, so reducing each bucket as it becomes final hides part of them and the rest stays exposed.
  const sim::ClusterConfig c = cluster(1.0 / 50);
  struct Case {
    int zero;
    models::PipelineSchedule schedule;
    int64_t V;
  };
  for (const Case k : {Case{0, models::PipelineSchedule::one_f_one_b, 1}, Case{1, models::PipelineSchedule::one_f_one_b, 1},
                       Case{0, models::PipelineSchedule::interleaved, 2}}) {
    CAPTURE(k.zero);
    CAPTURE(k.V);
    const sim::StepSimulation plain = step(recipe(k.zero, {}, k.schedule, k.V), c);
    const sim::StepSimulation overlapped = step(recipe(k.zero, {true, false}, k.schedule, k.V), c);
    double reductions = 0;  // the longest stage's reduction time (its buckets and the tied embeddings)
    for (const auto& s : plain.stages) reductions = std::max(reductions, s.data_parallel_comm_seconds);
    const double gain = plain.iteration_seconds - overlapped.iteration_seconds;
    CHECK(gain > 0);
    CHECK(gain <= reductions * (1 + 1e-9));
    // The trace: some bucket of every stage is reduced while that stage still runs backward passes.
    const auto chunks = models::build_pipeline_graphs(models::load_model("gpt2-124m"), recipe(k.zero, {true, false}, k.schedule, k.V));
    for (int stage = 0; stage < 2; ++stage) {
      CAPTURE(stage);
      int during_backward = 0;
      for (const auto& span : overlapped.timeline)
        if (span.stage == stage && span.op >= 0 && span.stream == sim::Stream::communication &&
            is_reduction(chunks[static_cast<size_t>(span.chunk)].op(span.op).kind) &&
            span.start_seconds < overlapped.stages[static_cast<size_t>(stage)].last_backward_end_seconds)
          ++during_backward;
      CHECK(during_backward > 0);
    }
  }
}

TEST_CASE("overlap_param_gather: the ZeRO-1 gathers run during the forward, none after the updates") {
  const sim::ClusterConfig c = cluster(1.0 / 50);
  const models::Recipe r = recipe(1, {true, true});
  const auto chunks = models::build_pipeline_graphs(models::load_model("gpt2-124m"), r);
  auto kind = [&](const sim::TimelineSpan& span) { return chunks[static_cast<size_t>(span.chunk)].op(span.op).kind; };
  const sim::StepSimulation reduced_only = step(recipe(1, {true, false}), c);
  const sim::StepSimulation both = step(r, c);
  // The gathers leave the step's end: faster, by no more than the longest stage's gathers took there.
  std::vector<double> gathers(2, 0.0);
  for (const auto& span : reduced_only.timeline)
    if (span.op >= 0 && kind(span) == models::OpKind::all_gather)
      gathers[static_cast<size_t>(span.stage)] += span.end_seconds - span.start_seconds;
  const double gain = reduced_only.iteration_seconds - both.iteration_seconds;
  CHECK(gain > 0);
  CHECK(gain <= std::max(gathers[0], gathers[1]) * (1 + 1e-9));
  for (int stage = 0; stage < 2; ++stage) {
    CAPTURE(stage);
    double first_gather_end = both.iteration_seconds, last_gather_end = 0, first_update = both.iteration_seconds;
    for (const auto& span : both.timeline) {
      if (span.stage != stage || span.op < 0) continue;
      if (kind(span) == models::OpKind::all_gather) {
        first_gather_end = std::min(first_gather_end, span.end_seconds);
        last_gather_end = std::max(last_gather_end, span.end_seconds);
      }
      if (kind(span) == models::OpKind::optimizer_update) first_update = std::min(first_update, span.start_seconds);
    }
    CHECK(last_gather_end > 0);
    CHECK(last_gather_end <= first_update);
    // The stage's first forward pass cannot end before its first bucket is gathered.
    for (const auto& pass : both.pipeline_timeline)
      if (pass.device == stage && !pass.send && !pass.task.backward && pass.task.micro == 0)
        CHECK(pass.end_seconds >= first_gather_end);
  }
}

TEST_CASE("a pass held by its gathers ends when its last held op can have run") {
  // Ops back to back from start 1.0 for 3 s; a bucket first read 2 s in and gathered at 4.0 holds the rest
  // (1 s) until then: end 5.0; one gathered before the pass holds nothing (end 4.0). Exact arithmetic.
  CHECK(sim::gated_pass_end(1.0, 3.0, {{2.0, 4.0}}) == doctest::Approx(5.0));
  CHECK(sim::gated_pass_end(1.0, 3.0, {{0.0, 0.5}}) == doctest::Approx(4.0));
  CHECK(sim::gated_pass_end(1.0, 3.0, {{0.0, 0.5}, {2.0, 4.0}, {3.0, 4.5}}) == doctest::Approx(5.0));
}
