// tests/cuda_emu/cublas_emulated.cpp — the cuBLAS handle and GEMMs on the CPU (include/cublas_api.h,
// docs/cuda-emulation.md "The BLAS shim"): cublasGemmEx and cublasGemmStridedBatchedEx as NVIDIA's cuBLAS
// documentation defines them, for fp32 / fp16 / bf16 operands with fp32 accumulation and fp32 alpha, beta
// on the host. Work runs on the calling thread when it is enqueued (as every emulated stream does).
#include <cublas_v2.h>

#include <cstdint>

#include "blas_core.hpp"

struct cublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace {

using cuda_emu::blas::Operand;

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// The rows a stored operand must have: op(X) is rows×cols, so X is that or its transpose.
int64_t stored_rows(cublasOperation_t op, int64_t rows, int64_t cols) { return op == CUBLAS_OP_N ? rows : cols; }

// cublasGemmEx's type table for the compute types the shim has: 32F with A = B of 32F, 16F or 16BF and C of
// A's type or 32F; 32F_FAST_TF32 with A, B, C all 32F.
bool types_supported(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute) {
  if (a != b || !cuda_emu::blas::is_supported_element(a)) return false;
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) return a == CUDA_R_32F && c == CUDA_R_32F;
  if (compute != CUBLAS_COMPUTE_32F) return false;
  return c == a || c == CUDA_R_32F;
}

struct GemmArgs {
  cublasOperation_t transa, transb;
  int64_t m, n, k;
  const float *alpha, *beta;
  Operand a, b;
  void* c;
  cudaDataType_t c_type;
  int64_t ldc, stride_c, batch;
};

// The documented argument checks: sizes ≥ 0, each leading dimension ≥ max(1, the rows it holds).
cublasStatus_t check(const GemmArgs& g) {
  if (!valid_op(g.transa) || !valid_op(g.transb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const auto at_least = [](int64_t ld, int64_t rows) { return ld >= (rows > 1 ? rows : 1); };
  if (!at_least(g.a.ld, stored_rows(g.transa, g.m, g.k)) || !at_least(g.b.ld, stored_rows(g.transb, g.k, g.n)) ||
      !at_least(g.ldc, g.m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (g.alpha == nullptr || g.beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

void run(const GemmArgs& g) {
  for (int64_t p = 0; p < g.batch; ++p)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        const int64_t ci = p * g.stride_c + i + j * g.ldc;
        const float acc = cuda_emu::blas::dot(g.a, g.b, p, i, j, g.k);
        cuda_emu::blas::store(g.c_type, g.c, ci, cuda_emu::blas::scale(*g.alpha, acc, *g.beta, g.c, g.c_type, ci));
      }
}

cublasStatus_t gemm(cublasHandle_t handle, const GemmArgs& g, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (const cublasStatus_t s = check(g); s != CUBLAS_STATUS_SUCCESS) return s;
  if (!types_supported(g.a.type, g.b.type, g.c_type, compute) || algo != CUBLAS_GEMM_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  run(g);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

// cuBLAS documents the workspace as at least 256-byte aligned: a less aligned one is INVALID_VALUE.
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t workspace_bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspace_bytes > 0 && (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 256 != 0))
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = workspace_bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType_t a_type, int lda, const void* B,
                            cudaDataType_t b_type, int ldb, const void* beta, void* C, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute_type, cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, a_type, lda, 0, B, b_type, ldb, 0,
                                    beta, C, c_type, ldc, 0, 1, compute_type, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType_t a_type,
                                          int lda, long long stride_a, const void* B, cudaDataType_t b_type, int ldb,
                                          long long stride_b, const void* beta, void* C, cudaDataType_t c_type,
                                          int ldc, long long stride_c, int batch_count,
                                          cublasComputeType_t compute_type, cublasGemmAlgo_t algo) {
  // The shim's compute types all scale in fp32 (the host pointer mode: alpha and beta are read here).
  const GemmArgs g{transa,
                   transb,
                   m,
                   n,
                   k,
                   static_cast<const float*>(alpha),
                   static_cast<const float*>(beta),
                   Operand{A, a_type, lda, stride_a, transa != CUBLAS_OP_N},
                   Operand{B, b_type, ldb, stride_b, transb != CUBLAS_OP_N},
                   C,
                   c_type,
                   ldc,
                   stride_c,
                   batch_count};
  return gemm(handle, g, compute_type, algo);
}
