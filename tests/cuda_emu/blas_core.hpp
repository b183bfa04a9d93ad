// tests/cuda_emu/blas_core.hpp — the arithmetic the cuBLAS and cuBLASLt shims share (docs/cuda-emulation.md,
// "The BLAS shim"): loading and storing fp32 / fp16 / bf16 elements, an operand as op(X) sees it, and the
// one dot product every GEMM here is made of (fp32, ascending k, one fused multiply-add per step).
#pragma once
#include <library_types.h>

#include <cstdint>

namespace cuda_emu::blas {

// The element types the shims take: CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF.
bool is_supported_element(cudaDataType_t type);
int64_t element_bytes(cudaDataType_t type);  // 4 or 2; 0 for a type not supported

float load(cudaDataType_t type, const void* base, int64_t index);
// Rounds v to the type once (round to nearest even: the toolkit's __float2half_rn / __float2bfloat16).
void store(cudaDataType_t type, void* base, int64_t index, float v);

// A stored column-major matrix (batch matrix `p` begins p·stride elements after `data`) and whether the
// GEMM reads it transposed: op(X)(r, c) is X(r, c), or X(c, r) when `trans`.
struct Operand {
  const void* data = nullptr;
  cudaDataType_t type = CUDA_R_32F;
  int64_t ld = 0;
  int64_t stride = 0;
  bool trans = false;
};

// op(X)(r, c) of batch matrix p.
float element(const Operand& x, int64_t p, int64_t r, int64_t c);

// Σ_{l<k} op(A)(i, l)·op(B)(l, j) of batch matrix p, in float, l ascending, acc = fma(a, b, acc).
float dot(const Operand& a, const Operand& b, int64_t p, int64_t i, int64_t j, int64_t k);

// alpha·acc + beta·c, with c not read (not even looked at: NaN stays out) when beta is 0.
float scale(float alpha, float acc, float beta, const void* c, cudaDataType_t c_type, int64_t c_index);

}  // namespace cuda_emu::blas
