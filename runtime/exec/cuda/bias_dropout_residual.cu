// runtime/exec/cuda/bias_dropout_residual.cu — OpKind::bias_dropout_residual and its backward (Megatron-LM's
// bias_dropout_add): out = residual + dropout(y + bias) in one elementwise pass; the backward writes
// dy = dout·mask/(1−p) while it sums dy's columns for dbias (column_sums.cuh's deterministic chunks: one
// pass over dout, then the chunk totals in order onto dbias). Masks: dropout_mask.hpp at the flat index,
// as dropout.cu. Each step (elementwise_steps.hpp) for fp32, bf16 and fp16 storage; the column partial
// sums stay fp32 (the 16-bit dbias is read, summed in fp32 and stored once: column_sums.cuh's typed finishing pass).
#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/elementwise_kernel.cuh"
#include "runtime/exec/cuda/fused_dropout.hpp"

namespace ptsim::runtime::cuda {

void launch_bias_dropout_residual_forward(void* out, uint8_t* mask, const void* y, const void* bias,
                                          const void* residual, int64_t M, int64_t N, double p, uint64_t key,
                                          math::Storage storage, cudaStream_t stream) {
  const int64_t total = M * N;
  if (total == 0) return;
  const DropoutConstants c = fused_dropout_constants(mask != nullptr, p);
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    launch_elementwise(BiasDropoutResidualStep<S>{typed<S>(out), mask, typed<S>(y), typed<S>(bias), typed<S>(residual),
                                                  N, key, c.threshold, c.scale, c.drop_all},
                       total, stream);
  });
}

size_t bias_dropout_residual_backward_scratch_bytes(int64_t M, int64_t N) {
  return static_cast<size_t>(column_sum_chunks(M) * N) * sizeof(float);
}

void launch_bias_dropout_residual_backward(void* dy, void* dbias, const void* dout, const uint8_t* mask, int64_t M,
                                           int64_t N, double p, void* scratch, math::Storage storage,
                                           cudaStream_t stream) {
  const float scale = fused_dropout_constants(mask != nullptr, p).scale;
  float* partial = static_cast<float*>(scratch);
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    column_sums_add<S>(typed<S>(dbias), partial, DropoutBackwardTerm<S>{typed<S>(dy), typed<S>(dout), mask, scale, N},
                       M, N, stream);
  });
}

}  // namespace ptsim::runtime::cuda
