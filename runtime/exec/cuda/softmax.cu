// runtime/exec/cuda/softmax.cu — the attention softmax over each row of scores (B·nh, S, S) with the
// padding and causal masks (which keys take part: math/norm_math.hpp, the CPU's rules), forward and
// backward, one block per row with deterministic block reductions (float max and sums).
#include <cuda_runtime.h>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/math/norm_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void softmax_forward_kernel(float* probs, const float* scores, int64_t cols, const int32_t* keep,
                                       int64_t heads, int64_t seq, bool causal) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* s = scores + row * cols;
  float* p = probs + row * cols;
  const int32_t* keep_row = math::softmax_keep_row(keep, row, heads, seq);
  const int64_t limit = math::softmax_key_limit(row, seq, cols, causal);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    if (math::softmax_key_allowed(j, limit, keep_row)) mx = fmaxf(mx, s[j]);
  mx = block_reduce(mx, MaxOp<float>{}, shared);
  if (mx == -INFINITY) {  // every key masked: attend to nothing
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e = math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(s[j] - mx) : 0.0f;
    p[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_reduce(sum, SumOp<float>{}, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] *= inv;
}

__global__ void softmax_backward_kernel(float* dscores, const float* dprobs, const float* probs, int64_t cols) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* dp = dprobs + row * cols;
  const float* p = probs + row * cols;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += dp[j] * p[j];
  dot = block_reduce(dot, SumOp<float>{}, shared);
  float* ds = dscores + row * cols;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) ds[j] = math::softmax_dscore(p[j], dp[j], dot);
}

// Rows of up to 128 keys get 128 threads (seq 128 is the common case); longer rows 256.
int threads_for(int64_t cols) { return cols <= 128 ? 128 : kThreads; }

}  // namespace

void launch_softmax_forward(float* probs, const float* scores, int64_t rows, int64_t cols, const int32_t* keep,
                            int64_t heads, int64_t seq, bool causal, cudaStream_t stream) {
  if (rows == 0) return;
  softmax_forward_kernel<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(probs, scores, cols, keep,
                                                                                        heads, seq, causal);
}

void launch_softmax_backward(float* dscores, const float* dprobs, const float* probs, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows == 0) return;
  softmax_backward_kernel<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(dscores, dprobs, probs, cols);
}

}  // namespace ptsim::runtime::cuda
