// runtime/exec/cuda/attention_tc_dispatch.cpp — the tensor-core fused attention's dispatch predicate (see
// the header).
#include "runtime/exec/cuda/attention_tc_dispatch.hpp"

#include <fmt/format.h>

#include <vector>

#include "core/error.hpp"

namespace ptsim::runtime::cuda {
namespace {

const models::Tensor& tensor_of(const models::TaskGraph& g, int id) { return g.tensors[static_cast<size_t>(id)]; }

// The op's 16-bit tensors (all but lse and the mask) and its lse.
bool split_tensors(const models::Op& op, std::vector<int>& sixteen, int& lse) {
  if (op.kind == models::OpKind::fused_attention) {  // q, k, v, (mask) → context, lse
    if (op.inputs.size() < 3 || op.outputs.size() != 2) return false;
    sixteen = {op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]};
    lse = op.outputs[1];
    return true;
  }
  if (op.kind == models::OpKind::fused_attention_backward) {  // dcontext, q, k, v, context, lse, (mask) → dq, dk, dv
    if (op.inputs.size() < 6 || op.outputs.size() != 3) return false;
    sixteen = {op.inputs[0], op.inputs[1], op.inputs[2], op.inputs[3], op.inputs[4],
               op.outputs[0], op.outputs[1], op.outputs[2]};
    lse = op.inputs[5];
    return true;
  }
  return false;
}

}  // namespace

bool fused_attention_runs_natively(const models::TaskGraph& graph, const models::Op& op) {
  using models::DType;
  std::vector<int> sixteen;
  int lse = -1;
  if (!split_tensors(op, sixteen, lse)) return false;
  const DType t = tensor_of(graph, sixteen.front()).dtype;
  if (t != DType::bf16 && t != DType::f16) return false;
  for (int id : sixteen)
    if (tensor_of(graph, id).dtype != t) return false;
  if (tensor_of(graph, lse).dtype != DType::f32) return false;
  const models::Tensor& q = tensor_of(graph, sixteen[op.kind == models::OpKind::fused_attention ? 0 : 1]);
  return !q.shape.empty() && q.shape.back() <= kFusedAttentionMaxHeadDim;
}

Attention16 attention16_of(const models::TaskGraph& graph, const models::Op& op) {
  return tensor_of(graph, op.inputs[0]).dtype == models::DType::bf16 ? Attention16::bf16 : Attention16::f16;
}

void check_attention_tc_supported(Attention16 dtype, int major, int minor, const std::string& gpu_name) {
  if (dtype == Attention16::bf16 && major < 8)
    throw core::InputError(fmt::format(
        "the tensor-core fused attention (--attention-kernel tensor-core) runs bf16 on sm_80 and newer only; this "
        "GPU ({}) has compute capability {}.{}: use --precision fp16, or --attention-kernel fp32",
        gpu_name, major, minor));
}

}  // namespace ptsim::runtime::cuda
