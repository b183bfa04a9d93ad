// runtime/exec/cuda/convert_16bit.hpp — the conversion kernels between fp32 and 16-bit (bf16, fp16) device
// memory that the CUDA backend's op boundary runs (cuda_16bit_boundary.hpp): widening is exact, narrowing
// rounds to nearest even; and the 16-bit scale (widen, multiply in fp32, narrow) of the step tail's
// averaging. Per element they call math/half_bits.hpp, the functions the CPU backend's
// widen_16bit / narrow_16bit call, so both backends store the same bits. Both enqueue on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ptsim::runtime::cuda {

// dst[i] = src[i] as fp32 (bf16: bfloat16 bits; otherwise IEEE binary16 bits).
void launch_widen_16bit(float* dst, const uint16_t* src, size_t n, bool bf16, cudaStream_t stream);
// dst[i] = the 16 bits of the nearest bf16 / binary16 value to src[i] (ties to even).
void launch_narrow_16bit(uint16_t* dst, const float* src, size_t n, bool bf16, cudaStream_t stream);
// x[i] = narrow(widen(x[i]) · factor): the fp32 product rounded to nearest even (Backend::scale_16bit; the
// CPU's scale_16bit_host, element for element).
void launch_scale_16bit(uint16_t* x, size_t n, float factor, bool bf16, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
