// tools/cmd_plan.cpp — `ptsim plan SCENARIO`: the fastest parallel plan that fits for the scenario's model
// on its cluster at its global batch (reports/plan_search), how to run it, and why the others lost;
// no plan fits: exit 2 with the closest miss and the fix. docs/planning.md.
#include <fmt/format.h>

#include <chrono>

#include "core/atomic_file.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/auto_recipe.hpp"
#include "reports/plan_output.hpp"
#include "reports/plan_search.hpp"
#include "reports/scenario.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

int run_plan_command(int argc, char** argv) {
  CLI::App app{"Plan: the fastest tensor × pipeline × data-parallel layout (schedule, ZeRO stage, recomputation, "
               "micro-batch) that fits, for a scenario's model on its cluster at its global batch", "plan"};
  std::string scenario_name;
  std::vector<std::string> overrides;
  std::string format = "table";
  std::string out_path;
  std::string profiles_dir;
  size_t top = 15;
  app.add_option("scenario", scenario_name, "shipped scenario name or scenario JSON file")->required();
  app.add_option("--set", overrides, "scenario override key=value, e.g. cluster.nodes=64");
  app.add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--top", top, "layouts listed in the table")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--out", out_path, "write the answer to this file (atomically) instead of standard output");
  app.add_option("--profiles", profiles_dir, "hardware profile directory (default: the shipped hwprofiles/)");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  if (format == "json" && app.count("--top") > 0) throw core::InputError("--top shapes the table; --format json lists every layout");
  if (!out_path.empty()) (void)core::writable_target(out_path, "--out");

  const hwprofiles::ProfileSet profiles =
      profiles_dir.empty() ? hwprofiles::load_profiles() : hwprofiles::load_profiles(profiles_dir);
  const reports::Scenario scenario = reports::load_scenario(scenario_name, overrides);
  const std::vector<int64_t> globals = reports::phase_global_batches(scenario, profiles);
  const auto start = std::chrono::steady_clock::now();
  reports::PredictionCache cache;
  const reports::PlanSearch search = reports::search_plans(scenario, globals, profiles, cache);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!search.best()) reports::refuse_plan(scenario, search, profiles);
  const std::string text = format == "json" ? reports::plan_to_json(scenario, search, seconds).dump(1) + "\n"
                                            : reports::plan_to_text(scenario, scenario_name, search, top, seconds);
  if (out_path.empty()) fmt::print("{}", text);
  else core::write_file_atomic(out_path, text, "--out");
  return 0;
}

}  // namespace ptsim::tools
