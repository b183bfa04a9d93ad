// tests/cuda_emu/cublaslt_internal.hpp — what the emulated cuBLASLt's opaque handles hold, shared by
// cublaslt_descriptors.cpp (create, destroy, set attributes) and cublaslt_matmul.cpp (heuristic, matmul).
#pragma once
#include <cublasLt.h>

#include <cstdint>

struct cublasLtContext {};

struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch_count = 1;
  int64_t batch_stride = 0;  // elements
};

struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;
  int64_t bias_batch_stride = 0;
  int32_t bias_type = -1;  // −1: D's type
  void* aux = nullptr;
  int64_t aux_ld = 0;
  int64_t aux_batch_stride = 0;
  int32_t aux_type = -1;  // −1: D's type
};

struct cublasLtMatmulPreferenceOpaque_t {
  uint64_t max_workspace_bytes = 0;
  // What the caller promises of its pointers; cuBLASLt's default promise is 256 bytes.
  uint32_t min_alignment[4] = {256, 256, 256, 256};  // A, B, C, D
};

namespace cuda_emu::blas {

// The shim's one algorithm, as cublasLtMatmulAlgo_t::data holds it: a tag (an algorithm the heuristic
// did not fill in is INVALID_VALUE), the workspace it needs and the alignment promises it was chosen for.
constexpr uint64_t kAlgoTag = 0x70747369'6d4c7431ull;  // "ptsimLt1"
enum AlgoField { kTag = 0, kWorkspace = 1, kAlignA = 2, kAlignB = 3, kAlignC = 4, kAlignD = 5 };

}  // namespace cuda_emu::blas
