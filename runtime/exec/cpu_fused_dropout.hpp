// runtime/exec/cpu_fused_dropout.hpp — the CPU kernels of the two fused dropout ops the graph builds under
// recipe.fused_softmax_dropout and recipe.fused_bias_dropout_residual (models/task_graph.hpp): one pass over
// the data where the unfused graph makes two or three. Each draws its dropout mask from the shared hash
// (dropout_mask.hpp) at the element indices the unfused dropout op uses, so a fused and an unfused run of
// the same step keep the same elements; the per-element maths is math/fused_dropout_math.hpp (shared with
// runtime/exec/cuda/softmax_dropout.cu and bias_dropout_residual.cu). Templated on float/double, both
// instantiated in cpu_fused_dropout.cpp. Argument order as cpu_backend.hpp: outputs, inputs, sizes.
// Not here: the unfused kernels (cpu_backend.hpp), the dispatch (cpu_backend.cpp).
#pragma once
#include <cstdint>

#include "runtime/exec/cpu_backend.hpp"  // defines: SoftmaxMask

namespace ptsim::runtime::cpu {

// Per row of scores (rows, cols): probs = softmax over the allowed keys (exactly softmax_forward's
// arithmetic), then dropped = probs·keep/(1−p), keep_i = dropout_keep(key, i, threshold(p)) for the flat
// index i of the element (as dropout_forward over probs), mask = keep. p ≥ 1: dropped and mask all 0.
template <class T>
void softmax_dropout_forward(T* dropped, T* probs, uint8_t* mask, const T* scores, int64_t rows, int64_t cols,
                             const SoftmaxMask& softmax_mask, double p, uint64_t key);
// dscores = probs·(dp − Σ_j dp·probs) per row with dp = ddropped·mask/(1−p) (dropout_backward, then
// softmax_backward, in one pass).
template <class T>
void softmax_dropout_backward(T* dscores, const T* ddropped, const T* probs, const uint8_t* mask, int64_t rows,
                              int64_t cols, double p);

// out (M,N) = residual + dropout(y + bias) with the mask drawn as dropout_forward over the (M,N) sum;
// mask null: no dropout (out = residual + (y + bias)).
template <class T>
void bias_dropout_residual_forward(T* out, uint8_t* mask, const T* y, const T* bias, const T* residual, int64_t M,
                                   int64_t N, double p, uint64_t key);
// dy (M,N) = dout·mask/(1−p) (mask null: dout); dbias (N) += column sums of dy, each summed over the rows in
// order, then added to dbias (as bias_grad). The residual's gradient is dout itself (no op).
template <class T>
void bias_dropout_residual_backward(T* dy, T* dbias, const T* dout, const uint8_t* mask, int64_t M, int64_t N,
                                    double p);

}  // namespace ptsim::runtime::cpu
