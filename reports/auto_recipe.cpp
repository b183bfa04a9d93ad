// reports/auto_recipe.cpp — recipe search per cluster (see the header).
#include "reports/auto_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "reports/prediction.hpp"
#include "sim/memory_check.hpp"

namespace ptsim::reports {
namespace {

constexpr int64_t kMaxMicroBatch = 4096;

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// Micro-batches that make `global` exactly on `dp` ranks (divisors of the per-rank batch), or — when the
// ranks do not divide it — powers of two, with the accumulation rounded up (the global batch then grows).
std::vector<int64_t> micro_batch_candidates(int64_t global, int64_t dp) {
  std::vector<int64_t> out;
  if (global % dp == 0) {
    const int64_t per_rank = global / dp;
    for (int64_t m = 1; m <= std::min(per_rank, kMaxMicroBatch); ++m)
      if (per_rank % m == 0) out.push_back(m);
  } else {
    const int64_t per_rank = (global + dp - 1) / dp;
    for (int64_t m = 1; m <= std::min(per_rank, kMaxMicroBatch); m *= 2) out.push_back(m);
  }
  return out;
}

int64_t accumulation_for(int64_t global, int64_t dp, int64_t micro) {
  return std::max<int64_t>(1, (global + dp * micro - 1) / (dp * micro));
}

struct Candidate {
  int64_t micro_batch = 0, grad_accum = 0;
  double seconds = 0;                // the phase's training time
  double needed_bytes = 0;
  bool fits = false;
};

struct PhaseSearch {
  std::optional<Candidate> best;
  std::vector<Candidate> others;     // evaluated or refused, for the notes
};

class RecipeSearch {
 public:
  RecipeSearch(const Scenario& s, const hwprofiles::ProfileSet& profiles, PredictionCache& cache)
      : s_(s), config_(resolve_cluster(s, profiles)), model_(cache.model(s.model)), cache_(cache) {}

  const sim::ClusterConfig& config() const { return config_; }

  // The phase's best micro-batch for this tensor-parallel degree and recomputation choice.
  PhaseSearch search_phase(const PhaseSpec& phase, int64_t global, int64_t tp, bool recompute) {
    const int64_t dp = config_.gpu_count() / tp;
    const std::vector<int64_t> micro = micro_batch_candidates(global, dp);
    PhaseSearch out;
    // Largest fitting micro-batch: memory grows with it, so binary search the candidates.
    int64_t lo = -1, hi = static_cast<int64_t>(micro.size()) - 1;
    std::optional<Candidate> first_miss;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      Candidate c = measure(phase, global, dp, tp, recompute, micro[static_cast<size_t>(mid)], false);
      if (c.fits) lo = mid;
      else hi = mid - 1, first_miss = c;
    }
    if (lo + 1 < static_cast<int64_t>(micro.size()) && (!first_miss || first_miss->micro_batch != micro[static_cast<size_t>(lo + 1)]))
      first_miss = measure(phase, global, dp, tp, recompute, micro[static_cast<size_t>(lo + 1)], false);
    if (first_miss) out.others.push_back(*first_miss);
    for (int64_t k = lo; k >= std::max<int64_t>(0, lo - 1); --k) {
      Candidate c = measure(phase, global, dp, tp, recompute, micro[static_cast<size_t>(k)], true);
      if (!out.best || c.seconds < out.best->seconds) {
        if (out.best) out.others.push_back(*out.best);
        out.best = c;
      } else {
        out.others.push_back(c);
      }
    }
    return out;
  }

 private:
  Candidate measure(const PhaseSpec& phase, int64_t global, int64_t dp, int64_t tp, bool recompute, int64_t micro,
                    bool timed) {
    Candidate c;
    c.micro_batch = micro;
    c.grad_accum = accumulation_for(global, dp, micro);
    models::Recipe r = s_.recipe;
    r.seq_len = phase.seq_len;
    r.micro_batch = micro;
    r.grad_accum = c.grad_accum;
    r.data_parallel = dp;
    r.tensor_parallel = tp;
    r.recompute_activations = recompute;
    r.max_predictions = phase.max_predictions;
    const sim::MemoryFit fit = sim::check_memory(cache_.graph(*model_, r)->plan, config_.gpu);
    c.fits = fit.fits;
    c.needed_bytes = fit.needed_bytes;
    if (timed && c.fits) {
      Scenario one = s_;
      one.phases = {phase};
      one.phases[0].micro_batch = micro;
      one.phases[0].grad_accum = c.grad_accum;
      one.phases[0].global_batch = 0;
      const int64_t steps = phase_shape(one, 0, dp).steps;
      c.seconds = static_cast<double>(steps) * cache_.step(*model_, r, config_).iteration_seconds;
    }
    return c;
  }

  const Scenario& s_;
  sim::ClusterConfig config_;
  std::shared_ptr<const models::ModelSpec> model_;
  PredictionCache& cache_;
};

struct Plan {                        // one (tensor parallel, recompute) choice over all phases
  int64_t tp = 1;
  bool recompute = false;
  std::vector<PhaseSearch> phases;
  bool fits = true;
  double seconds = 0;
  std::string label() const {
    return fmt::format("{}{}", recompute ? "recompute" : "no recompute", tp > 1 ? fmt::format(", tensor-parallel {}", tp) : "");
  }
};

Plan search_plan(RecipeSearch& search, const Scenario& s, const std::vector<int64_t>& globals, int64_t tp,
                 bool recompute) {
  Plan plan;
  plan.tp = tp;
  plan.recompute = recompute;
  for (size_t i = 0; i < s.phases.size(); ++i) {
    plan.phases.push_back(search.search_phase(s.phases[i], globals[i], tp, recompute));
    if (!plan.phases.back().best) plan.fits = false;
    else plan.seconds += plan.phases.back().best->seconds;
  }
  return plan;
}

std::string phase_note(const PhaseSpec& phase, const PhaseSearch& p, const sim::ClusterConfig& config) {
  std::string note = fmt::format("{}: micro-batch {} × accumulation {}", phase.name, p.best->micro_batch,
                                 p.best->grad_accum);
  for (const auto& c : p.others) {
    if (!c.fits)
      note += fmt::format("; {} does not fit (needs {} of {})", c.micro_batch, gib(c.needed_bytes),
                          gib(static_cast<double>(config.gpu.memory_bytes)));
    else
      note += fmt::format("; {} × {} is {:.1f}% slower", c.micro_batch, c.grad_accum,
                          100 * (c.seconds / p.best->seconds - 1));
  }
  return note;
}

[[noreturn]] void refuse(const Scenario& s, const std::vector<Plan>& plans, const sim::ClusterConfig& config) {
  // The closest miss: micro-batch 1 of the last plan tried (the most memory-saving one).
  double needed = 0;
  std::string phase;
  for (size_t i = 0; i < s.phases.size(); ++i)
    for (const auto& c : plans.back().phases[i].others)
      if (!c.fits && c.micro_batch == 1 && c.needed_bytes > needed) needed = c.needed_bytes, phase = s.phases[i].name;
  const double available = static_cast<double>(config.gpu.memory_bytes);
  throw core::InfeasibleError(
      core::Infeasibility::memory,
      fmt::format("--auto-recipe: no recipe fits {} on {} (tried {}); {} at micro-batch 1 needs {} of {}", s.model,
                  config.gpu.name, fmt::join([&] {
                    std::vector<std::string> l;
                    for (const auto& p : plans) l.push_back(p.label());
                    return l;
                  }(), ", "),
                  phase.empty() ? "a phase" : phase, gib(needed), gib(available)),
      needed > available ? needed - available : 0);
}

}  // namespace

std::vector<int64_t> phase_global_batches(const Scenario& base, const hwprofiles::ProfileSet& profiles) {
  const int64_t dp = data_parallel_ranks(base, resolve_cluster(base, profiles));
  std::vector<int64_t> out;
  for (size_t i = 0; i < base.phases.size(); ++i) out.push_back(phase_shape(base, i, dp).global_batch);
  return out;
}

AutoRecipe choose_recipe(const Scenario& s, const std::vector<int64_t>& globals, const hwprofiles::ProfileSet& profiles,
                         PredictionCache& cache) {
  if (s.recipe.pipeline_parallel > 1 || s.recipe.zero_stage > 0)
    throw core::InputError(fmt::format("--auto-recipe searches micro-batch, recomputation and tensor parallelism only: "
                                       "{} has pipeline_parallel {} and zero_stage {} (searching pipeline stages and "
                                       "ZeRO stages is not implemented yet)",
                                       s.file, s.recipe.pipeline_parallel, s.recipe.zero_stage));
  RecipeSearch search(s, profiles, cache);
  const sim::ClusterConfig& config = search.config();
  std::vector<Plan> plans;
  // Tensor parallelism only where the model needs it: the scenario's own degree first, then powers of two
  // inside a node until something fits (Megatron keeps TP within the NVLink domain).
  for (int64_t tp = s.recipe.tensor_parallel; tp <= config.cluster.node.gpus_per_node; tp *= 2) {
    if (config.gpu_count() % tp != 0) break;
    plans.push_back(search_plan(search, s, globals, tp, false));
    // Recomputation can only help when the largest micro-batch without it did not fit.
    const bool all_fit_largest = plans.back().fits && std::all_of(plans.back().phases.begin(), plans.back().phases.end(),
                                                                  [](const PhaseSearch& p) {
                                                                    return std::none_of(p.others.begin(), p.others.end(),
                                                                                        [](const Candidate& c) { return !c.fits; });
                                                                  });
    if (!all_fit_largest) plans.push_back(search_plan(search, s, globals, tp, true));
    if (std::any_of(plans.begin(), plans.end(), [](const Plan& p) { return p.fits; })) break;
  }
  const Plan* best = nullptr;
  for (const auto& p : plans)
    if (p.fits && (!best || p.seconds < best->seconds)) best = &p;
  if (!best) refuse(s, plans, config);

  AutoRecipe out;
  out.scenario = s;
  out.scenario.recipe.recompute_activations = best->recompute;
  out.scenario.recipe.tensor_parallel = best->tp;
  for (size_t i = 0; i < s.phases.size(); ++i) {
    PhaseSpec& ph = out.scenario.phases[i];
    ph.micro_batch = best->phases[i].best->micro_batch;
    ph.grad_accum = best->phases[i].best->grad_accum;
    ph.global_batch = 0;
    out.notes.push_back(phase_note(ph, best->phases[i], config));
  }
  for (const auto& p : plans) {
    if (&p == best) continue;
    out.notes.push_back(p.fits ? fmt::format("{}: {:.1f}% slower than {}", p.label(), 100 * (p.seconds / best->seconds - 1),
                                             best->label())
                               : fmt::format("{}: a phase does not fit even at micro-batch 1", p.label()));
  }
  return out;
}

}  // namespace ptsim::reports
