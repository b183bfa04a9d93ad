// runtime/exec/cuda/dropout.cu — dropout forward/backward with the shared counter-based mask
// (dropout_mask.hpp: the same keep bits as the CPU backend for the same key) and the shared scale/apply
// (math/activation_math.hpp), each one step template (elementwise_steps.hpp) for fp32, bf16, fp16 storage.
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/elementwise_kernel.cuh"

namespace ptsim::runtime::cuda {

void launch_dropout_forward(void* y, uint8_t* mask, const void* x, int64_t n, double p, uint64_t key,
                            math::Storage storage, cudaStream_t stream) {
  const DropoutConstants c = dropout_constants(p);
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(DropoutForwardStep<S>{typed<S>(y), mask, typed<S>(x), key, c.threshold, c.scale, c.drop_all},
                       n, stream);
  });
}

void launch_dropout_backward(void* dx, const void* dy, const uint8_t* mask, int64_t n, double p,
                             math::Storage storage, cudaStream_t stream) {
  const float scale = dropout_constants(p).scale;
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(DropoutBackwardStep<S>{typed<S>(dx), typed<S>(dy), mask, scale}, n, stream);
  });
}

}  // namespace ptsim::runtime::cuda
