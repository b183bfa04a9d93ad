// runtime/exec/cuda/softmax_dropout.cu — OpKind::softmax_dropout and its backward: the attention softmax
// (softmax.cu's masks and deterministic block reductions, one block per row) with the dropout of its
// probabilities in the same kernel; the backward applies the dropout mask inside the softmax backward's
// dot and output loops. Masks: dropout_mask.hpp at the flat element index, as the unfused dropout op.
// One kernel per pass over the storage of scores/probs/gradients (S: math/row_storage.hpp — fp32, or 16-bit
// loaded exactly and stored rounded once, the op boundary's bits); the u8 mask as it is.
#include <algorithm>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {
namespace {

using math::Elem;

struct DropoutArgs {
  uint64_t key;
  uint64_t threshold;
  float scale;
  bool drop_all;
};

template <class S>
__global__ void softmax_dropout_forward_kernel(Elem<S>* dropped, Elem<S>* probs, uint8_t* mask, const Elem<S>* scores,
                                               int64_t cols, const int32_t* keep, int64_t heads, int64_t seq,
                                               bool causal, DropoutArgs drop) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* s = scores + row * cols;
  Elem<S>* p = probs + row * cols;
  Elem<S>* d = dropped + row * cols;
  uint8_t* mk = mask + row * cols;
  const int32_t* keep_row = math::softmax_keep_row(keep, row, heads, seq);
  const int64_t limit = math::softmax_key_limit(row, seq, cols, causal);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    if (math::softmax_key_allowed(j, limit, keep_row)) mx = fmaxf(mx, S::load(s[j]));
  mx = block_reduce(mx, MaxOp<float>{}, shared);
  float sum = 0.0f;
  if (mx != -INFINITY)
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      sum += math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(S::load(s[j]) - mx) : 0.0f;
  sum = block_reduce(sum, SumOp<float>{}, shared);
  const float inv = mx == -INFINITY ? 0.0f : 1.0f / sum;  // every key masked: attend to nothing
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e =
        mx != -INFINITY && math::softmax_key_allowed(j, limit, keep_row) ? math::exp_of(S::load(s[j]) - mx) : 0.0f;
    const float pj = e * inv;
    const bool kept = !drop.drop_all && dropout_keep(drop.key, static_cast<uint64_t>(row * cols + j), drop.threshold);
    p[j] = S::store(pj);
    mk[j] = kept ? 1 : 0;
    d[j] = S::store(math::dropout_apply(pj, kept, drop.scale));
  }
}

template <class S>
__global__ void softmax_dropout_backward_kernel(Elem<S>* dscores, const Elem<S>* ddropped, const Elem<S>* probs,
                                                const uint8_t* mask, int64_t cols, float scale) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* dd = ddropped + row * cols;
  const Elem<S>* p = probs + row * cols;
  const uint8_t* mk = mask + row * cols;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    dot += math::dropout_apply(S::load(dd[j]), mk[j] != 0, scale) * S::load(p[j]);
  dot = block_reduce(dot, SumOp<float>{}, shared);
  Elem<S>* ds = dscores + row * cols;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    ds[j] = math::softmax_dropout_dscore_stored<S>(p[j], dd[j], mk[j] != 0, scale, dot);
}

// As softmax.cu: rows of up to 128 keys get 128 threads (seq 128 is the common case); longer rows 256.
int threads_for(int64_t cols) { return cols <= 128 ? 128 : kThreads; }

}  // namespace

void launch_softmax_dropout_forward(math::Storage storage, void* dropped, void* probs, uint8_t* mask,
                                    const void* scores, int64_t rows, int64_t cols, const int32_t* keep,
                                    int64_t heads, int64_t seq, bool causal, double p, uint64_t key,
                                    cudaStream_t stream) {
  if (rows == 0) return;
  const bool drop_all = p >= 1.0;
  const DropoutArgs drop{key, drop_all ? 0 : dropout_threshold(std::max(p, 0.0)), math::dropout_scale<float>(p),
                         drop_all};
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    softmax_dropout_forward_kernel<S><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
        static_cast<Elem<S>*>(dropped), static_cast<Elem<S>*>(probs), mask, static_cast<const Elem<S>*>(scores), cols,
        keep, heads, seq, causal, drop);
  });
}

void launch_softmax_dropout_backward(math::Storage storage, void* dscores, const void* ddropped, const void* probs,
                                     const uint8_t* mask, int64_t rows, int64_t cols, double p, cudaStream_t stream) {
  if (rows == 0) return;
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    softmax_dropout_backward_kernel<S><<<static_cast<unsigned>(rows), threads_for(cols), 0, stream>>>(
        static_cast<Elem<S>*>(dscores), static_cast<const Elem<S>*>(ddropped), static_cast<const Elem<S>*>(probs),
        mask, cols, math::dropout_scale<float>(p));
  });
}

}  // namespace ptsim::runtime::cuda
