// runtime/exec/cuda/vector_ops.cu — scale, sum of squares and 16-bit rounding over f32 device memory
// (vector_ops.hpp). The sum of squares uses the CPU backend's fixed chunks and adds the chunks' double
// partial sums in chunk order, so the result does not depend on scheduling; within a chunk the block's
// tree order differs from the CPU's left-to-right loop (double sums: relative differences ~1e-16).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/vector_ops.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  PTSIM_GRID_STRIDE(i, n) x[i] *= factor;
}

__global__ void chunk_squares_kernel(double* partials, const float* x, int64_t n, int64_t chunk) {
  __shared__ double shared[32];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  double s = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) s += static_cast<double>(x[i]) * x[i];
  s = block_reduce(s, SumOp<double>{}, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void add_in_order_kernel(double* out, const double* partials, int64_t count) {
  double s = 0.0;
  for (int64_t c = 0; c < count; ++c) s += partials[c];
  *out = s;
}

__global__ void round_kernel(float* x, int64_t n, bool bf16) {
  PTSIM_GRID_STRIDE(i, n) {
    x[i] = bf16 ? __bfloat162float(__float2bfloat16_rn(x[i])) : __half2float(__float2half_rn(x[i]));
  }
}

}  // namespace

void launch_scale(float* x, size_t n, float factor, cudaStream_t stream) {
  scale_kernel<<<blocks_for(static_cast<int64_t>(n)), kThreads, 0, stream>>>(x, static_cast<int64_t>(n), factor);
}

void launch_sum_of_squares(double* out, double* partials, const float* x, size_t n, size_t chunk,
                           cudaStream_t stream) {
  const size_t chunks = (n + chunk - 1) / chunk;
  if (chunks > 0)
    chunk_squares_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(partials, x, static_cast<int64_t>(n),
                                                                                  static_cast<int64_t>(chunk));
  add_in_order_kernel<<<1, 1, 0, stream>>>(out, partials, static_cast<int64_t>(chunks));
}

void launch_round_to_16bit(float* x, size_t n, bool bf16, cudaStream_t stream) {
  round_kernel<<<blocks_for(static_cast<int64_t>(n)), kThreads, 0, stream>>>(x, static_cast<int64_t>(n), bf16);
}

}  // namespace ptsim::runtime::cuda
