// runtime/exec/cuda/gather_rows.cu — the row gather y[p] = x[index[p]], one thread per element, that both
// embedding forward (x = the table, index = token ids) and gather_rows forward run; a bad index gives a zero
// row and a device error report of the caller's kind. Their backward passes are row_segments.cu.
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {
namespace {
__global__ void gather_rows_kernel(float* y, const float* x, const int32_t* index, int64_t P, int64_t M, int64_t N,
                                   DeviceErrorKind bad_index, DeviceError* error) {
  PTSIM_GRID_STRIDE(i, P * N) {
    const int64_t p = i / N, n = i % N;
    const int32_t row = index[p];
    const bool ok = row >= 0 && row < M;
    if (!ok && n == 0) report_device_error(error, bad_index, row, p, M);
    y[i] = ok ? x[static_cast<int64_t>(row) * N + n] : 0.0f;
  }
}
}  // namespace

void launch_gather_rows(float* y, const float* x, const int32_t* index, int64_t P, int64_t M, int64_t N,
                        DeviceErrorKind bad_index, DeviceError* error, cudaStream_t stream) {
  gather_rows_kernel<<<blocks_for(P * N), kThreads, 0, stream>>>(y, x, index, P, M, N, bad_index, error);
}

}  // namespace ptsim::runtime::cuda
