// tools/cmd_calibrate.cpp — `ptsim calibrate published`: fit the V100/T4 compute-model parameters to the
// published single-GPU runs (reports/calibration/published_single_gpu.json), print before/after errors
// with fit and held-out runs marked, and with --write store the fitted values, with their provenance, in
// hwprofiles/gpus/*.json. `calibrate measured` fits a device profile to per-op times measured by the
// runtime. --report FILE (both) also writes measured vs predicted before and after the fit as an HTML page
// (reports/calibration_report.hpp).
#include <fmt/format.h>

#include <ctime>
#include <functional>
#include <map>
#include <stdexcept>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/calibration_report.hpp"
#include "reports/html_report.hpp"
#include "reports/text_table.hpp"
#include "sim/calibration.hpp"
#include "sim/op_calibration.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {
namespace {

using ordered_json = nlohmann::ordered_json;

// Stores fitted parameter values in a GPU profile file, each with its provenance; written atomically.
void write_fitted_parameters(const std::string& path, const hwprofiles::GpuProfile& gpu,
                             const std::map<std::string, double>& values,
                             const std::function<std::string(const std::string&)>& provenance) {
  std::ifstream in(path);
  ordered_json j = ordered_json::parse(in);
  for (const auto& [parameter, value] : values) {
    if (parameter == "gemm_efficiency_scale") {
      hwprofiles::GpuProfile scaled = gpu;
      sim::set_parameter(scaled, parameter, value);
      j["gemm"]["max_efficiency"] = {{"value", scaled.gemm.max_efficiency}, {"unit", "fraction"},
                                     {"source", provenance(fmt::format("large-GEMM efficiency × {:.4f}", value))}};
      j["batched_gemm"]["max_efficiency"] = {{"value", scaled.batched_gemm.max_efficiency}, {"unit", "fraction"},
                                             {"source", provenance(fmt::format("batched-GEMM efficiency × {:.4f}", value))}};
    } else if (parameter == "kernel_launch_seconds") {
      j["kernel_launch_overhead"] = {{"value", value * 1e6}, {"unit", "us"}, {"source", provenance("per-op overhead")}};
    } else {
      j[parameter] = {{"value", value}, {"unit", "fraction"}, {"source", provenance(parameter)}};
    }
  }
  core::write_file_atomic(path, j.dump(2) + "\n", "profile");
  fmt::print("wrote {}\n", path);
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

void write_fitted_values(const std::string& profiles_dir, const sim::PublishedRunSet& set, const sim::FitResult& fit,
                         const hwprofiles::ProfileSet& profiles) {
  const sim::FitGroup& group = set.groups.at(fit.group);
  std::string fit_runs;
  for (const auto& run : set.runs)
    if (run.fit_group == fit.group && run.role == "fit") fit_runs += (fit_runs.empty() ? "" : ", ") + run.id;
  const std::string date = today();
  for (const auto& gpu_name : group.apply_to) {
    write_fitted_parameters(profiles_dir + "/gpus/" + gpu_name + ".json", hwprofiles::find_gpu(profiles, gpu_name),
                            fit.values, [&](const std::string& what) {
                              return fmt::format("fitted: {} by 'ptsim calibrate published' on {} "
                                                 "(reports/calibration/published_single_gpu.json), {}; group '{}': {}",
                                                 what, fit_runs, date, fit.group, group.why);
                            });
  }
}


// The report's target and chart library, checked before the fit; "" when no --report.
std::string report_library(const std::string& report_path) {
  if (report_path.empty()) return "";
  (void)core::writable_target(report_path, "--report");
  return reports::load_chart_library();
}

int calibrate_measured(const std::vector<std::string>& files, const std::vector<std::string>& holdout_files,
                       const std::string& device, const std::vector<std::string>& parameters,
                       const std::string& profiles_dir, bool write, const std::string& report_path) {
  const std::string chart_library = report_library(report_path);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  const hwprofiles::GpuProfile& base = hwprofiles::find_gpu(profiles, device);
  std::vector<sim::OpTimes> fit, holdout;
  for (const auto& f : files) fit.push_back(sim::load_op_times(f));
  for (const auto& f : holdout_files) holdout.push_back(sim::load_op_times(f));
  for (const auto& t : fit)
    if (t.source != "measured") throw core::InputError(t.path + ": field 'source' is \"" + t.source + "\"; calibrate on measured times");
  sim::OpFit r = sim::fit_to_op_times(fit, holdout, base, parameters);
  fmt::print("fit of '{}' to {} measured step(s):", device, fit.size());
  for (const auto& [p, v] : r.values) fmt::print("  {} = {:.4g}", p, v);
  fmt::print("\n\n");
  reports::TextTable kinds({"op kind", "measured ms/step", "before", "error", "after", "error"});
  for (const auto& [kind, k] : r.fit_by_kind) {
    if (k.measured_seconds <= 0) continue;
    kinds.add_row({kind, fmt::format("{:.3f}", k.measured_seconds * 1e3), fmt::format("{:.3f}", k.predicted_before * 1e3),
                   fmt::format("{:+.0f}%", 100 * (k.predicted_before / k.measured_seconds - 1)),
                   fmt::format("{:.3f}", k.predicted_after * 1e3),
                   fmt::format("{:+.0f}%", 100 * (k.predicted_after / k.measured_seconds - 1))});
  }
  fmt::print("{}\n", kinds.render());
  auto line = [](const char* what, double measured, double before, double after) {
    fmt::print("{:<22} measured {:.4f} s   predicted before {:.4f} s ({:+.1f}%)   after {:.4f} s ({:+.1f}%)\n", what,
               measured, before, 100 * (before / measured - 1), after, 100 * (after / measured - 1));
  };
  line("fit step (Σ ops)", r.fit_measured_seconds, r.fit_predicted_before, r.fit_predicted_after);
  if (r.has_holdout) line("held-out step (Σ ops)", r.holdout_measured_seconds, r.holdout_predicted_before, r.holdout_predicted_after);
  if (!report_path.empty()) {
    nlohmann::json kinds_json = nlohmann::json::array(), steps_json = nlohmann::json::array();
    for (const auto& [kind, k] : r.fit_by_kind)
      if (k.measured_seconds > 0)
        kinds_json.push_back({{"kind", kind}, {"measured_seconds", k.measured_seconds},
                              {"predicted_before", k.predicted_before}, {"predicted_after", k.predicted_after}});
    steps_json.push_back({{"what", "fit step (sum of ops)"}, {"measured_seconds", r.fit_measured_seconds},
                          {"predicted_before", r.fit_predicted_before}, {"predicted_after", r.fit_predicted_after}});
    if (r.has_holdout)
      steps_json.push_back({{"what", "held-out step (sum of ops)"}, {"measured_seconds", r.holdout_measured_seconds},
                            {"predicted_before", r.holdout_predicted_before}, {"predicted_after", r.holdout_predicted_after}});
    const nlohmann::json report = {{"mode", "measured"}, {"device", device}, {"values", r.values},
                                   {"kept_prior", r.kept_prior}, {"files", files}, {"holdout_files", holdout_files},
                                   {"kinds", kinds_json}, {"steps", steps_json}};
    core::write_file_atomic(report_path, reports::render_calibration_report(report, chart_library), "--report");
    fmt::print("wrote {}: open it in a browser (it needs no network)\n", report_path);
  }
  if (r.kept_prior) {
    // Said plainly: the fit was computed but not used, and --write writes nothing.
    fmt::print("\nkept the prior parameters of '{}': the fitted values (", device);
    for (const auto& [p, v] : r.rejected_values) fmt::print(" {} = {:.4g}", p, v);
    fmt::print(" ) would have moved the fit step's error from {:+.1f}% to {:+.1f}%\n",
               100 * (r.fit_predicted_before / r.fit_measured_seconds - 1),
               100 * (r.rejected_predicted_after / r.fit_measured_seconds - 1));
    if (write) fmt::print("nothing written to {}/gpus/{}.json\n", profiles_dir, device);
    return 0;
  }
  if (!write) return 0;
  std::string on;
  for (const auto& t : fit) on += (on.empty() ? "" : ", ") + t.path + " (" + t.device + ")";
  const std::string date = today();
  write_fitted_parameters(profiles_dir + "/gpus/" + device + ".json", base, r.values, [&](const std::string& what) {
    return fmt::format("fitted: {} by 'ptsim calibrate measured' on per-op times {}, {}", what, on, date);
  });
  return 0;
}

}  // namespace

int run_calibrate_command(int argc, char** argv) {
  CLI::App app{"Fit GPU compute-model parameters to measured or published runs", "calibrate"};
  app.require_subcommand(1);
  CLI::App* published = app.add_subcommand("published", "fit V100/T4 profiles to the published single-GPU runs");
  std::string runs_path = sim::default_published_runs_path();
  std::string profiles_dir = hwprofiles::hwprofiles_directory();
  std::string format = "table";
  bool write = false;
  published->add_option("--runs", runs_path, "published runs file")->capture_default_str();
  published->add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  published->add_flag("--write", write, "store the fitted values (with provenance) in the GPU profiles");
  published->add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}));
  std::string report_path;
  published->add_option("--report", report_path, "also write measured vs predicted, before and after the fit, as an HTML page");
  CLI::App* measured = app.add_subcommand(
      "measured", "fit a device profile to per-op times measured by 'ptsim train --op-times' (the runtime)");
  std::vector<std::string> measured_files, holdout_files;
  std::string device = "cpu-xeon-2c";
  // GEMM efficiency, streaming efficiency and per-op overhead: the clock would only trade off against the
  // GEMM efficiency on a CPU (both scale compute), so it is not fitted here.
  std::vector<std::string> parameters = {"gemm_efficiency_scale", "memory_efficiency", "kernel_launch_seconds"};
  measured->add_option("--op-times", measured_files, "measured ptsim.op_times.v1 files to fit on")->required();
  measured->add_option("--holdout", holdout_files, "measured files kept out of the fit (their error is reported)");
  measured->add_option("--profile", device, "the device profile to fit (hwprofiles/gpus)")->capture_default_str();
  measured->add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  measured->add_flag("--write", write, "store the fitted values (with provenance) in the profile");
  measured->add_option("--report", report_path, "also write measured vs predicted per op kind, before and after the fit, as an HTML page");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  if (measured->parsed())
    return calibrate_measured(measured_files, holdout_files, device, parameters, profiles_dir, write, report_path);

  const std::string chart_library = report_library(report_path);
  nlohmann::json report_groups = nlohmann::json::array();
  sim::PublishedRunSet set = sim::load_published_runs(runs_path);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, group] : set.groups) {
    sim::FitResult fit = sim::fit_group(set, name, profiles);
    nlohmann::json report_runs = nlohmann::json::array();
    for (size_t i = 0; i < fit.after.size(); ++i)
      report_runs.push_back({{"id", fit.after[i].id}, {"role", fit.after[i].role}, {"measured", fit.after[i].measured},
                             {"predicted_before", fit.before[i].predicted}, {"predicted_after", fit.after[i].predicted}});
    report_groups.push_back({{"group", name}, {"why", group.why}, {"values", fit.values}, {"runs", report_runs}});
    if (format == "json") {
      nlohmann::json runs = nlohmann::json::array();
      for (size_t i = 0; i < fit.after.size(); ++i)
        runs.push_back({{"id", fit.after[i].id}, {"role", fit.after[i].role}, {"measured", fit.after[i].measured},
                        {"predicted_before", fit.before[i].predicted}, {"predicted_after", fit.after[i].predicted},
                        {"error_after", fit.after[i].relative_error()}});
      out.push_back({{"group", name}, {"values", fit.values}, {"runs", runs}});
    } else {
      fmt::print("fit group '{}' ({}): ", name, group.why);
      for (const auto& [p, v] : fit.values) fmt::print("{} = {:.4g}  ", p, v);
      fmt::print("\n");
      reports::TextTable table({"run", "role", "measured seq/s", "before", "error", "after", "error"});
      for (size_t i = 0; i < fit.after.size(); ++i)
        table.add_row({fit.after[i].id, fit.after[i].role, fmt::format("{:.2f}", fit.after[i].measured),
                       fmt::format("{:.2f}", fit.before[i].predicted),
                       fmt::format("{:+.1f}%", 100 * fit.before[i].relative_error()),
                       fmt::format("{:.2f}", fit.after[i].predicted),
                       fmt::format("{:+.1f}%", 100 * fit.after[i].relative_error())});
      fmt::print("{}\n", table.render());
    }
    if (write) write_fitted_values(profiles_dir, set, fit, profiles);
  }
  if (!report_path.empty()) {
    const nlohmann::json report = {{"mode", "published"}, {"runs_file", set.path}, {"groups", report_groups}};
    core::write_file_atomic(report_path, reports::render_calibration_report(report, chart_library), "--report");
  }
  if (format == "json") fmt::print("{}\n", out.dump(2));
  else if (!report_path.empty()) fmt::print("wrote {}: open it in a browser (it needs no network)\n", report_path);
  return 0;
}

}  // namespace ptsim::tools
