// runtime/exec/cuda/fused_dropout.hpp — launchers of the fused dropout kernels: softmax_dropout
// (softmax_dropout.cu) and bias_dropout_residual (bias_dropout_residual.cu), forward and backward, enqueued
// on `stream`: f32 device pointers, except bias_dropout_residual's float operands, all of one ElementStorage
// (elementwise_steps.hpp: fp32, or bf16/fp16 computed in fp32 and stored rounded once). The masks are dropout_mask.hpp's at the unfused dropout op's
// element indices and the per-element maths is math/fused_dropout_math.hpp, as the CPU kernels
// (runtime/exec/cpu_fused_dropout.hpp, the contracts these launchers share).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/cuda/elementwise_steps.hpp"  // defines: ElementStorage

namespace ptsim::runtime::cuda {

// Per row of scores (rows, cols): probs = softmax over the allowed keys (padding mask `keep` (B,S) or null,
// heads, seq, causal: softmax.cu's rules); dropped = probs·keep/(1−p); mask = keep.
void launch_softmax_dropout_forward(float* dropped, float* probs, uint8_t* mask, const float* scores, int64_t rows,
                                    int64_t cols, const int32_t* keep, int64_t heads, int64_t seq, bool causal,
                                    double p, uint64_t key, cudaStream_t stream);
// dscores = probs·(dp − Σ dp·probs) per row, dp = ddropped·mask/(1−p).
void launch_softmax_dropout_backward(float* dscores, const float* ddropped, const float* probs, const uint8_t* mask,
                                     int64_t rows, int64_t cols, double p, cudaStream_t stream);

// out (M,N) = residual + dropout(y + bias); mask null: no dropout.
void launch_bias_dropout_residual_forward(void* out, uint8_t* mask, const void* y, const void* bias,
                                          const void* residual, int64_t M, int64_t N, double p, uint64_t key,
                                          ElementStorage storage, cudaStream_t stream);
// Scratch for the backward's column sums over M rows of N columns.
size_t bias_dropout_residual_backward_scratch_bytes(int64_t M, int64_t N);
// dy = dout·mask/(1−p) (mask null: dout) and dbias (N) += its column sums (deterministic: column_sums.cuh),
// both in one pass over dout; the sums in fp32, a 16-bit dbias read first and stored once.
void launch_bias_dropout_residual_backward(void* dy, void* dbias, const void* dout, const uint8_t* mask, int64_t M,
                                           int64_t N, double p, void* scratch, ElementStorage storage,
                                           cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
