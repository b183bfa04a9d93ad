// reports/auto_recipe.hpp — the sweep's --auto-recipe planner: for one cluster, choose each phase's
// micro-batch × gradient accumulation that keeps the phase's global batch, and (for the whole run)
// activation recomputation and — only where the model needs it to fit — tensor parallelism, minimising the
// predicted training time within GPU memory. It searches what users do by hand: the largest micro-batch
// that fits (binary search over the divisors of the per-rank batch: memory grows with the micro-batch),
// the next smaller one, with and without recomputation, each simulated on the cluster; and it says why the
// runners-up lost. Not here: pipeline parallelism or sharded optimizers (not modelled yet).
#pragma once
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {

struct AutoRecipe {
  Scenario scenario;                 // the input with phases' micro_batch/grad_accum and the recipe chosen
  std::vector<std::string> notes;    // which recipe won and why the others lost (memory, time)
};

// The global batch each phase trains with in `base` (its global_batch, or micro × accum × data-parallel
// ranks on the base cluster).
std::vector<int64_t> phase_global_batches(const Scenario& base, const hwprofiles::ProfileSet& profiles);

// Throws core::InfeasibleError (memory) when no recipe fits, naming the closest miss.
AutoRecipe choose_recipe(const Scenario& scenario, const std::vector<int64_t>& global_batches,
                         const hwprofiles::ProfileSet& profiles, PredictionCache& cache);

}  // namespace ptsim::reports
