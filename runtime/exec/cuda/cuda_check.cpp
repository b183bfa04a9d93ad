// runtime/exec/cuda/cuda_check.cpp — the checks of cuda_check.hpp.
#include "runtime/exec/cuda/cuda_check.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ptsim::runtime::cuda {

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(
      fmt::format("cuda backend: {} failed: {} ({})", call, cudaGetErrorName(status), cudaGetErrorString(status)));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(fmt::format("cuda backend: {} failed: {} ({})", call, cublasGetStatusName(status),
                                       cublasGetStatusString(status)));
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  throw std::runtime_error(fmt::format("cuda backend: launching kernel {} failed: {} ({})", kernel,
                                       cudaGetErrorName(status), cudaGetErrorString(status)));
}

}  // namespace ptsim::runtime::cuda
