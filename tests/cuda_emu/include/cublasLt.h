// tests/cuda_emu/include/cublasLt.h — the emulator's cuBLASLt API (docs/cuda-emulation.md, "The BLAS shim"):
// the handle, matrix layouts, matmul descriptor, preference, heuristic and cublasLtMatmul that
// runtime/exec/cuda uses (and the epilogues the shim's tests cover), implemented on the CPU in
// cublaslt_descriptors.cpp and cublaslt_matmul.cpp. Names are NVIDIA's, values the shim's own; C++ linkage.
// The toolkit's cublasLt.h has no guard macro (#pragma once), so a real one read first is detected by a
// macro only it defines, and one read after this one fails on the redefined types.
#pragma once
#if defined(CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA)
#error "the toolkit's cublasLt.h was included before the emulator's: tests/cuda_emu/include must come first"
#endif
#include <cstddef>
#include <cstdint>

#include "cublas_api.h"

struct cublasLtContext;            // cublaslt_descriptors.cpp
struct cublasLtMatrixLayoutOpaque_t;
struct cublasLtMatmulDescOpaque_t;
struct cublasLtMatmulPreferenceOpaque_t;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulDescOpaque_t* cublasLtMatmulDesc_t;
typedef struct cublasLtMatmulPreferenceOpaque_t* cublasLtMatmulPreference_t;

// What the heuristic chose; opaque to the caller (the shim keeps its promises in it).
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

// Each attribute's value has one C type, given beside it; a size that is not that type's is INVALID_VALUE.
typedef enum {
  CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                  // uint32_t (a cudaDataType_t)
  CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_COLS = 3,                  // uint64_t
  CUBLASLT_MATRIX_LAYOUT_LD = 4,                    // int64_t
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,           // int32_t
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,  // int64_t, elements between consecutive matrices
} cublasLtMatrixLayoutAttribute_t;

typedef enum {
  CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,               // int32_t (a cublasComputeType_t)
  CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,                 // int32_t (a cudaDataType_t)
  CUBLASLT_MATMUL_DESC_TRANSA = 3,                     // int32_t (a cublasOperation_t)
  CUBLASLT_MATMUL_DESC_TRANSB = 4,                     // int32_t
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,                   // uint32_t (a cublasLtEpilogue_t)
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,               // void*
  CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,         // int64_t, elements
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,      // void*
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,           // int64_t
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13, // int64_t, elements
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22,    // int32_t (a cudaDataType_t; −1: D's type)
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,            // int32_t (a cudaDataType_t; −1: D's type)
} cublasLtMatmulDescAttributes_t;

typedef enum {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,
  CUBLASLT_EPILOGUE_GELU = 32,
  CUBLASLT_EPILOGUE_GELU_BIAS = 36,
  CUBLASLT_EPILOGUE_RELU_AUX = 130,  // not supported by the shim (its aux output is a bit mask)
  CUBLASLT_EPILOGUE_GELU_AUX = 160,
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164,
  CUBLASLT_EPILOGUE_DGELU = 192,
  CUBLASLT_EPILOGUE_DGELU_BGRAD = 208,
  CUBLASLT_EPILOGUE_BGRADA = 256,
  CUBLASLT_EPILOGUE_BGRADB = 512,
} cublasLtEpilogue_t;

typedef enum {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    // uint64_t
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  // uint32_t
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,  // uint32_t
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,  // uint32_t
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,  // uint32_t
} cublasLtMatmulPreferenceAttributes_t;

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* value, size_t size_in_bytes);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute_type,
                                        cudaDataType_t scale_type);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* value, size_t size_in_bytes);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* value,
                                                    size_t size_in_bytes);

// At most requested_count algorithms for this problem (the shim has one); NOT_SUPPORTED when it has none.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                              cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                              cublasLtMatmulPreference_t pref, int requested_count,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned_count);

// D = epilogue(alpha·op(A)·op(B) + beta·C), alpha and beta host values of the descriptor's scale type.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t a_desc, const void* B, cublasLtMatrixLayout_t b_desc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t c_desc, void* D,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);
