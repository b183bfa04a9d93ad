// runtime/exec/precision.hpp — fp16/bf16 on the host: round-to-nearest-even to IEEE binary16 (fp16) or
// bfloat16, exactly what a 16-bit store on a GPU does, either in place on fp32 values (round_to_dtype: the
// emulation of 16-bit storage on a backend that keeps 16-bit tensors in fp32, which the executor applies to
// each bf16/fp16 tensor an op writes) or into 16-bit storage (narrow_16bit; widen_16bit back, exact), as
// the CPU backend stores them. Either way every value a later op reads is a 16-bit value, while the kernels
// compute (and GEMMs and reductions accumulate) in fp32. Design: docs/executor.md, "Mixed precision".
#pragma once
#include <cstddef>
#include <span>

#include "models/task_graph.hpp"  // defines: DType

namespace ptsim::runtime {

// Whether tensors of this dtype are rounded after every write (f16, bf16).
inline bool is_16bit_float(models::DType t) { return t == models::DType::f16 || t == models::DType::bf16; }

// values[i] = the nearest f16 / bf16 value (ties to even; overflow → ±inf, NaN stays NaN). No-op for other
// dtypes. f16 through Eigen::half; bf16 as Eigen::bfloat16's conversion rounds, in a vectorisable bit loop
// (tests/runtime/exec/test_16bit_storage.cpp checks both against Eigen's casts).
void round_to_dtype(models::DType dtype, std::span<float> values);

// The two conversions between fp32 and 16-bit storage, element by element through math/half_bits.hpp (the
// functions the CUDA backend's conversion kernels call, so both backends store the same bits).
// dst[i] = src[i] as fp32 (exact) for the 16-bit `dtype` (f16: IEEE binary16 bits, bf16: bfloat16 bits).
void widen_16bit(float* dst, const void* src, size_t n, models::DType dtype);
// dst[i] = src[i] rounded to the nearest 16-bit `dtype` value as round_to_dtype rounds (ties to even; fp16
// overflow → ±inf, a NaN becomes the quiet NaN with its sign), stored as its 16 bits. Both throw std::logic_error for other dtypes.
void narrow_16bit(void* dst, const float* src, size_t n, models::DType dtype);

}  // namespace ptsim::runtime
