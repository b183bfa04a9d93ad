// reports/sweep_output.hpp — a sweep's results as JSON (schema ptsim.sweep.v1, docs/json-formats.md),
// CSV (one row per configuration) and terminal tables (the answer first, then the frontier, then the
// configurations). Also the JSON round trip of results that MPI ranks send to rank 0.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/sweep.hpp"

namespace ptsim::reports {

nlohmann::json config_result_to_json(const ConfigResult& r);
ConfigResult config_result_from_json(const nlohmann::json& j);

nlohmann::json sweep_to_json(const SweepSpec& spec, const std::vector<ConfigResult>& results, const SweepAnalysis& a);
// The whole sweep in one process: validate_sweep, every configuration on `threads` threads, analyse_sweep, as
// sweep_to_json prints it (the server's and the Python module's sweep; `ptsim sweep` also slices over MPI).
nlohmann::json run_sweep_to_json(const SweepSpec& spec, const hwprofiles::ProfileSet& profiles, int threads);
std::string sweep_to_csv(const SweepSpec& spec, const std::vector<ConfigResult>& results);
// `max_rows`: configurations listed (best by the objective first); the rest are counted.
std::string sweep_to_text(const SweepSpec& spec, const std::vector<ConfigResult>& results, const SweepAnalysis& a,
                          size_t max_rows = 40);

}  // namespace ptsim::reports
