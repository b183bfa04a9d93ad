// runtime/exec/cuda/column_sums.cuh — deterministic column sums over a row-major (M, N) matrix without
// float atomics (bias_grad.cu, layernorm.cu): pass 1 sums fixed runs of kRowsPerChunk rows per column into
// partial[chunk][n]; pass 2 adds dst[n] + partial[0][n] + partial[1][n] + … in chunk order. The term per
// element is a functor (dy itself for bias_grad, dy·x̂ for LayerNorm's dgamma). The per-column steps are
// math/column_sum_math.hpp's (PTSIM_HD, run by the cpu suite too); pass 2 is typed on dst's storage
// (math/storage.hpp: a 16-bit dst widened, summed in fp32, rounded once). nvcc only.
#pragma once
#include <cstdint>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/math/column_sum_math.hpp"

namespace ptsim::runtime::cuda {

using math::column_sum_chunks;
using math::kRowsPerChunk;

template <class Term>
__global__ void column_partial_kernel(float* partial, Term term, int64_t M, int64_t N) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= N) return;
  partial[blockIdx.y * N + n] = math::column_chunk_sum(term, blockIdx.y, M, n);
}

// dst holds storage S (fp32, or 16-bit bits: widened, the partials added in fp32, rounded once). A template,
// so each .cu including this header gets its own instantiation.
template <class S>
__global__ void column_finish_kernel(math::Elem<S>* dst, const float* partial, int64_t chunks, int64_t N) {
  PTSIM_GRID_STRIDE(n, N) { dst[n] = math::column_finish_stored<S>(dst[n], partial, chunks, N, n); }
}

template <class Term>
void column_partials(float* partial, Term term, int64_t M, int64_t N, cudaStream_t stream) {
  const int64_t chunks = column_sum_chunks(M);
  if (chunks == 0 || N == 0) return;
  const dim3 grid(static_cast<unsigned>((N + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
  column_partial_kernel<<<grid, kThreads, 0, stream>>>(partial, term, M, N);
}

// dst (N, storage S) += Σ_m term(m, n); partial holds column_sum_chunks(M)·N floats.
template <class S, class Term>
void column_sums_add(math::Elem<S>* dst, float* partial, Term term, int64_t M, int64_t N, cudaStream_t stream) {
  column_partials(partial, term, M, N, stream);
  column_finish_kernel<S><<<blocks_for(N), kThreads, 0, stream>>>(dst, partial, column_sum_chunks(M), N);
}

}  // namespace ptsim::runtime::cuda
