// runtime/exec/cuda/softmax.cu — the attention softmax over each row of scores (B·nh, S, S) with the
// padding and causal masks (which keys take part: math/norm_math.hpp, the CPU's rules), forward and
// backward, one block per row with deterministic block reductions (float max and sums). One kernel per
// pass over the storage of scores/probs/gradients (S: math/row_storage.hpp — fp32, or 16-bit loaded exactly
// and stored rounded once, the op boundary's bits).
#include <cuda_runtime.h>

#include <type_traits>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {
namespace {

using math::Elem;

template <class S>
__global__ void softmax_forward_kernel(Elem<S>* probs, const Elem<S>* scores, int64_t cols, const int32_t* keep,
                                       int64_t heads, int64_t seq, bool causal) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* s = scores + row * cols;
  Elem<S>* p = probs + row * cols;
  const int32_t* keep_row = math::softmax_keep_row(keep, row, heads, seq);
  const int64_t limit = math::softmax_key_limit(row, seq, cols, causal);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    if (math::softmax_key_allowed(j, limit, keep_row)) mx = fmaxf(mx, S::load(s[j]));
  mx = block_reduce(mx, MaxOp<float>{}, shared);
  if (mx == -INFINITY) {  // every key masked: attend to nothing
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) p[j] = S::store(0.0f);
    return;
  }
  auto exp_at = [&](int64_t j) {
    return math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(S::load(s[j]) - mx) : 0.0f;
  };
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e = exp_at(j);
    if constexpr (std::is_same_v<S, math::F32Storage>) p[j] = e;  // fp32: kept for the scaling pass
    sum += e;
  }
  const float inv = 1.0f / block_reduce(sum, SumOp<float>{}, shared);
  // 16-bit: e is recomputed (the same fp32 value) rather than read back, which would round it twice.
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if constexpr (std::is_same_v<S, math::F32Storage>)
      p[j] *= inv;
    else
      p[j] = S::store(exp_at(j) * inv);
  }
}

template <class S>
__global__ void softmax_backward_kernel(Elem<S>* dscores, const Elem<S>* dprobs, const Elem<S>* probs,
                                        int64_t cols) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* dp = dprobs + row * cols;
  const Elem<S>* p = probs + row * cols;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) dot += S::load(dp[j]) * S::load(p[j]);
  dot = block_reduce(dot, SumOp<float>{}, shared);
  Elem<S>* ds = dscores + row * cols;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) ds[j] = math::softmax_dscore_stored<S>(p[j], dp[j], dot);
}

// Rows of up to 128 keys get 128 threads (seq 128 is the common case); longer rows 256.
int threads_for(int64_t cols) { return cols <= 128 ? 128 : kThreads; }

}  // namespace

void launch_softmax_forward(math::Storage storage, void* probs, const void* scores, int64_t rows, int64_t cols,
                            const int32_t* keep, int64_t heads, int64_t seq, bool causal, cudaStream_t stream) {
  if (rows == 0) return;
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    softmax_forward_kernel<S><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
        static_cast<Elem<S>*>(probs), static_cast<const Elem<S>*>(scores), cols, keep, heads, seq, causal);
  });
}

void launch_softmax_backward(math::Storage storage, void* dscores, const void* dprobs, const void* probs,
                             int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0) return;
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    softmax_backward_kernel<S><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
        static_cast<Elem<S>*>(dscores), static_cast<const Elem<S>*>(dprobs), static_cast<const Elem<S>*>(probs),
        cols);
  });
}

}  // namespace ptsim::runtime::cuda
