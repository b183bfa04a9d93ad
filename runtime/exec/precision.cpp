// runtime/exec/precision.cpp — fp32 → fp16/bf16 → fp32 rounding of a buffer, and the conversions between
// fp32 and 16-bit storage (see precision.hpp), element by element through math/half_bits.hpp.
#include "runtime/exec/precision.hpp"

#include <Eigen/Core>
#include <cstdint>
#include <stdexcept>

#include "runtime/exec/math/half_bits.hpp"  // defines: bf16_to_float, float_to_bf16, f16_to_float, float_to_f16

namespace ptsim::runtime {
namespace {

using math::bf16_to_float;
using math::f16_to_float;
using math::float_to_bf16;
using math::float_to_f16;

// The per-element conversions are half_bits.hpp's, which the CUDA backend's conversion kernels also run:
// the 16 bits stored are the same on both backends. bf16's are branch-free loops the compiler vectorises.
void widen_bits(float* dst, const uint16_t* src, size_t n, bool bf16) {
  if (bf16) for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
  else for (size_t i = 0; i < n; ++i) dst[i] = f16_to_float(src[i]);
}
void narrow_bits(uint16_t* dst, const float* src, size_t n, bool bf16) {
  if (bf16) for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  else for (size_t i = 0; i < n; ++i) dst[i] = float_to_f16(src[i]);
}
void require_16bit(models::DType dtype) {
  if (!is_16bit_float(dtype)) throw std::logic_error("16-bit conversion asked for a dtype that is not f16/bf16");
}

}  // namespace

void widen_16bit(float* dst, const void* src, size_t n, models::DType dtype) {
  require_16bit(dtype);
  widen_bits(dst, static_cast<const uint16_t*>(src), n, dtype == models::DType::bf16);
}

void narrow_16bit(void* dst, const float* src, size_t n, models::DType dtype) {
  require_16bit(dtype);
  narrow_bits(static_cast<uint16_t*>(dst), src, n, dtype == models::DType::bf16);
}

void round_to_dtype(models::DType dtype, std::span<float> values) {
  Eigen::Map<Eigen::ArrayXf> a(values.data(), static_cast<Eigen::Index>(values.size()));
  // Eigen's casts go through its half/bfloat16 constructors: IEEE round-to-nearest-even (F16C/AVX512 when
  // the build targets them, the same rounding in software otherwise).
  if (dtype == models::DType::f16) a = a.cast<Eigen::half>().cast<float>();
  else if (dtype == models::DType::bf16)  // narrow + widen in place: Eigen's rounding, vectorised
    for (float& x : values) x = bf16_to_float(float_to_bf16(x));
}

}  // namespace ptsim::runtime
