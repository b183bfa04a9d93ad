// tests/cuda_emu/include/cublas_api.h — the emulator's cuBLAS API (docs/cuda-emulation.md, "The BLAS shim"):
// the types and functions of NVIDIA's cuBLAS that runtime/exec/cuda uses, implemented on the CPU in
// cublas_emulated.cpp and cublas_status.cpp. Names are NVIDIA's; the enumerator values only need to agree
// with the shim (the status values are the toolkit's, so a printed number means the same). C++ linkage, as
// the emulated runtime API (cuda_runtime_api.h): a binary can hold these beside the real libcublas.
// The toolkit's cublas_api.h is kept out by its own guard macro, defined here; if it came first, the build
// stops here instead of mixing the two.
#pragma once
#if defined(CUBLAS_API_H_)
#error "the toolkit's cublas_api.h was included before the emulator's: tests/cuda_emu/include must come first"
#endif
#define CUBLAS_API_H_
#include <cuda_runtime_api.h>  // the emulator's: cudaStream_t (driver_types.h), cudaDataType_t (library_types.h)

#include <cstddef>

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

// fp32 accumulation, its TF32 tensor-core form (computed as plain fp32 here), and fp64 (not supported here).
typedef enum {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_64F = 70,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

struct cublasContext;  // cublas_emulated.cpp
typedef struct cublasContext* cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t workspace_bytes);

// C = alpha·op(A)·op(B) + beta·C, column-major, op(A) m×k, op(B) k×n, C m×n; alpha and beta host floats.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType_t a_type, int lda, const void* B,
                            cudaDataType_t b_type, int ldb, const void* beta, void* C, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute_type, cublasGemmAlgo_t algo);
// batch_count products; matrix p of each operand starts `stride` elements after matrix p − 1.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType_t a_type,
                                          int lda, long long stride_a, const void* B, cudaDataType_t b_type, int ldb,
                                          long long stride_b, const void* beta, void* C, cudaDataType_t c_type,
                                          int ldc, long long stride_c, int batch_count,
                                          cublasComputeType_t compute_type, cublasGemmAlgo_t algo);

const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);
