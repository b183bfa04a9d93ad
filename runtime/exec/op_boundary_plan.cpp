// runtime/exec/op_boundary_plan.cpp — which operands of an op cross the 16-bit boundary and where their
// fp32 copies go (see op_boundary_plan.hpp).
#include "runtime/exec/op_boundary_plan.hpp"

#include <algorithm>

#include "runtime/exec/precision.hpp"  // defines: is_16bit_float

namespace ptsim::runtime {
namespace {

using models::OpKind;

size_t aligned(size_t n) { return (n + kBoundaryAlignmentFloats - 1) / kBoundaryAlignmentFloats * kBoundaryAlignmentFloats; }

}  // namespace

bool accumulates_into(const models::Op& op, size_t index) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::batched_gemm: return op.attrs.gemm.accumulate;
    case OpKind::embedding_backward:
    case OpKind::bias_grad: return true;
    case OpKind::layernorm_backward: return index == 1 || index == 2;  // dγ, dβ
    case OpKind::bias_dropout_residual_backward: return index == 1;    // dbias
    default: return false;
  }
}

OpBoundaryPlan plan_op_boundary(const models::TaskGraph& graph, const models::Op& op) {
  OpBoundaryPlan plan;
  auto add = [&](int id, bool output, size_t index) {
    const models::Tensor& t = graph.tensor(id);
    if (!is_16bit_float(t.dtype)) return;
    BoundaryOperand o;
    o.output = output;
    o.index = index;
    o.offset_floats = plan.scratch_floats;
    o.elements = static_cast<size_t>(t.elements());
    o.dtype = t.dtype;
    o.widen = !output || accumulates_into(op, index);
    o.narrow = output;
    plan.operands.push_back(o);
    plan.scratch_floats += aligned(o.elements);
  };
  for (size_t i = 0; i < op.inputs.size(); ++i) add(op.inputs[i], false, i);
  for (size_t i = 0; i < op.outputs.size(); ++i) add(op.outputs[i], true, i);
  return plan;
}

void bind_boundary(const OpBoundaryPlan& plan, float* scratch, std::span<void* const> inputs,
                   std::span<void* const> outputs, BoundBoundary& bound) {
  bound.inputs.assign(inputs.begin(), inputs.end());
  bound.outputs.assign(outputs.begin(), outputs.end());
  bound.widen.clear();
  bound.narrow.clear();
  for (const BoundaryOperand& o : plan.operands) {
    float* copy = scratch + o.offset_floats;
    void* storage = o.output ? outputs[o.index] : inputs[o.index];
    if (o.widen) bound.widen.push_back({storage, copy, o.elements, o.dtype});
    if (o.narrow) bound.narrow.push_back({storage, copy, o.elements, o.dtype});
    (o.output ? bound.outputs : bound.inputs)[o.index] = copy;
  }
}

size_t op_scratch_floats(const models::TaskGraph& graph, const models::Op& op) {
  size_t need = 0;
  auto add = [&](int id) {
    const models::Tensor& t = graph.tensor(id);
    if (is_16bit_float(t.dtype)) need += aligned(static_cast<size_t>(t.elements()));
  };
  for (int id : op.inputs) add(id);
  for (int id : op.outputs) add(id);
  return need;
}

size_t boundary_scratch_bytes(const models::TaskGraph& graph) {
  size_t most = 0;
  // Only the micro-step ops go to Backend::run; the step tail's all-reduce, norm and optimizer ops read the
  // 16-bit gradients through their own operations (convert, scaled_sum_of_squares, optimizer_step).
  for (const models::Op& op : graph.ops)
    if (models::is_micro_step_phase(op.phase)) most = std::max(most, op_scratch_floats(graph, op));
  return most * sizeof(float);
}

}  // namespace ptsim::runtime
