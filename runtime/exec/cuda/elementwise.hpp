// runtime/exec/cuda/elementwise.hpp — launchers of the elementwise kernels: add (add.cu), dropout
// (dropout.cu), GELU and tanh (activation.cu), split/merge heads (heads.cu), the GEMM bias rows (gemm_bias.cu). f32 device pointers; every
// launcher enqueues on `stream`. Per-element maths: runtime/exec/math/activation_math.hpp, norm_math.hpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

namespace ptsim::runtime::cuda {

// y = Σ_i xs[i] (device pointers, added left to right as the CPU does); no inputs: y = 0.
void launch_add(float* y, std::span<const float* const> xs, int64_t n, cudaStream_t stream);
// keep_i = dropout_keep(key, i, threshold(p)) (dropout_mask.hpp); y = x·keep/(1−p), mask = keep.
void launch_dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, double p, uint64_t key,
                            cudaStream_t stream);
void launch_dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, double p,
                             cudaStream_t stream);
void launch_gelu_forward(float* y, const float* x, int64_t n, bool tanh_form, cudaStream_t stream);
void launch_gelu_backward(float* dx, const float* dy, const float* x, int64_t n, bool tanh_form,
                          cudaStream_t stream);
void launch_tanh_forward(float* y, const float* x, int64_t n, cudaStream_t stream);
void launch_tanh_backward(float* dx, const float* dy, const float* y, int64_t n, cudaStream_t stream);
// split: x (B·S, nh·d) → y (B·nh, S, d); merge: the inverse.
void launch_split_heads(float* y, const float* x, int64_t B, int64_t S, int64_t nh, int64_t d, cudaStream_t stream);
void launch_merge_heads(float* y, const float* x, int64_t B, int64_t S, int64_t nh, int64_t d, cudaStream_t stream);
// C (m,n) += bias (n) on every row: the GEMM's bias, after the product (gemm_bias.cu).
void launch_add_bias_rows(float* C, const float* bias, int64_t m, int64_t n, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
