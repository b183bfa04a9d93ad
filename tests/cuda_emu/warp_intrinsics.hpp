// tests/cuda_emu/warp_intrinsics.hpp — __shfl_sync, __shfl_up_sync, __shfl_down_sync and __shfl_xor_sync over
// the block scheduler's warp exchange (block_scheduler.hpp), with the source lane the CUDA Programming Guide
// defines for `width`: lanes form groups of `width` (a power of two in 1..32; any other width is undefined
// in CUDA and a KernelError here); __shfl_sync reads lane srcLane modulo width of the caller's group;
// up/down read the lane delta before/after the caller and get the caller's own value past its group's edge;
// xor may read an earlier group but gets its own value for a later one. The lane, delta and lane-mask
// operands reach the hardware's shfl.sync as their low five bits (PTX ISA, shfl.sync), so they are taken
// modulo 32 here too. Every lane of the mask must reach the same shuffle.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
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

// The shuffles' width check: a power of two in [1, 32], else what CUDA leaves undefined is an error.
inline void check_shuffle_width(int width) {
  if (width < 1 || width > static_cast<int>(kWarpSize) || (width & (width - 1)) != 0)
    throw KernelError("warp shuffle: width " + std::to_string(width) +
                      " is not a power of two in 1..32 (undefined in CUDA)");
}

// The low five bits of a lane, delta or lane-mask operand (what shfl.sync reads of it).
inline int lane_operand(long long v) { return static_cast<int>(static_cast<unsigned long long>(v) & 31u); }

}  // namespace cuda_emu

template <class T>
T __shfl_sync(unsigned mask, T value, int src_lane, int width = 32) {
  cuda_emu::check_shuffle_width(width);
  const int lane = cuda_emu::current_lane();
  return cuda_emu::shuffle_from(mask, value, (lane & ~(width - 1)) + (cuda_emu::lane_operand(src_lane) & (width - 1)));
}

template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  cuda_emu::check_shuffle_width(width);
  const int lane = cuda_emu::current_lane();
  const int source = lane ^ cuda_emu::lane_operand(lane_mask);
  // a source in a later group of `width` lanes returns the caller's own value
  const bool later_group = (source & ~(width - 1)) > (lane & ~(width - 1));
  return cuda_emu::shuffle_from(mask, value, later_group ? -1 : source);
}

template <class T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  cuda_emu::check_shuffle_width(width);
  const int lane = cuda_emu::current_lane(), d = cuda_emu::lane_operand(delta);
  const bool beyond = lane % width + d >= width;
  return cuda_emu::shuffle_from(mask, value, beyond ? -1 : lane + d);
}

template <class T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  cuda_emu::check_shuffle_width(width);
  const int lane = cuda_emu::current_lane(), d = cuda_emu::lane_operand(delta);
  const bool before = lane % width < d;
  return cuda_emu::shuffle_from(mask, value, before ? -1 : lane - d);
}
