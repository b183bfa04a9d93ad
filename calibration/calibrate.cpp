// calibration/calibrate.cpp — see calibrate.hpp.
#include "calibration/calibrate.hpp"

#include <fmt/format.h>

#include <ctime>

#include "core/error.hpp"
#include "reports/text_table.hpp"

namespace ptsim::calibration {

std::string today_utc() {
  std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

std::vector<hwprofiles::QuantityUpdate> fitted_quantities(
    const hwprofiles::GpuProfile& gpu, const std::map<std::string, double>& values,
    const std::function<std::string(const std::string&)>& provenance) {
  std::vector<hwprofiles::QuantityUpdate> updates;
  for (const auto& [parameter, value] : values) {
    if (parameter == "gemm_efficiency_scale") {
      hwprofiles::GpuProfile scaled = gpu;
      set_parameter(scaled, parameter, value);
      updates.push_back({{"gemm", "max_efficiency"}, scaled.gemm.max_efficiency, "fraction",
                         provenance(fmt::format("large-GEMM efficiency × {:.4f}", value))});
      updates.push_back({{"batched_gemm", "max_efficiency"}, scaled.batched_gemm.max_efficiency, "fraction",
                         provenance(fmt::format("batched-GEMM efficiency × {:.4f}", value))});
    } else if (parameter == "kernel_launch_seconds") {
      updates.push_back({{"kernel_launch_overhead"}, value * 1e6, "us", provenance("per-op overhead")});
    } else {
      updates.push_back({{parameter}, value, "fraction", provenance(parameter)});
    }
  }
  return updates;
}

// ---------------------------------------------------------------- published runs

PublishedCalibration calibrate_published(const std::string& runs_path, const hwprofiles::ProfileSet& profiles) {
  PublishedCalibration c;
  c.set = load_published_runs(runs_path);
  for (const auto& [name, group] : c.set.groups) c.fits.push_back(fit_group(c.set, name, profiles));
  return c;
}

std::string render_published_fit(const PublishedCalibration& c, const FitResult& fit) {
  std::string out = fmt::format("fit group '{}' ({}): ", fit.group, c.set.groups.at(fit.group).why);
  for (const auto& [p, v] : fit.values) out += fmt::format("{} = {:.4g}  ", p, v);
  out += "\n";
  reports::TextTable table({"run", "role", "measured seq/s", "before", "error", "after", "error"});
  for (size_t i = 0; i < fit.after.size(); ++i)
    table.add_row({fit.after[i].id, fit.after[i].role, fmt::format("{:.2f}", fit.after[i].measured),
                   fmt::format("{:.2f}", fit.before[i].predicted),
                   fmt::format("{:+.1f}%", 100 * fit.before[i].relative_error()),
                   fmt::format("{:.2f}", fit.after[i].predicted),
                   fmt::format("{:+.1f}%", 100 * fit.after[i].relative_error())});
  return out + table.render() + "\n";
}

nlohmann::json published_fit_json(const PublishedCalibration& c) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& fit : c.fits) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t i = 0; i < fit.after.size(); ++i)
      runs.push_back({{"id", fit.after[i].id}, {"role", fit.after[i].role}, {"measured", fit.after[i].measured},
                      {"predicted_before", fit.before[i].predicted}, {"predicted_after", fit.after[i].predicted},
                      {"error_after", fit.after[i].relative_error()}});
    out.push_back({{"group", fit.group}, {"values", fit.values}, {"runs", runs}});
  }
  return out;
}

nlohmann::json published_report_json(const PublishedCalibration& c) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& fit : c.fits) {
    nlohmann::json runs = nlohmann::json::array();
    for (size_t i = 0; i < fit.after.size(); ++i)
      runs.push_back({{"id", fit.after[i].id}, {"role", fit.after[i].role}, {"measured", fit.after[i].measured},
                      {"predicted_before", fit.before[i].predicted}, {"predicted_after", fit.after[i].predicted}});
    groups.push_back({{"group", fit.group}, {"why", c.set.groups.at(fit.group).why}, {"values", fit.values}, {"runs", runs}});
  }
  return {{"mode", "published"}, {"runs_file", c.set.path}, {"groups", groups}};
}

std::vector<std::string> write_published_fit(const std::string& profiles_dir, const PublishedCalibration& c,
                                             const FitResult& fit, const hwprofiles::ProfileSet& profiles,
                                             const std::string& date) {
  const FitGroup& group = c.set.groups.at(fit.group);
  std::string fit_runs;
  for (const auto& run : c.set.runs)
    if (run.fit_group == fit.group && run.role == "fit") fit_runs += (fit_runs.empty() ? "" : ", ") + run.id;
  std::vector<std::string> written;
  for (const auto& gpu_name : group.apply_to) {
    const std::string path = profiles_dir + "/gpus/" + gpu_name + ".json";
    hwprofiles::write_quantities(
        path, fitted_quantities(hwprofiles::find_gpu(profiles, gpu_name), fit.values, [&](const std::string& what) {
          return fmt::format("fitted: {} by 'ptsim calibrate published' on {} "
                             "(calibration/data/published_single_gpu.json), {}; group '{}': {}",
                             what, fit_runs, date, fit.group, group.why);
        }));
    written.push_back(path);
  }
  return written;
}

// ---------------------------------------------------------------- measured op times

MeasuredCalibration calibrate_measured(const std::vector<std::string>& files, const std::vector<std::string>& holdout_files,
                                       const std::string& device, const std::vector<std::string>& parameters,
                                       const hwprofiles::ProfileSet& profiles) {
  MeasuredCalibration c;
  c.device = device;
  c.files = files;
  c.holdout_files = holdout_files;
  const hwprofiles::GpuProfile& base = hwprofiles::find_gpu(profiles, device);
  for (const auto& f : files) c.fit.push_back(load_op_times(f));
  for (const auto& f : holdout_files) c.holdout.push_back(load_op_times(f));
  for (const auto& t : c.fit)
    if (t.source != "measured")
      throw core::InputError(t.path + ": field 'source' is \"" + t.source + "\"; calibrate on measured times");
  c.result = fit_to_op_times(c.fit, c.holdout, base, parameters);
  return c;
}

std::string render_measured_fit(const MeasuredCalibration& c) {
  const OpFit& r = c.result;
  std::string out = fmt::format("fit of '{}' to {} measured step(s):", c.device, c.fit.size());
  for (const auto& [p, v] : r.values) out += fmt::format("  {} = {:.4g}", p, v);
  out += "\n\n";
  reports::TextTable kinds({"op kind", "measured ms/step", "before", "error", "after", "error"});
  for (const auto& [kind, k] : r.fit_by_kind) {
    if (k.measured_seconds <= 0) continue;
    kinds.add_row({kind, fmt::format("{:.3f}", k.measured_seconds * 1e3), fmt::format("{:.3f}", k.predicted_before * 1e3),
                   fmt::format("{:+.0f}%", 100 * (k.predicted_before / k.measured_seconds - 1)),
                   fmt::format("{:.3f}", k.predicted_after * 1e3),
                   fmt::format("{:+.0f}%", 100 * (k.predicted_after / k.measured_seconds - 1))});
  }
  out += kinds.render() + "\n";
  auto line = [](const char* what, double measured, double before, double after) {
    return fmt::format("{:<22} measured {:.4f} s   predicted before {:.4f} s ({:+.1f}%)   after {:.4f} s ({:+.1f}%)\n",
                       what, measured, before, 100 * (before / measured - 1), after, 100 * (after / measured - 1));
  };
  out += line("fit step (Σ ops)", r.fit_measured_seconds, r.fit_predicted_before, r.fit_predicted_after);
  if (r.has_holdout)
    out += line("held-out step (Σ ops)", r.holdout_measured_seconds, r.holdout_predicted_before, r.holdout_predicted_after);
  return out;
}

nlohmann::json measured_report_json(const MeasuredCalibration& c) {
  const OpFit& r = c.result;
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
  return {{"mode", "measured"}, {"device", c.device}, {"values", r.values}, {"kept_prior", r.kept_prior},
          {"files", c.files}, {"holdout_files", c.holdout_files}, {"kinds", kinds_json}, {"steps", steps_json}};
}

std::string write_measured_fit(const std::string& profiles_dir, const MeasuredCalibration& c,
                               const hwprofiles::ProfileSet& profiles, const std::string& date) {
  std::string on;
  for (const auto& t : c.fit) on += (on.empty() ? "" : ", ") + t.path + " (" + t.device + ")";
  const std::string path = profiles_dir + "/gpus/" + c.device + ".json";
  hwprofiles::write_quantities(
      path, fitted_quantities(hwprofiles::find_gpu(profiles, c.device), c.result.values, [&](const std::string& what) {
        return fmt::format("fitted: {} by 'ptsim calibrate measured' on per-op times {}, {}", what, on, date);
      }));
  return path;
}

}  // namespace ptsim::calibration
