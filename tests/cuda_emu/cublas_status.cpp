// tests/cuda_emu/cublas_status.cpp — cublasGetStatusName / cublasGetStatusString of the emulated cuBLAS
// (include/cublas_api.h). In the emulator's kernel library, beside cuda_check.cpp, which names a failed
// call's status with them.
#include <cublas_api.h>

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN (emulator: not a cuBLAS status)";
}

// In the shim's words, saying it is the emulator's: a message from an emulated run is not a GPU's.
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the handle was not created (emulated cuBLAS)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "an allocation failed (emulated cuBLAS)";
    case CUBLAS_STATUS_INVALID_VALUE: return "an argument is invalid (emulated cuBLAS)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the device lacks a feature (emulated cuBLAS)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "a memory access failed (emulated cuBLAS)";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed (emulated cuBLAS)";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed (emulated cuBLAS)";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported by the emulated cuBLAS (tests/cuda_emu)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "a license error (emulated cuBLAS)";
  }
  return "not a cuBLAS status (emulated cuBLAS)";
}
