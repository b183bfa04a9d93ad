// runtime/exec/cpu_16bit_vectors.hpp — the step tail's vector passes over 16-bit (or fp32) host arrays:
// conversion f32 ↔ f16/bf16 and the sum of squares with a factor applied on read, both cut into
// kChunkElements chunks over `threads` threads (cpu_parallel.hpp). The CPU backend runs them in place on its
// buffers; Backend's defaults (backend_defaults.cpp) run them on host copies of another backend's spans.
// Why a factor on read: 16-bit gradients stay as backward stored them (scaled by the loss scale), and the
// norm sees fp32(widen(g)·fp32(1/scale)), exactly the fp32 value the unscale of fp32 storage left
// (docs/executor.md, "Mixed precision").
// Not here: the element conversions themselves (precision.hpp), the lane order (math/lane_sums.hpp).
#pragma once
#include <cstddef>

#include "models/task_graph.hpp"  // defines: DType

namespace ptsim::runtime::cpu {

// Bytes of one element of a step-tail array: 4 for f32, 2 for f16/bf16. Throws std::logic_error for others.
size_t tail_element_bytes(models::DType dtype);

// dst (n elements of dst_dtype) ← src (n elements of src_dtype): narrow_16bit, widen_16bit or a copy.
void convert_host(void* dst, models::DType dst_dtype, const void* src, models::DType src_dtype, size_t n, int threads);

// x[i] ← narrow(widen(x[i])·factor) over n elements of `dtype` (f16 or bf16) at x: the fp32 product rounded
// to nearest even, chunk by chunk (each element on its own: any thread count gives the same bits).
void scale_16bit_host(void* x, size_t n, models::DType dtype, float factor, int threads);

// Σ (x[i]·factor)² over n elements of `dtype` at x: each chunk widened to fp32, multiplied by factor in fp32
// (skipped when factor is 1, which changes no value), summed in the 16-lane order (chunk_sum_of_squares),
// chunks added in order: the same double as scaling fp32 storage by factor and then summing it.
double scaled_sum_of_squares_host(const void* x, size_t n, models::DType dtype, float factor, int threads);

// The fp32 values of elements [begin, begin + n) of a gradient array of `dtype`, times factor: `grad` itself
// (offset) when it is f32 and factor is 1, else widened and multiplied into `scratch` (n floats). What the
// optimizer passes read per chunk.
const float* fp32_chunk(const void* grad, models::DType dtype, float factor, size_t begin, size_t n, float* scratch);

}  // namespace ptsim::runtime::cpu
