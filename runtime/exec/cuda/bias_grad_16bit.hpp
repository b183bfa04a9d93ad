// runtime/exec/cuda/bias_grad_16bit.hpp — whether the CUDA backend runs a bias_grad op on 16-bit storage
// directly (launch_bias_grad on its storage, bias_grad.cu) instead of through the op boundary: dy and dbias both bf16,
// or both fp16 (the graph given is the one run() gets: each tensor's stored dtype). Any other mix with a
// 16-bit operand goes through the boundary. Plain C++ (no CUDA), so the cpu suite checks the rule
// (tests/runtime/exec/test_column_sum_math.cpp). docs/cuda-backend.md, "16-bit storage".
#pragma once
#include "models/task_graph.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: storage_of_16bit

namespace ptsim::runtime::cuda {

inline bool bias_grad_runs_natively(const models::TaskGraph& g, const models::Op& op) {
  if (op.kind != models::OpKind::bias_grad || op.inputs.size() != 1 || op.outputs.size() != 1) return false;
  const models::DType dy = g.tensor(op.inputs[0]).dtype, dbias = g.tensor(op.outputs[0]).dtype;
  return dy == dbias && math::storage_of_16bit(dy).has_value();
}

}  // namespace ptsim::runtime::cuda
