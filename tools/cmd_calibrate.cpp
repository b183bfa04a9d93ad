// tools/cmd_calibrate.cpp — `ptsim calibrate published|measured|nccl-tests`: flag parsing, then the calls of
// calibration/calibrate.hpp (fit, print before/after errors with fit and held-out runs marked, --write the
// fitted values with their provenance into the profiles, --report an HTML page via
// reports/calibration_report.hpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "calibration/calibrate.hpp"
#include "core/atomic_file.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/calibration_report.hpp"
#include "reports/html_report.hpp"
#include "tools/calibrate_nccl_tests.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {
namespace {

// The report's target and chart library, checked before the fit; "" when no --report.
std::string report_library(const std::string& report_path) {
  if (report_path.empty()) return "";
  (void)core::writable_target(report_path, "--report");
  return reports::load_chart_library();
}

void write_report(const std::string& report_path, const nlohmann::json& report, const std::string& chart_library) {
  core::write_file_atomic(report_path, reports::render_calibration_report(report, chart_library), "--report");
}

int calibrate_measured(const std::vector<std::string>& files, const std::vector<std::string>& holdout_files,
                       const std::string& device, const std::string& stack, const std::vector<std::string>& parameters,
                       const std::string& profiles_dir, bool write, const std::string& report_path) {
  const std::string chart_library = report_library(report_path);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  calibration::MeasuredCalibration c = calibration::calibrate_measured(files, holdout_files, device, stack, parameters, profiles);
  fmt::print("{}", calibration::render_measured_fit(c));
  if (!report_path.empty()) {
    write_report(report_path, calibration::measured_report_json(c), chart_library);
    fmt::print("wrote {}: open it in a browser (it needs no network)\n", report_path);
  }
  const calibration::OpFit& r = c.result;
  if (r.kept_prior) {
    // Said plainly: the fit was computed but not used, and --write writes nothing.
    fmt::print("\nkept the prior parameters of '{}': the fitted values (", device);
    for (const auto& [p, v] : r.rejected_values) fmt::print(" {} = {:.4g}", p, v);
    fmt::print(" ) would have moved the fit step's error from {:+.1f}% to {:+.1f}%\n",
               100 * (r.fit_predicted_before / r.fit_measured_seconds - 1),
               100 * (r.rejected_predicted_after / r.fit_measured_seconds - 1));
    if (write) fmt::print("nothing written to {}/stacks/{}.json\n", profiles_dir, c.stack);
    return 0;
  }
  if (write)
    for (const auto& path : calibration::write_measured_fit(profiles_dir, c, profiles, calibration::today_utc()))
      fmt::print("wrote {}\n", path);
  return 0;
}

}  // namespace

int run_calibrate_command(int argc, char** argv) {
  CLI::App app{"Fit GPU compute-model parameters to measured or published runs", "calibrate"};
  app.require_subcommand(1);
  CLI::App* published = app.add_subcommand("published", "fit the software stacks to the published single-GPU runs");
  std::string runs_path = calibration::default_published_runs_path();
  std::string profiles_dir = hwprofiles::hwprofiles_directory();
  std::string format = "table";
  bool write = false;
  published->add_option("--runs", runs_path, "published runs file")->capture_default_str();
  published->add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  std::vector<std::string> groups;
  published->add_option("--group", groups, "fit only these fit groups (default: every group in the runs file)");
  published->add_flag("--write", write, "store the fitted values (with provenance) in the stacks (hwprofiles/stacks)");
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
  std::string stack;
  measured->add_option("--stack", stack, "the software stack whose values are fitted (default: the one stack with values for --profile)");
  measured->add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  measured->add_flag("--write", write, "store the fitted values (with provenance) in the profile");
  measured->add_option("--report", report_path, "also write measured vs predicted per op kind, before and after the fit, as an HTML page");
  NcclTestsFlags nccl_tests;
  CLI::App* nccl = add_nccl_tests_subcommand(app, nccl_tests);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  if (nccl->parsed()) return run_nccl_tests_calibration(nccl_tests);
  if (measured->parsed())
    return calibrate_measured(measured_files, holdout_files, device, stack, parameters, profiles_dir, write, report_path);

  const std::string chart_library = report_library(report_path);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  calibration::PublishedCalibration c = calibration::calibrate_published(runs_path, profiles, groups);
  const std::string date = calibration::today_utc();
  for (const auto& fit : c.fits) {
    if (format == "table") fmt::print("{}", calibration::render_published_fit(c, fit));
    if (write)
      for (const auto& path : calibration::write_published_fit(profiles_dir, c, fit, profiles, date))
        fmt::print("wrote {}\n", path);
  }
  if (!report_path.empty()) write_report(report_path, calibration::published_report_json(c), chart_library);
  if (format == "json") fmt::print("{}\n", calibration::published_fit_json(c).dump(2));
  else if (!report_path.empty()) fmt::print("wrote {}: open it in a browser (it needs no network)\n", report_path);
  return 0;
}

}  // namespace ptsim::tools
