// runtime/exec/op_shape_checks.hpp — the shape checks every backend makes before running an op whose
// kernel trusts its attributes (GEMM m/n/k/batch, head splits): tensors that disagree with them would make
// the kernel read or write past a buffer. Shared by the CPU and CUDA backends.
#pragma once
#include "models/task_graph.hpp"

namespace ptsim::runtime {

// Throws std::logic_error naming the op and tensor when A, B, C (and bias) do not have the element counts
// the op's GemmAttrs (batch for batched_gemm) give.
void check_gemm_shapes(const models::TaskGraph& graph, const models::Op& op);
// Throws std::logic_error when input 0 or output 0 of split_heads / merge_heads is not batch·seq·heads·head_dim.
void check_heads_shapes(const models::TaskGraph& graph, const models::Op& op);

}  // namespace ptsim::runtime
