// models/op_times.hpp — the "ptsim.op_times.v1" document: per-op seconds of one optimizer step of a
// TaskGraph, measured (`ptsim train --op-times`) or predicted (`ptsim predict --gpu --op-times`), so the
// two can be compared op by op (same op ids and names) and a device profile calibrated from a measurement
// (sim/op_calibration.hpp). The one home of the schema: its writer and its strict reader (docs/training.md).
// Not here: the measurement (runtime::Executor::op_seconds), the prediction (sim/), the fit (sim/).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/json_reader.hpp"       // defines: Json
#include "models/task_graph.hpp"

namespace ptsim::models {

inline constexpr const char* kOpTimesSchema = "ptsim.op_times.v1";

struct OpTimesInfo {
  std::string source = "measured";    // "measured" | "predicted"
  std::string device;                 // e.g. "cpu: AMD EPYC 7B13 (2 threads)" or a hardware profile name
  double step_seconds = 0;            // wall time of one optimizer step (not the sum of the ops)
  int64_t steps = 0;                  // optimizer steps the numbers are averaged over (0: not applicable)
};

// {"schema", "source", "device", "step_seconds", "steps", "model", "recipe": {...},
//  "ops": [{"id", "name", "kind", "phase", "layer", "flops", "bytes_read", "bytes_written", "dtype",
//           "seconds"}, ...]}  (FLOPs and bytes per execution, so a calibration needs only this file) with one
// entry per graph op, in op order; `seconds_per_step[i]` is op i's time per optimizer step (body ops: summed
// over the micro-steps).
core::Json op_times_json(const TaskGraph& graph, std::span<const double> seconds_per_step, const OpTimesInfo& info);

// One op of a read document: what its cost depends on (kind, phase, dtype, FLOPs and bytes of one
// execution) and its measured time per execution (seconds per step ÷ micro-steps for body ops).
struct MeasuredOp {
  int id = -1;
  std::string name;
  Op op;
  double seconds_per_execution = 0;
};

struct OpTimes {
  std::string path;
  std::string source;              // measured | predicted
  std::string device;
  int64_t micro_steps = 1;         // recipe.grad_accum
  std::vector<MeasuredOp> ops;
};

// Strict reader (core::InputError naming the file and the field): every field of the schema, nothing else.
OpTimes parse_op_times(const core::Json& document, const std::string& source);
OpTimes load_op_times(const std::string& path);

}  // namespace ptsim::models
