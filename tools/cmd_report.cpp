// tools/cmd_report.cpp — `ptsim report`: one self-contained HTML page about a scenario (time to train by
// phase, a step's split, one iteration's timeline, scaling over a node ladder, rental/spot/ownership with
// the break-even, memory per GPU; with --sweep, the time–dollar frontier). docs/report.md.
// What the page shows: reports/scenario_report.hpp; how it is drawn: reports/html_report.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/checked_math.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/html_report.hpp"
#include "reports/scenario_report.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

namespace {

// "1,2,4,8" → {1, 2, 4, 8}: each a node count in the documented range (docs/input-ranges.md).
std::vector<int> parse_ladder(const std::string& text) {
  std::vector<int> ladder;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw core::InputError(fmt::format("--ladder '{}': '{}' is not a node count (expected e.g. --ladder 1,2,4,8)", text, item));
    core::check_range(n, core::ranges::nodes, fmt::format("--ladder '{}': node count", text));
    ladder.push_back(static_cast<int>(n));
  }
  if (ladder.empty()) throw core::InputError("--ladder is empty (expected node counts, e.g. --ladder 1,2,4,8)");
  std::sort(ladder.begin(), ladder.end());
  ladder.erase(std::unique(ladder.begin(), ladder.end()), ladder.end());
  return ladder;
}

}  // namespace

int run_report_command(int argc, char** argv) {
  CLI::App app{"Write a self-contained HTML report of a scenario: time to train, a step's split, the timeline of "
               "one iteration, scaling over a node ladder, rental/spot/ownership cost, memory per GPU; with "
               "--sweep, the time-dollar frontier (docs/report.md)",
               "report"};
  std::string scenario_name = "t4-academic-cluster";
  std::vector<std::string> overrides;
  std::string sweep_path;
  std::string out_path;
  std::string ladder_text;
  std::string format = "html";
  std::string profiles_dir;
  app.add_option("--scenario", scenario_name, "shipped scenario name or scenario JSON file")->capture_default_str();
  app.add_option("--set", overrides, "scenario override key=value, as for 'ptsim predict' (e.g. cluster.network=ib-edr)");
  app.add_option("--sweep", sweep_path, "add the time-dollar frontier of this 'ptsim sweep --format json' output");
  app.add_option("--ladder", ladder_text,
                 "node counts of the scaling chart, e.g. 1,2,4,8 (default: 1, 2, 4, … up to twice the scenario's nodes)");
  app.add_option("--out", out_path, "the report file to write")->required();
  app.add_option("--format", format, "html (the page) | json (its figures, schema ptsim.report.v1)")
      ->check(CLI::IsMember({"html", "json"}))
      ->capture_default_str();
  app.add_option("--profiles", profiles_dir, "hardware profile directory (default: the shipped hwprofiles/)");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  // Everything that can be wrong with the inputs is found before minutes of simulation.
  (void)core::writable_target(out_path, "--out");
  const std::string chart_library = format == "html" ? reports::load_chart_library() : std::string();
  reports::ScenarioReportOptions options;
  options.overrides = overrides;
  if (!ladder_text.empty()) options.node_ladder = parse_ladder(ladder_text);
  if (!sweep_path.empty()) options.sweep = reports::load_sweep_for_report(sweep_path);
  hwprofiles::ProfileSet profiles =
      profiles_dir.empty() ? hwprofiles::load_profiles() : hwprofiles::load_profiles(profiles_dir);

  const nlohmann::json report = reports::collect_scenario_report(scenario_name, options, profiles);
  const std::string text =
      format == "html" ? reports::render_scenario_report(report, chart_library) : report.dump(1) + "\n";
  core::write_file_atomic(out_path, text, "--out");
  fmt::print("wrote {} ({:.0f} KB){}\n", out_path, text.size() / 1024.0,
             format == "html" ? ": open it in a browser (it needs no network)" : "");
  return 0;
}

}  // namespace ptsim::tools
