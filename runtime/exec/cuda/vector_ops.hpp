// runtime/exec/cuda/vector_ops.hpp — the step tail's vector kernels on f32 device memory (vector_ops.cu):
// scaling, the deterministic sum of squares, 16-bit store rounding. All enqueue on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace ptsim::runtime::cuda {

// x ← x·factor.
void launch_scale(float* x, size_t n, float factor, cudaStream_t stream);
// *out = Σ x² in double: chunk c = elements [c·chunk, (c+1)·chunk) (the CPU backend's chunks) is summed by
// one block into partials[c]; one thread then adds partials in chunk order. partials holds ⌈n/chunk⌉.
void launch_sum_of_squares(double* out, double* partials, const float* x, size_t n, size_t chunk,
                           cudaStream_t stream);
// x ← the nearest bf16 (bf16) or fp16 value, ties to even (the GPU's own conversions).
void launch_round_to_16bit(float* x, size_t n, bool bf16, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
