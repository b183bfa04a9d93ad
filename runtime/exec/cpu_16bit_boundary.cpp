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
  inputs_.assign(inputs.begin(), inputs.end());
  outputs_.assign(outputs.begin(), outputs.end());
  narrowings_.clear();
  for (const BoundaryOperand& o : plan.operands) {
    float* f = scratch_.data() + o.offset_floats;
    void* storage = o.output ? outputs[o.index] : inputs[o.index];
    if (o.widen) widen_16bit(f, storage, o.elements, o.dtype);
    if (o.narrow) narrowings_.push_back({storage, f, o.elements, o.dtype});
    (o.output ? outputs_ : inputs_)[o.index] = f;
  }
  return true;
}

void OpBoundary::finish() {
  for (const Narrowing& n : narrowings_) narrow_16bit(n.storage, n.scratch, n.n, n.dtype);
  narrowings_.clear();
}

}  // namespace ptsim::runtime::cpu
