// tests/cuda_emu/warp_collective.hpp — a warp-collective operation's entry check (the WMMA shim's
// load/store/fill/mma "_sync" functions, include/mma.h): every one of the 32 lanes of the caller's warp must
// reach the same collective with the same arguments before any lane goes on. Built on the scheduler's warp
// exchange (block_scheduler.hpp): a lane that never arrives is the scheduler's divergent-warp error, a warp
// the block does not fill and arguments that differ from lane 0's are errors here.
#pragma once
#include <cstdint>
#include <string>

#include "block_scheduler.hpp"
#include "launch.hpp"

namespace cuda_emu {

// Folds one more argument into a collective's signature (what every lane must agree on). A 64-bit mix:
// two different argument lists colliding is as unlikely as a random 64-bit match.
inline uint64_t signature_add(uint64_t signature, uint64_t value) {
  uint64_t x = signature ^ (value + 0x9e3779b97f4a7c15ull + (signature << 6) + (signature >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

// Waits until all 32 lanes of the caller's warp are here; throws KernelError when the warp is not full or
// a lane's signature differs from lane 0's. `what` names the collective in the message.
inline void warp_collective(const char* what, uint64_t signature) {
  const dim3& b = block_dim();
  const unsigned threads = b.x * b.y * b.z, thread = current_linear_thread(), warp = thread / kWarpSize;
  if ((warp + 1) * kWarpSize > threads)
    throw KernelError(std::string(what) + ": warp " + std::to_string(warp) + " of a " + std::to_string(threads) +
                      "-thread block has " + std::to_string(threads - warp * kWarpSize) +
                      " lanes; a warp-collective operation needs all 32");
  const uint64_t lane0 = warp_exchange(0xffffffffu, signature, 0);
  if (lane0 != signature)
    throw KernelError(std::string(what) + ": lane " + std::to_string(thread % kWarpSize) + " of warp " +
                      std::to_string(warp) + " calls it with other arguments (or another collective) than lane 0; " +
                      "CUDA requires the same in every lane of the warp");
}

}  // namespace cuda_emu
