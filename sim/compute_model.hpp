// sim/compute_model.hpp — how long one op takes on one GPU (docs/compute-model.md).
//   time = max(FLOPs / (peak(dtype) · sustained_clock · eff_kind(FLOPs)),
//              bytes / (bandwidth · memory_efficiency · eff_mem(bytes))) + launch overhead
// eff(x) = max_efficiency · x / (x + half_size): small GEMMs and small kernels lose efficiency.
// Communication ops are not timed here (sim/collectives.hpp); they return 0.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/task_graph.hpp"

namespace ptsim::sim {

struct OpCost {
  double seconds = 0;
  bool compute_bound = false;
};

// Peak FLOP/s for GEMMs in this dtype (tensor cores for fp16/bf16, and for f32 with tf32_math; fp32 SIMT
// otherwise), at boost clock. Throws core::InfeasibleError (an InputError) naming the GPU and the modes it
// has if it lacks the precision (e.g. bf16 on V100/T4, tf32 before Ampere).
double peak_gemm_flops_per_second(const hwprofiles::GpuProfile& gpu, models::DType dtype, bool tf32_math = false);
// The GEMM peak of a recipe's precision (the MFU denominator; the fp8 peak for fp8, docs/precisions.md).
double peak_precision_flops_per_second(const hwprofiles::GpuProfile& gpu, models::Precision precision);
OpCost op_cost(const models::Op& op, const hwprofiles::GpuProfile& gpu);

struct SingleDevicePrediction {
  double step_seconds = 0;          // one optimizer step: body × micro_steps + tail
  double micro_step_seconds = 0;    // forward + recompute + backward of one micro-step
  double tail_seconds = 0;          // optimizer (and local comm ops, which cost 0 here)
  double model_flops_per_step = 0;  // forward + backward FLOPs (no recomputation), all micro-steps
  double sequences_per_second = 0;
  double achieved_flops_per_second = 0;        // model FLOPs / step time
  double mfu = 0;                   // achieved / peak for the recipe's precision
  std::map<std::string, double> seconds_by_kind;  // per step
  std::vector<double> op_seconds;   // per op id (body ops: one execution)
};

// Sets the recipe's fusion flags from the stack's fusion list (what the stack would run).
void apply_stack_fusions(models::Recipe& recipe, const hwprofiles::StackProfile& stack);

SingleDevicePrediction predict_single_device(const models::TaskGraph& graph, const hwprofiles::GpuProfile& gpu);

}  // namespace ptsim::sim
