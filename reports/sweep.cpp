// reports/sweep.cpp — evaluation of sweep configurations and the planning answers (see the header).
#include "reports/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <thread>
#include <tuple>

#include "models/model_spec.hpp"
#include "reports/auto_recipe.hpp"
#include "reports/node_retarget.hpp"
#include "reports/prediction.hpp"
#include "reports/price_resolution.hpp"

namespace ptsim::reports {
namespace {

using core::InputError;

bool is_auto_recipe_key(const std::string& axis_key) {
  for (const auto& key : axis_keys(axis_key))
    for (const auto& k : auto_recipe_keys())
      if (key == k || key.ends_with("." + k)) return true;
  return false;
}

bool pinned_stack_misses_gpu(const Scenario& s, const hwprofiles::ProfileSet& profiles) {
  if (s.stack.empty() || !s.edits.names("recipe.stack")) return false;
  return !hwprofiles::stack_fit_for(hwprofiles::find_stack(profiles, s.stack),
                                    hwprofiles::find_node(profiles, s.node).gpu);
}

// An axis named twice would be overwritten by the later one (its values counted, never applied), and a value
// listed twice evaluates one configuration twice: both are errors, not silently duplicated rows.
void check_distinct_axes(const SweepSpec& spec) {
  std::set<std::string> keys;
  for (const auto& axis : spec.axes) {
    for (const auto& key : axis_keys(axis.key))
      if (!keys.insert(key).second)
        throw InputError(fmt::format("--vary {}: the key {} is varied twice; put all its values in one axis "
                                     "(docs/sweep.md)", axis.key, key));
    std::set<std::string> values;
    for (const auto& value : axis.values)
      if (!values.insert(value.dump()).second)
        throw InputError(fmt::format("--vary {}: value {} is listed twice", axis.key, value.dump()));
  }
}

// Configuration `index` as a scenario, with the edits that made it: the base's --set and every axis.
Scenario configuration_scenario(const SweepSpec& spec, size_t index) {
  Scenario s = parse_scenario(configuration_json(spec, index), spec.base_source);
  s.edits = spec.base_edits;
  for (const auto& axis : spec.axes)
    for (const auto& key : axis_keys(axis.key)) s.edits.keys.push_back(key);
  return s;
}

void fill_figures(ConfigResult& r, const Prediction& p, const Scenario& s) {
  r.gpus = p.gpus;
  r.node = p.node;
  r.gpu = p.gpu;
  r.network = p.network;
  r.stack = p.stack;
  for (const auto& [figure, price] : {std::pair{"rental", &p.prices.rental}, std::pair{"spot", &p.prices.spot},
                                      std::pair{"purchase", &p.prices.purchase}})
    if (*price) r.price_items[figure] = (*price)->item.name;
  r.recompute = s.recipe.recompute_activations;
  r.tensor_parallel = s.recipe.tensor_parallel;
  r.time_to_train_seconds = p.time_to_train_seconds;
  r.gpu_hours = p.gpus * p.time_to_train_seconds / 3600;
  r.scaling_efficiency = p.scaling_efficiency;
  r.memory_per_gpu_bytes = p.memory_per_gpu_bytes;
  r.rental_usd = p.cost.rental_usd;
  r.spot_usd = p.cost.spot_usd;
  r.ownership_usd = p.cost.ownership_usd;
  r.purchase_usd = p.cost.purchase_usd;
  r.break_even_days = p.cost.break_even_days;
  for (const auto& ph : p.phases)
    r.phases.push_back({ph.name, ph.micro_batch, ph.grad_accum, ph.global_batch, ph.steps, ph.iteration_seconds});
}

// Better on the objective; ties go to the cheaper on `basis`, then the faster, then the earlier configuration.
bool better(const ConfigResult& a, const ConfigResult& b, double va, double vb, PriceBasis basis) {
  if (va != vb) return va < vb;
  const auto da = a.dollars(basis), db = b.dollars(basis);
  if (da && db && *da != *db) return *da < *db;
  if (a.time_to_train_seconds != b.time_to_train_seconds) return a.time_to_train_seconds < b.time_to_train_seconds;
  return a.index < b.index;
}

std::optional<double> objective_value(const ConfigResult& r, SweepObjective o) {
  switch (o) {
    case SweepObjective::time: return r.time_to_train_seconds;
    case SweepObjective::gpu_hours: return r.gpu_hours;
    case SweepObjective::rental: return r.dollars(PriceBasis::rental);
    case SweepObjective::spot: return r.dollars(PriceBasis::spot);
    case SweepObjective::ownership: return r.dollars(PriceBasis::ownership);
  }
  return std::nullopt;
}

template <typename Value>
std::optional<size_t> best_of(const std::vector<ConfigResult>& results, PriceBasis basis, Value value) {
  std::optional<size_t> best;
  std::optional<double> best_value;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::optional<double> v = value(results[i]);
    if (!v) continue;
    if (!best || better(results[i], results[*best], *v, *best_value, basis)) best = i, best_value = v;
  }
  return best;
}

std::vector<size_t> pareto_frontier(const std::vector<ConfigResult>& results, PriceBasis basis) {
  std::vector<size_t> order;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].feasible && results[i].dollars(basis)) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto key = [&](size_t i) {
      return std::make_tuple(results[i].time_to_train_seconds, *results[i].dollars(basis), results[i].index);
    };
    return key(a) < key(b);
  });
  std::vector<size_t> frontier;
  for (size_t i : order)
    if (frontier.empty() || *results[i].dollars(basis) < *results[frontier.back()].dollars(basis)) frontier.push_back(i);
  return frontier;
}

}  // namespace

const char* to_string(PriceBasis b) {
  switch (b) {
    case PriceBasis::rental: return "rental";
    case PriceBasis::spot: return "spot";
    case PriceBasis::ownership: return "ownership";
  }
  return "?";
}

std::optional<double> ConfigResult::dollars(PriceBasis basis) const {
  switch (basis) {
    case PriceBasis::rental: return rental_usd;
    case PriceBasis::spot: return spot_usd;
    case PriceBasis::ownership: return ownership_usd;
  }
  return std::nullopt;
}

void validate_sweep(const SweepSpec& spec, const hwprofiles::ProfileSet& profiles) {
  if (spec.axes.empty()) throw InputError("ptsim sweep: nothing to vary: give at least one --vary KEY=V1,V2 (docs/sweep.md)");
  configuration_count(spec);
  check_distinct_axes(spec);
  for (const auto& axis : spec.axes) {
    if (spec.auto_recipe && is_auto_recipe_key(axis.key))
      throw InputError(fmt::format("--vary {}: --auto-recipe chooses micro-batch, accumulation, recomputation, tensor "
                                   "and pipeline parallelism (schedule, virtual stages), the ZeRO stage (and hybrid shard group) and "
                                   "sequence parallelism itself; drop "
                                   "the axis or --auto-recipe", axis.key));
    for (const auto& value : axis.values) {
      core::Json json = spec.base;
      try {
        for (const auto& assignment : axis_assignments(axis.key, value)) apply_override(json, assignment);
        Scenario s = parse_scenario(json, spec.base_source);
        s.edits = spec.base_edits;
        for (const auto& key : axis_keys(axis.key)) s.edits.keys.push_back(key);
        retarget_to_node(s, profiles);
        (void)models::load_model(s.model);  // an unknown model is a bad axis value, not an "invalid" row
        // A stack the user pinned that has no values for this node's GPU makes its configurations infeasible
        // (said per configuration); it is not a bad axis value.
        if (pinned_stack_misses_gpu(s, profiles)) s.stack.clear();
        resolve_cluster(s, profiles);
        require_unambiguous(resolve_prices(s, hwprofiles::find_node(profiles, s.node), profiles), s);
      } catch (const InputError& e) {
        const bool price = std::string(e.what()).find("prices.") != std::string::npos;
        throw InputError(fmt::format("--vary {}: value {} is not usable: {}{}", axis.key, value.dump(), e.what(),
                                     price ? "\n  (a price you name with --set applies to one node type; to sweep "
                                             "node types leave prices.rental/spot/purchase to the scenario, or name "
                                             "a price set with --set prices.set=SET; docs/sweep.md)"
                                           : ""));
      }
    }
  }
}

ConfigResult evaluate_configuration(const SweepSpec& spec, size_t index, const hwprofiles::ProfileSet& profiles,
                                    PredictionCache& cache) {
  ConfigResult r;
  r.index = index;
  r.settings = configuration_settings(spec, index);
  try {
    Scenario s = configuration_scenario(spec, index);
    r.what_if_notes = retarget_to_node(s, profiles);
    const int gpus = resolve_cluster(s, profiles).gpu_count();
    if (spec.constraints.max_gpus && gpus > *spec.constraints.max_gpus) {
      r.infeasible_kind = "constraint";
      r.reason = fmt::format("{} GPUs, more than --max-gpus {}", gpus, *spec.constraints.max_gpus);
      return r;
    }
    r.evaluated = true;
    if (spec.auto_recipe) {
      std::vector<int64_t> globals = phase_global_batches(parse_scenario(spec.base, spec.base_source), profiles);
      for (size_t i = 0; i < s.phases.size() && i < globals.size(); ++i)
        if (s.phases[i].global_batch > 0) globals[i] = s.phases[i].global_batch;
      AutoRecipe choice = choose_recipe(s, globals, profiles, cache);
      s = std::move(choice.scenario);
      r.recipe_notes = std::move(choice.notes);
    }
    PredictOptions options;
    options.cache = &cache;
    options.fit_suggestions = false;
    fill_figures(r, predict_scenario(s, profiles, options), s);
    r.feasible = true;
  } catch (const core::InfeasibleError& e) {
    r.infeasible_kind = core::to_string(e.kind());
    r.reason = e.what();
    r.over_bytes = e.over_bytes();
  } catch (const InputError& e) {
    r.infeasible_kind = "invalid";
    r.reason = e.what();
  } catch (const std::exception& e) {
    r.infeasible_kind = "error";
    r.reason = fmt::format("internal error: {}", e.what());
  }
  return r;
}

std::vector<ConfigResult> evaluate_configurations(const SweepSpec& spec, const std::vector<size_t>& indices,
                                                  const hwprofiles::ProfileSet& profiles, int threads,
                                                  const SweepProgress& progress) {
  std::vector<ConfigResult> results(indices.size());
  PredictionCache cache;
  std::atomic<size_t> next{0}, done{0};
  auto work = [&] {
    for (size_t k = next++; k < indices.size(); k = next++) {
      results[k] = evaluate_configuration(spec, indices[k], profiles, cache);
      const size_t finished = ++done;
      if (progress.report) progress.report(finished, indices.size());
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(indices.size(), threads > 0 ? static_cast<size_t>(threads) : hardware);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return results;
}

SweepAnalysis analyse_sweep(const SweepSpec& spec, std::vector<ConfigResult>& results) {
  SweepAnalysis a;
  const auto& c = spec.constraints;
  const bool dollar_objective = spec.objective == SweepObjective::rental || spec.objective == SweepObjective::spot ||
                                spec.objective == SweepObjective::ownership;
  a.budget_basis = !dollar_objective                             ? PriceBasis::rental
                   : spec.objective == SweepObjective::spot      ? PriceBasis::spot
                   : spec.objective == SweepObjective::ownership ? PriceBasis::ownership
                                                                 : PriceBasis::rental;
  for (auto& r : results) {
    if (!r.feasible) {
      ++a.infeasible_by_kind[r.infeasible_kind];
      r.meets_deadline = r.within_budget = false;
      continue;
    }
    ++a.feasible;
    r.meets_deadline = !c.deadline_seconds || r.time_to_train_seconds <= *c.deadline_seconds;
    const auto dollars = r.dollars(a.budget_basis);
    r.within_budget = !c.budget_usd || (dollars && *dollars <= *c.budget_usd);
  }
  for (PriceBasis basis : kPriceBases) {
    a.frontier[to_string(basis)] = pareto_frontier(results, basis);
    for (size_t i : a.frontier[to_string(basis)]) results[i].on_frontier[to_string(basis)] = true;
  }
  a.recommended = best_of(results, a.budget_basis, [&](const ConfigResult& r) -> std::optional<double> {
    if (!r.feasible || !r.meets_deadline || !r.within_budget) return std::nullopt;
    return objective_value(r, spec.objective);
  });
  if (c.deadline_seconds)
    a.cheapest_meeting_deadline = best_of(results, a.budget_basis, [&](const ConfigResult& r) -> std::optional<double> {
      if (!r.feasible || !r.meets_deadline) return std::nullopt;
      return r.dollars(a.budget_basis);
    });
  if (c.budget_usd)
    a.fastest_within_budget = best_of(results, a.budget_basis, [&](const ConfigResult& r) -> std::optional<double> {
      if (!r.feasible || !r.within_budget) return std::nullopt;
      return r.time_to_train_seconds;
    });
  return a;
}

}  // namespace ptsim::reports
