// tests/cuda_emu/block_scheduler.hpp — runs one CUDA thread block on the CPU (docs/cuda-emulation.md): each
// thread is a Boost.Context fiber with its own small stack; __syncthreads() and the warp shuffles are
// barriers at which a fiber hands control back to the scheduler. Threads run in order until they block, so a
// block's result does not depend on timing. A barrier that can never complete (a shuffle some lane of its
// mask never reaches, a __syncthreads some thread skips while another waits at a shuffle) is a KernelError
// naming it.
#pragma once
#include <vector_types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>

namespace cuda_emu {

// A kernel did something the emulator cannot run on or that CUDA leaves undefined (__trap, a divergent
// shuffle, a bad launch): thrown out of the launch, with what happened and where.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr unsigned kWarpSize = 32;

// Runs body once per thread of a block of `block` threads (x fastest), each as a fiber; returns when every
// thread has returned. Rethrows the first exception a thread threw, after unwinding the block's other threads.
void run_block(dim3 block, const std::function<void()>& body);

// The calling thread's threadIdx and linear index (x + y·bx + z·bx·by) within the running block.
const uint3& current_thread_index();
unsigned current_linear_thread();

// __syncthreads(): waits until every thread of the block that has not returned is here.
void sync_block();

// One shuffle step: lane sends `value`, and receives the value lane `source` sent (its own when source is
// outside [0, 32)). Every lane named in mask must arrive with the same mask before any lane goes on.
uint64_t warp_exchange(unsigned mask, uint64_t value, int source);

}  // namespace cuda_emu
