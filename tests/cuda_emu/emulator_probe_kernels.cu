// tests/cuda_emu/emulator_probe_kernels.cu — kernels that probe the emulator (emulator_probe_kernels.hpp): one
// that reads its static __shared__ memory before writing it (the bug the emulator's per-block 0xFF fill makes
// visible), and two that take dynamic shared memory (each kernel's own 48 KiB limit and opt-in), compiled
// through rewrite_launches.py as the backend's kernels are, so the tests cover the rewrite too.
#include "emulator_probe_kernels.hpp"

#include <cuda_runtime_api.h>

namespace cuda_emu_probe {
namespace {

__global__ void static_shared_probe_kernel(uint32_t* first_reads) {
  __shared__ uint32_t pair[2], single[1];  // two declarators on one line: both must be filled
  // thread 1 reads after thread 0 has passed the declaration: a per-thread fill would hide nothing
  if (threadIdx.x == 1) {
    first_reads[blockIdx.x * 3 + 0] = pair[0];
    first_reads[blockIdx.x * 3 + 1] = pair[1];
    first_reads[blockIdx.x * 3 + 2] = single[0];
    pair[0] = pair[1] = single[0] = blockIdx.x + 1;
  }
}

// Two instantiations, two kernels: each has its own dynamic shared memory limit.
template <int kWhich>
__global__ void dynamic_shared_probe_kernel(int* runs) {
  extern __shared__ unsigned char probe_bytes[];
  probe_bytes[0] = 1;
  runs[kWhich] += 1;
}

}  // namespace

cudaError_t launch_dynamic_shared_probe(int which, size_t bytes, int* runs) {
  (void)cudaGetLastError();
  if (which == 0)
    dynamic_shared_probe_kernel<0><<<1, 1, bytes>>>(runs);
  else
    dynamic_shared_probe_kernel<1><<<1, 1, bytes>>>(runs);
  return cudaGetLastError();
}

cudaError_t opt_in_dynamic_shared_probe(int which, int bytes) {
  return which == 0 ? cudaFuncSetAttribute(dynamic_shared_probe_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)
                    : cudaFuncSetAttribute(dynamic_shared_probe_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

void launch_static_shared_probe(uint32_t* first_reads, unsigned blocks) {
  static_shared_probe_kernel<<<blocks, 2>>>(first_reads);
}

}  // namespace cuda_emu_probe
