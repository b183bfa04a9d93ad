// reports/plan_space.hpp — what the planner (reports/plan_search) searches: the parallel layouts of one
// model on one cluster (tensor × pipeline × data parallel, schedule and virtual stages, ZeRO stage,
// activation recomputation), the option lists in one place, and the checks that need no simulation —
// divisibility and the simulator's own rules (models::check_recipe_fits_model) and a lower bound on the
// model states each GPU must hold. docs/planning.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/model_spec.hpp"
#include "models/recipe.hpp"

namespace ptsim::reports {

// ---- The options searched. A new option of an existing axis is one line here; the simulator's rule for
// it (which combinations it runs) lives in models::check_recipe_fits_model, which every candidate is
// checked against, so nothing else in the planner needs to change.
inline const std::vector<int> kPlannedZeroStages = {0, 1, 2, 3};
inline const std::vector<bool> kPlannedRecompute = {false, true};
// Megatron sequence parallelism, tried where there is tensor parallelism to split (T > 1).
inline const std::vector<bool> kPlannedSequenceParallel = {false, true};
// ZeRO-3 also as hybrid sharding with one node's data-parallel ranks a shard group (shard_group = GPUs per
// node ÷ T), where D is larger than that (FSDP's HYBRID_SHARD; docs/parallelism.md).
inline constexpr bool kPlannedHybridShard = true;
struct ScheduleOption {
  models::PipelineSchedule schedule;
  std::vector<int64_t> virtual_stages;  // tried where they divide the layers (interleaved only)
};
inline const std::vector<ScheduleOption> kPlannedSchedules = {
    {models::PipelineSchedule::one_f_one_b, {1}},
    {models::PipelineSchedule::interleaved, {2, 3, 4}},
    {models::PipelineSchedule::gpipe, {1}},
};
// Largest micro-batch a phase is searched at (as the sweep planner always capped it).
inline constexpr int64_t kPlannedMaxMicroBatch = 4096;

// One way to split the model over the cluster, for the whole run (every phase).
struct Layout {
  int64_t tensor_parallel = 1, pipeline_parallel = 1, data_parallel = 1;
  models::PipelineSchedule schedule = models::PipelineSchedule::one_f_one_b;
  int64_t virtual_stages = 1;
  int zero_stage = 0;
  int64_t shard_group = 0;  // ZeRO-3 hybrid sharding's group (0: shard over all D)
  bool sequence_parallel = false;
  bool recompute = false;

  void apply(models::Recipe& r) const;  // sets these fields (and clears stage_layers: even split)
  std::string label() const;            // "TP 8 × PP 16 (1f1b) × DP 8, SP, recompute"
};

// Every layout of `gpus` GPUs in nodes of `gpus_per_node`: TP a power of two within a node (Megatron keeps
// it in the NVLink domain), PP any divisor of the rest up to the layers, DP what remains; then each
// schedule (PP > 1), virtual-stage count, ZeRO stage (and hybrid shard group), sequence parallelism (T > 1)
// and recomputation choice.
std::vector<Layout> enumerate_layouts(int64_t gpus, int64_t gpus_per_node, int64_t num_layers);

// Why `recipe` (a layout applied to a phase's recipe) cannot be built or simulated — the model's
// divisibility, the simulator's unsupported combinations, the pipeline's layer split and micro-batch
// limit — or nullopt when it can.
std::optional<std::string> layout_problem(const models::ModelSpec& model, const models::Recipe& recipe);

// A lower bound on the bytes one GPU needs for the model states of `recipe` (weights, gradients, fp32
// masters and optimizer moments of the transformer layers of the largest stage, the ZeRO shard of them),
// plus the GPU's reserved memory: the true need is larger (embeddings, biases, activations), so a layout
// whose bound exceeds the GPU cannot fit and is pruned without building a graph.
double model_states_lower_bound(const models::ModelSpec& model, const models::Recipe& recipe,
                                const hwprofiles::GpuProfile& gpu);

// The weights of one transformer layer without biases and norms: attention Q, K, V and output projections
// and the MLP's two matrices (4h² + 2·h·ffn); Llama: q, o, k and v of the kv heads, SwiGLU's three matrices
// (2h² + 2·h·kv·d + 3·h·ffn).
double layer_weight_elements(const models::ModelSpec& model);

}  // namespace ptsim::reports
