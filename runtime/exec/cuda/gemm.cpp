// runtime/exec/cuda/gemm.cpp — GEMMs on cuBLAS / cuBLASLt for the CUDA backend (gemm.hpp): the row-major
// graph GEMM mapped onto one column-major call by column_major_gemm (gemm_layout.hpp) or lt_gemm_plan
// (lt_gemm_plan.hpp), both tested on the CPU; beta = 1 when the op accumulates (C +=); the bias in
// cuBLASLt's epilogue, or the bias rows after the product.
#include "runtime/exec/cuda/gemm.hpp"

#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/gemm_finish.hpp"
#include "runtime/exec/cuda/gemm_layout.hpp"

namespace ptsim::runtime::cuda {
namespace {

cublasComputeType_t compute_type(bool tf32) { return tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; }
cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void gemm_forward(cublasHandle_t handle, LtGemm* lt, float* C, const float* A, const float* B, const float* bias,
                  const models::GemmAttrs& a, bool tf32, cudaStream_t stream) {
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  if (lt != nullptr && a.has_bias) {
    // Lt's A is the graph's B, its B the graph's A (gemm_layout.hpp).
    const LtGemmOperands ops{C, B, A, const_cast<float*>(bias)};
    if (lt->run(lt_gemm_plan(a, LtEpilogue::bias), alpha, beta, tf32, ops, stream)) return;
  }
  const ColumnMajorGemm c = column_major_gemm(a);
  const BlasDims d = blas_dims(c);
  PTSIM_CUBLAS_CHECK(cublasGemmEx(handle, op(c.trans_first), op(c.trans_second), d.rows, d.cols, d.inner, &alpha, B,
                                  CUDA_R_32F, d.ld_first, A, CUDA_R_32F, d.ld_second, &beta, C, CUDA_R_32F, d.ld_out,
                                  compute_type(tf32), CUBLAS_GEMM_DEFAULT));
  if (a.has_bias) {
    launch_add_bias_rows(C, bias, a.m, a.n, stream);
    check_launch("add_bias_rows");
  }
}

bool gemm_with_bias_grad(LtGemm& lt, void* C, const void* A, const void* B, float* bias_grad,
                         const models::GemmAttrs& a, LtEpilogue epilogue, bool tf32, cudaStream_t stream,
                         const GemmTypes& types) {
  if (types.cd != GemmElement::f32) return false;  // the vector would be 16-bit (C's type): not fused
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  return lt.run(lt_gemm_plan(a, epilogue, types), alpha, beta, tf32, LtGemmOperands{C, B, A, bias_grad}, stream);
}

void batched_gemm_forward(cublasHandle_t handle, float* C, const float* A, const float* B,
                          const models::GemmAttrs& a, bool tf32) {
  const ColumnMajorGemm c = column_major_gemm(a);
  const BlasDims d = blas_dims(c);
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  PTSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, op(c.trans_first), op(c.trans_second), d.rows, d.cols, d.inner, &alpha, B, CUDA_R_32F, d.ld_first,
      c.stride_first, A, CUDA_R_32F, d.ld_second, c.stride_second, &beta, C, CUDA_R_32F, d.ld_out, c.stride_out,
      blas_int(a.batch, "batch"), compute_type(tf32), CUBLAS_GEMM_DEFAULT));
}

namespace {

// C (+)= alpha·op(A)·op(B) on cublasGemmEx with the stored types, fp32 scale and accumulation.
void gemm_ex_16bit(cublasHandle_t handle, void* C, cudaDataType_t c_type, const void* A, const void* B,
                   GemmElement ab, const models::GemmAttrs& a, float beta) {
  const ColumnMajorGemm c = column_major_gemm(a);
  const BlasDims d = blas_dims(c);
  const float alpha = static_cast<float>(a.alpha);
  PTSIM_CUBLAS_CHECK(cublasGemmEx(handle, op(c.trans_first), op(c.trans_second), d.rows, d.cols, d.inner, &alpha, B,
                                  cuda_data_type(ab), d.ld_first, A, cuda_data_type(ab), d.ld_second, &beta, C, c_type,
                                  d.ld_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void gemm_forward_16bit(cublasHandle_t handle, LtGemm* lt, const GemmOperands16& o, const GemmTypes& t,
                        const models::GemmAttrs& a, const ScratchFn& scratch, cudaStream_t stream) {
  const float beta = a.accumulate ? 1.0f : 0.0f;
  if (!a.has_bias) {  // D = C in its own type: one rounding of alpha·AB + beta·C
    gemm_ex_16bit(handle, o.c, cuda_data_type(t.cd), o.a, o.b, t.ab, a, beta);
    return;
  }
  if (lt != nullptr) {  // Lt's A is the graph's B, its B the graph's A (gemm_layout.hpp)
    const LtGemmOperands ops{o.c, o.b, o.a, const_cast<void*>(o.bias)};
    if (lt->run(lt_gemm_plan(a, LtEpilogue::bias, t), static_cast<float>(a.alpha), beta, false, ops, stream)) return;
  }
  // The bias in fp32 after the product, then one rounding into D (gemm_finish.hpp).
  auto* product = static_cast<float*>(scratch(static_cast<size_t>(a.m * a.n) * sizeof(float)));
  gemm_ex_16bit(handle, product, CUDA_R_32F, o.a, o.b, t.ab, a, 0.0f);
  launch_gemm_finish(o.c, t.cd, product, o.bias, t.bias, a.accumulate, a.m, a.n, stream);
  check_launch("gemm_finish");
}

void batched_gemm_forward_16bit(cublasHandle_t handle, const GemmOperands16& o, const GemmTypes& t,
                                const models::GemmAttrs& a) {
  const ColumnMajorGemm c = column_major_gemm(a);
  const BlasDims d = blas_dims(c);
  const float alpha = static_cast<float>(a.alpha), beta = a.accumulate ? 1.0f : 0.0f;
  const cudaDataType_t ab = cuda_data_type(t.ab);
  PTSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, op(c.trans_first), op(c.trans_second), d.rows, d.cols, d.inner, &alpha, o.b, ab, d.ld_first,
      c.stride_first, o.a, ab, d.ld_second, c.stride_second, &beta, o.c, cuda_data_type(t.cd), d.ld_out,
      c.stride_out, blas_int(a.batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ptsim::runtime::cuda
