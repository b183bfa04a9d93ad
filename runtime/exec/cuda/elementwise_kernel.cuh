// runtime/exec/cuda/elementwise_kernel.cuh — the one grid-stride kernel every elementwise step
// (elementwise_steps.hpp) runs in, and the typed pointers its launchers pass; with math/storage.hpp's
// with_storage each op's launcher instantiates its step for fp32, bf16 and fp16 storage. nvcc only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/exec/cuda/elementwise_steps.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {

template <class Step>
__global__ void elementwise_kernel(Step step, int64_t n) {
  PTSIM_GRID_STRIDE(i, n) step(i);
}

// step(i) for every i in [0, n), on `stream`.
template <class Step>
void launch_elementwise(const Step& step, int64_t n, cudaStream_t stream) {
  elementwise_kernel<<<blocks_for(n), kThreads, 0, stream>>>(step, n);
}

// A storage-typed pointer from a launcher's untyped one.
template <class S>
Elem<S>* typed(void* p) {
  return static_cast<Elem<S>*>(p);
}
template <class S>
const Elem<S>* typed(const void* p) {
  return static_cast<const Elem<S>*>(p);
}

}  // namespace ptsim::runtime::cuda
