// runtime/exec/math/fused_dropout_math.hpp — the per-element maths of the two fused dropout ops
// (OpKind::softmax_dropout, OpKind::bias_dropout_residual and their backwards), written once for the CPU
// backend and the CUDA kernels (PTSIM_HD). Each formula is the unfused ops' formulas composed in the
// unfused order (activation_math.hpp's dropout_apply, norm_math.hpp's softmax_dscore), so where the unfused
// graph rounds the same intermediate the fused op gets the same bits (docs/executor.md, "Fused dropout ops").
// Not here: the mask (dropout_mask.hpp), row statistics and loops (the backends).
#pragma once
#include "core/host_device.hpp"
#include "runtime/exec/math/activation_math.hpp"
#include "runtime/exec/math/norm_math.hpp"

namespace ptsim::runtime::math {

// out = residual + dropout(y + bias): the unfused graph's bias add (in the GEMM), dropout, then residual add.
template <class T>
PTSIM_HD inline T bias_dropout_residual_value(T y, T bias, T residual, bool keep, T scale) {
  return residual + dropout_apply(y + bias, keep, scale);
}

// dscores_j of softmax_dropout_backward: the dropout backward dp = ddropped·keep·scale, then the softmax's
// Jacobian with the row's dot = Σ_k dp_k·p_k (the caller's reduction).
template <class T>
PTSIM_HD inline T softmax_dropout_dscore(T p, T ddropped, bool keep, T scale, T dot) {
  return softmax_dscore(p, dropout_apply(ddropped, keep, scale), dot);
}

}  // namespace ptsim::runtime::math
