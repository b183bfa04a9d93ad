// calibration/calibrate.cpp — see calibrate.hpp.
#include "calibration/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
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

std::vector<std::string> write_fitted_values(const std::string& profiles_dir, const hwprofiles::ProfileSet& profiles,
                                             const hwprofiles::GpuProfile& device, const std::string& stack_name,
                                             const std::map<std::string, double>& values,
                                             const std::function<std::string(const std::string&)>& provenance) {
  const hwprofiles::StackProfile& stack = hwprofiles::find_stack(profiles, stack_name);
  const hwprofiles::StackFit* fit = hwprofiles::stack_fit_for(stack, device.name);
  if (!fit) throw core::InputError("stack '" + stack_name + "' has no entry for GPU '" + device.name + "'");
  std::vector<hwprofiles::QuantityUpdate> stack_updates, gpu_updates;
  auto in_fit = [&](const std::string& key) { return std::vector<std::string>{"fits", fit->family, key}; };
  for (const auto& [parameter, value] : values) {
    if (parameter == "gemm_efficiency_scale") {
      hwprofiles::GpuProfile scaled = device;
      set_parameter(scaled, parameter, value);
      stack_updates.push_back({in_fit("gemm_max_efficiency"), scaled.gemm.max_efficiency, "fraction",
                               provenance(fmt::format("large-GEMM efficiency × {:.4f}", value))});
      stack_updates.push_back({in_fit("batched_gemm_max_efficiency"), scaled.batched_gemm.max_efficiency, "fraction",
                               provenance(fmt::format("batched-GEMM efficiency × {:.4f}", value))});
    } else if (parameter == "kernel_launch_seconds") {
      stack_updates.push_back({in_fit("kernel_launch_overhead"), value * 1e6, "us", provenance("per-op overhead")});
    } else if (parameter == "memory_efficiency") {
      stack_updates.push_back({in_fit("memory_efficiency"), value, "fraction", provenance(parameter)});
    } else {  // sustained_clock_fraction: the board's, kept in the GPU profile
      gpu_updates.push_back({{parameter}, value, "fraction", provenance(parameter)});
    }
  }
  std::vector<std::string> written;
  if (!stack_updates.empty()) {
    written.push_back(profiles_dir + "/stacks/" + stack_name + ".json");
    hwprofiles::write_quantities(written.back(), stack_updates);
  }
  if (!gpu_updates.empty())
    for (const auto& gpu : fit->gpus) {
      written.push_back(profiles_dir + "/gpus/" + gpu + ".json");
      hwprofiles::write_quantities(written.back(), gpu_updates);
    }
  return written;
}

// ---------------------------------------------------------------- published runs

PublishedCalibration calibrate_published(const std::string& runs_path, const hwprofiles::ProfileSet& profiles,
                                         const std::vector<std::string>& groups) {
  PublishedCalibration c;
  c.set = load_published_runs(runs_path);
  std::vector<std::string> names;
  for (const auto& [name, group] : c.set.groups) names.push_back(name);
  for (const auto& g : groups)
    if (!c.set.groups.count(g))
      throw core::InputError(fmt::format("--group: {} has no fit group '{}' (its groups: {})", c.set.path, g,
                                         fmt::join(names, ", ")));
  for (const auto& name : names)
    if (groups.empty() || std::find(groups.begin(), groups.end(), name) != groups.end())
      c.fits.push_back(fit_group(c.set, name, profiles));
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
  // Any run of the group gives the device the fit started from (the family's GPUs share the stack values).
  const PublishedRun* first = nullptr;
  for (const auto& run : c.set.runs)
    if (run.fit_group == fit.group && !first) first = &run;
  return write_fitted_values(profiles_dir, profiles, hwprofiles::device_profile(profiles, first->gpu, group.stack),
                             group.stack, fit.values, [&](const std::string& what) {
                               return fmt::format("fitted: {} by 'ptsim calibrate published' on {} "
                                                  "(calibration/data/published_single_gpu.json), {}; group '{}': {}",
                                                  what, fit_runs, date, fit.group, group.why);
                             });
}

// ---------------------------------------------------------------- measured op times

MeasuredCalibration calibrate_measured(const std::vector<std::string>& files, const std::vector<std::string>& holdout_files,
                                       const std::string& device, const std::string& stack,
                                       const std::vector<std::string>& parameters, const hwprofiles::ProfileSet& profiles) {
  MeasuredCalibration c;
  c.device = device;
  c.stack = stack.empty() ? hwprofiles::default_stack_for(profiles, device) : stack;
  c.files = files;
  c.holdout_files = holdout_files;
  const hwprofiles::GpuProfile base = hwprofiles::device_profile(profiles, device, c.stack);
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
  std::string out = fmt::format("fit of '{}' under stack '{}' to {} measured step(s):", c.device, c.stack, c.fit.size());
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

std::vector<std::string> write_measured_fit(const std::string& profiles_dir, const MeasuredCalibration& c,
                                            const hwprofiles::ProfileSet& profiles, const std::string& date) {
  std::string on;
  for (const auto& t : c.fit) on += (on.empty() ? "" : ", ") + t.path + " (" + t.device + ")";
  return write_fitted_values(profiles_dir, profiles, hwprofiles::device_profile(profiles, c.device, c.stack), c.stack,
                             c.result.values, [&](const std::string& what) {
                               return fmt::format("fitted: {} by 'ptsim calibrate measured' on per-op times {}, {}",
                                                  what, on, date);
                             });
}

}  // namespace ptsim::calibration
