// reports/plan_search.hpp — the planner: for one scenario's model and cluster, the fastest parallel plan
// that fits GPU memory — tensor × pipeline × data parallel, schedule and virtual stages, ZeRO stage,
// recomputation (reports/plan_space) and each phase's micro-batch × accumulation at its global batch — and
// why each other layout lost. Branch and bound, exact with respect to the simulator: layouts are pruned
// without a graph when their model states alone exceed the GPU, without a simulation when a lower bound on
// their step (compute and the communication no schedule can hide, reports/plan_bound) is already slower than
// the best simulated plan. docs/planning.md.
#pragma once
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/plan_space.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {

enum class PlanVerdict {
  best,          // the fastest plan that fits
  slower,        // fits, simulated, slower than the best
  bounded,       // fits, but its step's lower bound is slower than the best: not simulated
  no_fit,        // a phase does not fit even at its smallest micro-batch (graph built, memory planned)
  states_no_fit, // its model states alone exceed the GPU (lower bound, no graph built)
  invalid,       // the model or the simulator does not allow it (reason says why)
};
const char* to_string(PlanVerdict v);

struct PhasePlan {
  int64_t micro_batch = 0, grad_accum = 0, steps = 0;
  double iteration_seconds = 0;  // simulated (a lower bound for `bounded`)
  double memory_bytes = 0;       // needed on the fullest GPU
  int64_t miss_micro_batch = 0;  // the next larger micro-batch, which does not fit (0: none larger)
  double miss_bytes = 0;         // what it needs
};

struct LayoutPlan {
  Layout layout;
  PlanVerdict verdict = PlanVerdict::invalid;
  std::vector<PhasePlan> phases;  // each phase's best micro-batch (best, slower, bounded)
  double seconds = 0;             // training time: simulated (best, slower) or its lower bound (bounded)
  double needed_bytes = 0;        // no_fit: the need at the smallest micro-batch; states_no_fit: the bound
  std::string reason;             // invalid: the simulator's or the model's message
  std::string why(const LayoutPlan& best, double available_bytes) const;  // one line: why it lost
};

struct PlanSearch {
  std::vector<LayoutPlan> layouts;  // the best first, then slower, bounded, no_fit, states_no_fit, invalid
  double available_bytes = 0;       // one GPU's memory
  int simulations = 0;              // step simulations run (cache hits included)
  int memory_plans = 0;             // graphs built and memory-planned (cache hits included)
  const LayoutPlan* best() const;   // nullptr when nothing fits
};

// `global_batches`: the global batch each phase keeps (reports::phase_global_batches). The scenario's own
// parallelism fields are ignored: the planner chooses them.
PlanSearch search_plans(const Scenario& scenario, const std::vector<int64_t>& global_batches,
                        const hwprofiles::ProfileSet& profiles, PredictionCache& cache);

// The scenario with the plan applied: recipe layout, each phase's micro-batch and accumulation.
Scenario apply_plan(const Scenario& scenario, const LayoutPlan& plan);

// core::InfeasibleError (memory, exit 2) naming the closest miss and what would fix it: more GPUs (at least
// what the model states need), a GPU with more memory.
[[noreturn]] void refuse_plan(const Scenario& scenario, const PlanSearch& search, const hwprofiles::ProfileSet& profiles);

}  // namespace ptsim::reports
