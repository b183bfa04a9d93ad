// sim/op_calibration.cpp — fit device parameters to measured per-op times.
#include "sim/op_calibration.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/json_reader.hpp"
#include "sim/calibration.hpp"
#include "sim/compute_model.hpp"

namespace ptsim::sim {
namespace {

models::OpKind parse_kind(const std::string& name, const core::JsonReader& r) {
  for (int k = 0; k <= static_cast<int>(models::OpKind::optimizer_update); ++k)
    if (name == models::to_string(static_cast<models::OpKind>(k))) return static_cast<models::OpKind>(k);
  r.fail("kind", "a TaskGraph op kind (docs/taskgraph.md), got \"" + name + "\"");
}

models::DType parse_dtype(const std::string& name, const core::JsonReader& r) {
  for (models::DType d : {models::DType::f32, models::DType::f16, models::DType::bf16, models::DType::f64})
    if (name == models::to_string(d)) return d;
  r.fail("dtype", "f32, f16, bf16 or f64, got \"" + name + "\"");
}


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

OpTimes load_op_times(const std::string& path) {
  core::Json j = core::load_json_file(path);
  core::JsonReader r(j, path);
  OpTimes t;
  t.path = path;
  if (r.require_string("schema") != "ptsim.op_times.v1") r.fail("schema", "\"ptsim.op_times.v1\"");
  t.source = r.require_enum("source", {"measured", "predicted"});
  t.device = r.get_string("device", "");
  r.require_non_negative("step_seconds");
  r.get_int("steps", 0);
  r.get_string("model", "");
  core::JsonReader recipe = r.child("recipe");
  t.micro_steps = recipe.require_positive_int("grad_accum");
  for (const char* k : {"precision", "micro_batch", "seq_len", "optimizer", "data_parallel", "tensor_parallel"})
    recipe.ignore(k);
  recipe.finish();
  const core::Json& ops = r.raw("ops");
  if (!ops.is_array() || ops.empty()) r.fail("ops", "a non-empty list of ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    core::JsonReader o(ops[i], path, fmt::format("ops[{}]", i));
    MeasuredOp m;
    m.id = static_cast<int>(o.require_int("id"));
    m.name = o.require_string("name");
    m.op.kind = parse_kind(o.require_string("kind"), o);
    std::string phase = o.require_enum("phase", {"forward", "recompute", "backward", "communication", "optimizer"});
    m.op.phase = phase == "forward" ? models::Phase::forward
                 : phase == "recompute" ? models::Phase::recompute
                 : phase == "backward" ? models::Phase::backward
                 : phase == "communication" ? models::Phase::communication
                                            : models::Phase::optimizer;
    m.op.layer = static_cast<int>(o.require_int("layer"));
    m.op.flops = o.require_non_negative("flops");
    m.op.bytes_read = o.require_non_negative("bytes_read");
    m.op.bytes_written = o.require_non_negative("bytes_written");
    m.op.dtype = parse_dtype(o.require_string("dtype"), o);
    const double executions = models::is_micro_step_phase(m.op.phase) ? static_cast<double>(t.micro_steps) : 1.0;
    m.seconds_per_execution = o.require_non_negative("seconds") / executions;
    o.finish();
    t.ops.push_back(m);
  }
  r.finish();
  return t;
}

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
