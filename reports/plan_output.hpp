// reports/plan_output.hpp — `ptsim plan`'s answer as text (the best plan, how to run it, the runners-up and
// why they lost) and as JSON (schema ptsim.plan.v1: every layout searched with its verdict).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "reports/plan_search.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {

// The `--set` edits that turn `scenario` into the plan (for `ptsim predict --scenario … --set …`).
std::vector<std::string> plan_overrides(const Scenario& scenario, const LayoutPlan& plan);

// `reference`: how the user named the scenario (for the `ptsim predict` line); `top`: layouts listed in the
// table (the rest are counted by verdict); `search_seconds`: wall time.
std::string plan_to_text(const Scenario& scenario, const std::string& reference, const PlanSearch& search, size_t top,
                         double search_seconds);
nlohmann::json plan_to_json(const Scenario& scenario, const PlanSearch& search, double search_seconds);

}  // namespace ptsim::reports
