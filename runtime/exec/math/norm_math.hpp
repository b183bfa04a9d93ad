// runtime/exec/math/norm_math.hpp — the per-element maths of LayerNorm, the scaled padding-masked
// softmax and the cross-entropy, written once for the CPU backend and the CUDA kernels (PTSIM_HD). Row
// reductions (means, maxima, sums) are the backends' own loops; these are the formulas applied per element
// once a row's statistics are known, and the mask rules that say which elements take part.
// Not here: the loops (cpu_backend.cpp, runtime/exec/cuda/*.cu).
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/math/scalar_math.hpp"

namespace ptsim::runtime::math {

// ---- LayerNorm: x̂ = (x − mean)·rstd ----
template <class T>
PTSIM_HD inline T layernorm_rstd(double variance, double eps) {
  return static_cast<T>(1.0 / sqrt_of(variance + eps));
}
template <class T>
PTSIM_HD inline T layernorm_xhat(T x, T mean, T rstd) { return (x - mean) * rstd; }
// y = x̂·gamma + beta.
template <class T>
PTSIM_HD inline T layernorm_output(T x, T mean, T rstd, T gamma, T beta) {
  return layernorm_xhat(x, mean, rstd) * gamma + beta;
}
// dx = rstd·(dy·gamma − mean(g) − x̂·mean(g·x̂)), g = dy·gamma, given the row's two means.
template <class T>
PTSIM_HD inline T layernorm_dx(T dy, T gamma, T xhat, T rstd, T g_mean, T gx_mean) {
  return rstd * (dy * gamma - g_mean - xhat * gx_mean);
}

// ---- softmax over the keys of one row of scores (B·nh, S, S) ----
// Keys [0, limit) are candidates: all cols, or j ≤ i (query i = row mod S) when causal.
PTSIM_HD inline int64_t softmax_key_limit(int64_t row, int64_t seq, int64_t cols, bool causal) {
  if (!causal) return cols;
  const int64_t i = row % seq + 1;
  return i < cols ? i : cols;
}
// The padding mask row of `row`: attention_mask + batch·S, batch = row / (heads·S); null without a mask.
PTSIM_HD inline const int32_t* softmax_keep_row(const int32_t* keep, int64_t row, int64_t heads, int64_t seq) {
  return keep == nullptr ? nullptr : keep + (row / (heads * seq)) * seq;
}
// Whether key j takes part: a candidate and not padding.
PTSIM_HD inline bool softmax_key_allowed(int64_t j, int64_t limit, const int32_t* keep_row) {
  return j < limit && (keep_row == nullptr || keep_row[j] != 0);
}
// dscores_j = p_j·(dp_j − Σ_k dp_k·p_k).
template <class T>
PTSIM_HD inline T softmax_dscore(T p, T dp, T dot) { return p * (dp - dot); }

// ---- cross-entropy over the valid classes of one row of logits ----
// Classes ≥ valid are padding; valid ≤ 0 or ≥ C means all C.
PTSIM_HD inline int64_t effective_classes(int64_t C, int64_t valid) { return valid > 0 && valid < C ? valid : C; }
// A row's label is counted iff it is not −1 (a label outside [−1, V) is an input error, raised by the caller).
PTSIM_HD inline bool label_counts(int32_t label) { return label != -1; }
// dlogit_c = scale·(exp(z_c − lse) − [c == label]) for a labelled row, scale = dloss / n_labelled.
template <class T>
PTSIM_HD inline T cross_entropy_dlogit(T z, T lse, T scale, bool is_label) {
  const T p = scale * exp_of(z - lse);
  return is_label ? p - scale : p;
}

// ---- heads: x (B·S, nh·d) ↔ y (B·nh, S, d) ----
// The flat index in x of element (b, h, s, e) of y; split copies y[i] = x[split_source(i)], merge the inverse.
PTSIM_HD inline int64_t heads_x_index(int64_t y_index, int64_t S, int64_t nh, int64_t d) {
  const int64_t e = y_index % d, s = (y_index / d) % S, bh = y_index / (d * S);
  const int64_t h = bh % nh, b = bh / nh;
  return (b * S + s) * nh * d + h * d + e;
}

}  // namespace ptsim::runtime::math
