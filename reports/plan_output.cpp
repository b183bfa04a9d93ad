// reports/plan_output.cpp — text and JSON renderings of a plan search (see the header).
#include "reports/plan_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "reports/text_table.hpp"

namespace ptsim::reports {
namespace {

double gib(double bytes) { return bytes / (1024.0 * 1024 * 1024); }

std::string micro_batches(const LayoutPlan& p) {
  std::vector<std::string> parts;
  for (const auto& ph : p.phases) parts.push_back(fmt::format("{}×{}", ph.micro_batch, ph.grad_accum));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

// The fullest GPU over the phases (or, for a layout that does not fit, what it needs).
double memory_bytes(const LayoutPlan& p) {
  double worst = p.needed_bytes;
  for (const auto& ph : p.phases) worst = std::max(worst, ph.memory_bytes);
  return worst;
}

std::string memory_cell(const LayoutPlan& p) {
  const double worst = memory_bytes(p);
  return worst > 0 ? fmt::format("{}{:.1f}", p.verdict == PlanVerdict::states_no_fit ? "≥" : "", gib(worst)) : "-";
}

std::string duration(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.2f} d", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.2f} h", seconds / 3600);
  return seconds >= 120 ? fmt::format("{:.1f} min", seconds / 60) : fmt::format("{:.1f} s", seconds);
}

std::string time_cell(const LayoutPlan& p) {
  if (p.verdict != PlanVerdict::best && p.verdict != PlanVerdict::slower && p.verdict != PlanVerdict::bounded) return "-";
  return fmt::format("{}{}", p.verdict == PlanVerdict::bounded ? "≥" : "", duration(p.seconds));
}

}  // namespace

std::vector<std::string> plan_overrides(const Scenario& s, const LayoutPlan& p) {
  const Layout& l = p.layout;
  std::vector<std::string> out = {
      fmt::format("recipe.tensor_parallel={}", l.tensor_parallel),
      fmt::format("recipe.pipeline_parallel={}", l.pipeline_parallel),
      fmt::format("recipe.recompute={}", l.recompute ? "true" : "false"),
      fmt::format("recipe.zero_stage={}", l.zero_stage),
      fmt::format("recipe.sequence_parallel={}", l.sequence_parallel ? "true" : "false"),
  };
  if (l.shard_group > 0) out.push_back(fmt::format("recipe.shard_group={}", l.shard_group));
  if (l.pipeline_parallel > 1) out.push_back(fmt::format("recipe.pipeline_schedule={}", models::to_string(l.schedule)));
  if (l.virtual_stages > 1) out.push_back(fmt::format("recipe.virtual_stages={}", l.virtual_stages));
  // The scenario's pipeline overlap options as this layout keeps them (Layout::apply clears what does not apply).
  models::Recipe applied = s.recipe;
  l.apply(applied);
  if (s.recipe.overlap_grad_reduce)
    out.push_back(fmt::format("recipe.overlap_grad_reduce={}", applied.overlap_grad_reduce ? "true" : "false"));
  if (s.recipe.overlap_param_gather)
    out.push_back(fmt::format("recipe.overlap_param_gather={}", applied.overlap_param_gather ? "true" : "false"));
  for (size_t i = 0; i < p.phases.size() && i < s.phases.size(); ++i) {
    out.push_back(fmt::format("phases.{}.micro_batch={}", i, p.phases[i].micro_batch));
    if (s.phases[i].global_batch > 0) continue;  // the global batch stays: the accumulation follows from it
    out.push_back(fmt::format("phases.{}.grad_accum={}", i, p.phases[i].grad_accum));
  }
  return out;
}

std::string plan_to_text(const Scenario& s, const std::string& reference, const PlanSearch& search, size_t top,
                         double search_seconds) {
  const LayoutPlan& best = *search.best();
  std::string out = fmt::format("{}: best plan {}\n", s.name, best.layout.label());
  for (size_t i = 0; i < best.phases.size(); ++i)
    out += fmt::format("  {}: micro-batch {} × accumulation {}, {} step{} of {:.3f} s\n", s.phases[i].name,
                       best.phases[i].micro_batch, best.phases[i].grad_accum, best.phases[i].steps,
                       best.phases[i].steps == 1 ? "" : "s", best.phases[i].iteration_seconds);
  out += fmt::format("  training {}; fullest GPU {:.1f} of {:.1f} GiB\n", duration(best.seconds),
                     gib(memory_bytes(best)), gib(search.available_bytes));
  std::string sets;
  for (const auto& o : plan_overrides(s, best)) sets += " --set " + o;
  out += fmt::format("  run it: ptsim predict --scenario {}{}\n", reference, sets);
  out += fmt::format("  searched {} layouts in {:.1f} s: {} step simulations, {} memory plans\n\n",
                     search.layouts.size(), search_seconds, search.simulations, search.memory_plans);
  TextTable table({"#", "layout", "micro×accum", "time", "GiB", "why not"});
  std::map<std::string, int> rest;
  for (size_t i = 0; i < search.layouts.size(); ++i) {
    const LayoutPlan& p = search.layouts[i];
    if (i >= top) {
      ++rest[to_string(p.verdict)];
      continue;
    }
    table.add_row({std::to_string(i + 1), p.layout.label(), micro_batches(p), time_cell(p), memory_cell(p),
                   p.why(best, search.available_bytes)});
  }
  out += table.render();
  if (!rest.empty()) {
    std::vector<std::string> counts;
    for (const auto& [verdict, n] : rest) counts.push_back(fmt::format("{} {}", n, verdict));
    out += fmt::format("(not listed: {}; --top N lists more, --format json all)\n", fmt::join(counts, ", "));
  }
  return out;
}

nlohmann::json plan_to_json(const Scenario& s, const PlanSearch& search, double search_seconds) {
  nlohmann::json j;
  j["schema"] = "ptsim.plan.v1";
  j["scenario"] = s.name;
  j["available_bytes"] = search.available_bytes;
  j["search_seconds"] = search_seconds;
  j["simulations"] = search.simulations;
  j["memory_plans"] = search.memory_plans;
  const LayoutPlan* best = search.best();
  if (best) j["run_with"] = plan_overrides(s, *best);
  nlohmann::json layouts = nlohmann::json::array();
  for (const auto& p : search.layouts) {
    const Layout& l = p.layout;
    nlohmann::json row = {{"tensor_parallel", l.tensor_parallel}, {"pipeline_parallel", l.pipeline_parallel},
                          {"data_parallel", l.data_parallel}, {"pipeline_schedule", models::to_string(l.schedule)},
                          {"virtual_stages", l.virtual_stages}, {"zero_stage", l.zero_stage},
                          {"shard_group", l.shard_group}, {"sequence_parallel", l.sequence_parallel},
                          {"recompute", l.recompute}, {"verdict", to_string(p.verdict)},
                          {"why", best ? p.why(*best, search.available_bytes) : p.why(p, search.available_bytes)}};
    if (p.seconds > 0) row["training_seconds"] = p.seconds;
    if (p.needed_bytes > 0) row["needed_bytes"] = p.needed_bytes;
    nlohmann::json phases = nlohmann::json::array();
    for (const auto& ph : p.phases)
      phases.push_back({{"micro_batch", ph.micro_batch}, {"grad_accum", ph.grad_accum}, {"steps", ph.steps},
                        {"iteration_seconds", ph.iteration_seconds}, {"memory_bytes", ph.memory_bytes}});
    row["phases"] = phases;
    layouts.push_back(row);
  }
  j["layouts"] = layouts;
  return j;
}

}  // namespace ptsim::reports
