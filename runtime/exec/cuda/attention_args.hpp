// runtime/exec/cuda/attention_args.hpp — the fused attention launchers' arguments (attention.hpp's
// FusedAttentionArgs) from the problem an op computes (attention_problem.hpp) and its padding mask's device
// address: what the CUDA backend launches with and what the gpu suite's kernel check launches with.
// Host code only (the .cu files take FusedAttentionArgs as given).
#pragma once
#include <cstdint>

#include "runtime/exec/attention_problem.hpp"
#include "runtime/exec/cuda/attention.hpp"

namespace ptsim::runtime::cuda {

// `keep`: the device padding mask [B, S], or null when the problem has none.
inline FusedAttentionArgs fused_attention_args(const AttentionProblem& p, const int32_t* keep) {
  FusedAttentionArgs a;
  a.batch_heads = p.batch_heads;
  a.seq = p.seq;
  a.head_dim = p.head_dim;
  a.heads = p.heads;
  a.scale = p.scale;
  a.causal = p.causal;
  a.keep = keep;
  a.dropout_p = p.dropout_p;
  a.dropout_key = p.dropout_key;
  return a;
}

}  // namespace ptsim::runtime::cuda
