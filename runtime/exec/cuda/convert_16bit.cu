// runtime/exec/cuda/convert_16bit.cu — fp32 ↔ bf16/fp16 conversion kernels and the 16-bit scale
// (convert_16bit.hpp): a grid-stride loop over half_bits.hpp's per-element functions. Memory-bound (6 bytes
// moved per element; 4 for the scale); no FMA or fast-math rewriting can touch them: they are integer
// operations and, for fp16 subnormals, one fp32 addition or subtraction, plus the scale's one fp32 multiply
// (nvcc keeps fp32 subnormals without -ftz, this build's default).
#include "runtime/exec/cuda/convert_16bit.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/half_bits.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void widen_kernel(float* dst, const uint16_t* src, int64_t n, bool bf16) {
  if (bf16) {
    PTSIM_GRID_STRIDE(i, n) dst[i] = math::bf16_to_float(src[i]);
  } else {
    PTSIM_GRID_STRIDE(i, n) dst[i] = math::f16_to_float(src[i]);
  }
}

__global__ void narrow_kernel(uint16_t* dst, const float* src, int64_t n, bool bf16) {
  if (bf16) {
    PTSIM_GRID_STRIDE(i, n) dst[i] = math::float_to_bf16(src[i]);
  } else {
    PTSIM_GRID_STRIDE(i, n) dst[i] = math::float_to_f16(src[i]);
  }
}

__global__ void scale_16bit_kernel(uint16_t* x, int64_t n, float factor, bool bf16) {
  if (bf16) {
    PTSIM_GRID_STRIDE(i, n) x[i] = math::float_to_bf16(math::bf16_to_float(x[i]) * factor);
  } else {
    PTSIM_GRID_STRIDE(i, n) x[i] = math::float_to_f16(math::f16_to_float(x[i]) * factor);
  }
}

}  // namespace

void launch_widen_16bit(float* dst, const uint16_t* src, size_t n, bool bf16, cudaStream_t stream) {
  if (n == 0) return;
  const auto count = static_cast<int64_t>(n);
  widen_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count, bf16);
}

void launch_narrow_16bit(uint16_t* dst, const float* src, size_t n, bool bf16, cudaStream_t stream) {
  if (n == 0) return;
  const auto count = static_cast<int64_t>(n);
  narrow_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count, bf16);
}

void launch_scale_16bit(uint16_t* x, size_t n, float factor, bool bf16, cudaStream_t stream) {
  if (n == 0) return;
  const auto count = static_cast<int64_t>(n);
  scale_16bit_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, count, factor, bf16);
}

}  // namespace ptsim::runtime::cuda
