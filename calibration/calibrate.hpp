// calibration/calibrate.hpp — what `ptsim calibrate published|measured` does, as functions a test can
// call: run the fits, render their tables and JSON, and store the fitted values with their provenance in
// the profiles (through hwprofiles/profile_writer.hpp). tools/cmd_calibrate.cpp only parses flags and
// calls these. Not here: the fits themselves (published_fit.hpp, op_times_fit.hpp).
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/op_times_fit.hpp"
#include "calibration/published_fit.hpp"
#include "hwprofiles/profile_writer.hpp"
#include "hwprofiles/profiles.hpp"

namespace ptsim::calibration {

// Today's date (UTC) as "YYYY-MM-DD", for provenance.
std::string today_utc();

// ---- published single-GPU runs
struct PublishedCalibration {
  PublishedRunSet set;
  std::vector<FitResult> fits;  // one per fit group, in the set's group order
};

// `groups`: the fit groups to fit (empty = all); an unknown name is an InputError listing the groups.
PublishedCalibration calibrate_published(const std::string& runs_path, const hwprofiles::ProfileSet& profiles,
                                         const std::vector<std::string>& groups = {});
// The table `calibrate published` prints for one fit group (header line + before/after table).
std::string render_published_fit(const PublishedCalibration& c, const FitResult& fit);
// `calibrate published --format json`: [{group, values, runs: [{id, role, measured, predicted_before,
// predicted_after, error_after}]}].
nlohmann::json published_fit_json(const PublishedCalibration& c);
// The --report page's input (reports/calibration_report.hpp).
nlohmann::json published_report_json(const PublishedCalibration& c);
// Stores one group's fitted values in its stack's fit entry (and a fitted sustained clock in the GPU
// profiles of that entry); returns the files written.
std::vector<std::string> write_published_fit(const std::string& profiles_dir, const PublishedCalibration& c,
                                             const FitResult& fit, const hwprofiles::ProfileSet& profiles,
                                             const std::string& date);

// ---- per-op times measured by the runtime
struct MeasuredCalibration {
  std::string device;
  std::string stack;
  std::vector<std::string> files, holdout_files;
  std::vector<OpTimes> fit, holdout;
  OpFit result;
};

// Loads the files (every fit file must be `measured`) and fits `parameters` of `device` under `stack`
// ("" = the one stack with values for the device).
MeasuredCalibration calibrate_measured(const std::vector<std::string>& files, const std::vector<std::string>& holdout_files,
                                       const std::string& device, const std::string& stack,
                                       const std::vector<std::string>& parameters, const hwprofiles::ProfileSet& profiles);
// What `calibrate measured` prints: values, per-op-kind table, step totals, and (when the prior was kept) why.
std::string render_measured_fit(const MeasuredCalibration& c);
nlohmann::json measured_report_json(const MeasuredCalibration& c);
// Stores the fitted values in the stack's entry for the device; returns the files written.
std::vector<std::string> write_measured_fit(const std::string& profiles_dir, const MeasuredCalibration& c,
                                            const hwprofiles::ProfileSet& profiles, const std::string& date);

// Writes fitted values, each with `provenance(what)` as source: the stack's part into
// stacks/<stack>.json fits.<family>, a sustained clock into every GPU of that entry. `device` is the GPU
// under the stack the values were fitted with (gemm_efficiency_scale scales its ceilings).
std::vector<std::string> write_fitted_values(const std::string& profiles_dir, const hwprofiles::ProfileSet& profiles,
                                             const hwprofiles::GpuProfile& device, const std::string& stack,
                                             const std::map<std::string, double>& values,
                                             const std::function<std::string(const std::string&)>& provenance);

}  // namespace ptsim::calibration
