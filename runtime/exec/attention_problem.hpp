// runtime/exec/attention_problem.hpp — what one fused_attention / fused_attention_backward op computes,
// read once from the TaskGraph op and checked against its tensors (both backends trust these sizes):
// batch·heads independent problems over q, k, v [B·nh, S, d], scores scaled by attrs.gemm.alpha (1/√d),
// the padding mask (input attention_mask [B, S], 1 keep / 0 pad) or the causal rule, and dropout on the
// probabilities (attrs.dropout_p, the op's own rng_stream: the mask the unfused dropout op would draw).
// Not here: the kernels (cpu_fused_attention.cpp, cuda/fused_attention.cu); the per-tile maths
// (math/attention_math.hpp).
#pragma once
#include <cstdint>

#include "models/task_graph.hpp"
#include "runtime/exec/backend.hpp"  // defines: OpContext

namespace ptsim::runtime {

struct AttentionProblem {
  int64_t batch_heads = 0;  // B·nh
  int64_t seq = 0;          // S (queries = keys)
  int64_t head_dim = 0;     // d
  int64_t heads = 1;        // nh: batch b = bh / nh picks the padding-mask row
  double scale = 1;         // scores = scale·q·kᵀ
  bool causal = false;      // key j > query i masked
  bool has_mask = false;    // a padding-mask input follows the tensors
  double dropout_p = 0;     // dropout on the probabilities (0: none)
  uint64_t dropout_key = 0; // dropout_key(seed, step, micro_step, rng_stream) when dropout_p > 0
};

// The problem of a fused_attention or fused_attention_backward op in `context`. Throws std::logic_error
// naming the op when its tensors disagree with one another (shapes, the mask's [B, S], the lse's [B·nh, S],
// the gradients' shapes) or with its attributes (heads not dividing B·nh).
AttentionProblem attention_problem(const models::TaskGraph& graph, const models::Op& op, const OpContext& context);

// Index of the padding-mask input of the op (forward 3, backward 6); valid when has_mask.
inline size_t attention_mask_input(const models::Op& op) {
  return op.kind == models::OpKind::fused_attention ? 3 : 6;
}

}  // namespace ptsim::runtime
