// runtime/exec/precision.cpp — fp32 → fp16/bf16 → fp32 rounding of a buffer, and the conversions between
// fp32 and 16-bit storage (see precision.hpp).
#include "runtime/exec/precision.hpp"

#include <Eigen/Core>
#include <bit>
#include <cstdint>
#include <stdexcept>

namespace ptsim::runtime {
namespace {

// bfloat16 is fp32's top 16 bits: widening is a shift, and narrowing is Eigen's float_to_bfloat16_rtne (add
// 0x7fff plus the kept part's lowest bit, keep the top half; NaN → quiet NaN 0x7fc0 with the sign) written
// as a branch-free loop the compiler vectorises, where Eigen's cast converts element by element.
void widen_bf16(float* dst, const uint16_t* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src[i]) << 16);
}
uint16_t bf16_bits(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
void narrow_bf16(uint16_t* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_bits(src[i]);
}

template <class Half>
void widen_as(float* dst, const void* src, size_t n) {
  const Eigen::Map<const Eigen::Array<Half, Eigen::Dynamic, 1>> s(static_cast<const Half*>(src), static_cast<Eigen::Index>(n));
  Eigen::Map<Eigen::ArrayXf>(dst, static_cast<Eigen::Index>(n)) = s.template cast<float>();
}
// The same float → half cast as round_to_dtype's, so the 16 bits stored are the value it leaves.
template <class Half>
void narrow_as(void* dst, const float* src, size_t n) {
  const Eigen::Map<const Eigen::ArrayXf> s(src, static_cast<Eigen::Index>(n));
  Eigen::Map<Eigen::Array<Half, Eigen::Dynamic, 1>>(static_cast<Half*>(dst), static_cast<Eigen::Index>(n)) =
      s.template cast<Half>();
}
void require_16bit(models::DType dtype) {
  if (!is_16bit_float(dtype)) throw std::logic_error("16-bit conversion asked for a dtype that is not f16/bf16");
}

}  // namespace

void widen_16bit(float* dst, const void* src, size_t n, models::DType dtype) {
  require_16bit(dtype);
  if (dtype == models::DType::f16) widen_as<Eigen::half>(dst, src, n);
  else widen_bf16(dst, static_cast<const uint16_t*>(src), n);
}

void narrow_16bit(void* dst, const float* src, size_t n, models::DType dtype) {
  require_16bit(dtype);
  if (dtype == models::DType::f16) narrow_as<Eigen::half>(dst, src, n);
  else narrow_bf16(static_cast<uint16_t*>(dst), src, n);
}

void round_to_dtype(models::DType dtype, std::span<float> values) {
  Eigen::Map<Eigen::ArrayXf> a(values.data(), static_cast<Eigen::Index>(values.size()));
  // Eigen's casts go through its half/bfloat16 constructors: IEEE round-to-nearest-even (F16C/AVX512 when
  // the build targets them, the same rounding in software otherwise).
  if (dtype == models::DType::f16) a = a.cast<Eigen::half>().cast<float>();
  else if (dtype == models::DType::bf16)  // narrow_bf16 + widen_bf16 in place: Eigen's rounding, vectorised
    for (float& x : values) x = std::bit_cast<float>(static_cast<uint32_t>(bf16_bits(x)) << 16);
}

}  // namespace ptsim::runtime
