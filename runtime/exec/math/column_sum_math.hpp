// runtime/exec/math/column_sum_math.hpp — the per-column steps of the CUDA backend's deterministic column
// sums (cuda/column_sums.cuh: bias_grad, LayerNorm's dgamma/dbeta), as PTSIM_HD functions so the cpu suite
// runs the very code the kernels run (tests/runtime/exec/test_column_sum_math.cpp). The order: rows in
// fixed runs of kRowsPerChunk, each run summed in fp32 in row order from 0 (the partial of chunk c), then
// dst + partial[0] + partial[1] + … in chunk order, in fp32.
// 16-bit storage (bias_grad on a bf16/fp16 dy and dbias, CudaBackend::runs_16bit_natively; LayerNorm's
// dgamma/dbeta): each dy element is widened exactly, the stored dst is widened exactly, the sum above is
// formed in fp32 and rounded to the 16-bit type once — the bits the op boundary gives (widen dy and dbias
// into fp32 scratch, the fp32 column sums, narrow: cuda_16bit_boundary.hpp). Loads and stores: storage.hpp. docs/cuda-backend.md,
// "16-bit storage".
#pragma once
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/exec/math/storage.hpp"  // defines: Elem, the storage tags

namespace ptsim::runtime::math {

inline constexpr int64_t kRowsPerChunk = 128;

PTSIM_HD inline int64_t column_sum_chunks(int64_t M) { return (M + kRowsPerChunk - 1) / kRowsPerChunk; }

// Chunk `chunk`'s partial of column n: Σ term(m, n) over its rows, in row order, fp32, from 0.
template <class Term>
PTSIM_HD inline float column_chunk_sum(const Term& term, int64_t chunk, int64_t M, int64_t n) {
  const int64_t begin = chunk * kRowsPerChunk;
  const int64_t end = begin + kRowsPerChunk < M ? begin + kRowsPerChunk : M;
  float s = 0.0f;
  for (int64_t m = begin; m < end; ++m) s += term(m, n);
  return s;
}

// dst + partial[0·N + n] + partial[1·N + n] + … (chunks of them), in chunk order, fp32.
PTSIM_HD inline float column_finish(float dst, const float* partial, int64_t chunks, int64_t N, int64_t n) {
  for (int64_t c = 0; c < chunks; ++c) dst += partial[c * N + n];
  return dst;
}

// dy (M, N) row-major in storage S, each element loaded (widened exactly for 16 bits): the term of a bias
// gradient (bias_grad.cu) and of LayerNorm's dbeta (layernorm.cu).
template <class S>
struct StoredColumnTerm {
  const Elem<S>* dy;
  int64_t N;
  PTSIM_HD float operator()(int64_t m, int64_t n) const { return S::load(dy, m * N + n); }
};

// The typed finishing step: the stored dst element loaded, the fp32 partials added in chunk order, stored
// once (for fp32 storage exactly column_finish).
template <class S>
PTSIM_HD Elem<S> column_finish_stored(Elem<S> stored, const float* partial, int64_t chunks, int64_t N, int64_t n) {
  return S::store(column_finish(S::load(stored), partial, chunks, N, n));
}

}  // namespace ptsim::runtime::math
