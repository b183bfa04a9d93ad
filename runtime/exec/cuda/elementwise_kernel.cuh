// runtime/exec/cuda/elementwise_kernel.cuh — the one grid-stride kernel every elementwise step
// (elementwise_steps.hpp) runs in, and the dispatch from an ElementStorage to its storage tag, so each op's
// launcher instantiates its step for fp32, bf16 and fp16 storage. nvcc only.
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

// f(tag) with the storage tag of `storage` (F32Storage, Bf16Storage or F16Storage).
template <class F>
void with_storage(ElementStorage storage, F&& f) {
  switch (storage) {
    case ElementStorage::f32: f(F32Storage{}); return;
    case ElementStorage::bf16: f(Bf16Storage{}); return;
    case ElementStorage::f16: f(F16Storage{}); return;
  }
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
