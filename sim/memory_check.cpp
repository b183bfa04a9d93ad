// sim/memory_check.cpp — memory fit and the suggestions printed when a configuration does not fit.
#include "sim/memory_check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "models/builder.hpp"

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
  if (mb_recompute == 0)
    msg += "\n  even micro-batch 1 does not fit: use a GPU with more memory or tensor parallelism";
  throw core::InfeasibleError(core::Infeasibility::memory, msg, over_bytes);
}

}  // namespace ptsim::sim
