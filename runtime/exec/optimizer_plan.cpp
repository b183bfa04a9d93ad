// runtime/exec/optimizer_plan.cpp — the multi-tensor optimizer step's work list and argument checks (see the
// header).
#include "runtime/exec/optimizer_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"  // defines: is_16bit_float
#include "runtime/optim/step_scalars.hpp"

namespace ptsim::runtime {

OptimizerPlan plan_optimizer_step(std::span<const OptimizerPlanTensor> tensors, size_t chunk_elements) {
  if (chunk_elements == 0) throw std::invalid_argument("plan_optimizer_step: chunk_elements must be > 0");
  OptimizerPlan plan;
  plan.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t n = tensors[i].elements;
    OptimizerTensorRange range;
    range.elements = static_cast<int64_t>(n);
    range.first_chunk = static_cast<int64_t>(plan.chunks.size());
    range.decay = tensors[i].decay ? 1 : 0;
    for (size_t at = 0; at < n; at += chunk_elements)
      plan.chunks.push_back({static_cast<int64_t>(i), static_cast<int64_t>(at),
                             static_cast<int64_t>(std::min(n, at + chunk_elements))});
    range.chunks = static_cast<int64_t>(plan.chunks.size()) - range.first_chunk;
    plan.tensors.push_back(range);
  }
  return plan;
}

int optimizer_state_arrays(optim_math::Rule rule) { return rule == optim_math::Rule::sgd ? 1 : 2; }

void check_optimizer_tensor(const OptimizerTensor& t, int states) {
  const size_t bytes = t.weight.bytes;
  const size_t grad_element = t.grad_dtype == models::DType::f32 ? sizeof(float)
                              : is_16bit_float(t.grad_dtype) ? 2 : 0;  // f32 or 16-bit gradients only
  bool ok = bytes % sizeof(float) == 0 && grad_element > 0 && t.grad.bytes == bytes / sizeof(float) * grad_element;
  for (int k = 0; k < states; ++k) ok = ok && t.state[k].bytes == bytes;
  if (!ok)
    throw std::invalid_argument(fmt::format("optimizer_step: a tensor's spans differ in size (weight {} bytes, "
                                            "gradient {}, state {} / {})",
                                            bytes, t.grad.bytes, t.state[0].bytes, t.state[1].bytes));
}

void check_step_scalars(const DeviceSpan& scalars) {
  if (!scalars.valid() || scalars.bytes != sizeof(optim_math::StepScalars))
    throw std::invalid_argument(fmt::format("optimizer_step: the step scalars span holds {} bytes of {} buffer "
                                            "(expected one StepScalars, {} bytes)",
                                            scalars.bytes, scalars.valid() ? "a" : "no", sizeof(optim_math::StepScalars)));
}

}  // namespace ptsim::runtime
