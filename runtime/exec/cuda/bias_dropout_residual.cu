// runtime/exec/cuda/bias_dropout_residual.cu — OpKind::bias_dropout_residual and its backward (Megatron-LM's
// bias_dropout_add): out = residual + dropout(y + bias) in one elementwise pass; the backward writes
// dy = dout·mask/(1−p) while it sums dy's columns for dbias (column_sums.cuh's deterministic chunks: one
// pass over dout, then the chunk totals in order). Masks: dropout_mask.hpp at the flat index, as dropout.cu.
#include <algorithm>

#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/fused_dropout.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void bias_dropout_residual_kernel(float* out, uint8_t* mask, const float* y, const float* bias,
                                             const float* residual, int64_t total, int64_t N, uint64_t key,
                                             uint64_t threshold, float scale, bool drop_all) {
  PTSIM_GRID_STRIDE(i, total) {
    // No mask output: the graph has no dropout here (keep all, scale 1).
    const bool keep = mask == nullptr || (!drop_all && dropout_keep(key, static_cast<uint64_t>(i), threshold));
    if (mask != nullptr) mask[i] = keep ? 1 : 0;
    out[i] = math::bias_dropout_residual_value(y[i], bias[i % N], residual[i], keep, scale);
  }
}

// The column-sum term that also stores dy: each (m, n) is visited exactly once by column_partial_kernel.
struct DropoutBackwardTerm {
  float* dy;
  const float* dout;
  const uint8_t* mask;
  float scale;
  int64_t N;
  __device__ float operator()(int64_t m, int64_t n) const {
    const int64_t i = m * N + n;
    const float v = math::dropout_apply(dout[i], mask == nullptr || mask[i] != 0, scale);
    dy[i] = v;
    return v;
  }
};

}  // namespace

void launch_bias_dropout_residual_forward(float* out, uint8_t* mask, const float* y, const float* bias,
                                          const float* residual, int64_t M, int64_t N, double p, uint64_t key,
                                          cudaStream_t stream) {
  const int64_t total = M * N;
  if (total == 0) return;
  const bool drop_all = mask != nullptr && p >= 1.0;
  const uint64_t threshold = mask == nullptr || drop_all ? 0 : dropout_threshold(std::max(p, 0.0));
  const float scale = mask == nullptr ? 1.0f : math::dropout_scale<float>(p);
  bias_dropout_residual_kernel<<<blocks_for(total), kThreads, 0, stream>>>(out, mask, y, bias, residual, total, N,
                                                                           key, threshold, scale, drop_all);
}

size_t bias_dropout_residual_backward_scratch_bytes(int64_t M, int64_t N) {
  return static_cast<size_t>(column_sum_chunks(M) * N) * sizeof(float);
}

void launch_bias_dropout_residual_backward(float* dy, float* dbias, const float* dout, const uint8_t* mask,
                                           int64_t M, int64_t N, double p, void* scratch, cudaStream_t stream) {
  const float scale = mask == nullptr ? 1.0f : math::dropout_scale<float>(p);
  column_sums_add(dbias, static_cast<float*>(scratch), DropoutBackwardTerm{dy, dout, mask, scale, N}, M, N, stream);
}

}  // namespace ptsim::runtime::cuda
