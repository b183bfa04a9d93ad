// runtime/exec/cuda/gemm.hpp — the GEMM and batched GEMM ops for the CUDA backend (gemm.cpp), fp32
// storage, fp32 compute or TF32 tensor cores when the op says tf32_math, the graph's row-major transposes
// mapped exactly as cpu_gemm does. Two paths for a GEMM with a bias: cuBLASLt's BIAS epilogue (lt_gemm.hpp,
// one pass over C) when the backend has an LtGemm, else cublasGemmEx and then the bias rows
// (launch_add_bias_rows, elementwise.hpp). Host compiler for gemm.cpp.
// 16-bit GEMMs (A/B bf16 or fp16, C/D that type or fp32, fp32 accumulation; which ones: gemm_types.hpp):
// the bias in cuBLASLt's epilogue when its type is D's, else the product into fp32 scratch and
// launch_gemm_finish (gemm_finish.hpp) adding C and the bias and rounding D once; no bias: cublasGemmEx.
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

#include "models/task_graph.hpp"  // defines: GemmAttrs
#include "runtime/exec/cuda/gemm_types.hpp"
#include "runtime/exec/cuda/lt_gemm.hpp"

namespace ptsim::runtime::cuda {

// C (m,n) (+)= alpha·op(A)·op(B) (+ bias (n)), row-major, as cpu::gemm_forward. `lt` null, or no cuBLASLt
// algorithm for the shape: cuBLAS, then the bias kernel.
void gemm_forward(cublasHandle_t handle, LtGemm* lt, float* C, const float* A, const float* B, const float* bias,
                  const models::GemmAttrs& attrs, bool tf32, cudaStream_t stream);
// The same GEMM (attrs without a bias) also writing `bias_grad` (the epilogue's vector, lt_gemm_plan.hpp:
// bias_grad_epilogue) in the one cuBLASLt call. False when cuBLASLt has no algorithm: nothing was enqueued.
// `types`: A/B 16-bit with C fp32 (the bias gradient is written in C's type, cublasLt.h) or all fp32.
bool gemm_with_bias_grad(LtGemm& lt, void* C, const void* A, const void* B, float* bias_grad,
                         const models::GemmAttrs& attrs, LtEpilogue epilogue, bool tf32, cudaStream_t stream,
                         const GemmTypes& types = {});
// attrs.batch products on contiguous (batch, ·, ·) operands; no bias.
void batched_gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B,
                          const models::GemmAttrs& attrs, bool tf32);

// The device pointers of one 16-bit GEMM, each of its GemmTypes type (bias null without one).
struct GemmOperands16 {
  void* c = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;
};
// Device scratch of at least `bytes`, valid until the next request (CudaDevice::scratch).
using ScratchFn = std::function<void*(size_t bytes)>;
// C (m,n) (+)= alpha·op(A)·op(B) (+ bias (n)) on 16-bit operands, `types` from native_16bit_gemm_types.
void gemm_forward_16bit(cublasHandle_t handle, LtGemm* lt, const GemmOperands16& ops, const GemmTypes& types,
                        const models::GemmAttrs& attrs, const ScratchFn& scratch, cudaStream_t stream);
// attrs.batch products on contiguous 16-bit operands (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F).
void batched_gemm_forward_16bit(cublasHandle_t handle, const GemmOperands16& ops, const GemmTypes& types,
                                const models::GemmAttrs& attrs);

}  // namespace ptsim::runtime::cuda
