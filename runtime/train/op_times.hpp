// runtime/train/op_times.hpp — per-op times of one optimizer step in the schema the simulator's
// per-op prediction also uses ("ptsim.op_times.v1", docs/training.md), so a measured step and a
// predicted step of the same TaskGraph can be compared op by op (same op ids and names).
// Not here: the measurement itself (Executor::op_seconds) or the prediction (sim/).
#pragma once
#include <span>
#include <string>

#include "core/json_reader.hpp"       // defines: Json
#include "models/task_graph.hpp"

namespace ptsim::runtime {

inline constexpr const char* kOpTimesSchema = "ptsim.op_times.v1";

struct OpTimesInfo {
  std::string source = "measured";    // "measured" | "predicted"
  std::string device;                 // e.g. "cpu: AMD EPYC 7B13 (2 threads)" or a hardware profile name
  double step_seconds = 0;            // wall time of one optimizer step (not the sum of the ops)
  int64_t steps = 0;                  // optimizer steps the numbers are averaged over (0: not applicable)
};

// {"schema", "source", "device", "step_seconds", "steps", "model", "recipe": {...},
//  "ops": [{"id", "name", "kind", "phase", "layer", "flops", "bytes_read", "bytes_written", "dtype",
//           "seconds"}, ...]}  (FLOPs and bytes per execution, so a calibration needs only this file) with one entry per graph op, in op
// order; `seconds_per_step[i]` is op i's time per optimizer step (body ops: summed over the micro-steps).
core::Json op_times_json(const models::TaskGraph& graph, std::span<const double> seconds_per_step,
                         const OpTimesInfo& info);

// "cpu: <model name from /proc/cpuinfo> (<threads> threads)"; "cpu" when unknown.
std::string cpu_device_description(int threads);

}  // namespace ptsim::runtime
