// core/hash.hpp — the project's two non-cryptographic hashes, defined once: splitmix64 (Steele, Lea &
// Flood 2014, "Fast splittable pseudorandom number generators") and FNV-1a 64-bit (Fowler–Noll–Vo).
// Used for counter-based randomness (parameter init, dropout masks, data order, test data) and for file
// and vocabulary checksums. Values must never change: checkpoints, shards and golden files depend on them.
// Not here: random-number generators with state beyond one counter (runtime/data/rng.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/host_device.hpp"  // defines: PTSIM_HD

namespace ptsim::core {

inline constexpr uint64_t kSplitmix64Gamma = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio, odd
inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ULL;

// splitmix64's output function: a bijective 64-bit mix (the dropout hash's rounds; device code too).
PTSIM_HD constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64's value at counter z (increment, then mix): a counter-based random 64-bit word.
constexpr uint64_t mix64(uint64_t z) { return splitmix64_mix(z + kSplitmix64Gamma); }

// The stateful generator: advances `state` and returns the next word (seeds xoshiro, shuffles keys).
constexpr uint64_t splitmix64(uint64_t& state) {
  state += kSplitmix64Gamma;
  return splitmix64_mix(state);
}

// FNV-1a 64-bit over bytes, continuing from `hash` (so several pieces can be chained).
inline uint64_t fnv1a64(const void* data, size_t size_bytes, uint64_t hash = kFnv1aOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size_bytes; ++i) hash = (hash ^ p[i]) * kFnv1aPrime;
  return hash;
}
inline uint64_t fnv1a64(std::string_view text, uint64_t hash = kFnv1aOffset) {
  return fnv1a64(text.data(), text.size(), hash);
}

}  // namespace ptsim::core
