// reports/sweep.hpp — `ptsim sweep`: evaluate every configuration of a SweepSpec (in parallel, sharing a
// PredictionCache), keep the infeasible ones with their reasons, and answer the planning questions: the
// time–dollar Pareto frontier per price basis, the cheapest plan that meets the deadline, the fastest
// within the budget, and the plan the objective recommends. Model and choices: docs/sweep.md.
// Not here: the command line, MPI slicing and output formats (tools/cmd_sweep.cpp, reports/sweep_output.hpp).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/sweep_spec.hpp"

namespace ptsim::reports {

enum class PriceBasis { rental, spot, ownership };
inline constexpr PriceBasis kPriceBases[] = {PriceBasis::rental, PriceBasis::spot, PriceBasis::ownership};
const char* to_string(PriceBasis basis);

struct PhaseRecipe {                 // what a phase ran (chosen by --auto-recipe, or as the scenario says)
  std::string name;
  int64_t micro_batch = 0, grad_accum = 0, global_batch = 0, steps = 0;
  double iteration_seconds = 0;
};

struct ConfigResult {
  size_t index = 0;
  std::vector<std::pair<std::string, core::Json>> settings;  // the axis values
  bool evaluated = false;            // false: excluded before evaluation (max_gpus) or failed
  bool feasible = false;
  std::string infeasible_kind;       // memory | precision | parallelism | constraint | invalid
  std::string reason;                // the simulator's message (first line for tables; whole in JSON)
  double over_bytes = 0;             // memory: by how much it does not fit
  // Figures of a feasible configuration.
  int gpus = 0;
  std::string node, gpu, network;
  std::string stack;                 // the software stack it was costed under
  std::map<std::string, std::string> price_items;  // figure (rental, spot, purchase) → the price item used
  std::vector<std::string> what_if_notes;          // a swapped-in node type's stack and prices (node_retarget.hpp)
  bool recompute = false;
  int64_t tensor_parallel = 1;
  double time_to_train_seconds = 0;
  double gpu_hours = 0;
  std::optional<double> scaling_efficiency;
  double memory_per_gpu_bytes = 0;
  std::optional<double> rental_usd, spot_usd, ownership_usd, purchase_usd, break_even_days;
  std::vector<PhaseRecipe> phases;
  std::vector<std::string> recipe_notes;  // --auto-recipe: which recipe won and why the others lost
  // Set by analyse_sweep.
  bool meets_deadline = true, within_budget = true;
  std::map<std::string, bool> on_frontier;  // by price basis

  std::optional<double> dollars(PriceBasis basis) const;
};

struct SweepAnalysis {
  std::map<std::string, std::vector<size_t>> frontier;  // price basis → indices, fastest first
  std::optional<size_t> recommended;                    // best by the objective within every constraint
  std::optional<size_t> cheapest_meeting_deadline;      // on the budget basis
  std::optional<size_t> fastest_within_budget;
  PriceBasis budget_basis = PriceBasis::rental;
  std::map<std::string, size_t> infeasible_by_kind;
  size_t feasible = 0;
};

struct SweepProgress {
  std::function<void(size_t done, size_t total)> report;  // called from worker threads, at most every config
};

// Checks the axes before any work: every value, applied alone to the base, must make a scenario that
// parses and names profiles that exist; --auto-recipe keys must not be varied. InputError names the axis.
void validate_sweep(const SweepSpec& spec, const hwprofiles::ProfileSet& profiles);

// One configuration; never throws for a configuration's own problem (it comes back infeasible).
ConfigResult evaluate_configuration(const SweepSpec& spec, size_t index, const hwprofiles::ProfileSet& profiles,
                                    PredictionCache& cache);

// Configurations `indices` on `threads` threads (0 = all cores), results in the order of `indices`.
std::vector<ConfigResult> evaluate_configurations(const SweepSpec& spec, const std::vector<size_t>& indices,
                                                  const hwprofiles::ProfileSet& profiles, int threads,
                                                  const SweepProgress& progress = {});

// Frontiers, constraints and recommendations over all results (sets meets_deadline etc. on each).
SweepAnalysis analyse_sweep(const SweepSpec& spec, std::vector<ConfigResult>& results);

}  // namespace ptsim::reports
