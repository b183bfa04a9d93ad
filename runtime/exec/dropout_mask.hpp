// runtime/exec/dropout_mask.hpp — the dropout mask, defined once for every backend: a counter-based hash of
// (seed, optimizer step, micro-step, the op's rng_stream, element index), so a mask needs no stored state,
// recomputation regenerates the forward's mask, and a CUDA kernel that includes this header draws exactly
// the CPU backend's masks (PTSIM_HD: core/host_device.hpp). Values must never change: resumed runs and
// the golden files depend on them.
// Not here: the dropout kernels (cpu_backend.cpp: y = x·keep/(1−p)).
#pragma once
#include <cstdint>

#include "core/hash.hpp"  // defines: splitmix64_mix, kSplitmix64Gamma

namespace ptsim::runtime {

// The key of one dropout op in one micro-step: four rounds of splitmix64's mix over the schedule position.
PTSIM_HD constexpr uint64_t dropout_key(uint64_t seed, int64_t step, int64_t micro_step, uint64_t rng_stream) {
  uint64_t k = core::splitmix64_mix(seed + core::kSplitmix64Gamma);
  k = core::splitmix64_mix(k ^ (static_cast<uint64_t>(step) + 1) * core::kSplitmix64Gamma);
  k = core::splitmix64_mix(k ^ (static_cast<uint64_t>(micro_step) + 1) * 0xc2b2ae3d27d4eb4fULL);
  return core::splitmix64_mix(k ^ (rng_stream + 1) * 0x165667b19e3779f9ULL);
}

// The keep threshold for drop probability p in [0, 1): element i is kept iff its 32-bit draw ≥ p·2^32
// (P(keep) = 1 − p to within 2^-32). The caller handles p ≥ 1 (drop all) and clamps p < 0 to 0.
PTSIM_HD constexpr uint64_t dropout_threshold(double p) { return static_cast<uint64_t>(p * 4294967296.0); }

// Whether element i is kept under `key` (the top 32 bits of the element's hash against the threshold).
PTSIM_HD constexpr bool dropout_keep(uint64_t key, uint64_t i, uint64_t threshold) {
  return (core::splitmix64_mix(key + i * core::kSplitmix64Gamma) >> 32) >= threshold;
}

}  // namespace ptsim::runtime
