// runtime/data/rng.hpp — the data pipeline's portable random numbers (xoshiro256** seeded by splitmix64).
// Is: bit-identical on every platform and compiler (std:: distributions are implementation-defined,
// so they are not used), with Python-random-like helpers: random(), randint(a, b), shuffle.
// Is not: Python's Mersenne Twister — the same seed gives a different stream than Google's script.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/hash.hpp"

namespace ptsim::runtime::data {

using core::splitmix64;  // core/hash.hpp: seeds the generator and the data order's shuffle keys

class DataRng {
 public:
  explicit DataRng(uint64_t seed) {
    uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double random() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0, without modulo bias (rejection).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = next_u64();
    while (x >= limit) x = next_u64();
    return x % n;
  }
  // Uniform integer in [lo, hi], both inclusive (Python's randint).
  int64_t randint(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1)); }
  template <class T>
  void shuffle(std::vector<T>& v) {  // Fisher-Yates from the back, as Python's random.shuffle
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4] = {};
};

}  // namespace ptsim::runtime::data
