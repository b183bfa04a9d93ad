// runtime/exec/cuda/heads.cu — split_heads / merge_heads: one thread per element of the (B·nh, S, d)
// side, its partner index in (B·S, nh·d) from math::heads_x_index (norm_math.hpp); one step template each
// (elementwise_steps.hpp) for fp32, bf16, fp16 storage.
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/elementwise_kernel.cuh"

namespace ptsim::runtime::cuda {

void launch_split_heads(void* y, const void* x, int64_t B, int64_t S, int64_t nh, int64_t d, math::Storage storage,
                        cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(SplitHeadsStep<T>{typed<T>(y), typed<T>(x), S, nh, d}, B * S * nh * d, stream);
  });
}
void launch_merge_heads(void* y, const void* x, int64_t B, int64_t S, int64_t nh, int64_t d, math::Storage storage,
                        cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise(MergeHeadsStep<T>{typed<T>(y), typed<T>(x), S, nh, d}, B * S * nh * d, stream);
  });
}

}  // namespace ptsim::runtime::cuda
