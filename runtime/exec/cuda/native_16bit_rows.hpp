// runtime/exec/cuda/native_16bit_rows.hpp — which row ops the CUDA backend runs on 16-bit storage directly
// (its storage-typed row kernels: math/row_storage.hpp) instead of through the op boundary
// (cuda_16bit_boundary.hpp): LayerNorm and its backward, softmax, softmax_dropout and their backwards, the
// cross-entropy and its backward, the embedding backward and gather_rows_backward (the same segment sums, into a
// zeroed dx). An op qualifies when its data operands all
// have one 16-bit dtype (bf16 or f16) and its other operands the dtypes the kernels take as they are (fp32
// statistics and losses, i32 ids and labels, u8 masks). Any other mix — an fp32 gamma with a bf16 x, say,
// or an f16 lse — is refused here, so it takes the boundary, which handles every mix. Plain C++ (no CUDA),
// so the cpu suite tests it. Design: docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

#include "models/task_graph.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: storage_of_16bit

namespace ptsim::runtime::cuda {

// Per operand, in order: 'D' the op's data (one 16-bit dtype for all of them), 'F' fp32, 'I' i32, 'U' u8.
struct RowOperandRoles {
  std::string_view inputs, outputs;
};

// The roles of a row op's operands; nullopt for every other op kind. An optional trailing input (the
// softmax padding mask) is checked only when present.
inline std::optional<RowOperandRoles> row_operand_roles(models::OpKind kind) {
  using models::OpKind;
  switch (kind) {
    case OpKind::layernorm: return RowOperandRoles{"DDD", "DFF"};                 // x, γ, β → y, mean, rstd
    case OpKind::layernorm_backward: return RowOperandRoles{"DDDFF", "DDD"};      // dy, x, γ, mean, rstd → dx, dγ, dβ
    case OpKind::softmax: return RowOperandRoles{"DI", "D"};                      // scores, (keep) → probs
    case OpKind::softmax_backward: return RowOperandRoles{"DD", "D"};             // dprobs, probs → dscores
    case OpKind::softmax_dropout: return RowOperandRoles{"DI", "DDU"};            // scores, (keep) → dropped, probs, mask
    case OpKind::softmax_dropout_backward: return RowOperandRoles{"DDU", "D"};    // ddropped, probs, mask → dscores
    case OpKind::cross_entropy: return RowOperandRoles{"DI", "FF"};               // logits, labels → loss, lse
    case OpKind::cross_entropy_backward: return RowOperandRoles{"FDIF", "D"};     // dloss, logits, labels, lse → dlogits
    case OpKind::embedding_backward: return RowOperandRoles{"DI", "D"};           // dy, ids → dtable +=
    case OpKind::gather_rows_backward: return RowOperandRoles{"DI", "D"};         // dy, index → dx (zeroed first)
    default: return std::nullopt;
  }
}

// The storage of `op`'s data operands when its typed row kernel takes the op as stored; nullopt when the
// op is not a row op, its data is fp32, or its operand dtypes are a mix the kernels do not take.
inline std::optional<math::Storage> native_row_storage(const models::TaskGraph& g, const models::Op& op) {
  using models::DType;
  const std::optional<RowOperandRoles> roles = row_operand_roles(op.kind);
  if (!roles || op.inputs.empty() || op.outputs.size() != roles->outputs.size() ||
      op.inputs.size() > roles->inputs.size())
    return std::nullopt;
  std::optional<DType> data;
  auto fits = [&](char role, int tensor) {
    const DType t = g.tensor(tensor).dtype;
    switch (role) {
      case 'D':
        if (!math::storage_of_16bit(t)) return false;
        if (!data) data = t;
        return t == *data;
      case 'F': return t == DType::f32;
      case 'I': return t == DType::i32;
      case 'U': return t == DType::u8;
      default: return false;
    }
  };
  // Every input up to the optional trailing one (softmax's mask) must be there.
  const size_t required = roles->inputs.back() == 'I' && (op.kind == models::OpKind::softmax ||
                                                          op.kind == models::OpKind::softmax_dropout)
                              ? roles->inputs.size() - 1
                              : roles->inputs.size();
  if (op.inputs.size() < required) return std::nullopt;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (!fits(roles->inputs[i], op.inputs[i])) return std::nullopt;
  for (size_t i = 0; i < op.outputs.size(); ++i)
    if (!fits(roles->outputs[i], op.outputs[i])) return std::nullopt;
  if (!data) return std::nullopt;
  return math::storage_of_16bit(*data);
}

// True when the CUDA backend's typed row kernel runs `op` on its 16-bit operands as stored
// (CudaBackend::runs_16bit_natively).
inline bool rows_run_16bit_natively(const models::TaskGraph& g, const models::Op& op) {
  return native_row_storage(g, op).has_value();
}

}  // namespace ptsim::runtime::cuda
