// calibration/network_fit.hpp — fits a network profile's per-message latency and achieved fraction of line
// rate to a measured nccl-tests table: the collective is simulated on the cluster (sim/collectives) at every
// measured size, and the two parameters minimise the mean squared log ratio of predicted to measured time
// (Nelder–Mead over log latency and the logit of the fraction; golden-section search when only one of them
// is determined by the rows). Small messages pin the latency, large ones the fraction. Not here: reading the file (nccl_tests_output.hpp), writing the profile (nccl_tests_calibration.hpp).
#pragma once
#include <string>
#include <vector>

#include "calibration/nccl_tests_output.hpp"
#include "sim/collectives.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::calibration {

struct NetworkFitRow {
  double bytes = 0;
  double measured_seconds = 0;
  double before_seconds = 0;  // predicted with the profile as shipped
  double after_seconds = 0;   // predicted with the fitted values
  std::string algorithm;      // what the simulator ran after the fit (automatic resolved)
};

struct NetworkFit {
  double latency_before_seconds = 0, latency_after_seconds = 0;
  double fraction_before = 0, fraction_after = 0;
  std::vector<NetworkFitRow> rows;
  // exp(root-mean-square of ln(predicted / measured)) − 1: the typical relative error.
  double typical_error_before = 0, typical_error_after = 0;
  int evaluations = 0;
  // A parameter the rows cannot determine keeps its shipped value: the latency when a 10× change of it moves
  // the smallest row's time by under 5%, the fraction when halving it moves the largest row's by under 5%.
  bool latency_fitted = true, fraction_fitted = true;
  std::string kept_because;   // "" when both were fitted
};

// Predicted seconds of `kind` over all the cluster's GPUs at `bytes` (nccl-tests' size convention).
sim::CollectiveResult simulate_benchmark(const sim::ClusterConfig& config, sim::CollectiveKind kind, double bytes);

// Throws core::InputError when the cluster has one GPU or no row crosses the network (one node).
NetworkFit fit_network(const sim::ClusterConfig& config, sim::CollectiveKind kind, const std::vector<NcclTestsRow>& rows);

}  // namespace ptsim::calibration
