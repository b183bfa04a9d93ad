// runtime/exec/cuda/attention_tc_wmma.cuh — the device instantiation's primitives for the tensor-core fused
// attention's tile algorithm (math/attention_tc_tiles.hpp; nvcc only): the 16×16 fp32 block product C (+)=
// A·B on WMMA fragments (nvcuda::wmma, m16n16k16, A row-major, B row-major or — for Bᵀ stored as rows —
// column-major, fp32 accumulator loaded from and stored to shared memory row-major), 16-bit conversions
// (round to nearest even), and __syncthreads() between phases. The host counterpart: math/attention_tc_host_mma.hpp.
// bf16 fragments exist only from sm_80 (mma.h declares them for __CUDA_ARCH__ ≥ 800): kArchRuns says whether
// the architecture being compiled runs E, and the kernels compile to a trap where it does not (the launcher
// refuses bf16 on such a device first, with a message).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "runtime/exec/math/attention_tc_tiles.hpp"

namespace ptsim::runtime::cuda {

template <class E>
struct Convert16;
template <>
struct Convert16<__half> {
  __device__ static float to_float(__half x) { return __half2float(x); }
  __device__ static __half from_float(float x) { return __float2half_rn(x); }
};
template <>
struct Convert16<__nv_bfloat16> {
  __device__ static float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
};

// Whether the architecture this device pass compiles for has WMMA fragments of E.
template <class E>
inline constexpr bool kArchRuns = true;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
template <>
inline constexpr bool kArchRuns<__nv_bfloat16> = false;
#endif

template <class E>
struct WmmaMma {
  using Elem = E;
  using BLayout = math::attention_tc::BLayout;
  __device__ static float to_float(E x) { return Convert16<E>::to_float(x); }
  __device__ static E from_float(float x) { return Convert16<E>::from_float(x); }
  __device__ static void sync() { __syncthreads(); }

  template <class Layout>
  __device__ static void accumulate_k(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>& acc,
                                      const E* A, int lda, const E* B, int ldb, int k, int b_step) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, E, Layout> b;
    for (int x = 0; x < k; x += 16) {
      wmma::load_matrix_sync(a, A + x, static_cast<unsigned>(lda));
      wmma::load_matrix_sync(b, B + static_cast<int64_t>(x) * b_step, static_cast<unsigned>(ldb));
      wmma::mma_sync(acc, a, b, acc);
    }
  }

  // C (16×16, fp32, row-major ldc) (+)= A (16×k row-major) · B (k×16 row-major, or Bᵀ 16×k row-major).
  __device__ static void block_product(float* C, int ldc, const E* A, int lda, const E* B, int ldb, int k,
                                       BLayout layout, bool accumulate) {
    using namespace nvcuda;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    if (accumulate)
      wmma::load_matrix_sync(acc, C, static_cast<unsigned>(ldc), wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    if (layout == BLayout::kRowMajorB)
      accumulate_k<wmma::row_major>(acc, A, lda, B, ldb, k, ldb);  // k-block x starts at row x
    else
      accumulate_k<wmma::col_major>(acc, A, lda, B, ldb, k, 1);  // Bᵀ's rows are B's columns: k-block x at column x
    wmma::store_matrix_sync(C, acc, static_cast<unsigned>(ldc), wmma::mem_row_major);
  }
};

}  // namespace ptsim::runtime::cuda
