// runtime/exec/cuda/heads.cu — split_heads / merge_heads: one thread per element of the (B·nh, S, d)
// side, its partner index in (B·S, nh·d) from math::heads_x_index (norm_math.hpp).
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/norm_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void split_heads_kernel(float* y, const float* x, int64_t n, int64_t S, int64_t nh, int64_t d) {
  PTSIM_GRID_STRIDE(i, n) y[i] = x[math::heads_x_index(i, S, nh, d)];
}
__global__ void merge_heads_kernel(float* y, const float* x, int64_t n, int64_t S, int64_t nh, int64_t d) {
  PTSIM_GRID_STRIDE(i, n) y[math::heads_x_index(i, S, nh, d)] = x[i];
}

}  // namespace

void launch_split_heads(float* y, const float* x, int64_t B, int64_t S, int64_t nh, int64_t d, cudaStream_t stream) {
  const int64_t n = B * S * nh * d;
  split_heads_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n, S, nh, d);
}
void launch_merge_heads(float* y, const float* x, int64_t B, int64_t S, int64_t nh, int64_t d, cudaStream_t stream) {
  const int64_t n = B * S * nh * d;
  merge_heads_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n, S, nh, d);
}

}  // namespace ptsim::runtime::cuda
