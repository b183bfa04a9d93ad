// runtime/exec/math/column_sum_math.hpp — the per-column steps of the CUDA backend's deterministic column
// sums (cuda/column_sums.cuh: bias_grad, LayerNorm's dgamma/dbeta), as PTSIM_HD functions so the cpu suite
// runs the very code the kernels run (tests/runtime/exec/test_column_sum_math.cpp). The order: rows in
// fixed runs of kRowsPerChunk, each run summed in fp32 in row order from 0 (the partial of chunk c), then
// dst + partial[0] + partial[1] + … in chunk order, in fp32.
// 16-bit storage (bias_grad on a bf16/fp16 dy and dbias, CudaBackend::runs_16bit_natively): each dy element
// is widened exactly, the stored dbias is widened exactly, the sum above is formed in fp32 and rounded to
// the 16-bit type once — the bits the op boundary gives (widen dy and dbias into fp32 scratch, the fp32
// column sums, narrow: cuda_16bit_boundary.hpp). Conversions: half_bits.hpp. docs/cuda-backend.md,
// "16-bit storage".
#pragma once
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/exec/math/half_bits.hpp"

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

// A 16-bit element (bf16 or IEEE binary16 bits) as fp32, exactly.
PTSIM_HD inline float widen_16bit_element(uint16_t h, bool bf16) { return bf16 ? bf16_to_float(h) : f16_to_float(h); }
// fp32 → the nearest 16-bit value (ties to even), as the boundary's narrowing rounds.
PTSIM_HD inline uint16_t narrow_16bit_element(float x, bool bf16) { return bf16 ? float_to_bf16(x) : float_to_f16(x); }

// dy (M, N) row-major of 16-bit storage, read widened: the term of a bias gradient on 16-bit dy.
struct Widened16Term {
  const uint16_t* dy;
  int64_t N;
  bool bf16;
  PTSIM_HD float operator()(int64_t m, int64_t n) const { return widen_16bit_element(dy[m * N + n], bf16); }
};

// The typed finishing step: the stored 16-bit dbias element widened, the fp32 partials added in chunk
// order, rounded to 16 bits once.
PTSIM_HD inline uint16_t column_finish_16bit(uint16_t stored, bool bf16, const float* partial, int64_t chunks,
                                             int64_t N, int64_t n) {
  return narrow_16bit_element(column_finish(widen_16bit_element(stored, bf16), partial, chunks, N, n), bf16);
}

}  // namespace ptsim::runtime::math
