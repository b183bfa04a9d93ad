// tests/cuda_emu/emulator_probe_kernels.hpp — kernels that exist only to test the emulator itself
// (emulator_probe_kernels.cu, rewritten by rewrite_launches.py like the backend's kernel files).
#pragma once
#include <cuda_runtime_api.h>  // defines: cudaError_t

#include <cstddef>
#include <cstdint>

namespace cuda_emu_probe {

// `blocks` blocks of 2 threads; thread 1 of block b writes into first_reads[b·3 + k] the 32-bit words it
// finds in two static __shared__ arrays (declared together: three words in all) before writing them.
void launch_static_shared_probe(uint32_t* first_reads, unsigned blocks);

// Launches probe kernel `which` (0 or 1: two distinct kernels) as one thread with `bytes` of dynamic shared
// memory; the kernel adds 1 to runs[which]. Returns the launch's error (cudaGetLastError after it).
cudaError_t launch_dynamic_shared_probe(int which, size_t bytes, int* runs);
// cudaFuncSetAttribute(probe kernel `which`, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes).
cudaError_t opt_in_dynamic_shared_probe(int which, int bytes);

}  // namespace cuda_emu_probe
