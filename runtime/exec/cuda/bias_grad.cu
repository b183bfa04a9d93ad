// runtime/exec/cuda/bias_grad.cu — dbias += column sums of dy (OpKind::bias_grad), deterministic
// (column_sums.cuh: fixed row chunks added in order, no atomics): on fp32 dy and dbias, and on 16-bit ones
// directly (dy widened per element, the stored dbias widened, the fp32 sum rounded once: the op boundary's
// bits, math/column_sum_math.hpp).
#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/rows.hpp"

namespace ptsim::runtime::cuda {

size_t column_sums_scratch_bytes(int64_t M, int64_t N) {
  return static_cast<size_t>(column_sum_chunks(M) * N) * sizeof(float);
}

void launch_bias_grad(void* dbias, const void* dy, int64_t M, int64_t N, math::Storage storage, void* scratch,
                      cudaStream_t stream) {
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    column_sums_add<S>(static_cast<math::Elem<S>*>(dbias), static_cast<float*>(scratch),
                       math::StoredColumnTerm<S>{static_cast<const math::Elem<S>*>(dy), N}, M, N, stream);
  });
}

}  // namespace ptsim::runtime::cuda
