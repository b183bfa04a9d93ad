// runtime/exec/cuda/activation.cu — GELU (erf and tanh forms) and tanh, forward and backward, one thread
// per element over the shared formulas (math/activation_math.hpp), each op one step template
// (elementwise_steps.hpp) instantiated for fp32, bf16 and fp16 storage.
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/elementwise_kernel.cuh"

namespace ptsim::runtime::cuda {

void launch_gelu_forward(void* y, const void* x, int64_t n, bool tanh_form, math::Storage storage,
                         cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(GeluForwardStep<S>{typed<S>(y), typed<S>(x), tanh_form}, n, stream);
  });
}
void launch_gelu_backward(void* dx, const void* dy, const void* x, int64_t n, bool tanh_form, math::Storage storage,
                          cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(GeluBackwardStep<S>{typed<S>(dx), typed<S>(dy), typed<S>(x), tanh_form}, n, stream);
  });
}
void launch_tanh_forward(void* y, const void* x, int64_t n, math::Storage storage, cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(TanhForwardStep<S>{typed<S>(y), typed<S>(x)}, n, stream);
  });
}
void launch_tanh_backward(void* dx, const void* dy, const void* y, int64_t n, math::Storage storage,
                          cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(TanhBackwardStep<S>{typed<S>(dx), typed<S>(dy), typed<S>(y)}, n, stream);
  });
}

}  // namespace ptsim::runtime::cuda
