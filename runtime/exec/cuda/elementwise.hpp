// runtime/exec/cuda/elementwise.hpp — launchers of the elementwise kernels: add (add.cu), dropout
// (dropout.cu), GELU and tanh (activation.cu), split/merge heads (heads.cu), the GEMM bias rows (gemm_bias.cu).
// Every launcher enqueues on `stream`. All but the bias rows take untyped device pointers whose float
// operands are all of one math::Storage (fp32, or bf16/fp16 bits: loaded exactly, computed in fp32, stored
// rounded once, elementwise_steps.hpp). Per-element maths: runtime/exec/math/activation_math.hpp, norm_math.hpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "runtime/exec/cuda/elementwise_steps.hpp"  // defines: math::Storage

namespace ptsim::runtime::cuda {

// y = Σ_i xs[i] (device pointers, added left to right in fp32 as the CPU does); no inputs: y = 0. 16-bit
// storage: at most kMaxAddInputs inputs (std::invalid_argument otherwise), the sum rounded once.
void launch_add(void* y, std::span<const void* const> xs, int64_t n, math::Storage storage, cudaStream_t stream);
// keep_i = dropout_keep(key, i, threshold(p)) (dropout_mask.hpp); y = x·keep/(1−p), mask = keep.
void launch_dropout_forward(void* y, uint8_t* mask, const void* x, int64_t n, double p, uint64_t key,
                            math::Storage storage, cudaStream_t stream);
void launch_dropout_backward(void* dx, const void* dy, const uint8_t* mask, int64_t n, double p,
                             math::Storage storage, cudaStream_t stream);
void launch_gelu_forward(void* y, const void* x, int64_t n, bool tanh_form, math::Storage storage,
                         cudaStream_t stream);
void launch_gelu_backward(void* dx, const void* dy, const void* x, int64_t n, bool tanh_form, math::Storage storage,
                          cudaStream_t stream);
void launch_tanh_forward(void* y, const void* x, int64_t n, math::Storage storage, cudaStream_t stream);
void launch_tanh_backward(void* dx, const void* dy, const void* y, int64_t n, math::Storage storage,
                          cudaStream_t stream);
// split: x (B·S, nh·d) → y (B·nh, S, d); merge: the inverse.
void launch_split_heads(void* y, const void* x, int64_t B, int64_t S, int64_t nh, int64_t d, math::Storage storage,
                        cudaStream_t stream);
void launch_merge_heads(void* y, const void* x, int64_t B, int64_t S, int64_t nh, int64_t d, math::Storage storage,
                        cudaStream_t stream);
// C (m,n) += bias (n) on every row: the GEMM's bias, after the product (gemm_bias.cu).
void launch_add_bias_rows(float* C, const float* bias, int64_t m, int64_t n, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
