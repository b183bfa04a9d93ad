// runtime/exec/backend_defaults.cpp — Backend's default step-tail operations for backends without their own
// kernels: the scaled sum of squares and the f32 ↔ 16-bit conversion, run by the CPU passes
// (cpu_16bit_vectors.hpp) on host copies of the spans. Correct on any backend, bit for bit the CPU
// backend's results, and slow (two host copies of the data). The optimizer's default is in
// cpu_optimizer.cpp.
#include <stdexcept>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"

namespace ptsim::runtime {

double Backend::scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) {
  const float f = static_cast<float>(factor);
  if (dtype == models::DType::f32 && f == 1.0f) return sum_of_squares(span);
  if (compute() != ComputeType::f32) throw std::logic_error("scaled_sum_of_squares: f32 compute only");
  const size_t bytes = cpu::tail_element_bytes(dtype);
  std::vector<char> host(span.bytes);
  copy_to_host(host.data(), span);
  return cpu::scaled_sum_of_squares_host(host.data(), span.bytes / bytes, dtype, f, 1);
}

void Backend::convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype) {
  if (compute() != ComputeType::f32) throw std::logic_error("convert: f32 compute only");
  const size_t n = src.bytes / cpu::tail_element_bytes(src_dtype);
  if (dst.bytes != n * cpu::tail_element_bytes(dst_dtype))
    throw std::invalid_argument("convert: the spans hold different element counts");
  std::vector<char> in(src.bytes), out(dst.bytes);
  copy_to_host(in.data(), src);
  cpu::convert_host(out.data(), dst_dtype, in.data(), src_dtype, n, 1);
  copy_to_device(dst, out.data());
}

}  // namespace ptsim::runtime
