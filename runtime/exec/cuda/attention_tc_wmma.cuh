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

#include "runtime/exec/math/attention_tc_backward_tiles.hpp"
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
  using Layout = math::attention_tc::Layout;
  __device__ static float to_float(E x) { return Convert16<E>::to_float(x); }
  __device__ static E from_float(float x) { return Convert16<E>::from_float(x); }
  __device__ static void sync() { __syncthreads(); }

  // acc += A·B over k in 16-wide steps. k-block x of a row-major A starts at column x (a_step 1), of a stored
  // Aᵀ (column-major A) at row x of the storage (a_step lda); B's likewise (b_step ldb row-major, 1 for Bᵀ).
  template <class ALayout, class BLayout>
  __device__ static void accumulate_k(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>& acc,
                                      const E* A, int lda, int a_step, const E* B, int ldb, int b_step, int k) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, E, ALayout> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, E, BLayout> b;
    for (int x = 0; x < k; x += 16) {
      wmma::load_matrix_sync(a, A + static_cast<int64_t>(x) * a_step, static_cast<unsigned>(lda));
      wmma::load_matrix_sync(b, B + static_cast<int64_t>(x) * b_step, static_cast<unsigned>(ldb));
      wmma::mma_sync(acc, a, b, acc);
    }
  }

  // C (16×16, fp32, row-major ldc) (+)= A·B, A 16×k (row-major, or Aᵀ k×16 row-major), B k×16 (row-major, or
  // Bᵀ 16×k row-major).
  __device__ static void block_product(float* C, int ldc, const E* A, int lda, Layout a_layout, const E* B, int ldb,
                                       Layout b_layout, int k, bool accumulate) {
    using namespace nvcuda;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    if (accumulate)
      wmma::load_matrix_sync(acc, C, static_cast<unsigned>(ldc), wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    const bool a_rows = a_layout == Layout::kRowMajor, b_rows = b_layout == Layout::kRowMajor;
    if (a_rows && b_rows)
      accumulate_k<wmma::row_major, wmma::row_major>(acc, A, lda, 1, B, ldb, ldb, k);
    else if (a_rows)
      accumulate_k<wmma::row_major, wmma::col_major>(acc, A, lda, 1, B, ldb, 1, k);
    else if (b_rows)
      accumulate_k<wmma::col_major, wmma::row_major>(acc, A, lda, lda, B, ldb, ldb, k);
    else
      accumulate_k<wmma::col_major, wmma::col_major>(acc, A, lda, lda, B, ldb, 1, k);
    wmma::store_matrix_sync(C, acc, static_cast<unsigned>(ldc), wmma::mem_row_major);
  }
};

}  // namespace ptsim::runtime::cuda
