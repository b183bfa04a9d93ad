// runtime/exec/cuda/cuda_check.hpp — every CUDA runtime and cuBLAS call of the CUDA backend goes through
// these checks: a failure throws std::runtime_error naming the call (its source text) and the library's
// error name and string, e.g. "cudaMemcpyAsync(...) failed: cudaErrorIllegalAddress (an illegal memory
// access was encountered)". Host compiler only (no kernels here).
// Not here: out-of-memory on allocate (cuda_device.cpp turns that into std::bad_alloc, as Backend says).
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace ptsim::runtime::cuda {

// Throws std::runtime_error when status is not cudaSuccess; `call` names what was called.
void check_cuda(cudaError_t status, const char* call);
// Throws std::runtime_error when status is not CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* call);
// After a kernel launch: the launch's own error (bad configuration, no kernel image for this GPU).
void check_launch(const char* kernel);

}  // namespace ptsim::runtime::cuda

#define PTSIM_CUDA_CHECK(call) ::ptsim::runtime::cuda::check_cuda((call), #call)
#define PTSIM_CUBLAS_CHECK(call) ::ptsim::runtime::cuda::check_cublas((call), #call)
