// tests/cuda_emu/cuda_emu_prelude.hpp — force-included (g++ -include) before every kernel file the emulator
// compiles (docs/cuda-emulation.md, "Compiling the kernels"). It first includes the toolkit's cuda_fp16.h and
// cuda_bf16.h in their host form (correctly rounded conversions and operators on the CPU), then defines the
// device-side language: __global__, __shared__ (a static: one instance the block's fibers share; blocks run
// one at a time), __syncthreads, threadIdx & co., the shuffles, __trap, atomicCAS; and last __CUDACC__ and
// __CUDA_ARCH__ = 800, so the project's headers take their device branches (PTSIM_HD, device_error.hpp,
// half_bits.hpp). `cuda` is renamed ptsim_emulated_cuda: the emulated kernels live in
// ptsim::runtime::ptsim_emulated_cuda, beside a real CUDA backend in the same binary.
#pragma once
#include <cuda_runtime_api.h>  // first: it keeps the toolkit's runtime API header out
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "block_scheduler.hpp"
#include "launch.hpp"
#include "warp_intrinsics.hpp"

#undef __global__
#undef __shared__
#define __global__
#define __shared__ static
#define __launch_bounds__(...)

#define threadIdx (::cuda_emu::current_thread_index())
#define blockIdx (::cuda_emu::block_index())
#define blockDim (::cuda_emu::block_dim())
#define gridDim (::cuda_emu::grid_dim())
#define __syncthreads() ::cuda_emu::sync_block()

inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }

[[noreturn]] inline void __trap() {
  throw ::cuda_emu::KernelError("__trap() in thread " + std::to_string(::cuda_emu::current_linear_thread()) +
                                " of block " + std::to_string(blockIdx.x));
}

// Threads run one at a time, so an atomic is a plain read-modify-write.
inline int atomicCAS(int* address, int compare, int value) {
  const int old = *address;
  if (old == compare) *address = value;
  return old;
}

#define __CUDACC__ 1
#define __CUDA_ARCH__ 800
#define cuda ptsim_emulated_cuda
