// tools/cmd_calibrate.cpp — `ptsim calibrate published`: fit the V100/T4 compute-model parameters to the
// published single-GPU runs (reports/calibration/published_single_gpu.json), print before/after errors
// with fit and held-out runs marked, and with --write store the fitted values, with their provenance, in
// hwprofiles/gpus/*.json.
#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/text_table.hpp"
#include "sim/calibration.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {
namespace {

using ordered_json = nlohmann::ordered_json;

// The JSON path of a fitted parameter in a GPU profile file, and its unit there.
void write_fitted_values(const std::string& profiles_dir, const sim::PublishedRunSet& set, const sim::FitResult& fit,
                         const hwprofiles::ProfileSet& profiles) {
  const sim::FitGroup& group = set.groups.at(fit.group);
  std::string fit_runs;
  for (const auto& run : set.runs)
    if (run.fit_group == fit.group && run.role == "fit") fit_runs += (fit_runs.empty() ? "" : ", ") + run.id;
  std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  for (const auto& gpu_name : group.apply_to) {
    const hwprofiles::GpuProfile& gpu = hwprofiles::find_gpu(profiles, gpu_name);
    std::string path = profiles_dir + "/gpus/" + gpu_name + ".json";
    std::ifstream in(path);
    ordered_json j = ordered_json::parse(in);
    auto provenance = [&](const std::string& what) {
      return fmt::format("fitted: {} by 'ptsim calibrate published' on {} ({}), {}; group '{}': {}", what, fit_runs,
                         "reports/calibration/published_single_gpu.json", date, fit.group, group.why);
    };
    for (const auto& [parameter, value] : fit.values) {
      if (parameter == "gemm_efficiency_scale") {
        hwprofiles::GpuProfile scaled = gpu;
        sim::set_parameter(scaled, parameter, value);
        j["gemm"]["max_efficiency"]["value"] = scaled.gemm.max_efficiency;
        j["gemm"]["max_efficiency"]["source"] = provenance(fmt::format("large-GEMM efficiency × {:.4f}", value));
        j["batched_gemm"]["max_efficiency"]["value"] = scaled.batched_gemm.max_efficiency;
        j["batched_gemm"]["max_efficiency"]["source"] = provenance(fmt::format("batched-GEMM efficiency × {:.4f}", value));
      } else if (parameter == "kernel_launch_seconds") {
        j["kernel_launch_overhead"]["value"] = value * 1e6;
        j["kernel_launch_overhead"]["unit"] = "us";
        j["kernel_launch_overhead"]["source"] = provenance("launch overhead");
      } else {
        j[parameter]["value"] = value;
        j[parameter]["source"] = provenance(parameter);
      }
    }
    std::ofstream out(path + ".tmp");
    out << j.dump(2) << "\n";
    out.close();
    std::rename((path + ".tmp").c_str(), path.c_str());
    fmt::print("wrote {}\n", path);
  }
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
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  sim::PublishedRunSet set = sim::load_published_runs(runs_path);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, group] : set.groups) {
    sim::FitResult fit = sim::fit_group(set, name, profiles);
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
  if (format == "json") fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace ptsim::tools
