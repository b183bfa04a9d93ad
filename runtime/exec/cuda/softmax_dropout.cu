// runtime/exec/cuda/softmax_dropout.cu — OpKind::softmax_dropout and its backward: the attention softmax
// (softmax.cu's masks and deterministic block reductions, one block per row) with the dropout of its
// probabilities in the same kernel; the backward applies the dropout mask inside the softmax backward's
// dot and output loops. Masks: dropout_mask.hpp at the flat element index, as the unfused dropout op.
#include <algorithm>

#include "runtime/exec/cuda/fused_dropout.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

struct DropoutArgs {
  uint64_t key;
  uint64_t threshold;
  float scale;
  bool drop_all;
};

__global__ void softmax_dropout_forward_kernel(float* dropped, float* probs, uint8_t* mask, const float* scores,
                                               int64_t cols, const int32_t* keep, int64_t heads, int64_t seq,
                                               bool causal, DropoutArgs drop) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* s = scores + row * cols;
  float* p = probs + row * cols;
  float* d = dropped + row * cols;
  uint8_t* mk = mask + row * cols;
  const int32_t* keep_row = math::softmax_keep_row(keep, row, heads, seq);
  const int64_t limit = math::softmax_key_limit(row, seq, cols, causal);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    if (math::softmax_key_allowed(j, limit, keep_row)) mx = fmaxf(mx, s[j]);
  mx = block_reduce(mx, MaxOp<float>{}, shared);
  float sum = 0.0f;
  if (mx != -INFINITY)
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      sum += math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(s[j] - mx) : 0.0f;
  sum = block_reduce(sum, SumOp<float>{}, shared);
  const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;  // every key masked: attend to nothing
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e = mx != -INFINITY && math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(s[j] - mx) : 0.0f;
    const float pj = e * inv;
    const bool kept = !drop.drop_all && dropout_keep(drop.key, static_cast<uint64_t>(row * cols + j), drop.threshold);
    p[j] = pj;
    mk[j] = kept ? 1 : 0;
    d[j] = math::dropout_apply(pj, kept, drop.scale);
  }
}

__global__ void softmax_dropout_backward_kernel(float* dscores, const float* ddropped, const float* probs,
                                                const uint8_t* mask, int64_t cols, float scale) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* dd = ddropped + row * cols;
  const float* p = probs + row * cols;
  const uint8_t* mk = mask + row * cols;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += math::dropout_apply(dd[j], mk[j] != 0, scale) * p[j];
  dot = block_reduce(dot, SumOp<float>{}, shared);
  float* ds = dscores + row * cols;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    ds[j] = math::softmax_dropout_dscore(p[j], dd[j], mk[j] != 0, scale, dot);
}

// As softmax.cu: rows of up to 128 keys get 128 threads (seq 128 is the common case); longer rows 256.
int threads_for(int64_t cols) { return cols <= 128 ? 128 : kThreads; }

}  // namespace

void launch_softmax_dropout_forward(float* dropped, float* probs, uint8_t* mask, const float* scores, int64_t rows,
                                    int64_t cols, const int32_t* keep, int64_t heads, int64_t seq, bool causal,
                                    double p, uint64_t key, cudaStream_t stream) {
  if (rows == 0) return;
  const bool drop_all = p >= 1.0;
  const DropoutArgs drop{key, drop_all ? 0 : dropout_threshold(std::max(p, 0.0)), math::dropout_scale<float>(p),
                         drop_all};
  softmax_dropout_forward_kernel<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
      dropped, probs, mask, scores, cols, keep, heads, seq, causal, drop);
}

void launch_softmax_dropout_backward(float* dscores, const float* ddropped, const float* probs, const uint8_t* mask,
                                     int64_t rows, int64_t cols, double p, cudaStream_t stream) {
  if (rows == 0) return;
  softmax_dropout_backward_kernel<<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
      dscores, ddropped, probs, mask, cols, math::dropout_scale<float>(p));
}

}  // namespace ptsim::runtime::cuda
