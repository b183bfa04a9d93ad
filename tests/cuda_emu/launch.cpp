// tests/cuda_emu/launch.cpp — a launch's checks and its blocks, one after another (launch.hpp).
#include "launch.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <unordered_map>

#include "block_scheduler.hpp"

namespace cuda_emu {
namespace {

// Dynamic shared memory's alignment: at least any `extern __shared__ __align__(n)` asks for (the tensor-core
// attention's tiles need 32 bytes for WMMA), as cudaMalloc's 256.
constexpr std::align_val_t kSharedAlignment{256};
struct AlignedDelete {
  void operator()(unsigned char* p) const { ::operator delete[](p, kSharedAlignment); }
};

struct RunningLaunch {
  dim3 grid{}, block{};
  uint3 block_index{};
  std::unique_ptr<unsigned char[], AlignedDelete> shared;
  size_t shared_bytes = 0;
  bool active = false;
};
thread_local RunningLaunch running;
// Which block (a serial number, counting every block of every launch) last filled each static __shared__ object.
thread_local uint64_t block_serial = 0;
thread_local std::unordered_map<void*, uint64_t> static_shared_filled_in;

// CUDA's limits on a launch (sm_80): at most 1024 threads a block (x, y ≤ 1024, z ≤ 64), grid x < 2³¹,
// grid y, z ≤ 65535, dynamic shared memory within the device's opt-in maximum.
bool valid_geometry(dim3 grid, dim3 block, size_t shared) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) return false;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return false;
  return shared <= max_dynamic_shared_bytes();
}

const RunningLaunch& active_launch() {
  if (!running.active) throw KernelError("blockIdx/blockDim/gridDim read outside a kernel");
  return running;
}

}  // namespace

const uint3& block_index() { return active_launch().block_index; }
const dim3& block_dim() { return active_launch().block; }
const dim3& grid_dim() { return active_launch().grid; }
void* dynamic_shared_memory() { return active_launch().shared.get(); }

void poison_static_shared(void* object, size_t bytes) {
  (void)active_launch();
  uint64_t& filled = static_shared_filled_in[object];
  if (filled == block_serial) return;
  std::memset(object, 0xFF, bytes);
  filled = block_serial;
}

void run_grid(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& thread_body,
              const void* kernel) {
  if (running.active) throw KernelError("a kernel launched another kernel (dynamic parallelism is not emulated)");
  if (!valid_geometry(grid, block, shared_bytes)) return set_last_error(cudaErrorInvalidConfiguration);
  // Past 48 KiB a kernel needs its own opt-in (cudaFuncSetAttribute): a GPU refuses the launch otherwise.
  if (shared_bytes > dynamic_shared_limit(kernel)) return set_last_error(cudaErrorInvalidValue);
  running.grid = grid;
  running.block = block;
  if (running.shared_bytes < shared_bytes) {
    running.shared.reset(static_cast<unsigned char*>(::operator new[](shared_bytes, kSharedAlignment)));
    running.shared_bytes = shared_bytes;
  }
  running.active = true;
  try {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          running.block_index = uint3{x, y, z};
          ++block_serial;  // serial 0 is never a block's: every static object is filled at its first block
          // Dynamic shared memory starts each block as 0xFF bytes (NaN floats, -1 integers), not the previous
          // block's values: a kernel that reads it before writing it gives visibly wrong results.
          if (shared_bytes > 0) std::memset(running.shared.get(), 0xFF, shared_bytes);
          run_block(block, thread_body);
        }
  } catch (...) {
    running.active = false;
    throw;
  }
  running.active = false;
}

}  // namespace cuda_emu
