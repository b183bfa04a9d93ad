// reports/calibration_report.hpp — the page of `ptsim calibrate … --report FILE`: what the fit changed,
// measured against predicted before and after it, drawn by reports/html_report.hpp.
// Input (built by tools/cmd_calibrate.cpp):
//   {"mode": "published", "runs_file": PATH,
//    "groups": [{"group", "why", "values": {parameter: value}, "runs": [{"id", "role", "measured",
//                "predicted_before", "predicted_after"}]}]}                      (sequences per second)
//   {"mode": "measured", "device", "values", "kept_prior", "files": [...], "holdout_files": [...],
//    "kinds": [{"kind", "measured_seconds", "predicted_before", "predicted_after"}],
//    "steps": [{"what", "measured_seconds", "predicted_before", "predicted_after"}]}   (seconds per step)
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ptsim::reports {

std::string render_calibration_report(const nlohmann::json& calibration, const std::string& chart_library);

}  // namespace ptsim::reports
