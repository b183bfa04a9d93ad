// runtime/exec/cuda/gemm_bias.cu — the GEMM's bias: C (m,n) += bias (n) per row, after the product (the
// CPU's order: alpha·op(A)·op(B), then + bias).
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {
namespace {
__global__ void add_bias_rows_kernel(float* C, const float* bias, int64_t total, int64_t n) {
  PTSIM_GRID_STRIDE(i, total) C[i] += bias[i % n];
}
}  // namespace

void launch_add_bias_rows(float* C, const float* bias, int64_t m, int64_t n, cudaStream_t stream) {
  add_bias_rows_kernel<<<blocks_for(m * n), kThreads, 0, stream>>>(C, bias, m * n, n);
}

}  // namespace ptsim::runtime::cuda
