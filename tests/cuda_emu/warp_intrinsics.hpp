// tests/cuda_emu/warp_intrinsics.hpp — __shfl_xor_sync / __shfl_down_sync over the block scheduler's warp
// exchange (block_scheduler.hpp): the source lane is computed as the CUDA Programming Guide defines it for
// `width` (a power of two ≤ 32: lanes form groups of `width`; a source beyond the caller's group gives the
// caller's own value), and every lane of the mask must reach the same shuffle.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "block_scheduler.hpp"

namespace cuda_emu {

template <class T>
T shuffle_from(unsigned mask, T value, int source) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t), "shuffle of a 1-8 byte value");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = warp_exchange(mask, bits, source);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

inline int current_lane() { return static_cast<int>(current_linear_thread() % kWarpSize); }

}  // namespace cuda_emu

template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  const int lane = cuda_emu::current_lane();
  const int source = lane ^ lane_mask;
  // a source in a later group of `width` lanes returns the caller's own value
  const bool later_group = (source & ~(width - 1)) > (lane & ~(width - 1));
  return cuda_emu::shuffle_from(mask, value, later_group ? -1 : source);
}

template <class T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const int lane = cuda_emu::current_lane();
  const int in_group = lane % width;
  const bool beyond = in_group + static_cast<int>(delta) >= width;
  return cuda_emu::shuffle_from(mask, value, beyond ? -1 : lane + static_cast<int>(delta));
}
