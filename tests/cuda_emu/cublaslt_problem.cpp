// tests/cuda_emu/cublaslt_problem.cpp — the emulated cuBLASLt's problem checks (cublaslt_problem.hpp).
#include "cublaslt_problem.hpp"

#include "blas_core.hpp"

namespace cuda_emu::blas {

using Layout = cublasLtMatrixLayoutOpaque_t;
using Desc = cublasLtMatmulDescOpaque_t;

bool epilogue_of(cublasLtEpilogue_t e, Epilogue& out) {
  out = {};
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return true;
    case CUBLASLT_EPILOGUE_RELU: out.relu = true; return true;
    case CUBLASLT_EPILOGUE_BIAS: out.bias_in = true; return true;
    case CUBLASLT_EPILOGUE_RELU_BIAS: out.bias_in = out.relu = true; return true;
    case CUBLASLT_EPILOGUE_GELU: out.gelu = true; return true;
    case CUBLASLT_EPILOGUE_GELU_BIAS: out.bias_in = out.gelu = true; return true;
    case CUBLASLT_EPILOGUE_GELU_AUX: out.gelu = out.aux_out = true; return true;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: out.bias_in = out.gelu = out.aux_out = true; return true;
    case CUBLASLT_EPILOGUE_DGELU: out.dgelu = true; return true;
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: out.dgelu = out.bgrad_d = true; return true;
    case CUBLASLT_EPILOGUE_BGRADA: out.bgrad_a = true; return true;
    case CUBLASLT_EPILOGUE_BGRADB: out.bgrad_b = true; return true;
    case CUBLASLT_EPILOGUE_RELU_AUX: return false;  // a bit-mask aux output: not in the shim
  }
  return false;
}


cudaDataType_t or_d(int32_t type, const Layout& d) { return type == -1 ? d.type : static_cast<cudaDataType_t>(type); }

namespace {

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
int64_t op_rows(const Layout& l, cublasOperation_t op) {
  return static_cast<int64_t>(op == CUBLAS_OP_N ? l.rows : l.cols);
}
int64_t op_cols(const Layout& l, cublasOperation_t op) {
  return static_cast<int64_t>(op == CUBLAS_OP_N ? l.cols : l.rows);
}
bool ld_ok(const Layout& l) { return l.ld >= static_cast<int64_t>(l.rows > 1 ? l.rows : 1); }

// The documented shape rules: op(A) m×k, op(B) k×n, C and D m×n, every ld ≥ its rows, one batch count.
cublasStatus_t check_shapes(const Desc& desc, const Layout& a, const Layout& b, const Layout& c, const Layout& d) {
  if (!valid_op(desc.transa) || !valid_op(desc.transb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!ld_ok(a) || !ld_ok(b) || !ld_ok(c) || !ld_ok(d)) return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t m = static_cast<int64_t>(d.rows), n = static_cast<int64_t>(d.cols);
  if (op_rows(a, desc.transa) != m || op_cols(b, desc.transb) != n ||
      op_cols(a, desc.transa) != op_rows(b, desc.transb))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (c.rows != d.rows || c.cols != d.cols) return CUBLAS_STATUS_INVALID_VALUE;
  const int32_t batch = d.batch_count;
  if (batch < 1 || a.batch_count != batch || b.batch_count != batch || c.batch_count != batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// The type combinations the shim has: A = B of 32F / 16F / 16BF, C = D of A's type or 32F, fp32 scale,
// CUBLAS_COMPUTE_32F (or its TF32 form for 32F operands); an epilogue vector and aux of D's type.
cublasStatus_t check_types(const Desc& desc, const Layout& a, const Layout& b, const Layout& c, const Layout& d) {
  if (a.type != b.type || !is_supported_element(a.type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (c.type != d.type || (d.type != a.type && d.type != CUDA_R_32F)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool tf32_ok = desc.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type == CUDA_R_32F;
  if ((desc.compute != CUBLAS_COMPUTE_32F && !tf32_ok) || desc.scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  Epilogue e;
  if (!epilogue_of(desc.epilogue, e)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (e.uses_vector() && or_d(desc.bias_type, d) != d.type) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (e.uses_aux() && or_d(desc.aux_type, d) != d.type) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t check_problem(const Desc* desc, const Layout* a, const Layout* b, const Layout* c, const Layout* d) {
  if (desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (const cublasStatus_t s = check_shapes(*desc, *a, *b, *c, *d); s != CUBLAS_STATUS_SUCCESS) return s;
  if (const cublasStatus_t s = check_types(*desc, *a, *b, *c, *d); s != CUBLAS_STATUS_SUCCESS) return s;
  Epilogue e;
  epilogue_of(desc->epilogue, e);
  // cublasLt.h documents the GELU input matrix's leading dimension as a multiple of 8, no less than the rows.
  if (e.uses_aux() && (desc->aux_ld < static_cast<int64_t>(d->rows) || desc->aux_ld % 8 != 0))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace cuda_emu::blas
