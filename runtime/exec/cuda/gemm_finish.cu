// runtime/exec/cuda/gemm_finish.cu — launch_gemm_finish (gemm_finish.hpp): D = fp32 product (+ C) (+ bias),
// narrowed once to D's type with the CPU's own conversions (runtime/exec/math/half_bits.hpp: round to
// nearest even, a NaN becomes the quiet NaN with its sign), so both backends store the same 16 bits.
#include <cstdint>

#include "runtime/exec/cuda/gemm_finish.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/half_bits.hpp"

namespace ptsim::runtime::cuda {
namespace {

__device__ float load(const void* p, GemmElement t, int64_t i) {
  switch (t) {
    case GemmElement::bf16: return math::bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case GemmElement::f16: return math::f16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ void store(void* p, GemmElement t, int64_t i, float v) {
  switch (t) {
    case GemmElement::bf16: static_cast<uint16_t*>(p)[i] = math::float_to_bf16(v); break;
    case GemmElement::f16: static_cast<uint16_t*>(p)[i] = math::float_to_f16(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

__global__ void gemm_finish_kernel(void* d, GemmElement d_type, const float* product, const void* bias,
                                   GemmElement bias_type, bool accumulate, int64_t total, int64_t n) {
  PTSIM_GRID_STRIDE(i, total) {
    float v = product[i];
    if (accumulate) v += load(d, d_type, i);
    if (bias != nullptr) v += load(bias, bias_type, i % n);
    store(d, d_type, i, v);
  }
}

}  // namespace

void launch_gemm_finish(void* d, GemmElement d_type, const float* product, const void* bias, GemmElement bias_type,
                        bool accumulate, int64_t m, int64_t n, cudaStream_t stream) {
  gemm_finish_kernel<<<blocks_for(m * n), kThreads, 0, stream>>>(d, d_type, product, bias, bias_type, accumulate,
                                                                  m * n, n);
}

}  // namespace ptsim::runtime::cuda
