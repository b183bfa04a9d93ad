// runtime/exec/cuda/fused_dropout.hpp — launchers of the fused dropout kernel bias_dropout_residual
// (bias_dropout_residual.cu), forward and backward (softmax_dropout's, storage-typed, are in rows.hpp),
// enqueued on `stream`: bias_dropout_residual's float operands all of one math::Storage (elementwise_steps.hpp:
// fp32, or bf16/fp16 computed in fp32 and stored rounded once). The masks are dropout_mask.hpp's at the unfused dropout op's
// element indices and the per-element maths is math/fused_dropout_math.hpp, as the CPU kernels
// (runtime/exec/cpu_fused_dropout.hpp, the contracts these launchers share).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/cuda/elementwise_steps.hpp"  // defines: math::Storage

namespace ptsim::runtime::cuda {

// softmax_dropout's launchers (storage-typed, as the other row kernels): rows.hpp.

// out (M,N) = residual + dropout(y + bias); mask null: no dropout.
void launch_bias_dropout_residual_forward(void* out, uint8_t* mask, const void* y, const void* bias,
                                          const void* residual, int64_t M, int64_t N, double p, uint64_t key,
                                          math::Storage storage, cudaStream_t stream);
// Scratch for the backward's column sums over M rows of N columns.
size_t bias_dropout_residual_backward_scratch_bytes(int64_t M, int64_t N);
// dy = dout·mask/(1−p) (mask null: dout) and dbias (N) += its column sums (deterministic: column_sums.cuh),
// both in one pass over dout; the sums in fp32, a 16-bit dbias read first and stored once.
void launch_bias_dropout_residual_backward(void* dy, void* dbias, const void* dout, const uint8_t* mask, int64_t M,
                                           int64_t N, double p, void* scratch, math::Storage storage,
                                           cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
