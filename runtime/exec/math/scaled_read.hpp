// runtime/exec/math/scaled_read.hpp — how the step tail reads one element of a gradient array stored as f32,
// f16 or bf16 with the loss-scale unscale applied on read: fp32(widen(x[i]) · factor), the product skipped
// when factor is 1 (it changes no value). PTSIM_HD: the CUDA optimizer and sum-of-squares kernels
// (cuda/optimizer.cu, cuda/vector_ops.cu) call it per element; the CPU passes form the same value chunk by
// chunk (cpu_16bit_vectors.cpp's fp32_chunk: widen_16bit, then one fp32 multiply), and the cpu suite checks
// that the two agree bit for bit (tests/runtime/exec/test_scaled_read.cpp).
// Not here: the storage tag and its loads (storage.hpp), the summation order (lane_sums.hpp).
#pragma once
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/exec/math/storage.hpp"  // defines: Storage, load_element

namespace ptsim::runtime::math {

// Element i of x widened and multiplied by factor in fp32 (one rounding; none when factor is 1).
PTSIM_HD inline float scaled_element(const void* x, Storage kind, int64_t i, float factor) {
  const float v = load_element(x, kind, i);
  return factor == 1.0f ? v : v * factor;
}

}  // namespace ptsim::runtime::math
