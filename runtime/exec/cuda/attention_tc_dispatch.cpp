// runtime/exec/cuda/attention_tc_dispatch.cpp — the tensor-core fused attention's dispatch predicate (see
// the header).
#include "runtime/exec/cuda/attention_tc_dispatch.hpp"

namespace ptsim::runtime::cuda {

bool fused_attention_runs_natively(const models::TaskGraph& graph, const models::Op& op) {
  using models::DType;
  if (op.kind != models::OpKind::fused_attention || op.inputs.size() < 3 || op.outputs.size() != 2) return false;
  const models::Tensor& q = graph.tensors[static_cast<size_t>(op.inputs[0])];
  const DType t = q.dtype;
  if (t != DType::bf16 && t != DType::f16) return false;
  for (int id : {op.inputs[1], op.inputs[2], op.outputs[0]})
    if (graph.tensors[static_cast<size_t>(id)].dtype != t) return false;
  if (graph.tensors[static_cast<size_t>(op.outputs[1])].dtype != DType::f32) return false;
  return !q.shape.empty() && q.shape.back() <= kFusedAttentionMaxHeadDim;
}

Attention16 attention16_of(const models::TaskGraph& graph, const models::Op& op) {
  return graph.tensors[static_cast<size_t>(op.inputs[0])].dtype == models::DType::bf16 ? Attention16::bf16
                                                                                       : Attention16::f16;
}

}  // namespace ptsim::runtime::cuda
