// sim/compute_model.cpp — roofline with size-dependent efficiency, sustained clock and launch overhead.
#include "sim/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace ptsim::sim {
using models::DType;
using models::OpKind;
using models::Phase;

namespace {

double curve(const hwprofiles::EfficiencyCurve& c, double x) {
  if (x <= 0) return c.max_efficiency;
  return c.max_efficiency * x / (x + c.half_size);
}


}  // namespace

double peak_gemm_flops_per_second(const hwprofiles::GpuProfile& gpu, DType dtype) {
  double peak = 0;
  const char* mode = "";
  switch (dtype) {
    case DType::f16: peak = gpu.peak_fp16_tensor_flops_per_second, mode = "fp16 tensor-core"; break;
    case DType::bf16: peak = gpu.peak_bf16_tensor_flops_per_second, mode = "bf16 tensor-core"; break;
    default: peak = gpu.peak_fp32_flops_per_second, mode = "fp32"; break;
  }
  if (peak <= 0)
    throw core::InfeasibleError(core::Infeasibility::precision,
                                fmt::format("GPU '{}' has no {} math (its profile's peak is 0): choose another --precision",
                                            gpu.name, mode));
  return peak;
}

OpCost op_cost(const models::Op& op, const hwprofiles::GpuProfile& gpu) {
  OpCost cost;
  if (models::is_communication(op.kind)) return cost;  // timed by the network model
  double compute_seconds = 0;
  const double clock = gpu.sustained_clock_fraction;
  if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm) {
    const auto& c = op.kind == OpKind::gemm ? gpu.gemm : gpu.batched_gemm;
    compute_seconds = op.flops / (peak_gemm_flops_per_second(gpu, op.dtype) * clock * curve(c, op.flops));
  } else if (op.flops > 0) {
    // Elementwise math runs on the SIMT units (fp32 rate; fp16 pairs are not modelled).
    compute_seconds = op.flops / (gpu.peak_fp32_flops_per_second * clock);
  }
  const double bytes = op.bytes_read + op.bytes_written;
  const double memory_seconds =
      bytes > 0 ? bytes / (gpu.memory_bandwidth_bytes_per_second * gpu.memory_efficiency * curve(gpu.memory_bound, bytes))
                : 0;
  cost.compute_bound = compute_seconds >= memory_seconds;
  cost.seconds = std::max(compute_seconds, memory_seconds) + gpu.kernel_launch_seconds;
  return cost;
}

SingleDevicePrediction predict_single_device(const models::TaskGraph& g, const hwprofiles::GpuProfile& gpu) {
  SingleDevicePrediction p;
  p.op_seconds.assign(g.ops.size(), 0);
  const double micro_steps = static_cast<double>(g.micro_steps);
  double model_flops_micro = 0;
  for (const auto& op : g.ops) {
    double t = op_cost(op, gpu).seconds;
    p.op_seconds[static_cast<size_t>(op.id)] = t;
    const bool body = models::is_micro_step_phase(op.phase);
    (body ? p.micro_step_seconds : p.tail_seconds) += t;
    p.seconds_by_kind[models::to_string(op.kind)] += body ? t * micro_steps : t;
    if (op.phase == Phase::forward || op.phase == Phase::backward) model_flops_micro += op.flops;
  }
  p.step_seconds = p.micro_step_seconds * micro_steps + p.tail_seconds;
  p.model_flops_per_step = model_flops_micro * micro_steps;
  const double sequences = static_cast<double>(g.recipe.micro_batch) * micro_steps;
  p.sequences_per_second = sequences / p.step_seconds;
  p.achieved_flops_per_second = p.model_flops_per_step / p.step_seconds;
  p.mfu = p.achieved_flops_per_second / peak_gemm_flops_per_second(gpu, models::activation_dtype(g.recipe.precision));
  return p;
}

}  // namespace ptsim::sim
