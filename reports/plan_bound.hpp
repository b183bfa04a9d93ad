// reports/plan_bound.hpp — a lower bound on one simulated optimizer step, from op times and the collectives
// no schedule can hide (each timed alone by the network model, reports/plan_collectives), without running the
// event simulation: the planner (reports/plan_search) simulates a plan only when its bound can beat the best
// plan so far. docs/planning.md says why each term is a bound; tests/reports/test_plan_search.cpp checks it
// against simulations of every layout the planner searches.
#pragma once
#include "models/model_spec.hpp"
#include "models/recipe.hpp"
#include "reports/plan_collectives.hpp"
#include "reports/prediction_cache.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

// Seconds; never more than sim::simulate_step's (pipeline_parallel 1; ZeRO-3: sim/sharded_step) or
// sim::simulate_pipeline_step's iteration for the same model, recipe and cluster. `collectives` must time
// `config`'s cluster.
double step_lower_bound_seconds(const models::ModelSpec& model, const models::Recipe& recipe,
                                const sim::ClusterConfig& config, PredictionCache& cache,
                                AloneCollectives& collectives);
double step_lower_bound_seconds(const models::ModelSpec& model, const models::Recipe& recipe,
                                const sim::ClusterConfig& config, PredictionCache& cache);

}  // namespace ptsim::reports
