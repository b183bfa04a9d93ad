// calibration/nccl_tests_calibration.hpp — what `ptsim calibrate nccl-tests` does, as functions a test can
// call: read a nccl-tests output, check it ran on the cluster the flags describe, fit the network profile
// (network_fit.hpp), render the before/after table or JSON, and write the fitted network as a new profile
// with its provenance. tools/cmd_calibrate.cpp parses the flags and resolves the cluster.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/network_fit.hpp"
#include "calibration/nccl_tests_output.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::calibration {

struct NcclTestsCalibration {
  NcclTestsOutput output;
  sim::ClusterConfig config;
  sim::CollectiveKind kind = sim::CollectiveKind::all_reduce;
  NetworkFit fit;
};

// Throws core::InputError when the file's ranks, hosts or GPUs per host differ from `config`, or its rows
// do not fit `kind` (all_reduce/reduce_scatter rows reduce; all_gather/broadcast rows have redop "none").
NcclTestsCalibration calibrate_nccl_tests(const std::string& path, const sim::ClusterConfig& config,
                                          sim::CollectiveKind kind);
std::string render_nccl_tests_fit(const NcclTestsCalibration& c);
nlohmann::json nccl_tests_fit_json(const NcclTestsCalibration& c);
// Writes the network profile `profiles_dir`/networks/<network>.json with the fitted latency and achieved
// fraction (each with its provenance: file, rows, cluster, date, error) to `out_path`.
void write_fitted_network(const NcclTestsCalibration& c, const std::string& profiles_dir, const std::string& out_path,
                          const std::string& date);

}  // namespace ptsim::calibration
