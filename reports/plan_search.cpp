// reports/plan_search.cpp — branch-and-bound search over the planner's layouts (see the header).
#include "reports/plan_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "reports/prediction.hpp"
#include "reports/plan_bound.hpp"
#include "sim/memory_check.hpp"

namespace ptsim::reports {
namespace {

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// Micro-batches that make `global` exactly on `dp` ranks (divisors of the per-rank batch), or — when the
// ranks do not divide it — powers of two, with the accumulation rounded up (the global batch then grows).
std::vector<int64_t> micro_batch_candidates(int64_t global, int64_t dp) {
  std::vector<int64_t> out;
  if (global % dp == 0) {
    const int64_t per_rank = global / dp;
    for (int64_t m = 1; m <= std::min(per_rank, kPlannedMaxMicroBatch); ++m)
      if (per_rank % m == 0) out.push_back(m);
  } else {
    const int64_t per_rank = (global + dp - 1) / dp;
    for (int64_t m = 1; m <= std::min(per_rank, kPlannedMaxMicroBatch); m *= 2) out.push_back(m);
  }
  return out;
}

int64_t accumulation_for(int64_t global, int64_t dp, int64_t micro) {
  return std::max<int64_t>(1, (global + dp * micro - 1) / (dp * micro));
}

// One phase at one micro-batch under one layout.
struct Candidate {
  models::Recipe recipe;
  int64_t steps = 0;
  double memory_bytes = 0;
  double lower_bound_seconds = 0;  // steps × the step's lower bound (reports/plan_bound)
};

// A phase's fitting candidates (lowest bound first) and the next larger micro-batch, which does not fit.
struct PhaseCandidates {
  std::vector<Candidate> fitting;
  int64_t miss_micro_batch = 0;
  double miss_bytes = 0;
  double front_bound() const { return fitting.front().lower_bound_seconds; }
};

class Searcher {
 public:
  Searcher(const Scenario& s, const std::vector<int64_t>& globals, const hwprofiles::ProfileSet& profiles,
           PredictionCache& cache)
      : s_(s), globals_(globals), config_(resolve_cluster(s, profiles)), model_(cache.model(s.model)), cache_(cache),
        collectives_(config_) {}

  PlanSearch run() {
    PlanSearch out;
    out.available_bytes = static_cast<double>(config_.gpu.memory_bytes);
    std::vector<LayoutPlan> plans;
    std::vector<std::vector<PhaseCandidates>> fitting;  // per plan, per phase, fitting candidates
    for (const Layout& layout : enumerate_layouts(config_.gpu_count(), config_.cluster.node.gpus_per_node,
                                                  model_->num_layers)) {
      LayoutPlan plan;
      plan.layout = layout;
      std::vector<PhaseCandidates> phases;
      if (screen(plan, phases)) {
        plans.push_back(plan);
        fitting.push_back(std::move(phases));
      } else {
        out.layouts.push_back(plan);
      }
    }
    // Branch and bound: cheapest lower bound first; a layout whose bound reaches the best is not simulated.
    std::vector<size_t> order(plans.size());
    std::vector<double> bounds(plans.size(), 0);
    for (size_t i = 0; i < plans.size(); ++i) {
      order[i] = i;
      for (const auto& phase : fitting[i]) bounds[i] += phase.front_bound();
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bounds[a] < bounds[b]; });
    double best = std::numeric_limits<double>::infinity();
    for (size_t i : order) {
      simulate(plans[i], fitting[i], best);
      if (plans[i].verdict == PlanVerdict::slower && plans[i].seconds < best) best = plans[i].seconds;
      out.layouts.push_back(plans[i]);
    }
    rank(out.layouts, best);
    out.simulations = simulations_;
    out.memory_plans = memory_plans_;
    return out;
  }

 private:
  models::Recipe phase_recipe(size_t phase, const Layout& layout, int64_t micro) const {
    models::Recipe r = s_.recipe;
    layout.apply(r);
    r.seq_len = s_.phases[phase].seq_len;
    r.max_predictions = s_.phases[phase].max_predictions;
    r.micro_batch = micro;
    r.grad_accum = accumulation_for(globals_[phase], layout.data_parallel, micro);
    return r;
  }

  // The checks before any simulation; false (with the verdict set) when the layout is out.
  bool screen(LayoutPlan& plan, std::vector<PhaseCandidates>& phases) {
    const Layout& layout = plan.layout;
    const double bound = model_states_lower_bound(*model_, phase_recipe(0, layout, 1), config_.gpu);
    for (size_t i = 0; i < s_.phases.size(); ++i) {
      std::vector<models::Recipe> valid;
      std::optional<std::string> problem;
      for (int64_t micro : micro_batch_candidates(globals_[i], layout.data_parallel)) {
        models::Recipe r = phase_recipe(i, layout, micro);
        if (auto p = layout_problem(*model_, r)) problem = problem ? problem : p;
        else valid.push_back(r);
      }
      if (valid.empty()) {
        plan.verdict = PlanVerdict::invalid;
        plan.reason = fmt::format("{}: {}", s_.phases[i].name, problem.value_or("no micro-batch"));
        return false;
      }
      if (bound > static_cast<double>(config_.gpu.memory_bytes)) {
        plan.verdict = PlanVerdict::states_no_fit;
        plan.needed_bytes = bound;
        return false;
      }
      phases.push_back(fitting_candidates(plan, i, valid));
      if (phases.back().fitting.empty()) return false;
    }
    return true;
  }

  // The phase's candidates that fit, smallest micro-batch first: memory grows with the micro-batch, so the
  // largest that fits is found by binary search, and every smaller one fits too.
  PhaseCandidates fitting_candidates(LayoutPlan& plan, size_t phase, const std::vector<models::Recipe>& valid) {
    int64_t lo = -1, hi = static_cast<int64_t>(valid.size()) - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (memory_bytes(valid[static_cast<size_t>(mid)]) <= static_cast<double>(config_.gpu.memory_bytes)) lo = mid;
      else hi = mid - 1;
    }
    PhaseCandidates out;
    if (lo + 1 < static_cast<int64_t>(valid.size())) {
      out.miss_micro_batch = valid[static_cast<size_t>(lo + 1)].micro_batch;
      out.miss_bytes = memory_bytes(valid[static_cast<size_t>(lo + 1)]);
    }
    if (lo < 0) {
      plan.verdict = PlanVerdict::no_fit;
      plan.needed_bytes = memory_bytes(valid.front());
      plan.reason = s_.phases[phase].name;
      return out;
    }
    for (int64_t k : tried_micro_batches(lo, valid.front().pipeline_parallel > 1)) {
      Candidate c;
      c.recipe = valid[static_cast<size_t>(k)];
      c.steps = steps_of(phase, c.recipe);
      c.memory_bytes = memory_bytes(c.recipe);
      c.lower_bound_seconds = static_cast<double>(c.steps) * compute_bound_seconds(c.recipe);
      out.fitting.push_back(c);
    }
    std::stable_sort(out.fitting.begin(), out.fitting.end(),
                     [](const Candidate& a, const Candidate& b) { return a.lower_bound_seconds < b.lower_bound_seconds; });
    return out;
  }

  // Which of the fitting candidates 0 … largest (ascending micro-batch) are costed: the two largest (the
  // most efficient GEMMs, fewest micro-steps), and with a pipeline also the two smallest (the most
  // micro-batches per step: the smallest bubble). kPlannedMicroBatchesTried in docs/planning.md.
  static std::vector<int64_t> tried_micro_batches(int64_t largest, bool pipelined) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k <= largest; ++k)
      if (k >= largest - 1 || (pipelined && k <= 1)) out.push_back(k);
    return out;
  }

  int64_t steps_of(size_t phase, const models::Recipe& r) const {
    Scenario one = s_;
    one.phases = {s_.phases[phase]};
    one.phases[0].micro_batch = r.micro_batch;
    one.phases[0].grad_accum = r.grad_accum;
    one.phases[0].global_batch = 0;
    return phase_shape(one, 0, r.data_parallel).steps;
  }

  double memory_bytes(const models::Recipe& r) {
    ++memory_plans_;
    const auto summary = cache_.memory(*model_, r);  // totals only: the probe's graph may be evicted
    if (r.pipeline_parallel == 1) return sim::check_memory(summary->plan, config_.gpu).needed_bytes;
    return sim::check_memory(sim::worst_stage(summary->stages, config_.gpu).plan, config_.gpu).needed_bytes;
  }

  double compute_bound_seconds(const models::Recipe& r) {
    const std::string key = recipe_key(model_->name, r);
    if (auto it = bounds_.find(key); it != bounds_.end()) return it->second;
    return bounds_[key] = step_lower_bound_seconds(*model_, r, config_, cache_, collectives_);
  }

  double simulated_iteration(const models::Recipe& r) {
    ++simulations_;
    return r.pipeline_parallel == 1 ? cache_.step(*model_, r, config_).iteration_seconds
                                    : cache_.pipeline_step(*model_, r, config_).iteration_seconds;
  }

  // Each phase's fastest micro-batch by simulation, in lower-bound order, stopping once the next bound is
  // no faster than the phase's best; the layout stops (bounded) once it cannot beat `best`.
  void simulate(LayoutPlan& plan, const std::vector<PhaseCandidates>& phases, double best) {
    double remaining_bound = 0;
    for (const auto& phase : phases) remaining_bound += phase.front_bound();
    double done = 0;
    for (size_t i = 0; i < phases.size(); ++i) {
      const PhaseCandidates& candidates = phases[i];
      remaining_bound -= candidates.front_bound();
      if (done + candidates.front_bound() + remaining_bound >= best) {
        bound_out(plan, phases, done);
        return;
      }
      std::optional<PhasePlan> chosen;
      std::optional<std::string> refused;
      double chosen_seconds = std::numeric_limits<double>::infinity();
      for (const Candidate& c : candidates.fitting) {
        if (c.lower_bound_seconds >= chosen_seconds) break;
        double iteration = 0;
        try {
          iteration = simulated_iteration(c.recipe);
        } catch (const core::InputError& e) {  // e.g. a communication-bound ZeRO-2 step past the micro-step limit
          if (!refused) refused = e.what();
          continue;
        }
        const double seconds = static_cast<double>(c.steps) * iteration;
        if (seconds < chosen_seconds) {
          chosen_seconds = seconds;
          chosen = PhasePlan{c.recipe.micro_batch, c.recipe.grad_accum, c.steps, iteration, c.memory_bytes,
                             candidates.miss_micro_batch, candidates.miss_bytes};
        }
      }
      if (!chosen) {  // the simulator refused every fitting micro-batch of this phase
        plan.phases.clear();
        plan.verdict = PlanVerdict::invalid;
        plan.reason = fmt::format("{}: {}", s_.phases[i].name, refused.value_or("not simulated"));
        return;
      }
      plan.phases.push_back(*chosen);
      done += chosen_seconds;
    }
    plan.verdict = PlanVerdict::slower;
    plan.seconds = done;
  }

  // Not simulated further: the phases already simulated (their seconds `done`) keep their choice, the rest
  // take their lowest-bound candidate; the layout's time is that bound.
  static void bound_out(LayoutPlan& plan, const std::vector<PhaseCandidates>& phases, double done) {
    plan.verdict = PlanVerdict::bounded;
    plan.seconds = done;
    for (size_t i = plan.phases.size(); i < phases.size(); ++i) {
      const Candidate& c = phases[i].fitting.front();
      plan.phases.push_back({c.recipe.micro_batch, c.recipe.grad_accum, c.steps,
                             c.lower_bound_seconds / static_cast<double>(c.steps), c.memory_bytes,
                             phases[i].miss_micro_batch, phases[i].miss_bytes});
      plan.seconds += c.lower_bound_seconds;
    }
  }

  static void rank(std::vector<LayoutPlan>& layouts, double best) {
    for (auto& p : layouts)
      if (p.verdict == PlanVerdict::slower && p.seconds == best) {
        p.verdict = PlanVerdict::best;
        break;
      }
    std::stable_sort(layouts.begin(), layouts.end(), [](const LayoutPlan& a, const LayoutPlan& b) {
      if (a.verdict != b.verdict) return static_cast<int>(a.verdict) < static_cast<int>(b.verdict);
      if (a.verdict == PlanVerdict::invalid) return false;
      return a.verdict == PlanVerdict::no_fit || a.verdict == PlanVerdict::states_no_fit ? a.needed_bytes < b.needed_bytes
                                                                                          : a.seconds < b.seconds;
    });
  }

  const Scenario& s_;
  const std::vector<int64_t>& globals_;
  sim::ClusterConfig config_;
  std::shared_ptr<const models::ModelSpec> model_;
  PredictionCache& cache_;
  AloneCollectives collectives_;  // the bound's collectives, each timed once
  std::map<std::string, double> bounds_;
  int simulations_ = 0, memory_plans_ = 0;
};

}  // namespace

const char* to_string(PlanVerdict v) {
  switch (v) {
    case PlanVerdict::best: return "best";
    case PlanVerdict::slower: return "slower";
    case PlanVerdict::bounded: return "slower (bound)";
    case PlanVerdict::no_fit: return "does not fit";
    case PlanVerdict::states_no_fit: return "does not fit (bound)";
    case PlanVerdict::invalid: return "invalid";
  }
  return "?";
}

std::string LayoutPlan::why(const LayoutPlan& best, double available) const {
  switch (verdict) {
    case PlanVerdict::best: return "fastest that fits";
    case PlanVerdict::slower: return fmt::format("{:.1f}% slower", 100 * (seconds / best.seconds - 1));
    case PlanVerdict::bounded:
      return fmt::format("at least {:.1f}% slower: its compute and the communication it cannot hide take that long "
                         "(lower bound, not simulated)",
                         100 * (seconds / best.seconds - 1));
    case PlanVerdict::no_fit:
      return fmt::format("{} does not fit at its smallest micro-batch: needs {} of {} (over by {})", reason,
                         gib(needed_bytes), gib(available), gib(needed_bytes - available));
    case PlanVerdict::states_no_fit:
      return fmt::format("does not fit: weights, gradients and optimizer state alone need at least {} of {} "
                         "(over by at least {})", gib(needed_bytes), gib(available), gib(needed_bytes - available));
    case PlanVerdict::invalid: return "invalid: " + reason;
  }
  return "?";
}

const LayoutPlan* PlanSearch::best() const {
  return !layouts.empty() && layouts.front().verdict == PlanVerdict::best ? &layouts.front() : nullptr;
}

PlanSearch search_plans(const Scenario& scenario, const std::vector<int64_t>& globals,
                        const hwprofiles::ProfileSet& profiles, PredictionCache& cache) {
  if (globals.size() != scenario.phases.size())
    throw core::InputError(fmt::format("{}: {} phases but {} global batches to keep", scenario.file,
                                       scenario.phases.size(), globals.size()));
  const Scenario s = with_stack(scenario, profiles);
  return Searcher(s, globals, profiles, cache).run();
}

Scenario apply_plan(const Scenario& scenario, const LayoutPlan& plan) {
  Scenario out = scenario;
  plan.layout.apply(out.recipe);
  for (size_t i = 0; i < out.phases.size() && i < plan.phases.size(); ++i) {
    out.phases[i].micro_batch = plan.phases[i].micro_batch;
    out.phases[i].grad_accum = plan.phases[i].grad_accum;
    out.phases[i].global_batch = 0;
  }
  return out;
}

void refuse_plan(const Scenario& s, const PlanSearch& search, const hwprofiles::ProfileSet& profiles) {
  const sim::ClusterConfig config = resolve_cluster(s, profiles);
  const LayoutPlan* closest = nullptr;
  for (const auto& p : search.layouts)
    if ((p.verdict == PlanVerdict::no_fit || p.verdict == PlanVerdict::states_no_fit) &&
        (!closest || p.needed_bytes < closest->needed_bytes))
      closest = &p;
  if (!closest)
    throw core::InfeasibleError(core::Infeasibility::parallelism,
                                fmt::format("no parallel layout of {} GPUs is valid for {}: {}", config.gpu_count(),
                                            s.model, search.layouts.empty() ? "none enumerated"
                                                                            : search.layouts.front().why({}, 0)));
  // The fix: enough GPUs for the model states alone (a lower bound), or a GPU with more memory.
  models::Recipe whole = s.recipe;
  Layout{}.apply(whole);
  const auto model = models::load_model(s.model);
  const double usable = static_cast<double>(config.gpu.memory_bytes) - config.gpu.reserved_memory_bytes;
  const double states = model_states_lower_bound(model, whole, config.gpu) - config.gpu.reserved_memory_bytes;
  const int64_t gpus = static_cast<int64_t>(std::ceil(states / usable));
  const int64_t per_node = config.cluster.node.gpus_per_node;
  const double available = static_cast<double>(config.gpu.memory_bytes);
  const std::string fix =
      gpus > config.gpu_count()
          ? fmt::format("more GPUs — its weights, gradients and optimizer state alone need at least {} GPUs of this "
                        "kind (cluster.nodes >= {}), more with activations — or a GPU with more memory",
                        gpus, (gpus + per_node - 1) / per_node)
          : "its model states would fit these GPUs split far enough, the activations do not: a shorter sequence "
            "(phases.N.seq_len), or a GPU with more memory";
  throw core::InfeasibleError(
      core::Infeasibility::memory,
      fmt::format("no plan fits {} on {} × {} ({} per GPU): of {} layouts searched the closest, {}, needs {}{}\n"
                  "  fix: {}",
                  s.model, config.gpu_count(), config.gpu.name, gib(available), search.layouts.size(),
                  closest->layout.label(), closest->verdict == PlanVerdict::states_no_fit ? "at least " : "",
                  gib(closest->needed_bytes), fix),
      closest->needed_bytes - available);
}

}  // namespace ptsim::reports
