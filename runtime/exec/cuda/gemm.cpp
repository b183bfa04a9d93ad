// runtime/exec/cuda/gemm.cpp — GEMMs on cuBLAS for the CUDA backend (gemm.hpp). The graph's matrices are
// row-major; cuBLAS is column-major, and a row-major (r, c) matrix is the column-major (c, r) matrix of its
// transpose. So C (m,n) = op(A)·op(B) is computed as Cᵀ (n,m) = op(B)ᵀ·op(A)ᵀ: cuBLAS's first operand is
// B's storage (transposed iff trans_b), its second A's (transposed iff trans_a), with m and n swapped.
// Leading dimensions are the row lengths of the stored matrices: B (k,n) → n, or (n,k) with trans_b → k;
// A (m,k) → k, or (k,m) with trans_a → m; C → n. beta = 1 when the op accumulates (C +=).
#include "runtime/exec/cuda/gemm.hpp"

#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/elementwise.hpp"

namespace ptsim::runtime::cuda {
namespace {

struct ColumnMajorCall {
  cublasOperation_t op_first, op_second;
  int rows, cols, inner;  // cuBLAS m, n, k
  int ld_first, ld_second, ld_out;
};

ColumnMajorCall column_major(const models::GemmAttrs& a) {
  ColumnMajorCall c;
  c.op_first = a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  c.op_second = a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  c.rows = static_cast<int>(a.n);
  c.cols = static_cast<int>(a.m);
  c.inner = static_cast<int>(a.k);
  c.ld_first = static_cast<int>(a.trans_b ? a.k : a.n);
  c.ld_second = static_cast<int>(a.trans_a ? a.m : a.k);
  c.ld_out = static_cast<int>(a.n);
  return c;
}

cublasComputeType_t compute_type(bool tf32) { return tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }

}  // namespace

void gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B, const float* bias,
                  const models::GemmAttrs& a, bool tf32, cudaStream_t stream) {
  const ColumnMajorCall c = column_major(a);
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  PTSIM_CUBLAS_CHECK(cublasGemmEx(handle, c.op_first, c.op_second, c.rows, c.cols, c.inner, &alpha, B, CUDA_R_32F,
                                  c.ld_first, A, CUDA_R_32F, c.ld_second, &beta, C, CUDA_R_32F, c.ld_out,
                                  compute_type(tf32), CUBLAS_GEMM_DEFAULT));
  if (a.has_bias) {
    launch_add_bias_rows(C, bias, a.m, a.n, stream);
    check_launch("add_bias_rows");
  }
}

void batched_gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B,
                          const models::GemmAttrs& a, bool tf32) {
  const ColumnMajorCall c = column_major(a);
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  PTSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, c.op_first, c.op_second, c.rows, c.cols, c.inner, &alpha, B, CUDA_R_32F, c.ld_first, a.k * a.n, A,
      CUDA_R_32F, c.ld_second, a.m * a.k, &beta, C, CUDA_R_32F, c.ld_out, a.m * a.n, static_cast<int>(a.batch),
      compute_type(tf32), CUBLAS_GEMM_DEFAULT));
}

}  // namespace ptsim::runtime::cuda
