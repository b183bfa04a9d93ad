// runtime/exec/backend_defaults.cpp — Backend's default step-tail operations for backends without their own
// kernels: the scaled sum of squares (returned, or added to a sum in backend memory), the step's norm verdict
// (StepScalars' norm, clip and skip fields), the loss scale's update, the micro-step loss sums and the
// f32 ↔ 16-bit conversion and the 16-bit scale, run by the CPU passes
// (cpu_16bit_vectors.hpp) on host copies of the spans. Correct on any backend, bit for bit the CPU
// backend's results, and slow (two host copies of the data). The optimizer's default is in
// cpu_optimizer.cpp.
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/precision.hpp"  // defines: is_16bit_float
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {

size_t whole_element_count(const DeviceSpan& data, models::DType dtype, const char* who) {
  const auto element = static_cast<size_t>(models::dtype_bytes(dtype));
  if (data.bytes % element != 0)
    throw std::invalid_argument(
        fmt::format("{}: {} bytes is not a whole number of {} elements", who, data.bytes, models::to_string(dtype)));
  return data.bytes / element;
}

double Backend::scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) {
  const float f = static_cast<float>(factor);
  if (dtype == models::DType::f32 && f == 1.0f) return sum_of_squares(span);
  if (compute() != ComputeType::f32) throw std::logic_error("scaled_sum_of_squares: f32 compute only");
  const size_t bytes = cpu::tail_element_bytes(dtype);
  std::vector<char> host(span.bytes);
  copy_to_host(host.data(), span);
  return cpu::scaled_sum_of_squares_host(host.data(), span.bytes / bytes, dtype, f, 1);
}

void Backend::scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                         const DeviceSpan& sum) {
  if (sum.bytes != sizeof(double)) throw std::invalid_argument("scaled_sum_of_squares_into: the sum is one double");
  double total = 0.0;
  copy_to_host(&total, sum);
  total = total + scaled_sum_of_squares(span, dtype, factor);
  copy_to_device(sum, &total);
}

void Backend::finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) {
  if (scalars.bytes != sizeof(optim_math::StepScalars) || sum.bytes != sizeof(double))
    throw std::invalid_argument("finish_step_scalars: expected one StepScalars and one double");
  optim_math::StepScalars s;
  double sum_of_squares = 0.0;
  copy_to_host(&s, scalars);
  copy_to_host(&sum_of_squares, sum);
  optim_math::finish_norm(s, sum_of_squares, max_grad_norm);
  copy_to_device(scalars, &s);
}

void Backend::scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                            const DeviceSpan& sum) {
  if (factor.bytes != sizeof(float)) throw std::invalid_argument("scaled_sum_of_squares_into_by: the factor is one float");
  float f = 1.0f;
  copy_to_host(&f, factor);
  scaled_sum_of_squares_into(span, dtype, f, sum);
}

void Backend::update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) {
  if (state.bytes != sizeof(optim_math::LossScaleState) || scalars.bytes != sizeof(optim_math::StepScalars))
    throw std::invalid_argument("update_loss_scale: expected one LossScaleState and one StepScalars");
  optim_math::LossScaleState s;
  optim_math::StepScalars verdict;
  copy_to_host(&s, state);
  copy_to_host(&verdict, scalars);
  optim_math::update_loss_scale(s, verdict.skip != 0);
  copy_to_device(state, &s);
}

void Backend::add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) {
  const bool f32 = compute() == ComputeType::f32;
  if (sum.bytes != sizeof(double) || value.bytes != (f32 ? sizeof(float) : sizeof(double)))
    throw std::invalid_argument("add_to_sum: expected one double and one scalar of the compute type");
  double total = 0.0, v = 0.0;
  float v32 = 0.0f;
  copy_to_host(&total, sum);
  if (f32) {
    copy_to_host(&v32, value);
    v = v32;
  } else {
    copy_to_host(&v, value);
  }
  total = total + v;
  copy_to_device(sum, &total);
}

void Backend::scale_16bit(const DeviceSpan& span, models::DType dtype, double factor) {
  if (compute() != ComputeType::f32) throw std::logic_error("scale_16bit: f32 compute only");
  if (!is_16bit_float(dtype)) throw std::invalid_argument("scale_16bit: the span holds f16 or bf16 elements");
  const size_t n = whole_element_count(span, dtype, "scale_16bit");
  std::vector<char> host(span.bytes);
  copy_to_host(host.data(), span);
  cpu::scale_16bit_host(host.data(), n, dtype, static_cast<float>(factor), 1);
  copy_to_device(span, host.data());
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
