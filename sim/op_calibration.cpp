// sim/op_calibration.cpp — fit device parameters to measured per-op times.
#include "sim/op_calibration.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/calibration.hpp"
#include "sim/compute_model.hpp"

namespace ptsim::sim {
namespace {

struct Totals {
  double measured = 0, predicted = 0;
};

Totals totals(const OpTimes& t, const hwprofiles::GpuProfile& gpu, std::map<std::string, KindError>* by_kind,
              bool after) {
  Totals out;
  for (const auto& m : t.ops) {
    const double executions = models::is_micro_step_phase(m.op.phase) ? static_cast<double>(t.micro_steps) : 1.0;
    const double measured = m.seconds_per_execution * executions;
    const double predicted = op_cost(m.op, gpu).seconds * executions;
    out.measured += measured;
    out.predicted += predicted;
    if (by_kind) {
      KindError& k = (*by_kind)[models::to_string(m.op.kind)];
      if (after) k.predicted_after += predicted;
      else {
        k.measured_seconds += measured;
        k.predicted_before += predicted;
      }
    }
  }
  return out;
}

}  // namespace

OpFit fit_to_op_times(const std::vector<OpTimes>& fit, const std::vector<OpTimes>& holdout,
                      const hwprofiles::GpuProfile& base, const std::vector<std::string>& parameters) {
  auto profile_with = [&](const std::map<std::string, double>& values) {
    hwprofiles::GpuProfile g = base;
    for (const auto& [p, v] : values) set_parameter(g, p, v);
    return g;
  };
  double total_measured = 0;
  for (const auto& t : fit)
    for (const auto& m : t.ops) total_measured += m.seconds_per_execution;
  auto objective = [&](const std::map<std::string, double>& values) {
    hwprofiles::GpuProfile g = profile_with(values);
    double sum = 0;
    for (const auto& t : fit)
      for (const auto& m : t.ops) {
        if (m.seconds_per_execution <= 0 || models::is_communication(m.op.kind)) continue;
        const double predicted = op_cost(m.op, g).seconds;
        sum += m.seconds_per_execution / total_measured * std::pow(std::log(predicted / m.seconds_per_execution), 2);
      }
    return sum;
  };
  std::map<std::string, double> values;
  for (const auto& p : parameters) values[p] = get_parameter(base, p);
  values = minimize_coordinatewise(values, objective, 1.0);
  OpFit out;
  out.values = values;
  const hwprofiles::GpuProfile after = profile_with(values);
  for (const auto& t : fit) {
    Totals b = totals(t, base, &out.fit_by_kind, false);
    Totals a = totals(t, after, &out.fit_by_kind, true);
    out.fit_measured_seconds += b.measured;
    out.fit_predicted_before += b.predicted;
    out.fit_predicted_after += a.predicted;
  }
  for (const auto& t : holdout) {
    out.has_holdout = true;
    Totals b = totals(t, base, nullptr, false);
    Totals a = totals(t, after, nullptr, true);
    out.holdout_measured_seconds += b.measured;
    out.holdout_predicted_before += b.predicted;
    out.holdout_predicted_after += a.predicted;
  }
  return out;
}

}  // namespace ptsim::sim
