// models/op_times.cpp — the ptsim.op_times.v1 writer and reader (see the header).
#include "models/op_times.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/checked_math.hpp"

namespace ptsim::models {
namespace {

OpKind parse_kind(const std::string& name, const core::JsonReader& r) {
  for (int k = 0; k <= static_cast<int>(OpKind::optimizer_update); ++k)
    if (name == to_string(static_cast<OpKind>(k))) return static_cast<OpKind>(k);
  r.fail("kind", "a TaskGraph op kind (docs/taskgraph.md), got \"" + name + "\"");
}

DType parse_dtype(const std::string& name, const core::JsonReader& r) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64})
    if (name == to_string(d)) return d;
  r.fail("dtype", "f32, f16, bf16 or f64, got \"" + name + "\"");
}

Phase parse_phase(core::JsonReader& o) {
  const std::string phase = o.require_enum("phase", {"forward", "recompute", "backward", "communication", "optimizer"});
  return phase == "forward"         ? Phase::forward
         : phase == "recompute"     ? Phase::recompute
         : phase == "backward"      ? Phase::backward
         : phase == "communication" ? Phase::communication
                                    : Phase::optimizer;
}

MeasuredOp parse_op(const core::Json& entry, const std::string& source, size_t index, int64_t micro_steps,
                    std::vector<bool>& seen) {
  core::JsonReader o(entry, source, fmt::format("ops[{}]", index));
  MeasuredOp m;
  // The runtime writes every op of the TaskGraph once, ids 0 … n-1: any other id is not an op of it.
  const core::IntRange ids{0, static_cast<int64_t>(seen.size()) - 1, "op ids of a TaskGraph with this many ops"};
  m.id = static_cast<int>(o.require_int("id", ids));
  if (seen[static_cast<size_t>(m.id)]) o.fail("id", fmt::format("each op id once, got {} again", m.id));
  seen[static_cast<size_t>(m.id)] = true;
  m.name = o.require_string("name");
  m.op.kind = parse_kind(o.require_string("kind"), o);
  m.op.phase = parse_phase(o);
  m.op.layer = static_cast<int>(o.require_int("layer"));
  // Bounded: a fit on an op of 1e308 bytes once returned absurd values without a word.
  m.op.flops = o.require_number("flops", core::ranges::op_flops);
  m.op.bytes_read = o.require_number("bytes_read", core::ranges::op_bytes);
  m.op.bytes_written = o.require_number("bytes_written", core::ranges::op_bytes);
  m.op.dtype = parse_dtype(o.require_string("dtype"), o);
  const double executions = is_micro_step_phase(m.op.phase) ? static_cast<double>(micro_steps) : 1.0;
  m.seconds_per_execution = o.require_non_negative("seconds") / executions;
  o.finish();
  return m;
}

// A fit needs some measured compute time: all zeros (e.g. a file written before any step ran) would make
// every ratio predicted/measured infinite.
void check_measured_time(const OpTimes& t, const core::JsonReader& r) {
  double compute = 0;
  for (const auto& m : t.ops)
    if (!is_communication(m.op.kind)) compute += m.seconds_per_execution;
  if (!(compute > 0) || !std::isfinite(compute))
    r.fail("ops", fmt::format("measured 'seconds' with a positive, finite total over the compute ops, got {}", compute));
}

}  // namespace

core::Json op_times_json(const TaskGraph& graph, std::span<const double> seconds_per_step, const OpTimesInfo& info) {
  if (seconds_per_step.size() != graph.ops.size())
    throw std::invalid_argument(fmt::format("op_times_json: {} times for {} ops", seconds_per_step.size(), graph.ops.size()));
  core::Json ops = core::Json::array();
  for (const Op& op : graph.ops)
    ops.push_back({{"id", op.id},
                   {"name", op.name},
                   {"kind", to_string(op.kind)},
                   {"phase", to_string(op.phase)},
                   {"layer", op.layer},
                   {"flops", op.flops},
                   {"bytes_read", op.bytes_read},
                   {"bytes_written", op.bytes_written},
                   {"dtype", to_string(op.dtype)},
                   {"seconds", seconds_per_step[static_cast<size_t>(op.id)]}});
  const Recipe& r = graph.recipe;
  return {{"schema", kOpTimesSchema},
          {"source", info.source},
          {"device", info.device},
          {"step_seconds", info.step_seconds},
          {"steps", info.steps},
          {"model", graph.model.name},
          {"recipe",
           {{"precision", to_string(r.precision)},
            {"micro_batch", r.micro_batch},
            {"seq_len", r.seq_len},
            {"grad_accum", r.grad_accum},
            {"optimizer", to_string(r.optimizer)},
            {"data_parallel", r.data_parallel},
            {"tensor_parallel", r.tensor_parallel}}},
          {"ops", std::move(ops)}};
}

OpTimes parse_op_times(const core::Json& document, const std::string& source) {
  core::JsonReader r(document, source);
  OpTimes t;
  t.path = source;
  if (r.require_string("schema") != kOpTimesSchema) r.fail("schema", fmt::format("\"{}\"", kOpTimesSchema));
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
  for (size_t i = 0; i < ops.size(); ++i) t.ops.push_back(parse_op(ops[i], source, i, t.micro_steps, seen));
  r.finish();
  check_measured_time(t, r);
  return t;
}

OpTimes load_op_times(const std::string& path) { return parse_op_times(core::load_json_file(path), path); }

}  // namespace ptsim::models
