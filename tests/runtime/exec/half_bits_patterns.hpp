// tests/runtime/exec/half_bits_patterns.hpp — the fp32 bit patterns the 16-bit conversion tests sweep
// (test_half_bits.cpp on the CPU against Eigen's casts; test_16bit_storage_cuda.cpp, the CUDA conversion
// kernels against the CPU's): every 4,099th of the 2^32 patterns (1,047,809 values; 4,099 is prime, so
// the low bits that decide ties take every residue), plus the 33 cases each rounding path turns on.
#pragma once
#include <cstdint>
#include <vector>

namespace ptsim::test {

inline std::vector<uint32_t> fp32_sweep_patterns() {
  std::vector<uint32_t> bits;
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) bits.push_back(static_cast<uint32_t>(b));
  const uint32_t special[] = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu,  // ±0, fp32 subnormals
      0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu,  // inf, NaNs (quiet, signalling)
      0x3f808000u, 0x3f818000u, 0xbf808000u, 0x3f80c000u,  // bf16 ties: to even down, up; above the tie
      0x3f801000u, 0x3f803000u, 0x3f801001u,                // fp16 ties at 1 (2^-11 spacing) and just above
      0x477fe000u, 0x477fefffu, 0x477ff000u, 0x47800000u,  // fp16 65504 (max), below/at the overflow tie, 2^16
      0x7f7fffffu, 0x7f7f8000u,                            // fp32 max; bf16's overflow tie
      0x38800000u, 0x387fffffu, 0x387fe000u,               // fp16's smallest normal, just below it
      0x33000000u, 0x33000001u, 0x33400000u, 0x33c00000u,  // 2^-25 (tie → 0), above it, 1.5·2^-25, 1.5·2^-24
      0x34000000u, 0x35400000u, 0xb3000000u,               // 2^-23, subnormal ties, a negative tie
  };
  bits.insert(bits.end(), std::begin(special), std::end(special));
  return bits;
}

}  // namespace ptsim::test
