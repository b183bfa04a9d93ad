// tests/sim/test_sequence_parallel_step.cpp — a predicted step with Megatron sequence parallelism against the
// same step with tensor parallelism alone (docs/parallelism.md, "Sequence parallelism"): SP costs at most the
// extra time its collectives take on the network model, saves LayerNorm/dropout/residual compute, and cuts
// activation memory; in a pipeline the stage sends carry the rank's sequence shard with no gather.
#include <doctest/doctest.h>

#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "sim/collectives.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/step_simulator.hpp"
#include "tests/sim/zero_test_support.hpp"
#include "tests/support/gpt_spec.hpp"

using namespace ptsim;
using testing::dgx_a100;

namespace {

// A GPT-shaped model (4 layers, hidden 2048, 16 heads) that tensor parallelism 8 divides.
models::ModelSpec gpt() { return testing::gpt_shaped("gpt-sp-step", 4, 2048, 16, 2048); }

models::Recipe recipe(bool sp) {
  models::Recipe r;
  r.precision = models::Precision::bf16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 2;
  r.seq_len = 2048;
  r.grad_accum = 2;
  r.tensor_parallel = 8;
  r.sequence_parallel = sp;
  return r;
}

// Seconds of every tensor-parallel collective of one micro-step on the network model alone (the 8 GPUs of
// the node are the one TP group), times the micro-steps.
double tp_collective_seconds(const models::TaskGraph& g, const sim::ClusterConfig& c) {
  double seconds = 0;
  for (const auto& op : g.ops) {
    if (!models::is_micro_step_phase(op.phase) || !models::is_communication(op.kind)) continue;
    const sim::CollectiveKind kind = op.kind == models::OpKind::all_gather       ? sim::CollectiveKind::all_gather
                                     : op.kind == models::OpKind::reduce_scatter ? sim::CollectiveKind::reduce_scatter
                                                                                 : sim::CollectiveKind::all_reduce;
    seconds += sim::simulate_collective(
                   c.cluster, sim::whole_cluster_collective(c, kind, sim::CollectiveAlgorithm::ring, op.attrs.comm.bytes))
                   .duration_seconds();
  }
  return seconds * static_cast<double>(g.micro_steps);
}

}  // namespace

TEST_CASE("sequence parallelism never slows a step by more than its collectives' network time, and saves memory") {
  const sim::ClusterConfig c = dgx_a100(1);
  const models::TaskGraph tp_graph = models::build_task_graph(gpt(), recipe(false));
  const models::TaskGraph sp_graph = models::build_task_graph(gpt(), recipe(true));
  const sim::StepSimulation tp = sim::simulate_step(tp_graph, c), sp = sim::simulate_step(sp_graph, c);
  // With one data-parallel rank the TP collectives block the compute stream one at a time: the step charges
  // each exactly what the network model says for it alone (1e-9 relative: sums of the same doubles).
  CHECK(tp.blocking_comm_seconds == doctest::Approx(tp_collective_seconds(tp_graph, c)).epsilon(1e-9));
  CHECK(sp.blocking_comm_seconds == doctest::Approx(tp_collective_seconds(sp_graph, c)).epsilon(1e-9));
  // LayerNorm, dropout and residual adds on 1/8 of the rows: less compute.
  CHECK(sp.compute_seconds < tp.compute_seconds);
  // So the step is at most the extra communication slower (1 ns of slack for the event engine's sums).
  CHECK(sp.iteration_seconds - tp.iteration_seconds <= sp.blocking_comm_seconds - tp.blocking_comm_seconds + 1e-9);
  // Activation memory: the peak and what each micro-step keeps for its backward both fall.
  const models::MemoryPlan tp_plan = models::plan_memory(tp_graph), sp_plan = models::plan_memory(sp_graph);
  CHECK(sp_plan.activations_peak_bytes < tp_plan.activations_peak_bytes);
  // What a micro-step keeps falls as the per-layer closed forms say (tests/models/test_sequence_parallel.cpp):
  // (34 + 5as/h)/t ÷ (10 + 24/t + 5as/(ht)) = 14.25 / 23 at s = h = 2048, a = 16, t = 8; the embeddings, the
  // head and the LayerNorm statistics move it by under 2%.
  CHECK(sp_plan.retained_activation_bytes / tp_plan.retained_activation_bytes == doctest::Approx(14.25 / 23).epsilon(0.02));
}

TEST_CASE("a pipeline with sequence parallelism sends each rank's sequence shard whole") {
  // 2 stages × TP 4 on one DGX A100: without SP each TP rank sends 1/4 of the [B·S, H] activation and the
  // receiving group all-gathers it; with SP the tensor is the 1/4 shard already, sent as it is. Same bytes
  // over the link, one collective fewer, so the send is not slower.
  auto step = [](bool sp) {
    models::Recipe r = recipe(sp);
    r.tensor_parallel = 4;
    r.pipeline_parallel = 2;
    return sim::simulate_pipeline_step(models::build_pipeline_graphs(gpt(), r), dgx_a100(1));
  };
  const sim::StepSimulation tp = step(false), sp = step(true);
  CHECK(sp.pipeline_send_seconds > 0);
  CHECK(sp.pipeline_send_seconds < tp.pipeline_send_seconds);
}
