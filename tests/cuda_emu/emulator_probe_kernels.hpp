// tests/cuda_emu/emulator_probe_kernels.hpp — kernels that exist only to test the emulator itself
// (emulator_probe_kernels.cu, rewritten by rewrite_launches.py like the backend's kernel files).
#pragma once
#include <cstdint>

namespace cuda_emu_probe {

// `blocks` blocks of 2 threads; thread 1 of block b writes into first_reads[b·3 + k] the 32-bit words it
// finds in two static __shared__ arrays (declared together: three words in all) before writing them.
void launch_static_shared_probe(uint32_t* first_reads, unsigned blocks);

}  // namespace cuda_emu_probe
