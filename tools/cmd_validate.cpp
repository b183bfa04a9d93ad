// tools/cmd_validate.cpp — `ptsim validate`: for every published result (the shipped scenarios and the
// published single-GPU runs) the published value, ptsim's prediction from the one shipped profile set (no
// per-scenario factors) and the error. Runs used by the compute-model fit are marked. --report FILE also
// writes the comparison as a self-contained HTML page with error bars (reports/validation_report.hpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/html_report.hpp"
#include "reports/text_table.hpp"
#include "reports/validation.hpp"
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
  const nlohmann::json validation = reports::validate_published(profiles, runs_path, only);
  if (!report_path.empty())
    core::write_file_atomic(report_path, reports::render_validation_report(validation, chart_library), "--report");
  if (format == "json") {
    nlohmann::json printed = validation;
    printed.erase("runs_file");  // the JSON as it always was: the report names the file, the tables below too
    fmt::print("{}\n", printed.dump(2));
    return 0;
  }
  reports::TextTable table({"scenario", "metric", "published", "predicted", "error", "tolerance", "within"});
  std::vector<std::string> gaps;
  for (const auto& t : validation.at("published_results")) {
    const std::string metric = t.at("metric"), name = t.at("scenario"), gap = t.at("known_gap");
    const bool points = t.at("error_kind") == "absolute", within = t.at("within_tolerance");
    const double tolerance = t.at("tolerance");
    const bool predicted = !t.at("predicted").is_null();
    const double error = predicted ? t.at("error").get<double>() : 0;
    table.add_row({name, metric, format_metric(metric, t.at("published")),
                   predicted ? format_metric(metric, t.at("predicted")) : "-",
                   predicted ? (points ? fmt::format("{:+.1f} pts", 100 * error) : fmt::format("{:+.1f}%", 100 * error)) : "-",
                   points ? fmt::format("±{:.0f} pts", 100 * tolerance) : fmt::format("±{:.0f}%", 100 * tolerance),
                   within ? "yes" : (gap.empty() ? "NO" : "NO (known gap*)")});
    if (!within && !gap.empty()) gaps.push_back(fmt::format("* {} {}: {}", name, metric, gap));
  }
  reports::TextTable runs({"single-GPU run", "stack", "used in fit", "published seq/s", "predicted", "error"});
  for (const auto& run : validation.at("single_gpu_runs"))
    runs.add_row({run.at("id"), run.at("stack"), run.at("role") == "fit" ? "yes" : "held out",
                  fmt::format("{:.2f}", run.at("published").get<double>()),
                  fmt::format("{:.2f}", run.at("predicted").get<double>()),
                  fmt::format("{:+.1f}%", 100 * run.at("relative_error").get<double>())});
  reports::TextTable stack_table({"stack", "fit runs", "mean |error|", "held-out runs", "mean |error|", "worst held out"});
  for (const auto& st : validation.at("stacks")) {
    const size_t fit = st.at("fit_runs"), held_out = st.at("held_out_runs");
    auto pct = [](size_t n, double x) { return n == 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * x); };
    stack_table.add_row({st.at("stack"), std::to_string(fit), pct(fit, st.at("fit_mean_abs_error")),
                         std::to_string(held_out), pct(held_out, st.at("held_out_mean_abs_error")),
                         held_out == 0 ? std::string("-")
                                       : fmt::format("{:+.1f}%", 100 * st.at("held_out_worst_error").get<double>())});
  }
  const std::string runs_file = validation.at("runs_file");
  fmt::print("Published results vs ptsim (one profile set for every scenario; no per-scenario factors):\n{}",
             table.render());
  for (const auto& g : gaps) fmt::print("{}\n", g);
  fmt::print("\nPublished single-GPU throughputs (BERT-large pretraining; {}):\n{}", runs_file, runs.render());
  fmt::print("\nPer software stack (fit runs set the stack's values; held-out runs test them):\n{}", stack_table.render());
  if (!report_path.empty()) fmt::print("\nwrote {}: open it in a browser (it needs no network)\n", report_path);
  return 0;
}

}  // namespace ptsim::tools
