// runtime/exec/cuda/activation.cu — GELU (erf and tanh forms) and tanh, forward and backward, one thread
// per element over the shared formulas (math/activation_math.hpp).
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/activation_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void gelu_forward_kernel(float* y, const float* x, int64_t n, bool tanh_form) {
  PTSIM_GRID_STRIDE(i, n) y[i] = math::gelu_value(x[i], tanh_form);
}
__global__ void gelu_backward_kernel(float* dx, const float* dy, const float* x, int64_t n, bool tanh_form) {
  PTSIM_GRID_STRIDE(i, n) dx[i] = dy[i] * math::gelu_grad(x[i], tanh_form);
}
__global__ void tanh_forward_kernel(float* y, const float* x, int64_t n) {
  PTSIM_GRID_STRIDE(i, n) y[i] = math::tanh_of(x[i]);
}
__global__ void tanh_backward_kernel(float* dx, const float* dy, const float* y, int64_t n) {
  PTSIM_GRID_STRIDE(i, n) dx[i] = math::tanh_grad_from_output(dy[i], y[i]);
}

}  // namespace

void launch_gelu_forward(float* y, const float* x, int64_t n, bool tanh_form, cudaStream_t stream) {
  gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n, tanh_form);
}
void launch_gelu_backward(float* dx, const float* dy, const float* x, int64_t n, bool tanh_form,
                          cudaStream_t stream) {
  gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, dy, x, n, tanh_form);
}
void launch_tanh_forward(float* y, const float* x, int64_t n, cudaStream_t stream) {
  tanh_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}
void launch_tanh_backward(float* dx, const float* dy, const float* y, int64_t n, cudaStream_t stream) {
  tanh_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, dy, y, n);
}

}  // namespace ptsim::runtime::cuda
