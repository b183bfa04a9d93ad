// runtime/exec/cuda/dropout.cu — dropout forward/backward with the shared counter-based mask
// (dropout_mask.hpp: the same keep bits as the CPU backend for the same key) and the shared scale/apply
// (math/activation_math.hpp).
#include <algorithm>

#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/activation_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void dropout_forward_kernel(float* y, uint8_t* mask, const float* x, int64_t n, uint64_t key,
                                       uint64_t threshold, float scale, bool drop_all) {
  PTSIM_GRID_STRIDE(i, n) {
    const bool keep = !drop_all && dropout_keep(key, static_cast<uint64_t>(i), threshold);
    mask[i] = keep ? 1 : 0;
    y[i] = math::dropout_apply(x[i], keep, scale);
  }
}

__global__ void dropout_backward_kernel(float* dx, const float* dy, const uint8_t* mask, int64_t n, float scale) {
  PTSIM_GRID_STRIDE(i, n) dx[i] = math::dropout_apply(dy[i], mask[i] != 0, scale);
}

}  // namespace

void launch_dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, double p, uint64_t key,
                            cudaStream_t stream) {
  const bool drop_all = p >= 1.0;
  const uint64_t threshold = drop_all ? 0 : dropout_threshold(std::max(p, 0.0));
  dropout_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, mask, x, n, key, threshold,
                                                                 math::dropout_scale<float>(p), drop_all);
}

void launch_dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, double p,
                             cudaStream_t stream) {
  dropout_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, dy, mask, n, math::dropout_scale<float>(p));
}

}  // namespace ptsim::runtime::cuda
