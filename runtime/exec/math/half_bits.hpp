// runtime/exec/math/half_bits.hpp — one fp32 ↔ 16-bit (bfloat16, IEEE binary16) conversion per element, as
// bit operations callable from host and device code (PTSIM_HD): the CPU backend's widen_16bit/narrow_16bit
// (precision.cpp) and the CUDA backend's conversion kernels (cuda/convert_16bit.cu) both call these, so a
// 16-bit value stored on either backend has the same bits. Narrowing rounds to nearest, ties to even
// (fp16: overflow → ±inf, results below its smallest subnormal's half → ±0); a NaN becomes the quiet NaN
// 0x7fc0 (bf16) / 0x7e00 (fp16) with its sign, whatever its payload. Widening is exact.
// bf16 narrowing is Eigen's float_to_bfloat16_rtne; fp16 narrowing and widening are Eigen's software
// float_to_half_rtne / half_to_float (F. Giesen's branch-light algorithms); tests/runtime/exec/
// test_half_bits.cpp checks them against Eigen's casts over every 16-bit pattern and a sweep of fp32 ones.
#pragma once
#include <cstdint>

#include "core/host_device.hpp"

#ifndef __CUDA_ARCH__
#include <bit>
#endif

namespace ptsim::runtime::math {

PTSIM_HD inline uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  return std::bit_cast<uint32_t>(x);
#endif
}
PTSIM_HD inline float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// bfloat16 is fp32's top 16 bits: widening is a shift.
PTSIM_HD inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Add 0x7fff plus the kept part's lowest bit, keep the top half (ties to even); branch-free, so a host loop
// over it vectorises.
PTSIM_HD inline uint16_t float_to_bf16(float x) {
  const uint32_t u = float_bits(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// binary16 → fp32, exact: rebias the exponent; inf/NaN keep an all-ones exponent; subnormals are
// renormalised by one fp32 subtraction (exact: both operands and the result are normal fp32 values).
PTSIM_HD inline float f16_to_float(uint16_t h) {
  constexpr uint32_t shifted_exp = 0x7c00u << 13;  // binary16's exponent field, at fp32's position
  uint32_t o = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // inf / NaN
  } else if (exp == 0) {      // zero / subnormal
    o += 1u << 23;
    o = float_bits(bits_float(o) - bits_float(113u << 23));
  }
  return bits_float(o | ((static_cast<uint32_t>(h) & 0x8000u) << 16));
}

// fp32 → binary16, round to nearest even. Subnormal results come from one fp32 addition of 0.5 (its
// rounding is the ties-to-even at binary16's subnormal spacing); normal ones from adding the rounding bias
// plus the kept part's lowest bit.
PTSIM_HD inline uint16_t float_to_f16(float x) {
  uint32_t f = float_bits(x);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint32_t o;
  if (f >= 0x47800000u) {                    // ≥ 65536 (rounds to inf), inf or NaN
    o = f > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN → quiet NaN; otherwise inf
  } else if (f < 0x38800000u) {              // < 2^-14: a binary16 subnormal or zero
    constexpr uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;  // 0.5f
    o = float_bits(bits_float(f) + bits_float(denorm_magic)) - denorm_magic;
  } else {
    const uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu;  // rebias the exponent (wraps, as unsigned) and add the bias
    f += mant_odd;
    o = f >> 13;
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

}  // namespace ptsim::runtime::math
