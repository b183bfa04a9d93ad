// runtime/exec/precision.cpp — fp32 → fp16/bf16 → fp32 rounding of a buffer (see precision.hpp).
#include "runtime/exec/precision.hpp"

#include <Eigen/Core>

namespace ptsim::runtime {

void round_to_dtype(models::DType dtype, std::span<float> values) {
  Eigen::Map<Eigen::ArrayXf> a(values.data(), static_cast<Eigen::Index>(values.size()));
  // Eigen's casts go through its half/bfloat16 constructors: IEEE round-to-nearest-even (F16C/AVX512 when
  // the build targets them, the same rounding in software otherwise).
  if (dtype == models::DType::f16) a = a.cast<Eigen::half>().cast<float>();
  else if (dtype == models::DType::bf16) a = a.cast<Eigen::bfloat16>().cast<float>();
}

}  // namespace ptsim::runtime
