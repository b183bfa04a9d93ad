// runtime/exec/precision.cpp — fp32 → fp16/bf16 → fp32 rounding of a buffer, and the conversions between
// fp32 and 16-bit storage (see precision.hpp).
#include "runtime/exec/precision.hpp"

#include <Eigen/Core>
#include <stdexcept>

namespace ptsim::runtime {
namespace {

template <class Half>
void widen_as(float* dst, const void* src, size_t n) {
  const Eigen::Map<const Eigen::Array<Half, Eigen::Dynamic, 1>> s(static_cast<const Half*>(src), static_cast<Eigen::Index>(n));
  Eigen::Map<Eigen::ArrayXf>(dst, static_cast<Eigen::Index>(n)) = s.template cast<float>();
}
// The same float → half/bfloat16 cast as round_to_dtype's, so the 16 bits stored are the value it leaves.
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
  else widen_as<Eigen::bfloat16>(dst, src, n);
}

void narrow_16bit(void* dst, const float* src, size_t n, models::DType dtype) {
  require_16bit(dtype);
  if (dtype == models::DType::f16) narrow_as<Eigen::half>(dst, src, n);
  else narrow_as<Eigen::bfloat16>(dst, src, n);
}

void round_to_dtype(models::DType dtype, std::span<float> values) {
  Eigen::Map<Eigen::ArrayXf> a(values.data(), static_cast<Eigen::Index>(values.size()));
  // Eigen's casts go through its half/bfloat16 constructors: IEEE round-to-nearest-even (F16C/AVX512 when
  // the build targets them, the same rounding in software otherwise).
  if (dtype == models::DType::f16) a = a.cast<Eigen::half>().cast<float>();
  else if (dtype == models::DType::bf16) a = a.cast<Eigen::bfloat16>().cast<float>();
}

}  // namespace ptsim::runtime
