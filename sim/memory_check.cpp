// sim/memory_check.cpp — memory fit and the suggestions printed when a configuration does not fit.
#include "sim/memory_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "sim/pipeline_schedule.hpp"

namespace ptsim::sim {
namespace {
std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }
}  // namespace

MemoryFit check_memory(const models::MemoryPlan& plan, const hwprofiles::GpuProfile& gpu) {
  MemoryFit f;
  f.needed_bytes = plan.total_bytes() + gpu.reserved_memory_bytes;
  f.available_bytes = gpu.memory_bytes;
  f.fits = f.needed_bytes <= f.available_bytes;
  return f;
}

std::vector<StageMemory> plan_pipeline_memory(const std::vector<models::MemoryPlan>& chunk_plans,
                                              const models::Recipe& recipe) {
  const PipelineShape shape = PipelineShape::of(recipe);
  std::vector<StageMemory> stages;
  for (int d = 0; d < shape.stages; ++d) {
    StageMemory s;
    s.stage = d;
    models::MemoryPlan& p = s.plan;
    for (int g = d; g < shape.chunks(); g += shape.stages) {
      const models::MemoryPlan& c = chunk_plans.at(static_cast<size_t>(g));
      p.weights_bytes += c.weights_bytes;
      p.master_weights_bytes += c.master_weights_bytes;
      p.gradients_bytes += c.gradients_bytes;
      p.optimizer_state_bytes += c.optimizer_state_bytes;
      p.inputs_bytes += c.inputs_bytes;
      p.workspace_bytes = std::max(p.workspace_bytes, c.workspace_bytes);
    }
    // Walk the schedule: a task runs with the retained activations of every other forward in flight.
    const std::vector<PipelineTask> order = pipeline_order(shape, d);
    double held = 0;
    for (const PipelineTask& t : order) {
      const models::MemoryPlan& c = chunk_plans.at(static_cast<size_t>(t.chunk));
      if (t.backward) held -= c.retained_activation_bytes;
      p.activations_peak_bytes = std::max(p.activations_peak_bytes, held + c.activations_peak_bytes);
      p.activations_live_peak_bytes = std::max(p.activations_live_peak_bytes, held + c.activations_live_peak_bytes);
      if (!t.backward) held += c.retained_activation_bytes;
    }
    s.in_flight = peak_in_flight(order);
    s.in_flight_micro_batches = static_cast<double>(s.in_flight) / shape.virtual_stages;
    stages.push_back(s);
  }
  return stages;
}

const StageMemory& worst_stage(const std::vector<StageMemory>& stages, const hwprofiles::GpuProfile& gpu) {
  if (stages.empty()) throw std::logic_error("worst_stage: no stages");
  const StageMemory* worst = &stages.front();
  for (const auto& s : stages)
    if (check_memory(s.plan, gpu).needed_bytes > check_memory(worst->plan, gpu).needed_bytes) worst = &s;
  return *worst;
}

int64_t largest_fitting_micro_batch(const models::ModelSpec& model, const models::Recipe& recipe,
                                    const hwprofiles::GpuProfile& gpu, bool recompute) {
  auto fits = [&](int64_t mb) {
    models::Recipe r = recipe;
    r.micro_batch = mb;
    r.recompute_activations = recompute;
    return check_memory(models::plan_memory(models::build_task_graph(model, r)), gpu).fits;
  };
  // Memory grows monotonically with the micro-batch: binary search.
  int64_t lo = 0, hi = recipe.micro_batch;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

namespace {

std::string breakdown(const models::MemoryPlan& plan, const hwprofiles::GpuProfile& gpu) {
  return fmt::format("  weights {}, master weights {}, gradients {}, optimizer state {}, activations {}, inputs {}, "
                     "workspace {}, reserved {}",
                     gib(plan.weights_bytes), gib(plan.master_weights_bytes), gib(plan.gradients_bytes),
                     gib(plan.optimizer_state_bytes), gib(plan.activations_peak_bytes), gib(plan.inputs_bytes),
                     gib(plan.workspace_bytes), gib(gpu.reserved_memory_bytes));
}

bool pipeline_fits(const models::ModelSpec& model, const models::Recipe& recipe, const hwprofiles::GpuProfile& gpu) {
  std::vector<models::MemoryPlan> plans;
  for (const auto& g : models::build_pipeline_graphs(model, recipe)) plans.push_back(models::plan_memory(g));
  return check_memory(worst_stage(plan_pipeline_memory(plans, recipe), gpu).plan, gpu).fits;
}

// The shallowest pipeline (a power of two above the recipe's, on the same GPUs) that fits: "" when none does.
std::string deeper_pipeline(const models::ModelSpec& model, const models::Recipe& recipe, const hwprofiles::GpuProfile& gpu) {
  const int64_t gpus = recipe.data_parallel * recipe.tensor_parallel * recipe.pipeline_parallel;
  for (int64_t p = recipe.pipeline_parallel * 2; p <= gpus / recipe.tensor_parallel && p <= model.num_layers; p *= 2) {
    models::Recipe r = recipe;
    r.pipeline_parallel = p;
    r.data_parallel = gpus / (recipe.tensor_parallel * p);
    r.stage_layers.clear();
    r.zero_stage = std::min(r.zero_stage, 1);  // a pipeline runs with ZeRO-1 (the distributed optimizer) at most
    r.shard_group = 0;
    if (r.data_parallel * recipe.tensor_parallel * p != gpus || model.num_layers % p != 0 ||
        r.pipeline_schedule == models::PipelineSchedule::interleaved)
      continue;
    try {
      if (pipeline_fits(model, r, gpu))
        return fmt::format("\n  try: recipe.pipeline_parallel={} (data-parallel {}) fits", p, r.data_parallel);
    } catch (const core::InputError&) {
    }
  }
  return "";
}

// Without a pipeline: the lowest ZeRO stage that fits (data parallelism only), and the pipeline that does.
std::string parallel_fix(const models::ModelSpec& model, const models::Recipe& recipe, const hwprofiles::GpuProfile& gpu) {
  std::string zero;
  if (recipe.data_parallel > 1)
    for (int stage = recipe.zero_stage + 1; stage <= 3 && zero.empty(); ++stage) {
      models::Recipe r = recipe;
      r.zero_stage = stage;
      if (check_memory(models::plan_memory(models::build_task_graph(model, r)), gpu).fits)
        zero = fmt::format("\n  try: recipe.zero_stage={} (ZeRO over {} data-parallel ranks{}) fits", stage,
                           r.data_parallel, stage == 3 ? "; FSDP FULL_SHARD" : "");
    }
  models::Recipe r = recipe;
  r.pipeline_schedule = models::PipelineSchedule::one_f_one_b;
  r.virtual_stages = 1;
  return zero + deeper_pipeline(model, r, gpu);
}

// What else would fit a pipeline that does not: recomputation, a smaller micro-batch, more stages (each
// checked by building the graphs, at most a few dozen builds).
std::string pipeline_suggestions(const models::ModelSpec& model, const models::Recipe& recipe,
                                 const hwprofiles::GpuProfile& gpu) {
  std::string out;
  auto try_fits = [&](const models::Recipe& r) {
    try {
      return pipeline_fits(model, r, gpu);
    } catch (const core::InputError&) {
      return false;  // e.g. the stages do not divide the layers
    }
  };
  if (!recipe.recompute_activations) {
    models::Recipe r = recipe;
    r.recompute_activations = true;
    if (try_fits(r)) out += "\n  try: recipe.recompute=true (activation recomputation) fits";
  }
  int64_t lo = 0, hi = recipe.micro_batch - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    models::Recipe r = recipe;
    r.micro_batch = mid;
    if (try_fits(r)) lo = mid;
    else hi = mid - 1;
  }
  if (lo > 0) out += fmt::format("\n  try: micro_batch {} (the largest that fits)", lo);
  out += deeper_pipeline(model, recipe, gpu);
  if (out.empty()) out = "\n  no smaller micro-batch, recomputation or deeper pipeline fits: use more GPUs or more "
                         "tensor parallelism";
  return out;
}

}  // namespace

void require_pipeline_fits(const models::ModelSpec& model, const models::Recipe& recipe,
                           const std::vector<StageMemory>& stages, const hwprofiles::GpuProfile& gpu, bool suggest) {
  const StageMemory& worst = worst_stage(stages, gpu);
  const MemoryFit f = check_memory(worst.plan, gpu);
  if (f.fits) return;
  std::string msg = fmt::format(
      "{} with {} micro-batch {} × seq {} in a {}-stage {} pipeline does not fit on {} ({}): stage {} needs {} "
      "({:.3g} micro-batches in flight)\n{}",
      model.name, models::to_string(recipe.precision), recipe.micro_batch, recipe.seq_len, recipe.pipeline_parallel,
      models::to_string(recipe.pipeline_schedule), gpu.name, gib(f.available_bytes), worst.stage, gib(f.needed_bytes),
      worst.in_flight_micro_batches, breakdown(worst.plan, gpu));
  const double over_bytes = f.needed_bytes - f.available_bytes;
  if (suggest) msg += pipeline_suggestions(model, recipe, gpu);
  throw core::InfeasibleError(core::Infeasibility::memory, msg, over_bytes);
}

void require_fits(const models::ModelSpec& model, const models::Recipe& recipe, const models::MemoryPlan& plan,
                  const hwprofiles::GpuProfile& gpu, bool suggest) {
  MemoryFit f = check_memory(plan, gpu);
  if (f.fits) return;
  std::string msg = fmt::format(
      "{} with {} micro-batch {} × seq {} does not fit on {} ({}): needs {}\n"
      "  weights {}, master weights {}, gradients {}, optimizer state {}, activations {}, inputs {}, workspace {}, "
      "reserved {}",
      model.name, models::to_string(recipe.precision), recipe.micro_batch, recipe.seq_len, gpu.name,
      gib(f.available_bytes), gib(f.needed_bytes), gib(plan.weights_bytes), gib(plan.master_weights_bytes),
      gib(plan.gradients_bytes), gib(plan.optimizer_state_bytes), gib(plan.activations_peak_bytes),
      gib(plan.inputs_bytes), gib(plan.workspace_bytes), gib(gpu.reserved_memory_bytes));
  const double over_bytes = f.needed_bytes - f.available_bytes;
  if (!suggest) throw core::InfeasibleError(core::Infeasibility::memory, msg, over_bytes);
  int64_t mb = largest_fitting_micro_batch(model, recipe, gpu, recipe.recompute_activations);
  if (mb > 0) {
    int64_t accum = (recipe.micro_batch * recipe.grad_accum + mb - 1) / mb;
    msg += fmt::format("\n  try: --micro-batch {} (the largest that fits) with --grad-accum {} to keep the batch", mb,
                       accum);
  }
  // With recomputation already on, the search above was the recomputation one.
  const int64_t mb_recompute =
      recipe.recompute_activations ? mb : largest_fitting_micro_batch(model, recipe, gpu, true);
  if (mb_recompute > mb)
    msg += fmt::format("\n  or: --recompute (activation recomputation) fits micro-batch {}", mb_recompute);
  if (mb_recompute == 0) {
    const std::string fix = parallel_fix(model, recipe, gpu);
    msg += fix.empty() ? "\n  even micro-batch 1 does not fit: use a GPU with more memory, tensor or pipeline parallelism"
                       : "\n  even micro-batch 1 does not fit without more model parallelism" + fix;
  }
  throw core::InfeasibleError(core::Infeasibility::memory, msg, over_bytes);
}

}  // namespace ptsim::sim
