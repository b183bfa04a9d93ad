// reports/plan_space.cpp — the planner's layouts and their no-simulation checks (see the header).
#include "reports/plan_space.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/zero.hpp"
#include "sim/pipeline_step.hpp"
#include "sim/sharded_step.hpp"

namespace ptsim::reports {

void Layout::apply(models::Recipe& r) const {
  r.tensor_parallel = tensor_parallel;
  r.pipeline_parallel = pipeline_parallel;
  r.data_parallel = data_parallel;
  r.pipeline_schedule = schedule;
  r.virtual_stages = virtual_stages;
  r.stage_layers.clear();
  r.zero_stage = zero_stage;
  r.shard_group = shard_group;
  // The scenario's rank order belongs to its own layout, not to this one.
  r.rank_order = models::RankOrder::tp_dp_pp;
  r.recompute_activations = recompute;
  r.sequence_parallel = sequence_parallel;
  // The scenario's selective recomputation where this layout does not recompute everything anyway.
  r.selective_recompute = r.selective_recompute && !recompute;
  // The scenario's pipeline overlap options where this layout has what they overlap (a pipeline; ZeRO-1's
  // gathers), cleared elsewhere: the scenario's recipe refuses them there (docs/parallelism.md).
  r.overlap_grad_reduce = r.overlap_grad_reduce && pipeline_parallel > 1;
  r.overlap_param_gather = r.overlap_param_gather && pipeline_parallel > 1 && zero_stage == 1;
}

std::string Layout::label() const {
  std::string s = fmt::format("TP {} × PP {}", tensor_parallel, pipeline_parallel);
  if (pipeline_parallel > 1) {
    s += fmt::format(" ({}", models::to_string(schedule));
    if (virtual_stages > 1) s += fmt::format(", V {}", virtual_stages);
    s += ")";
  }
  s += fmt::format(" × DP {}", data_parallel);
  if (zero_stage > 0) s += fmt::format(", ZeRO-{}", zero_stage);
  if (shard_group > 0) s += fmt::format(" (hybrid, shard group {})", shard_group);
  if (sequence_parallel) s += ", SP";
  s += recompute ? ", recompute" : ", no recompute";
  return s;
}

namespace {

// ZeRO over one data-parallel rank shards nothing; ZeRO-3 is sharded over all D and, where D is more than one
// node's data-parallel ranks, also hybrid over groups of one node (docs/planning.md).
std::vector<int64_t> shard_groups(int zero, int64_t dp, int64_t tp, int64_t gpus_per_node) {
  if (zero != 3) return {0};
  const int64_t node_group = gpus_per_node / tp;
  if (kPlannedHybridShard && node_group >= 2 && dp > node_group && dp % node_group == 0) return {0, node_group};
  return {0};
}

}  // namespace

std::vector<Layout> enumerate_layouts(int64_t gpus, int64_t gpus_per_node, int64_t num_layers) {
  std::vector<Layout> out;
  for (int64_t tp = 1; tp <= gpus_per_node && gpus % tp == 0; tp *= 2)
    for (int64_t pp = 1; pp <= std::min(gpus / tp, num_layers); ++pp) {
      if ((gpus / tp) % pp != 0) continue;
      const int64_t dp = gpus / (tp * pp);
      for (const ScheduleOption& schedule : kPlannedSchedules) {
        if (pp == 1 && schedule.schedule != models::PipelineSchedule::one_f_one_b) continue;  // no pipeline
        for (int64_t v : schedule.virtual_stages)
          for (int zero : kPlannedZeroStages) {
            if (zero > 0 && dp == 1) continue;
            for (int64_t shard : shard_groups(zero, dp, tp, gpus_per_node))
              for (bool sp : kPlannedSequenceParallel)
                for (bool recompute : kPlannedRecompute)
                  if (!sp || tp > 1)
                    out.push_back({tp, pp, dp, schedule.schedule, v, zero, shard, sp, recompute});
          }
      }
    }
  return out;
}

std::optional<std::string> layout_problem(const models::ModelSpec& model, const models::Recipe& recipe) {
  try {
    models::check_recipe_fits_model(model, recipe);
    if (recipe.pipeline_parallel > 1) {
      models::chunk_layers(model, recipe);
      if (recipe.grad_accum > sim::kMaxPipelineMicroBatches)
        return fmt::format("{} micro-batches per step, more than the {} a pipeline is simulated with",
                           recipe.grad_accum, sim::kMaxPipelineMicroBatches);
    }
    if (recipe.zero_stage >= 3 && recipe.data_parallel > 1 && recipe.grad_accum > sim::kMaxShardedMicroSteps)
      return fmt::format("{} micro-steps per step, more than the {} a ZeRO-3 step is simulated with",
                         recipe.grad_accum, sim::kMaxShardedMicroSteps);
  } catch (const core::InputError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

double layer_weight_elements(const models::ModelSpec& m) {
  const double h = static_cast<double>(m.hidden_size), f = static_cast<double>(m.intermediate_size);
  if (m.family == models::ModelFamily::llama) {  // q, o; k, v of the kv heads; SwiGLU's three (docs/llama.md)
    const double kv_width = static_cast<double>(m.kv_heads() * m.head_dim());
    return 2 * h * h + 2 * h * kv_width + 3 * h * f;
  }
  return 4 * h * h + 2 * h * f;
}

double model_states_lower_bound(const models::ModelSpec& model, const models::Recipe& r,
                                const hwprofiles::GpuProfile& gpu) {
  // The layers of the largest model chunk group one pipeline device holds (even split: layers ÷ P).
  const double layers = static_cast<double>((model.num_layers + r.pipeline_parallel - 1) / r.pipeline_parallel);
  const double elements = layers * layer_weight_elements(model) / static_cast<double>(r.tensor_parallel);
  // Bytes per parameter as the builder allocates them (models/builder.cpp: param()).
  // (fp8 stores its weights and gradients in bf16: only the GEMM operands are 8-bit casts.)
  const double compute = static_cast<double>(models::dtype_bytes(models::activation_dtype(r.precision)));
  const double master = models::is_mixed_precision(r.precision) ? 4 : 0;
  const double moments = r.optimizer == models::OptimizerKind::sgd ? 4 : 8;
  const models::ModelStates states = models::shard_model_states(
      {compute * elements, compute * elements, master * elements, moments * elements}, r.zero_stage, r.zero_shards());
  return states.total_bytes() + gpu.reserved_memory_bytes;
}

}  // namespace ptsim::reports
