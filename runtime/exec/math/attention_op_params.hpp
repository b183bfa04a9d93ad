// runtime/exec/math/attention_op_params.hpp — the parameters a fused attention kernel is launched with (one
// op, every batch·head problem), built once from the op's description: the fp32 kernels'
// (cuda/fused_attention.cu) and the tensor-core kernels' (cuda/fused_attention_tc.cu, and their host
// emulation, math/attention_tc_host_mma.hpp) alike. The dropout's threshold and scale are dropout_mask.hpp's
// and activation_math.hpp's, so every backend drops the same elements by the same factor.
#pragma once
#include <cstdint>

#include "runtime/exec/dropout_mask.hpp"          // defines: dropout_threshold
#include "runtime/exec/math/activation_math.hpp"  // defines: dropout_scale

namespace ptsim::runtime::math {

struct AttentionOpParams {
  int64_t seq = 0, head_dim = 0, heads = 1;
  float scale = 1;
  bool causal = false;
  const int32_t* keep = nullptr;  // the padding mask [B, S], or null
  bool dropout = false;
  uint64_t key = 0, threshold = 0;
  float drop_scale = 1;
};

// From any description with seq, head_dim, heads, scale, causal, dropout_p and dropout_key
// (cuda::FusedAttentionArgs, runtime::AttentionProblem) and the padding mask's address `keep` (or null).
// heads ≤ 0 counts as 1 head; dropout_p ≥ 1 drops everything.
template <class Description>
AttentionOpParams attention_op_params(const Description& a, const int32_t* keep) {
  AttentionOpParams o;
  o.seq = a.seq;
  o.head_dim = a.head_dim;
  o.heads = a.heads > 0 ? a.heads : 1;
  o.scale = static_cast<float>(a.scale);
  o.causal = a.causal;
  o.keep = keep;
  o.dropout = a.dropout_p > 0;
  o.key = a.dropout_key;
  o.threshold = dropout_threshold(a.dropout_p < 1 ? a.dropout_p : 1.0);
  o.drop_scale = dropout_scale<float>(a.dropout_p);
  return o;
}

}  // namespace ptsim::runtime::math
