// runtime/exec/precision.hpp — 16-bit storage emulated on fp32 buffers: round-to-nearest-even to IEEE
// binary16 (fp16) or bfloat16, exactly what a 16-bit store on a GPU does. The CPU executor keeps every
// float tensor in fp32 and applies this to each bf16/fp16 tensor an op writes, so every value a later op
// reads is a 16-bit value, while the kernels compute (and GEMMs and reductions accumulate) in fp32.
// Design and what it does not emulate (the memory saving): docs/executor.md, "Mixed precision".
#pragma once
#include <span>

#include "models/task_graph.hpp"  // defines: DType

namespace ptsim::runtime {

// Whether tensors of this dtype are rounded after every write (f16, bf16).
inline bool is_16bit_float(models::DType t) { return t == models::DType::f16 || t == models::DType::bf16; }

// values[i] = the nearest f16 / bf16 value (ties to even; overflow → ±inf, NaN stays NaN). No-op for other
// dtypes. Through Eigen::half / Eigen::bfloat16, whose float conversions round to nearest even.
void round_to_dtype(models::DType dtype, std::span<float> values);

}  // namespace ptsim::runtime
