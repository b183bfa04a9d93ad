// reports/scenario_report.hpp — `ptsim report`: everything one page says about a scenario, in two steps
// a server can reuse separately:
//   collect_scenario_report(...)  runs the simulator (the scenario, each phase's step split, a node ladder)
//                                 and returns the figures as JSON (schema ptsim.report.v1, docs/report.md);
//   render_scenario_report(...)   turns that JSON into the self-contained HTML page (reports/html_report.hpp).
// The prediction inside the JSON is prediction_to_json of the same run `ptsim predict` makes, so the page
// shows the numbers `ptsim predict --format json` prints. A sweep (`ptsim sweep --format json`) adds the
// time–dollar frontier; load_sweep_for_report checks such a file.
// Not here: the command line (tools/cmd_report.cpp), writing the file.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"

namespace ptsim::reports {

struct ScenarioReportOptions {
  std::vector<std::string> overrides;   // --set k=v, applied as `ptsim predict` applies them
  std::vector<int> node_ladder;         // empty: 1, 2, 4, … up to 2 × the scenario's nodes, and its own count
  std::optional<nlohmann::json> sweep;  // load_sweep_for_report's result
  // Traces larger than this (serialised) are not embedded; the page says how to make one instead.
  size_t max_embedded_trace_bytes = 12'000'000;
  bool include_trace = true;    // false: no trace, no timeline segments (a server's quick answer)
  bool include_scaling = true;  // false: no node ladder (its predictions are most of the time)
};

// The scenario a report is about: its JSON before the --set edits, where it came from (a file, or a label
// such as "request field 'scenario'" for one sent inline) and how the user named it.
struct ReportScenario {
  nlohmann::json json;
  std::string source;
  std::string requested;
};

// The default ladder for a scenario of `nodes` nodes: powers of two up to 2 × nodes, plus `nodes`.
std::vector<int> default_node_ladder(int nodes);

// A `ptsim sweep --format json` file, checked: schema ptsim.sweep.v1, configurations with the figures the
// frontier chart needs, frontier and recommended indices that name configurations. core::InputError (exit
// 2) names the file and the field otherwise.
nlohmann::json load_sweep_for_report(const std::string& path);

// Runs the predictions (InputError for a bad scenario, as `ptsim predict`); a ladder rung that cannot run
// (e.g. a global batch the rung's GPUs do not divide) is kept with its reason.
nlohmann::json collect_scenario_report(const std::string& scenario_name, const ScenarioReportOptions& options,
                                       const hwprofiles::ProfileSet& profiles);
nlohmann::json collect_scenario_report(const ReportScenario& scenario, const ScenarioReportOptions& options,
                                       const hwprofiles::ProfileSet& profiles);

// The HTML page of collect_scenario_report's JSON, with `chart_library` (load_chart_library()) inlined.
std::string render_scenario_report(const nlohmann::json& report, const std::string& chart_library);

}  // namespace ptsim::reports
