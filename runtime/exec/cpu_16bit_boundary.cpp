// runtime/exec/cpu_16bit_boundary.cpp — widening and narrowing at the op boundary for 16-bit storage (see
// cpu_16bit_boundary.hpp).
#include "runtime/exec/cpu_16bit_boundary.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/exec/precision.hpp"  // defines: is_16bit_float, widen_16bit, narrow_16bit

namespace ptsim::runtime::cpu {
namespace {

using models::OpKind;

// floats: each operand starts a multiple of 64 bytes after the scratch's start (the scratch itself is a
// std::vector's, so its start is only as aligned as operator new makes it; no kernel assumes more)
constexpr size_t kScratchAlignment = 16;
size_t aligned(size_t n) { return (n + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment; }

}  // namespace

bool accumulates_into(const models::Op& op, size_t index) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::batched_gemm: return op.attrs.gemm.accumulate;
    case OpKind::embedding_backward:
    case OpKind::bias_grad: return true;
    case OpKind::layernorm_backward: return index == 1 || index == 2;           // dγ, dβ
    case OpKind::bias_dropout_residual_backward: return index == 1;             // dbias
    default: return false;
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
  for (const models::Op& op : graph.ops) most = std::max(most, op_scratch_floats(graph, op));
  return most * sizeof(float);
}

bool OpBoundary::prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
                         std::span<void* const> outputs) {
  const size_t need = op_scratch_floats(graph, op);
  if (need == 0) return false;
  if (scratch_.size() < need) scratch_.resize(need);  // grows to the largest op, then is reused
  inputs_.assign(inputs.begin(), inputs.end());
  outputs_.assign(outputs.begin(), outputs.end());
  narrowings_.clear();
  size_t at = 0;
  auto take = [&](int id) {
    float* p = scratch_.data() + at;
    at += aligned(static_cast<size_t>(graph.tensor(id).elements()));
    return p;
  };
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const models::Tensor& t = graph.tensor(op.inputs[i]);
    if (!is_16bit_float(t.dtype)) continue;
    float* f = take(t.id);
    widen_16bit(f, inputs[i], static_cast<size_t>(t.elements()), t.dtype);
    inputs_[i] = f;
  }
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const models::Tensor& t = graph.tensor(op.outputs[i]);
    if (!is_16bit_float(t.dtype)) continue;
    float* f = take(t.id);
    if (accumulates_into(op, i)) widen_16bit(f, outputs[i], static_cast<size_t>(t.elements()), t.dtype);
    outputs_[i] = f;
    narrowings_.push_back({outputs[i], f, static_cast<size_t>(t.elements()), t.dtype});
  }
  return true;
}

void OpBoundary::finish() {
  for (const Narrowing& n : narrowings_) narrow_16bit(n.storage, n.scratch, n.n, n.dtype);
  narrowings_.clear();
}

}  // namespace ptsim::runtime::cpu
