// tests/runtime/exec/test_scaled_read.cpp — the per-element gradient read the CUDA optimizer and
// sum-of-squares kernels run (runtime/exec/math/scaled_read.hpp: widen, times the fp32 factor) against the CPU
// passes' chunk read (cpu_16bit_vectors.hpp's fp32_chunk), bit for bit, over every bf16 and fp16 pattern and a
// sweep of fp32 values, for factor 1 (no product), 1/3000 (a rounding product) and 2^-10 (exact). NaN inputs:
// both must give a NaN (the payload is not part of the contract).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/math/scaled_read.hpp"
#include "tests/runtime/exec/half_bits_patterns.hpp"

using ptsim::models::DType;
using namespace ptsim::runtime;

namespace {

bool same_bits_or_both_nan(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Elements of x (n of `dtype`) where scaled_element and fp32_chunk disagree.
size_t disagreements(const void* x, size_t n, DType dtype, math::Storage kind, float factor) {
  std::vector<float> scratch(n);
  const float* chunk = cpu::fp32_chunk(x, dtype, factor, 0, n, scratch.data());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i)
    wrong += !same_bits_or_both_nan(math::scaled_element(x, kind, static_cast<int64_t>(i), factor), chunk[i]);
  return wrong;
}

const float kFactors[] = {1.0f, static_cast<float>(1.0 / 3000.0), 1.0f / 1024.0f};

}  // namespace

TEST_CASE("scaled_read: every 16-bit pattern reads as the CPU passes read it") {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  for (float factor : kFactors) {
    CHECK(disagreements(all.data(), all.size(), DType::bf16, math::Storage::bf16, factor) == 0);
    CHECK(disagreements(all.data(), all.size(), DType::f16, math::Storage::f16, factor) == 0);
  }
  // The widening itself is the exact one (0x3c00 is fp16's 1.0, 0x3f80 bf16's; 0x0001 fp16's 2^-24).
  CHECK(math::load_element(&all[0x3c00], math::Storage::f16, 0) == 1.0f);
  CHECK(math::load_element(&all[0x3f80], math::Storage::bf16, 0) == 1.0f);
  CHECK(math::load_element(&all[0x0001], math::Storage::f16, 0) == std::ldexp(1.0f, -24));
}

TEST_CASE("scaled_read: fp32 gradients read as the CPU passes read them, the factor one fp32 product") {
  const std::vector<uint32_t> bits = ptsim::test::fp32_sweep_patterns();
  for (float factor : kFactors)
    CHECK(disagreements(bits.data(), bits.size(), DType::f32, math::Storage::f32, factor) == 0);
  // 3 · fp32(1/3000) rounds once in fp32 (not 1/1000 exactly): the product is the fp32 one, not a double's.
  const float three = 3.0f, factor = static_cast<float>(1.0 / 3000.0);
  CHECK(math::scaled_element(&three, math::Storage::f32, 0, factor) == three * factor);
}
