// runtime/exec/cuda/vector_ops.hpp — the step tail's vector kernels on f32 device memory (vector_ops.cu):
// scaling, the deterministic sum of squares (also over 16-bit arrays with a factor applied on read), 16-bit
// store rounding. All enqueue on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "runtime/exec/math/scaled_read.hpp"  // defines: Storage

namespace ptsim::runtime::cuda {

// x ← x·factor.
void launch_scale(float* x, size_t n, float factor, cudaStream_t stream);
// *out = Σ x² in double: chunk c = elements [c·chunk, (c+1)·chunk) (the CPU backend's chunks) is summed by
// one block into partials[c]; one thread then adds partials in chunk order. partials holds ⌈n/chunk⌉.
void launch_sum_of_squares(double* out, double* partials, const float* x, size_t n, size_t chunk,
                           cudaStream_t stream);
// The same sum over math::scaled_element(x, kind, i, factor) (f32/f16/bf16 widened, times factor in fp32):
// the CPU's scaled_sum_of_squares_host bits (cpu_16bit_vectors.hpp).
void launch_scaled_sum_of_squares(double* out, double* partials, const void* x, math::Storage kind, float factor,
                                  size_t n, size_t chunk, cudaStream_t stream);
// *sum = *sum + (that sum), *sum a double in device memory: the step tail's Σg² over several arrays, added
// in the host's order without a copy back (f32 with factor 1 reads as launch_sum_of_squares does).
void launch_add_scaled_sum_of_squares(double* sum, double* partials, const void* x, math::Storage kind, float factor,
                                      size_t n, size_t chunk, cudaStream_t stream);
// The same with the factor read from device memory (one float): the values of the call above with *factor
// (an f32 array with factor 1 reads the same values either way: x·1 = x).
void launch_add_scaled_sum_of_squares_by(double* sum, double* partials, const void* x, math::Storage kind,
                                         const float* factor, size_t n, size_t chunk, cudaStream_t stream);
// x ← the nearest bf16 (bf16) or fp16 value, ties to even (the GPU's own conversions).
void launch_round_to_16bit(float* x, size_t n, bool bf16, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
