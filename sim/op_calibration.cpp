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

void sum_fit_totals(const std::vector<OpTimes>& fit, const hwprofiles::GpuProfile& base,
                    const hwprofiles::GpuProfile& after, OpFit& out) {
  for (const auto& t : fit) {
    Totals b = totals(t, base, &out.fit_by_kind, false);
    Totals a = totals(t, after, &out.fit_by_kind, true);
    out.fit_measured_seconds += b.measured;
    out.fit_predicted_before += b.predicted;
    out.fit_predicted_after += a.predicted;
  }
}

// A fit needs some measured compute time: all zeros (e.g. a file written before any step ran) would make
// every ratio predicted/measured infinite.
void check_measured_time(const OpTimes& t, const core::JsonReader& r) {
  double compute = 0;
  for (const auto& m : t.ops)
    if (!models::is_communication(m.op.kind)) compute += m.seconds_per_execution;
  if (!(compute > 0) || !std::isfinite(compute))
    r.fail("ops", fmt::format("measured 'seconds' with a positive, finite total over the compute ops, got {}", compute));
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
  t.micro_steps = recipe.require_int("grad_accum", core::ranges::grad_accum);
  for (const char* k : {"precision", "micro_batch", "seq_len", "optimizer", "data_parallel", "tensor_parallel"})
    recipe.ignore(k);
  recipe.finish();
  const core::Json& ops = r.raw("ops");
  if (!ops.is_array() || ops.empty()) r.fail("ops", "a non-empty list of ops");
  std::vector<bool> seen(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    core::JsonReader o(ops[i], path, fmt::format("ops[{}]", i));
    MeasuredOp m;
    // The runtime writes every op of the TaskGraph once, ids 0 … n-1: any other id is not an op of it.
    const core::IntRange ids{0, static_cast<int64_t>(ops.size()) - 1, "op ids of a TaskGraph with this many ops"};
    m.id = static_cast<int>(o.require_int("id", ids));
    if (seen[static_cast<size_t>(m.id)]) o.fail("id", fmt::format("each op id once, got {} again", m.id));
    seen[static_cast<size_t>(m.id)] = true;
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
  check_measured_time(t, r);
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
  const std::map<std::string, double> prior = values;
  values = minimize_coordinatewise(values, objective, 1.0);
  OpFit out;
  out.values = values;
  sum_fit_totals(fit, base, profile_with(values), out);
  // The objective weighs per-op errors; it can leave the step total (what predictions are used for) worse
  // than before, e.g. -14% -> +17%. Never hand back parameters that do that: keep the prior ones.
  const double error_before = std::abs(out.fit_predicted_before / out.fit_measured_seconds - 1);
  const double error_after = std::abs(out.fit_predicted_after / out.fit_measured_seconds - 1);
  if (error_after > error_before) {
    out.kept_prior = true;
    out.rejected_values = values;
    out.rejected_predicted_after = out.fit_predicted_after;
    out.values = prior;
    out.fit_by_kind.clear();
    out.fit_measured_seconds = out.fit_predicted_before = out.fit_predicted_after = 0;
    sum_fit_totals(fit, base, profile_with(prior), out);
  }
  const hwprofiles::GpuProfile after = profile_with(out.values);
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
