// tools/cmd_validate.cpp — `ptsim validate`: for every published result (the shipped scenarios and the
// published single-GPU runs) the published value, ptsim's prediction from the one shipped profile set (no
// per-scenario factors) and the error. Runs used by the compute-model fit are marked. --report FILE also
// writes the comparison as a self-contained HTML page with error bars (reports/validation_report.hpp).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/html_report.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"
#include "reports/text_table.hpp"
#include "reports/validation_report.hpp"
#include "calibration/published_fit.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {
namespace {

std::string format_metric(const std::string& metric, double v) {
  if (metric == "time_to_train_seconds") return v >= 2 * 86400 ? fmt::format("{:.2f} days", v / 86400) : fmt::format("{:.1f} min", v / 60);
  if (metric == "scaling_efficiency") return fmt::format("{:.1f}%", 100 * v);
  if (metric.find("usd") != std::string::npos) return fmt::format("${:.0f}", v);
  if (metric == "tflops_per_gpu") return fmt::format("{:.1f} TFLOP/s", v);
  if (metric == "cluster_pflops") return fmt::format("{:.2f} PFLOP/s", v);
  if (metric == "tokens_per_second_per_gpu") return fmt::format("{:.0f} tokens/s", v);
  return fmt::format("{:.4g}", v);
}

// A stack's single-GPU errors, split by the runs' role.
struct StackErrors {
  std::vector<double> fit, held_out;
};

double mean_abs(const std::vector<double>& errors) {
  double sum = 0;
  for (double e : errors) sum += std::abs(e);
  return errors.empty() ? 0 : sum / static_cast<double>(errors.size());
}

double worst(const std::vector<double>& errors) {
  double w = 0;
  for (double e : errors)
    if (std::abs(e) > std::abs(w)) w = e;
  return w;
}

}  // namespace

int run_validate_command(int argc, char** argv) {
  CLI::App app{"Compare ptsim's predictions with published results; print the error of each", "validate"};
  std::string format = "table";
  std::string profiles_dir = hwprofiles::hwprofiles_directory();
  std::string runs_path = calibration::default_published_runs_path();
  std::vector<std::string> only;
  std::string report_path;
  app.add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  app.add_option("--runs", runs_path, "published single-GPU runs")->capture_default_str();
  app.add_option("--scenario", only, "validate only these scenarios (default: every shipped scenario with published results)");
  app.add_option("--report", report_path, "also write the comparison as a self-contained HTML page with charts");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  // The report's target and chart library are checked before the predictions run.
  std::string chart_library;
  if (!report_path.empty()) {
    (void)core::writable_target(report_path, "--report");
    chart_library = reports::load_chart_library();
  }
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);

  // Published end-to-end results (scenarios).
  nlohmann::json targets = nlohmann::json::array();
  reports::TextTable table({"scenario", "metric", "published", "predicted", "error", "tolerance", "within"});
  std::vector<std::string> gaps;
  for (const auto& name : only.empty() ? reports::builtin_scenario_names() : only) {
    reports::Scenario s = reports::load_scenario(name);
    if (s.published.empty()) continue;
    reports::Prediction p = reports::predict_scenario(s, profiles);
    for (const auto& t : s.published) {
      std::optional<double> v = reports::metric_value(p, t);
      const bool points = t.metric == "scaling_efficiency";
      double error = v ? (points ? *v - t.value : *v / t.value - 1) : NAN;
      bool within = v && std::abs(error) <= t.tolerance;
      targets.push_back({{"scenario", s.name}, {"metric", t.metric}, {"published", t.value},
                         {"predicted", v ? nlohmann::json(*v) : nlohmann::json(nullptr)},
                         {"error", v ? nlohmann::json(error) : nlohmann::json(nullptr)},
                         {"error_kind", points ? "absolute" : "relative"}, {"tolerance", t.tolerance},
                         {"within_tolerance", within}, {"source", t.source}, {"known_gap", t.known_gap}});
      table.add_row({s.name, t.metric, format_metric(t.metric, t.value), v ? format_metric(t.metric, *v) : "-",
                     v ? (points ? fmt::format("{:+.1f} pts", 100 * error) : fmt::format("{:+.1f}%", 100 * error)) : "-",
                     points ? fmt::format("±{:.0f} pts", 100 * t.tolerance) : fmt::format("±{:.0f}%", 100 * t.tolerance),
                     within ? "yes" : (t.known_gap.empty() ? "NO" : "NO (known gap*)")});
      if (!within && !t.known_gap.empty()) gaps.push_back(fmt::format("* {} {}: {}", s.name, t.metric, t.known_gap));
    }
  }

  // Published single-GPU throughputs (the compute-model fit's inputs and held-out runs).
  calibration::PublishedRunSet set = calibration::load_published_runs(runs_path);
  nlohmann::json single = nlohmann::json::array();
  reports::TextTable runs({"single-GPU run", "stack", "used in fit", "published seq/s", "predicted", "error"});
  std::map<std::string, StackErrors> by_stack;
  for (const auto& run : set.runs) {
    double predicted = calibration::predict_run(run, profiles);
    double error = predicted / run.sequences_per_second - 1;
    single.push_back({{"id", run.id}, {"gpu", run.gpu}, {"stack", run.stack}, {"role", run.role},
                      {"published", run.sequences_per_second}, {"predicted", predicted}, {"relative_error", error},
                      {"source", run.source}});
    runs.add_row({run.id, run.stack, run.role == "fit" ? "yes" : "held out", fmt::format("{:.2f}", run.sequences_per_second),
                  fmt::format("{:.2f}", predicted), fmt::format("{:+.1f}%", 100 * error)});
    (run.role == "fit" ? by_stack[run.stack].fit : by_stack[run.stack].held_out).push_back(error);
  }
  nlohmann::json stacks = nlohmann::json::array();
  reports::TextTable stack_table({"stack", "fit runs", "mean |error|", "held-out runs", "mean |error|", "worst held out"});
  for (const auto& [name, e] : by_stack) {
    stacks.push_back({{"stack", name}, {"fit_runs", e.fit.size()}, {"fit_mean_abs_error", mean_abs(e.fit)},
                      {"held_out_runs", e.held_out.size()}, {"held_out_mean_abs_error", mean_abs(e.held_out)},
                      {"held_out_worst_error", worst(e.held_out)}});
    auto pct = [](const std::vector<double>& v, double x) { return v.empty() ? std::string("-") : fmt::format("{:.1f}%", 100 * x); };
    stack_table.add_row({name, std::to_string(e.fit.size()), pct(e.fit, mean_abs(e.fit)), std::to_string(e.held_out.size()),
                         pct(e.held_out, mean_abs(e.held_out)),
                         e.held_out.empty() ? std::string("-") : fmt::format("{:+.1f}%", 100 * worst(e.held_out))});
  }
  if (!report_path.empty()) {
    const nlohmann::json validation = {{"published_results", targets}, {"single_gpu_runs", single}, {"stacks", stacks},
                                       {"runs_file", set.path}};
    core::write_file_atomic(report_path, reports::render_validation_report(validation, chart_library), "--report");
  }
  if (format == "json") {
    fmt::print("{}\n", nlohmann::json{{"published_results", targets}, {"single_gpu_runs", single}, {"stacks", stacks}}.dump(2));
    return 0;
  }
  fmt::print("Published results vs ptsim (one profile set for every scenario; no per-scenario factors):\n{}",
             table.render());
  for (const auto& g : gaps) fmt::print("{}\n", g);
  fmt::print("\nPublished single-GPU throughputs (BERT-large pretraining; {}):\n{}", set.path, runs.render());
  fmt::print("\nPer software stack (fit runs set the stack's values; held-out runs test them):\n{}", stack_table.render());
  if (!report_path.empty()) fmt::print("\nwrote {}: open it in a browser (it needs no network)\n", report_path);
  return 0;
}

}  // namespace ptsim::tools
