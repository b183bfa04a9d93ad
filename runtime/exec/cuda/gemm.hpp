// runtime/exec/cuda/gemm.hpp — the GEMM and batched GEMM ops on cuBLAS (gemm.cpp: cublasGemmEx /
// cublasGemmStridedBatchedEx, fp32 storage, fp32 compute or TF32 tensor cores when the op says
// tf32_math) with the graph's row-major transposes mapped exactly as cpu_gemm does, and the bias rows
// added after the product (launch_add_bias_rows, elementwise.hpp). Host compiler for gemm.cpp.
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "models/task_graph.hpp"  // defines: GemmAttrs

namespace ptsim::runtime::cuda {

// C (m,n) (+)= alpha·op(A)·op(B) (+ bias (n)), row-major, as cpu::gemm_forward.
void gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B, const float* bias,
                  const models::GemmAttrs& attrs, bool tf32, cudaStream_t stream);
// attrs.batch products on contiguous (batch, ·, ·) operands; no bias.
void batched_gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B,
                          const models::GemmAttrs& attrs, bool tf32);

}  // namespace ptsim::runtime::cuda
