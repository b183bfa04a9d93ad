// reports/validation.hpp — what `ptsim validate` compares: every published result of the shipped scenarios
// against ptsim's prediction from one profile set (no per-scenario factors), and the published single-GPU
// runs with each stack's fit and held-out errors, as the JSON `ptsim validate --format json` prints
// (docs/scenarios.md). Not here: the tables and the HTML page (tools/cmd_validate.cpp, validation_report.hpp).
#pragma once
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"

namespace ptsim::reports {

// {published_results [...], single_gpu_runs [...], stacks [...], runs_file}; `scenarios` empty: every shipped
// scenario with published results. InputError for an unknown scenario or a bad runs file.
core::Json validate_published(const hwprofiles::ProfileSet& profiles, const std::string& runs_path,
                              const std::vector<std::string>& scenarios = {});

}  // namespace ptsim::reports
