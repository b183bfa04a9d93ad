// runtime/exec/math/attention_math.hpp — the per-tile maths of the fused attention (OpKind::fused_attention
// and its backward; FlashAttention-2's online softmax), written once for the CPU backend and the CUDA kernels
// (PTSIM_HD): which keys a query may attend to, the running-max/running-sum update and the accumulator's
// rescale when a key tile raises the max, the log-sum-exp kept for backward, the probabilities recomputed
// from it, the backward's per-row D = rowsum(dO∘O) term and dS = P∘(dP − D), and the dropout element index
// (the unfused path's [B·nh, S, S] probabilities tensor), so fused and unfused draw the same mask.
// Not here: the tile loops (runtime/exec/cpu_fused_attention.cpp, runtime/exec/cuda/fused_attention.cu).
#pragma once
#include <cmath>  // INFINITY
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/math/norm_math.hpp"  // defines: softmax_key_allowed (the unfused softmax's mask rules)
#include "runtime/exec/math/scalar_math.hpp"

namespace ptsim::runtime::math {

// The widest head the CUDA kernels take (kernels for 64 and 128 columns; cuda/attention.hpp): here so host
// code without CUDA headers (the trainer's up-front check) can refuse a wider one.
inline constexpr int64_t kCudaFusedAttentionMaxHeadDim = 128;

// The padding-mask row of batch·head `bh`: attention_mask (B,S) + (bh / heads)·S; null without a mask.
PTSIM_HD inline const int32_t* attention_keep_row(const int32_t* keep, int64_t bh, int64_t heads, int64_t seq) {
  return keep == nullptr ? nullptr : keep + (bh / heads) * seq;
}
// Whether query i may attend to key j: the unfused softmax's rule (causal: j ≤ i; padding keys never).
PTSIM_HD inline bool attention_key_allowed(int64_t i, int64_t j, bool causal, const int32_t* keep_row) {
  return softmax_key_allowed(j, causal ? i + 1 : j + 1, keep_row);
}
// The flat index of probability (bh, i, j) in the unfused [B·nh, S, S] tensor: the dropout mask's element.
PTSIM_HD inline uint64_t attention_dropout_index(int64_t bh, int64_t i, int64_t j, int64_t seq) {
  return static_cast<uint64_t>((bh * seq + i) * seq + j);
}

// ---- forward: one query row's running state over the key tiles ----
// A tile with row maximum `tile_max` (−inf: every key of the tile masked) arrives; returns the row's new
// running max. The accumulator and running sum are then multiplied by attention_rescale(old, new).
template <class T>
PTSIM_HD inline T attention_new_max(T running_max, T tile_max) {
  return tile_max > running_max ? tile_max : running_max;
}
// exp(old − new): the factor earlier tiles' weights change by when the max rises; 0 while no key has been
// seen (old = −inf: the accumulator is still 0, and exp(−inf − (−inf)) would be NaN).
template <class T>
PTSIM_HD inline T attention_rescale(T old_max, T new_max) {
  return old_max == new_max ? T(1) : (old_max == -T(INFINITY) ? T(0) : exp_of(old_max - new_max));
}
// A score's weight against the running max (an allowed key; the max is then finite).
template <class T>
PTSIM_HD inline T attention_weight(T score, T running_max) { return exp_of(score - running_max); }
// The row's log-sum-exp after the last tile. A row with no allowed key (sum 0) stores +inf, as
// FlashAttention-2 does: its probabilities exp(s − lse) recompute to exactly 0 in backward.
template <class T>
PTSIM_HD inline T attention_lse(T running_max, T running_sum) {
  return running_sum > T(0) ? running_max + log_of(running_sum) : T(INFINITY);
}
// The context element from its accumulator: acc / sum (0 for a row with no allowed key).
template <class T>
PTSIM_HD inline T attention_output(T acc, T running_sum) {
  return running_sum > T(0) ? acc / running_sum : T(0);
}

// ---- backward ----
// The probability recomputed from the forward's log-sum-exp (an allowed key; masked keys are 0).
template <class T>
PTSIM_HD inline T attention_prob(T score, T lse) { return exp_of(score - lse); }
// dS_ij = P_ij·(dP_ij − D_i), D_i = rowsum(dO_i∘O_i) (= Σ_j P_ij·dP_ij, dropout included: the dropped
// probabilities' row dot with dO·Vᵀ is dO_i·O_i).
template <class T>
PTSIM_HD inline T attention_dscore(T p, T dp, T row_d) { return p * (dp - row_d); }

}  // namespace ptsim::runtime::math
