// tests/cuda_emu/cublaslt_descriptors.cpp — the emulated cuBLASLt's handle, matrix layouts, matmul
// descriptors and preferences (include/cublasLt.h): created, destroyed and set as NVIDIA's cuBLASLt
// documentation describes; an attribute whose value size is not its documented type's is INVALID_VALUE.
#include <cstring>

#include "cublaslt_internal.hpp"

namespace {

// Copies an attribute value of exactly T's size into `out`.
template <class T>
bool take(T& out, const void* value, size_t size) {
  if (value == nullptr || size != sizeof(T)) return false;
  std::memcpy(&out, value, sizeof(T));
  return true;
}

constexpr cublasStatus_t status(bool ok) { return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE; }

bool set_layout(cublasLtMatrixLayoutOpaque_t& l, cublasLtMatrixLayoutAttribute_t attr, const void* v, size_t n) {
  uint32_t type = 0;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      if (!take(type, v, n)) return false;
      l.type = static_cast<cudaDataType_t>(type);
      return true;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return take(l.rows, v, n);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return take(l.cols, v, n);
    case CUBLASLT_MATRIX_LAYOUT_LD: return take(l.ld, v, n);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return take(l.batch_count, v, n);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return take(l.batch_stride, v, n);
  }
  return false;
}

template <class Enum>
bool take_enum(Enum& out, const void* v, size_t n) {
  int32_t raw = 0;
  if (!take(raw, v, n)) return false;
  out = static_cast<Enum>(raw);
  return true;
}

bool set_desc(cublasLtMatmulDescOpaque_t& d, cublasLtMatmulDescAttributes_t attr, const void* v, size_t n) {
  uint32_t epilogue = 0;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return take_enum(d.compute, v, n);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return take_enum(d.scale, v, n);
    case CUBLASLT_MATMUL_DESC_TRANSA: return take_enum(d.transa, v, n);
    case CUBLASLT_MATMUL_DESC_TRANSB: return take_enum(d.transb, v, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (!take(epilogue, v, n)) return false;
      d.epilogue = static_cast<cublasLtEpilogue_t>(epilogue);
      return true;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return take(d.bias, v, n);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return take(d.bias_batch_stride, v, n);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return take(d.bias_type, v, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return take(d.aux, v, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return take(d.aux_ld, v, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return take(d.aux_batch_stride, v, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return take(d.aux_type, v, n);
  }
  return false;
}

bool set_pref(cublasLtMatmulPreferenceOpaque_t& p, cublasLtMatmulPreferenceAttributes_t attr, const void* v,
              size_t n) {
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return take(p.max_workspace_bytes, v, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return take(p.min_alignment[0], v, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return take(p.min_alignment[1], v, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return take(p.min_alignment[2], v, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return take(p.min_alignment[3], v, n);
  }
  return false;
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld, 1, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* value, size_t size_in_bytes) {
  return status(layout != nullptr && set_layout(*layout, attr, value, size_in_bytes));
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute_type,
                                        cudaDataType_t scale_type) {
  if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cublasLtMatmulDescOpaque_t;
  (*desc)->compute = compute_type;
  (*desc)->scale = scale_type;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* value, size_t size_in_bytes) {
  return status(desc != nullptr && set_desc(*desc, attr, value, size_in_bytes));
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* value,
                                                    size_t size_in_bytes) {
  return status(pref != nullptr && set_pref(*pref, attr, value, size_in_bytes));
}
