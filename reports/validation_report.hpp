// reports/validation_report.hpp — the page of `ptsim validate --report FILE`: every published result
// against ptsim's prediction with its tolerance band, and the published single-GPU throughputs against
// the predicted ones, drawn by the renderer of reports/html_report.hpp.
// Input: the JSON `ptsim validate --format json` prints ({"published_results": […], "single_gpu_runs":
// […]}, docs/json-formats.md), plus "runs_file" naming the single-GPU runs' file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ptsim::reports {

// A published metric's name as people say it ("time_to_train_seconds" → "time to train").
std::string published_metric_label(const std::string& metric);

std::string render_validation_report(const nlohmann::json& validation, const std::string& chart_library);

}  // namespace ptsim::reports
