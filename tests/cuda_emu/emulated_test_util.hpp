// tests/cuda_emu/emulated_test_util.hpp — what the emulated-kernel comparisons share: seeded random inputs,
// scratch from the emulator's cudaMalloc, and the element-by-element tolerance check that names the first
// element out of it.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"

namespace emu_test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Scratch "device" memory from the emulator's cudaMalloc, freed with cudaFree.
struct DeviceScratch {
  void* p = nullptr;
  explicit DeviceScratch(size_t bytes) { REQUIRE(cudaMalloc(&p, bytes == 0 ? 1 : bytes) == cudaSuccess); }
  ~DeviceScratch() { (void)cudaFree(p); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
};

// |a − b| ≤ tol·(1 + |b|) element by element, or a == b (equal infinities); NaN never passes. Reports the
// first element that is not.
inline void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (!(std::fabs(double{got[i]} - want[i]) <= tol * (1.0 + std::fabs(double{want[i]})))) {
      FAIL_CHECK(std::string(what) << "[" << i << "]: emulated kernel " << got[i] << ", CPU " << want[i]);
      return;
    }
  }
}

// The first index where two arrays' bits differ, or -1 (NaN payloads and signed zeros count).
template <class T>
int64_t first_bit_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace emu_test
