// calibration/op_times_fit.hpp — calibrate a device profile from measured per-op times (the runtime's
// `ptsim train --op-times`, schema ptsim.op_times.v1): fit a few compute-model parameters so the predicted
// time of every op matches the measurement, and report the error on a held-out measurement (e.g. another
// micro-batch). The calibration loop of docs/compute-model.md: the same TaskGraph measured and predicted op by op.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/op_times.hpp"

namespace ptsim::calibration {

// The measured per-op times, read with the schema's one reader (models/op_times.hpp).
using models::load_op_times;
using models::MeasuredOp;
using models::OpTimes;

struct KindError {
  double measured_seconds = 0, predicted_before = 0, predicted_after = 0;  // per optimizer step
};

struct OpFit {
  std::map<std::string, double> values;                 // parameter → fitted value
  std::map<std::string, KindError> fit_by_kind;         // over the fit measurements
  double fit_measured_seconds = 0, fit_predicted_before = 0, fit_predicted_after = 0;     // Σ ops per step
  double holdout_measured_seconds = 0, holdout_predicted_before = 0, holdout_predicted_after = 0;
  bool has_holdout = false;
  // The fitted values would have made the fit step's total error worse than the prior profile's: `values`
  // are then the prior ones (nothing changes), and the rejected fit is kept here to be reported.
  bool kept_prior = false;
  std::map<std::string, double> rejected_values;
  double rejected_predicted_after = 0;
};

// Parameters as in calibration/published_fit.hpp (gemm_efficiency_scale, memory_efficiency, kernel_launch_seconds,
// sustained_clock_fraction). Objective: Σ over ops of (measured share of time) × log(predicted/measured)².
// The result never has a larger step-total error on the fit measurements than `base` (see kept_prior).
OpFit fit_to_op_times(const std::vector<OpTimes>& fit, const std::vector<OpTimes>& holdout,
                      const hwprofiles::GpuProfile& base, const std::vector<std::string>& parameters);

}  // namespace ptsim::calibration
