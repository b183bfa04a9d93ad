// tests/cuda_emu/emulator_probe_kernels.cu — a kernel that reads its static __shared__ memory before writing
// it (the bug the emulator's per-block 0xFF fill makes visible), compiled through rewrite_launches.py as the
// backend's kernels are, so the test covers the rewrite too (emulator_probe_kernels.hpp).
#include "emulator_probe_kernels.hpp"

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

}  // namespace

void launch_static_shared_probe(uint32_t* first_reads, unsigned blocks) {
  static_shared_probe_kernel<<<blocks, 2>>>(first_reads);
}

}  // namespace cuda_emu_probe
