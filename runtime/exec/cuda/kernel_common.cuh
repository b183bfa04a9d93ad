// runtime/exec/cuda/kernel_common.cuh — what the CUDA kernels share (nvcc only): grid sizes for
// grid-stride loops and deterministic block reductions (a fixed shuffle tree within each warp, then the
// warps' results in warp order: the same bits on every run for a given block size).
// Not here: any op's maths (runtime/exec/math/*.hpp).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ptsim::runtime::cuda {

inline constexpr int kThreads = 256;  // block size of the elementwise and row kernels

// Blocks for a grid-stride loop over n elements (at most 65,535·32, enough to fill any GPU).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  const int64_t cap = int64_t{65535} * 32;
  return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}

#define PTSIM_GRID_STRIDE(i, n)                                                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

template <class T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct MaxOp {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

// Reduces v over the block with op (every thread gets the result). blockDim.x must be a multiple of 32,
// at most 1024; `shared` holds 32 values. Deterministic: the tree's shape depends only on blockDim.x.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T* shared) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();  // `shared` may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = shared[0];
  for (unsigned w = 1; w < warps; ++w) r = op(r, shared[w]);
  return r;
}

}  // namespace ptsim::runtime::cuda
