// runtime/exec/math/scaled_read.hpp — how the step tail reads one element of a gradient array stored as f32,
// f16 or bf16 with the loss-scale unscale applied on read: fp32(widen(x[i]) · factor), the product skipped
// when factor is 1 (it changes no value). PTSIM_HD: the CUDA optimizer and sum-of-squares kernels
// (cuda/optimizer.cu, cuda/vector_ops.cu) call it per element; the CPU passes form the same value chunk by
// chunk (cpu_16bit_vectors.cpp's fp32_chunk: widen_16bit, then one fp32 multiply), and the cpu suite checks
// that the two agree bit for bit (tests/runtime/exec/test_scaled_read.cpp).
// Not here: the 16-bit bit patterns (half_bits.hpp), the summation order (lane_sums.hpp).
#pragma once
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/exec/math/half_bits.hpp"

namespace ptsim::runtime::math {

// The storage of a step-tail array, as kernels take it (models::DType is host-only).
enum class TailStorage : int32_t { f32 = 0, f16 = 1, bf16 = 2 };

// Element i of x (storage `kind`) as fp32: exact for every kind.
PTSIM_HD inline float widened_element(const void* x, TailStorage kind, int64_t i) {
  if (kind == TailStorage::f32) return static_cast<const float*>(x)[i];
  const uint16_t h = static_cast<const uint16_t*>(x)[i];
  return kind == TailStorage::bf16 ? bf16_to_float(h) : f16_to_float(h);
}

// Element i of x widened and multiplied by factor in fp32 (one rounding; none when factor is 1).
PTSIM_HD inline float scaled_element(const void* x, TailStorage kind, int64_t i, float factor) {
  const float v = widened_element(x, kind, i);
  return factor == 1.0f ? v : v * factor;
}

}  // namespace ptsim::runtime::math
