// runtime/exec/cuda/gemm.hpp — the GEMM and batched GEMM ops for the CUDA backend (gemm.cpp), fp32
// storage, fp32 compute or TF32 tensor cores when the op says tf32_math, the graph's row-major transposes
// mapped exactly as cpu_gemm does. Two paths for a GEMM with a bias: cuBLASLt's BIAS epilogue (lt_gemm.hpp,
// one pass over C) when the backend has an LtGemm, else cublasGemmEx and then the bias rows
// (launch_add_bias_rows, elementwise.hpp). Host compiler for gemm.cpp.
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "models/task_graph.hpp"  // defines: GemmAttrs
#include "runtime/exec/cuda/lt_gemm.hpp"

namespace ptsim::runtime::cuda {

// C (m,n) (+)= alpha·op(A)·op(B) (+ bias (n)), row-major, as cpu::gemm_forward. `lt` null, or no cuBLASLt
// algorithm for the shape: cuBLAS, then the bias kernel.
void gemm_forward(cublasHandle_t handle, LtGemm* lt, float* C, const float* A, const float* B, const float* bias,
                  const models::GemmAttrs& attrs, bool tf32, cudaStream_t stream);
// The same GEMM (attrs without a bias) also writing `bias_grad` (the epilogue's vector, lt_gemm_plan.hpp:
// bias_grad_epilogue) in the one cuBLASLt call. False when cuBLASLt has no algorithm: nothing was enqueued.
bool gemm_with_bias_grad(LtGemm& lt, float* C, const float* A, const float* B, float* bias_grad,
                         const models::GemmAttrs& attrs, LtEpilogue epilogue, bool tf32, cudaStream_t stream);
// attrs.batch products on contiguous (batch, ·, ·) operands; no bias.
void batched_gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B,
                          const models::GemmAttrs& attrs, bool tf32);

}  // namespace ptsim::runtime::cuda
