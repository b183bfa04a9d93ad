// reports/auto_recipe.hpp — the sweep's --auto-recipe: for one cluster, the planner's fastest plan that
// fits (reports/plan_search: tensor × pipeline × data parallel, schedule, ZeRO stage, recomputation, and
// each phase's micro-batch × accumulation at the base scenario's global batch), as the scenario to predict
// and notes saying why the runners-up lost.
#pragma once
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/plan_search.hpp"
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

// The notes of a search with a best plan: each phase's micro-batch, the layout, the named runners-up.
std::vector<std::string> plan_notes(const Scenario& scenario, const PlanSearch& search);

// Throws core::InfeasibleError (memory) when no plan fits, naming the closest miss and the fix.
AutoRecipe choose_recipe(const Scenario& scenario, const std::vector<int64_t>& global_batches,
                         const hwprofiles::ProfileSet& profiles, PredictionCache& cache);

}  // namespace ptsim::reports
