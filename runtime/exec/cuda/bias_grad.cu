// runtime/exec/cuda/bias_grad.cu — dbias += column sums of dy (OpKind::bias_grad), deterministic
// (column_sums.cuh: fixed row chunks added in order, no atomics): on fp32 dy and dbias, and on 16-bit ones
// directly (dy widened per element, the stored dbias widened, the fp32 sum rounded once: the op boundary's
// bits, math/column_sum_math.hpp).
#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/rows.hpp"

namespace ptsim::runtime::cuda {
namespace {
struct DyTerm {
  const float* dy;
  int64_t N;
  __device__ float operator()(int64_t m, int64_t n) const { return dy[m * N + n]; }
};
}  // namespace

size_t column_sums_scratch_bytes(int64_t M, int64_t N) {
  return static_cast<size_t>(column_sum_chunks(M) * N) * sizeof(float);
}

void launch_bias_grad(float* dbias, const float* dy, int64_t M, int64_t N, void* scratch, cudaStream_t stream) {
  column_sums_add(dbias, static_cast<float*>(scratch), DyTerm{dy, N}, M, N, stream);
}

void launch_bias_grad_16bit(uint16_t* dbias, const uint16_t* dy, int64_t M, int64_t N, bool bf16, void* scratch,
                            cudaStream_t stream) {
  column_sums_add_16bit(dbias, bf16, static_cast<float*>(scratch), math::Widened16Term{dy, N, bf16}, M, N, stream);
}

}  // namespace ptsim::runtime::cuda
