// tests/runtime/exec/test_half_bits.cpp — the per-element fp32 ↔ bf16/fp16 conversions that the CPU and the
// CUDA backends share (runtime/exec/math/half_bits.hpp) against Eigen's casts (Eigen::bfloat16,
// Eigen::half: IEEE round to nearest even), bit for bit: widening over all 65,536 16-bit patterns, narrowing
// over the fp32 sweep of half_bits_patterns.hpp. NaNs: Eigen keeps (F16C) or drops (software) a NaN's
// payload depending on the build's ISA, so for a NaN the test requires a NaN and the shared functions'
// own choice, the quiet NaN with the sign (0x7fc0 / 0x7e00), which is what makes the two backends agree.
#include <doctest/doctest.h>

#include <Eigen/Core>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/exec/math/half_bits.hpp"
#include "tests/runtime/exec/half_bits_patterns.hpp"

using namespace ptsim::runtime::math;

namespace {

bool same_bits_or_both_nan(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

}  // namespace

TEST_CASE("half_bits: widening every bf16 and fp16 pattern is Eigen's cast, exactly") {
  size_t bf16_wrong = 0, f16_wrong = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    bf16_wrong += !same_bits_or_both_nan(bf16_to_float(bits), static_cast<float>(std::bit_cast<Eigen::bfloat16>(bits)));
    f16_wrong += !same_bits_or_both_nan(f16_to_float(bits), static_cast<float>(std::bit_cast<Eigen::half>(bits)));
  }
  CHECK(bf16_wrong == 0);
  CHECK(f16_wrong == 0);
  // NaN patterns widen to NaNs with their sign (0x7c01 is fp16's smallest NaN pattern, 0xff81 bf16's).
  CHECK(std::isnan(f16_to_float(0x7c01)));
  CHECK(std::signbit(bf16_to_float(0xff81)));
}

TEST_CASE("half_bits: narrowing the fp32 sweep is Eigen's round to nearest even; NaNs become the signed quiet NaN") {
  const std::vector<uint32_t> patterns = ptsim::test::fp32_sweep_patterns();
  size_t bf16_wrong = 0, f16_wrong = 0, nans = 0;
  for (const uint32_t p : patterns) {
    const float x = std::bit_cast<float>(p);
    const uint16_t b = float_to_bf16(x), h = float_to_f16(x);
    if (std::isnan(x)) {
      ++nans;
      const uint16_t sign = static_cast<uint16_t>((p >> 16) & 0x8000u);
      bf16_wrong += b != (sign | 0x7fc0u);
      f16_wrong += h != (sign | 0x7e00u);
      continue;
    }
    bf16_wrong += b != std::bit_cast<uint16_t>(Eigen::bfloat16(x));
    f16_wrong += h != std::bit_cast<uint16_t>(Eigen::half(x));
  }
  CHECK(bf16_wrong == 0);
  CHECK(f16_wrong == 0);
  CHECK(nans > 1000);  // the sweep reaches NaNs of both signs (exponent all ones: 1/256 of the patterns)
  // Hand-checked cases (IEEE binary16: max 65504, smallest subnormal 2^-24):
  CHECK(float_to_f16(65519.0f) == 0x7bff);               // below the overflow tie: 65504
  CHECK(float_to_f16(65520.0f) == 0x7c00);               // the tie rounds to even: inf
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // half the smallest subnormal: ties to even 0
  CHECK(float_to_f16(std::ldexp(1.5f, -25)) == 0x0001);  // above the tie: the smallest subnormal
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // the bf16 tie at 1: to even (down)
}
