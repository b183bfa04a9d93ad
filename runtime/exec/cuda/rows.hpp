// runtime/exec/cuda/rows.hpp — launchers of the row-wise kernels: LayerNorm (layernorm.cu), softmax
// (softmax.cu), softmax_dropout (softmax_dropout.cu), cross-entropy (cross_entropy.cu) and the bias gradient
// (bias_grad.cu), enqueued on `stream`. Each says how much scratch (device memory the backend lends for the
// call) it needs. Per-element maths: runtime/exec/math/norm_math.hpp. All but the bias gradient take their
// data operands (void*) in `storage` (math/row_storage.hpp: fp32, or bf16/fp16 bits read and written directly,
// with the op boundary's bits: native_16bit_rows.hpp says when); float* operands are fp32 in every storage.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/cuda/device_error.hpp"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {

// Scratch for dbias/dgamma/dbeta column sums over M rows of N columns.
size_t column_sums_scratch_bytes(int64_t M, int64_t N);

// dbias (N) += column sums of dy (M,N), both of `storage`: on 16-bit storage each dy element widened, Σ in
// fp32 in column_sums' order added to the widened dbias, rounded once — the bits of the op boundary around
// the fp32 sums. scratch: column_sums_scratch_bytes(M, N).
void launch_bias_grad(void* dbias, const void* dy, int64_t M, int64_t N, math::Storage storage, void* scratch,
                      cudaStream_t stream);

// Per row of x (M,N): fp32 mean and rstd = 1/sqrt(biased var + eps); y = x̂·gamma + beta.
void launch_layernorm_forward(math::Storage storage, void* y, float* mean, float* rstd, const void* x,
                              const void* gamma, const void* beta, int64_t M, int64_t N, double eps,
                              cudaStream_t stream);
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)); dgamma += Σ dy·x̂, dbeta += Σ dy (column sums, deterministic).
// scratch: 2·column_sums_scratch_bytes(M, N).
void launch_layernorm_backward(math::Storage storage, void* dx, void* dgamma, void* dbeta, const void* dy,
                               const void* x, const void* gamma, const float* mean, const float* rstd, int64_t M,
                               int64_t N, void* scratch, cudaStream_t stream);

// probs = softmax of each row of scores (rows, cols) over its allowed keys (padding mask `keep` (B,S) or
// null, heads, seq, causal), masked keys exactly 0, all-masked rows all 0.
void launch_softmax_forward(math::Storage storage, void* probs, const void* scores, int64_t rows, int64_t cols,
                            const int32_t* keep, int64_t heads, int64_t seq, bool causal, cudaStream_t stream);
void launch_softmax_backward(math::Storage storage, void* dscores, const void* dprobs, const void* probs,
                             int64_t rows, int64_t cols, cudaStream_t stream);

// Per row of scores (rows, cols): probs = softmax over the allowed keys (padding mask `keep` (B,S) or null,
// heads, seq, causal: softmax.cu's rules); dropped = probs·keep/(1−p); mask = keep (u8). The masks are
// dropout_mask.hpp's at the unfused dropout op's element indices (the contract of cpu_fused_dropout.hpp).
void launch_softmax_dropout_forward(math::Storage storage, void* dropped, void* probs, uint8_t* mask,
                                    const void* scores, int64_t rows, int64_t cols, const int32_t* keep,
                                    int64_t heads, int64_t seq, bool causal, double p, uint64_t key,
                                    cudaStream_t stream);
// dscores = probs·(dp − Σ dp·probs) per row, dp = ddropped·mask/(1−p).
void launch_softmax_dropout_backward(math::Storage storage, void* dscores, const void* ddropped, const void* probs,
                                     const uint8_t* mask, int64_t rows, int64_t cols, double p, cudaStream_t stream);

// Scratch for cross_entropy_forward over P rows.
size_t cross_entropy_scratch_bytes(int64_t P);
// lse (P) over the valid classes; loss (1) = mean of lse − logit[label] over labelled rows (summed in row
// order in double, as the CPU). Labels outside [−1, valid) are reported through `error`.
void launch_cross_entropy_forward(math::Storage storage, float* loss, float* lse, const void* logits,
                                  const int32_t* labels, int64_t P, int64_t C, int64_t valid, void* scratch,
                                  DeviceError* error, cudaStream_t stream);
// dlogits = dloss/n_labelled·(softmax − onehot) on labelled rows and valid classes, else 0.
void launch_cross_entropy_backward(math::Storage storage, void* dlogits, const float* dloss, const void* logits,
                                   const int32_t* labels, const float* lse, int64_t P, int64_t C, int64_t valid,
                                   void* scratch, DeviceError* error, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
