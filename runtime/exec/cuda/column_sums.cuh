// runtime/exec/cuda/column_sums.cuh — deterministic column sums over a row-major (M, N) matrix without
// float atomics (bias_grad.cu, layernorm.cu): pass 1 sums fixed runs of kRowsPerChunk rows per column into
// partial[chunk][n]; pass 2 adds dst[n] + partial[0][n] + partial[1][n] + … in chunk order. The term per
// element is a functor (dy itself for bias_grad, dy·x̂ for LayerNorm's dgamma). nvcc only.
#pragma once
#include <cstdint>

#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {

inline constexpr int64_t kRowsPerChunk = 128;

inline int64_t column_sum_chunks(int64_t M) { return (M + kRowsPerChunk - 1) / kRowsPerChunk; }

template <class Term>
__global__ void column_partial_kernel(float* partial, Term term, int64_t M, int64_t N) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * kRowsPerChunk;
  const int64_t end = begin + kRowsPerChunk < M ? begin + kRowsPerChunk : M;
  float s = 0.0f;
  for (int64_t m = begin; m < end; ++m) s += term(m, n);
  partial[blockIdx.y * N + n] = s;
}

template <class T>
__global__ void column_finish_kernel(T* dst, const T* partial, int64_t chunks, int64_t N) {
  PTSIM_GRID_STRIDE(n, N) {
    T s = dst[n];
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * N + n];
    dst[n] = s;
  }
}

// dst (N) += Σ_m term(m, n); partial holds column_sum_chunks(M)·N floats.
template <class Term>
void column_sums_add(float* dst, float* partial, Term term, int64_t M, int64_t N, cudaStream_t stream) {
  const int64_t chunks = column_sum_chunks(M);
  if (chunks > 0 && N > 0) {
    const dim3 grid(static_cast<unsigned>((N + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
    column_partial_kernel<<<grid, kThreads, 0, stream>>>(partial, term, M, N);
  }
  column_finish_kernel<float><<<blocks_for(N), kThreads, 0, stream>>>(dst, partial, chunks, N);
}

}  // namespace ptsim::runtime::cuda
