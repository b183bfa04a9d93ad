// reports/auto_recipe.cpp — the sweep's --auto-recipe: the planner's best plan per cluster, as a scenario
// and notes (see the header; the search is reports/plan_search).
#include "reports/auto_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "reports/plan_search.hpp"
#include "reports/prediction.hpp"

namespace ptsim::reports {
namespace {

// Runners-up named one by one in the notes; the rest are counted by verdict.
constexpr size_t kNamedRunnersUp = 4;

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

std::string phase_note(const PhaseSpec& phase, const PhasePlan& p, double available) {
  std::string note = fmt::format("{}: micro-batch {} × accumulation {}", phase.name, p.micro_batch, p.grad_accum);
  if (p.miss_micro_batch > 0)
    note += fmt::format("; {} does not fit (needs {} of {})", p.miss_micro_batch, gib(p.miss_bytes), gib(available));
  return note;
}

}  // namespace

std::vector<int64_t> phase_global_batches(const Scenario& base, const hwprofiles::ProfileSet& profiles) {
  std::vector<int64_t> out;
  for (const auto& phase : base.phases) out.push_back(phase.global_batch);
  // A phase given by micro-batch × accumulation needs the base's data-parallel ranks (which its own
  // parallelism must then divide); phases that name their global batch do not.
  if (std::find(out.begin(), out.end(), 0) == out.end()) return out;
  const int64_t dp = data_parallel_ranks(base, resolve_cluster(base, profiles));
  for (size_t i = 0; i < base.phases.size(); ++i) out[i] = phase_shape(base, i, dp).global_batch;
  return out;
}

std::vector<std::string> plan_notes(const Scenario& s, const PlanSearch& search) {
  const LayoutPlan& best = *search.best();
  std::vector<std::string> notes;
  for (size_t i = 0; i < s.phases.size(); ++i) notes.push_back(phase_note(s.phases[i], best.phases[i], search.available_bytes));
  notes.push_back(fmt::format("plan: {} (of {} layouts: {} simulations, {} memory plans)", best.layout.label(),
                              search.layouts.size(), search.simulations, search.memory_plans));
  std::map<std::string, int> rest;
  size_t named = 0;
  for (const auto& p : search.layouts) {
    if (&p == &best) continue;
    if (named < kNamedRunnersUp && p.verdict != PlanVerdict::invalid) {
      notes.push_back(fmt::format("{}: {}", p.layout.label(), p.why(best, search.available_bytes)));
      ++named;
    } else {
      ++rest[to_string(p.verdict)];
    }
  }
  if (!rest.empty()) {
    std::vector<std::string> counts;
    for (const auto& [verdict, n] : rest) counts.push_back(fmt::format("{} {}", n, verdict));
    notes.push_back(fmt::format("other layouts: {}", fmt::join(counts, ", ")));
  }
  return notes;
}

AutoRecipe choose_recipe(const Scenario& s, const std::vector<int64_t>& globals, const hwprofiles::ProfileSet& profiles,
                         PredictionCache& cache) {
  const PlanSearch search = search_plans(s, globals, profiles, cache);
  if (!search.best()) refuse_plan(s, search, profiles);
  AutoRecipe out;
  out.scenario = apply_plan(s, *search.best());
  out.notes = plan_notes(s, search);
  return out;
}

}  // namespace ptsim::reports
