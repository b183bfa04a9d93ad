// runtime/exec/cuda/native_16bit_elementwise.hpp — which elementwise ops the CUDA backend runs on their 16-bit
// storage directly (the storage-typed kernels of elementwise_steps.hpp: activation.cu, add.cu, dropout.cu,
// bias_dropout_residual.cu, heads.cu, gather_rows.cu) instead of through the op boundary: GELU, tanh,
// dropout and bias_dropout_residual (forward and backward), add (at most kMaxAddInputs inputs: one launch
// rounds the whole sum once), split/merge heads, gather_rows and embedding forward, when every float
// operand is stored as the same 16-bit type. Mixed operands (an fp32 bias or dbias beside bf16
// activations, bf16 beside fp16) are refused: such an op runs through the boundary, which widens each
// operand on its own. The masks (u8) and indices (i32) are not float operands. Plain C++ (the cpu suite
// tests it). docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <optional>

#include "models/task_graph.hpp"
#include "runtime/exec/cuda/elementwise_steps.hpp"  // defines: kMaxAddInputs
#include "runtime/exec/math/storage_dtype.hpp"  // defines: storage_of_16bit

namespace ptsim::runtime::cuda {

inline bool is_native_16bit_elementwise_kind(models::OpKind kind) {
  using models::OpKind;
  switch (kind) {
    case OpKind::gelu:
    case OpKind::gelu_backward:
    case OpKind::tanh:
    case OpKind::tanh_backward:
    case OpKind::add:
    case OpKind::dropout:
    case OpKind::dropout_backward:
    case OpKind::bias_dropout_residual:
    case OpKind::bias_dropout_residual_backward:
    case OpKind::split_heads:
    case OpKind::merge_heads:
    case OpKind::gather_rows:
    case OpKind::embedding:
      return true;
    default:
      return false;
  }
}

// The storage of `op`'s float operands (graph: dtypes as stored) when its typed kernel takes them as they
// are: one 16-bit type for all of them. nullopt: an op outside this set, fp32 storage, mixed float types,
// or an add with more inputs than one launch takes.
inline std::optional<math::Storage> native_16bit_elementwise_storage(const models::TaskGraph& g, const models::Op& op) {
  using models::DType;
  if (!is_native_16bit_elementwise_kind(op.kind)) return std::nullopt;
  if (op.kind == models::OpKind::add && op.inputs.size() > static_cast<size_t>(kMaxAddInputs)) return std::nullopt;
  std::optional<DType> common;
  bool mixed = false;
  auto visit = [&](int id) {
    const DType t = g.tensor(id).dtype;
    if (t != DType::f32 && t != DType::f16 && t != DType::bf16 && t != DType::f64) return;  // masks, indices
    if (!common) common = t;
    mixed = mixed || *common != t;
  };
  for (int id : op.inputs) visit(id);
  for (int id : op.outputs) visit(id);
  if (mixed || !common) return std::nullopt;
  return math::storage_of_16bit(*common);
}

inline bool elementwise_runs_16bit_natively(const models::TaskGraph& g, const models::Op& op) {
  return native_16bit_elementwise_storage(g, op).has_value();
}

}  // namespace ptsim::runtime::cuda
