// tests/cuda_emu/blas_core.cpp — the shared BLAS arithmetic of blas_core.hpp.
#include "blas_core.hpp"

#include <cuda_runtime_api.h>  // the emulator's, first: it keeps the toolkit's runtime API header out
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

namespace cuda_emu::blas {

bool is_supported_element(cudaDataType_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16F || type == CUDA_R_16BF;
}

int64_t element_bytes(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    default: return 0;
  }
}

float load(cudaDataType_t type, const void* base, int64_t index) {
  switch (type) {
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(base)[index]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    default: return static_cast<const float*>(base)[index];
  }
}

void store(cudaDataType_t type, void* base, int64_t index, float v) {
  switch (type) {
    case CUDA_R_16F: static_cast<__half*>(base)[index] = __float2half_rn(v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16(v); break;
    default: static_cast<float*>(base)[index] = v; break;
  }
}

float element(const Operand& x, int64_t p, int64_t r, int64_t c) {
  const int64_t index = p * x.stride + (x.trans ? c + r * x.ld : r + c * x.ld);
  return load(x.type, x.data, index);
}

float dot(const Operand& a, const Operand& b, int64_t p, int64_t i, int64_t j, int64_t k) {
  float acc = 0.0f;
  for (int64_t l = 0; l < k; ++l) acc = std::fma(element(a, p, i, l), element(b, p, l, j), acc);
  return acc;
}

float scale(float alpha, float acc, float beta, const void* c, cudaDataType_t c_type, int64_t c_index) {
  const float product = alpha * acc;
  if (beta == 0.0f) return product;
  return product + beta * load(c_type, c, c_index);
}

}  // namespace cuda_emu::blas
