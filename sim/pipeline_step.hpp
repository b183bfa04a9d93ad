// sim/pipeline_step.hpp — one optimizer step of a pipeline-parallel model (models::build_pipeline_graphs) on a
// cluster, through the event engine: every stage's compute stream runs the schedule's forward and backward
// passes (sim/pipeline_schedule), activations go forward and gradients backward between stages as flows on
// the topology (so a stage boundary across nodes costs what the network model says), then each stage
// all-reduces its gradients over its data-parallel group after its last backward, the first and last stage
// all-reduce their tied word embeddings, and each stage runs its optimizer. Ranks follow Megatron-LM's order
// (tensor parallel innermost, then data parallel, then pipeline): rank = stage·D·T + d·T + t, unless
// recipe.rank_order says tp-pp-dp.
// Model and simplifications: docs/parallelism.md.
#pragma once
#include <vector>

#include "models/task_graph.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::sim {

// Largest micro-batch count per step a pipeline is simulated with (every micro-batch's passes are events).
inline constexpr int64_t kMaxPipelineMicroBatches = 1 << 16;

// `chunks`: every model chunk's graph, in model order. Throws core::InputError when data × tensor × pipeline
// parallel does not match the cluster, tensor parallelism leaves a node, or there are too many micro-batches.
StepSimulation simulate_pipeline_step(const std::vector<models::TaskGraph>& chunks, const ClusterConfig& config,
                                      bool record_timeline = false, CollectiveCache* cache = nullptr);

// Global rank of (pipeline stage, data-parallel index, tensor-parallel index) in `order` (models/recipe.hpp).
inline int pipeline_rank(int stage, int dp_index, int tp_index, int dp, int tp, int stages = 1,
                         models::RankOrder order = models::RankOrder::tp_dp_pp) {
  if (order == models::RankOrder::tp_pp_dp) return (dp_index * stages + stage) * tp + tp_index;
  return (stage * dp + dp_index) * tp + tp_index;
}

}  // namespace ptsim::sim
