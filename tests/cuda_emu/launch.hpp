// tests/cuda_emu/launch.hpp — kernel launches on the CPU (docs/cuda-emulation.md). rewrite_launches.py turns
// `kernel<<<grid, block, shmem, stream>>>(args)` into `::cuda_emu::launch(kernel_entry(kernel), grid, block,
// shmem, stream, [&] { kernel(args); })`: the launch checks the geometry as CUDA does (a bad one is
// cudaErrorInvalidConfiguration for cudaGetLastError, and nothing runs) and the dynamic shared memory against
// the kernel's own limit (48 KiB unless cudaFuncSetAttribute raised it for that kernel; more is
// cudaErrorInvalidValue, as CUDA reports it, and nothing runs), then runs the blocks one after another, x fastest, each block's
// threads as fibers (block_scheduler.hpp). The launch returns when the kernel has finished: streams are
// synchronous. blockIdx / blockDim / gridDim read the running launch's values.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace cuda_emu {

const uint3& block_index();
const dim3& block_dim();
const dim3& grid_dim();
// The running launch's dynamic shared memory (`extern __shared__`, rewritten by rewrite_launches.py).
void* dynamic_shared_memory();
// Static `__shared__` storage (one `static` object per kernel here) starts each block as 0xFF bytes, as the
// dynamic memory does: rewrite_launches.py puts this call after every static __shared__ declaration; the
// first thread of a block to pass it fills the object, later threads of that block do not (a kernel's
// threads all pass the declaration before they can name the object, and thread 0 runs first).
void poison_static_shared(void* object, size_t bytes);

// `kernel`: the launched function's address (what cudaFuncSetAttribute is given), or null where the rewrite
// cannot name it (a kernel template whose arguments the call deduces): that launch gets the default limit.
void run_grid(dim3 grid, dim3 block, size_t dynamic_shared_bytes, const std::function<void()>& thread_body,
              const void* kernel = nullptr);

// A kernel's address as cudaFuncSetAttribute takes it (the function, or a pointer to one).
template <class F>
const void* kernel_entry(F* kernel) {
  return reinterpret_cast<const void*>(kernel);
}

template <class ThreadBody>
void launch(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes, cudaStream_t,
            ThreadBody&& thread_body) {
  run_grid(grid, block, dynamic_shared_bytes, std::function<void()>(thread_body), kernel);
}

}  // namespace cuda_emu
