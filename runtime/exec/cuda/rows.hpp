// runtime/exec/cuda/rows.hpp — launchers of the row-wise kernels: LayerNorm (layernorm.cu), softmax
// (softmax.cu), cross-entropy (cross_entropy.cu) and the bias gradient (bias_grad.cu). f32 device
// pointers, enqueued on `stream`. Each says how much scratch (device memory the backend lends for the
// call) it needs. Per-element maths: runtime/exec/math/norm_math.hpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/cuda/device_error.hpp"

namespace ptsim::runtime::cuda {

// Scratch for dbias/dgamma/dbeta column sums over M rows of N columns.
size_t column_sums_scratch_bytes(int64_t M, int64_t N);

// dbias (N) += column sums of dy (M,N).
void launch_bias_grad(float* dbias, const float* dy, int64_t M, int64_t N, void* scratch, cudaStream_t stream);
// The same on 16-bit storage (bf16 when `bf16`, else binary16 bits; dy and dbias of that one type): each dy
// element widened, Σ in fp32 in column_sums' order added to the widened dbias, rounded once — the bits of the
// op boundary around launch_bias_grad. scratch: column_sums_scratch_bytes(M, N).
void launch_bias_grad_16bit(uint16_t* dbias, const uint16_t* dy, int64_t M, int64_t N, bool bf16, void* scratch,
                            cudaStream_t stream);

// Per row of x (M,N): fp32 mean and rstd = 1/sqrt(biased var + eps); y = x̂·gamma + beta.
void launch_layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                              const float* beta, int64_t M, int64_t N, double eps, cudaStream_t stream);
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)); dgamma += Σ dy·x̂, dbeta += Σ dy (column sums, deterministic).
// scratch: 2·column_sums_scratch_bytes(M, N).
void launch_layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                               const float* gamma, const float* mean, const float* rstd, int64_t M, int64_t N,
                               void* scratch, cudaStream_t stream);

// probs = softmax of each row of scores (rows, cols) over its allowed keys (padding mask `keep` (B,S) or
// null, heads, seq, causal), masked keys exactly 0, all-masked rows all 0.
void launch_softmax_forward(float* probs, const float* scores, int64_t rows, int64_t cols, const int32_t* keep,
                            int64_t heads, int64_t seq, bool causal, cudaStream_t stream);
void launch_softmax_backward(float* dscores, const float* dprobs, const float* probs, int64_t rows, int64_t cols,
                             cudaStream_t stream);

// Scratch for cross_entropy_forward over P rows.
size_t cross_entropy_scratch_bytes(int64_t P);
// lse (P) over the valid classes; loss (1) = mean of lse − logit[label] over labelled rows (summed in row
// order in double, as the CPU). Labels outside [−1, valid) are reported through `error`.
void launch_cross_entropy_forward(float* loss, float* lse, const float* logits, const int32_t* labels, int64_t P,
                                  int64_t C, int64_t valid, void* scratch, DeviceError* error, cudaStream_t stream);
// dlogits = dloss/n_labelled·(softmax − onehot) on labelled rows and valid classes, else 0.
void launch_cross_entropy_backward(float* dlogits, const float* dloss, const float* logits, const int32_t* labels,
                                   const float* lse, int64_t P, int64_t C, int64_t valid, void* scratch,
                                   DeviceError* error, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
