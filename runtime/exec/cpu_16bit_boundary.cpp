// runtime/exec/cpu_16bit_boundary.cpp — widening and narrowing at the op boundary for 16-bit storage, on
// host memory, as the shared plan (op_boundary_plan.hpp) lays it out (see cpu_16bit_boundary.hpp).
#include "runtime/exec/cpu_16bit_boundary.hpp"

#include "runtime/exec/precision.hpp"  // defines: widen_16bit, narrow_16bit

namespace ptsim::runtime::cpu {

bool OpBoundary::prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
                         std::span<void* const> outputs) {
  const OpBoundaryPlan plan = plan_op_boundary(graph, op);
  if (plan.empty()) return false;
  // grows to the largest op, then is reused (its start is only as aligned as operator new makes it; no
  // CPU kernel assumes more)
  if (scratch_.size() < plan.scratch_floats) scratch_.resize(plan.scratch_floats);
  bind_boundary(plan, scratch_.data(), inputs, outputs, bound_);
  for (const BoundaryConversion& c : bound_.widen) widen_16bit(c.scratch, c.storage, c.elements, c.dtype);
  return true;
}

void OpBoundary::finish() {
  for (const BoundaryConversion& c : bound_.narrow) narrow_16bit(c.storage, c.scratch, c.elements, c.dtype);
  bound_.narrow.clear();
}

}  // namespace ptsim::runtime::cpu
