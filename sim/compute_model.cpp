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

namespace {

// The math modes a GPU has (peak > 0), for error messages.
std::string supported_modes(const hwprofiles::GpuProfile& gpu) {
  std::vector<std::string> modes = {"fp32"};
  if (gpu.peak_tf32_flops_per_second > 0) modes.push_back("tf32");
  if (gpu.peak_fp16_tensor_flops_per_second > 0) modes.push_back("fp16");
  if (gpu.peak_bf16_tensor_flops_per_second > 0) modes.push_back("bf16");
  if (gpu.peak_fp8_tensor_flops_per_second > 0) modes.push_back("fp8");
  return fmt::format("{}", fmt::join(modes, ", "));
}

double require_peak(const hwprofiles::GpuProfile& gpu, double peak, const char* mode) {
  if (peak <= 0)
    throw core::InfeasibleError(core::Infeasibility::precision,
                                fmt::format("GPU '{}' has no {} math (its profile's peak is 0; it supports {}): choose "
                                            "another --precision",
                                            gpu.name, mode, supported_modes(gpu)));
  return peak;
}

}  // namespace

double peak_gemm_flops_per_second(const hwprofiles::GpuProfile& gpu, DType dtype, bool tf32_math) {
  switch (dtype) {
    case DType::f16: return require_peak(gpu, gpu.peak_fp16_tensor_flops_per_second, "fp16 tensor-core");
    case DType::bf16: return require_peak(gpu, gpu.peak_bf16_tensor_flops_per_second, "bf16 tensor-core");
    case DType::f8e4m3:
    case DType::f8e5m2: return require_peak(gpu, gpu.peak_fp8_tensor_flops_per_second, "fp8 tensor-core");
    default:
      if (tf32_math) return require_peak(gpu, gpu.peak_tf32_flops_per_second, "tf32 tensor-core");
      return require_peak(gpu, gpu.peak_fp32_flops_per_second, "fp32");
  }
}

double peak_precision_flops_per_second(const hwprofiles::GpuProfile& gpu, models::Precision precision) {
  if (precision == models::Precision::fp8) {
    // An fp8 recipe keeps bf16 GEMMs too (heads, attention): the GPU must have both.
    const double fp8 = peak_gemm_flops_per_second(gpu, DType::f8e4m3);
    peak_gemm_flops_per_second(gpu, DType::bf16);
    return fp8;
  }
  return peak_gemm_flops_per_second(gpu, models::activation_dtype(precision), precision == models::Precision::tf32);
}

OpCost op_cost(const models::Op& op, const hwprofiles::GpuProfile& gpu) {
  OpCost cost;
  if (models::is_communication(op.kind)) return cost;  // timed by the network model
  if (gpu.memory_efficiency <= 0 || gpu.gemm.max_efficiency <= 0 || gpu.batched_gemm.max_efficiency <= 0)
    throw std::logic_error("op_cost: GPU profile '" + gpu.name + "' has no software stack applied "
                           "(hwprofiles::device_profile)");
  double compute_seconds = 0;
  const double clock = gpu.sustained_clock_fraction;
  if (models::is_gemm_like(op.kind)) {
    // Fused attention is made of attention's batched GEMMs (k = head dim): their curve.
    const auto& c = op.kind == OpKind::gemm ? gpu.gemm : gpu.batched_gemm;
    compute_seconds = op.flops / (peak_gemm_flops_per_second(gpu, op.dtype, op.tf32_math) * clock * curve(c, op.flops));
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

void apply_stack_fusions(models::Recipe& recipe, const hwprofiles::StackProfile& stack) {
  recipe.fused_attention = stack.fuses_op("fused_attention");
  recipe.multi_tensor_optimizer = stack.fuses_op("multi_tensor_optimizer");
  recipe.fused_softmax_dropout = stack.fuses_op("fused_softmax_dropout");
  recipe.fused_bias_dropout_residual = stack.fuses_op("fused_bias_dropout_residual");
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
  p.mfu = p.achieved_flops_per_second / peak_precision_flops_per_second(gpu, g.recipe.precision);
  return p;
}

}  // namespace ptsim::sim
