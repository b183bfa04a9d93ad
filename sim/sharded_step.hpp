// sim/sharded_step.hpp — one optimizer step of a ZeRO stage 3 / FSDP FULL_SHARD graph (models::build_task_graph
// with recipe.zero_stage 3) on a cluster, through the event engine. Every micro-step the compute stream runs
// the body ops in order; before the first op of a unit's forward and of its backward (models/shard_units.hpp)
// it waits for that unit's parameter all-gather. The all-gathers are prefetched one unit ahead: the next
// unit's is issued on the communication stream as the current unit starts, so it overlaps the current
// unit's compute. A unit's gradients are reduce-scattered on the same stream as soon as its backward has
// written them. After the last micro-step each rank updates its 1/N shards (the optimizer tail, waiting for
// the reduce-scatters it reads). Hybrid sharding (recipe.shard_group): gathers and reduce-scatters span a
// shard group, each reduce-scatter followed by the all-reduce of the shard across the replica groups.
// Model, choices and limits: docs/parallelism.md.
#pragma once
#include "models/task_graph.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::sim {

// Largest micro-step count per step a ZeRO-3 step is simulated with (every micro-step's ops are events).
inline constexpr int64_t kMaxShardedMicroSteps = 4096;

// Throws core::InputError when data × tensor parallel does not match the cluster, tensor parallelism leaves
// a node, or there are more than kMaxShardedMicroSteps micro-steps.
StepSimulation simulate_sharded_step(const models::TaskGraph& graph, const ClusterConfig& config,
                                     bool record_timeline = false);

}  // namespace ptsim::sim
