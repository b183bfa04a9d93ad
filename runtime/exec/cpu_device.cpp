// runtime/exec/cpu_device.cpp — CpuDevice (see the header) and the backend factory (make_backend,
// parse_backend_kind; the CUDA backend in builds with it, runtime/exec/cuda/).
#include "runtime/exec/cpu_device.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "core/error.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/cpu_parallel.hpp"
#include "runtime/exec/cpu_vector_kernels.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: make_cuda_backend
#endif
#include "runtime/exec/precision.hpp"
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {

const char* to_string(BackendKind kind) { return kind == BackendKind::cuda ? "cuda" : "cpu"; }

BackendKind parse_backend_kind(std::string_view name, std::string_view what) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "cuda") return BackendKind::cuda;
  throw core::InputError(fmt::format("{} '{}' is unknown (expected cpu | cuda)", what, name));
}

const char* to_string(AttentionKernel kernel) { return kernel == AttentionKernel::tensor_core ? "tensor-core" : "fp32"; }

AttentionKernel parse_attention_kernel(std::string_view name, std::string_view what) {
  if (name == "fp32") return AttentionKernel::fp32;
  if (name == "tensor-core") return AttentionKernel::tensor_core;
  throw core::InputError(fmt::format("{} '{}' is unknown (expected fp32 | tensor-core)", what, name));
}

bool backend_available(BackendKind kind) {
#ifdef PTSIM_HAVE_CUDA
  if (kind == BackendKind::cuda) return true;  // built; make_backend says if no device is present
#endif
  return kind == BackendKind::cpu;
}

// Both convert at the op boundary from the same plan (op_boundary_plan.hpp).
bool backend_stores_16bit(BackendKind kind) { return kind == BackendKind::cpu || kind == BackendKind::cuda; }

std::optional<BackendMemory> backend_device_memory(BackendKind kind) {
#ifdef PTSIM_HAVE_CUDA
  if (kind == BackendKind::cuda) return cuda_device_memory();
#endif
  (void)kind;
  return std::nullopt;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, ComputeType compute, int threads, const BackendOptions& options) {
  if (!backend_available(kind))
    throw core::InputError(fmt::format("backend '{}': this ptsim was built without the {} backend (use cpu)",
                                       to_string(kind), to_string(kind)));
#ifdef PTSIM_HAVE_CUDA
  if (kind == BackendKind::cuda) return make_cuda_backend(compute, options);
#endif
  if (options.attention != AttentionKernel::fp32)
    throw core::InputError(fmt::format("backend 'cpu': the attention kernel '{}' is the CUDA backend's (the cpu "
                                       "backend's fused attention computes in fp32 only)",
                                       to_string(options.attention)));
  return make_cpu_backend(compute, threads);
}

namespace cpu {
namespace {
constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD load
}  // namespace

void CpuDevice::Free::operator()(std::byte* p) const { std::free(p); }

CpuDevice::CpuDevice(ComputeType compute, int threads) : compute_(compute), threads_(threads > 1 ? threads : 1) {}

DeviceBuffer CpuDevice::allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  std::unique_ptr<std::byte, Free> data(
      rounded > 0 ? static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)) : nullptr);
  if (rounded > 0 && !data) throw std::bad_alloc();
  if (rounded > 0) std::memset(data.get(), 0, rounded);
  buffers_.push_back(std::move(data));
  sizes_.push_back(bytes);
  live_.push_back(1);
  return {static_cast<int32_t>(buffers_.size() - 1), bytes};
}

void CpuDevice::free(DeviceBuffer buffer) {
  if (buffer.id < 0 || static_cast<size_t>(buffer.id) >= buffers_.size()) return;
  buffers_[static_cast<size_t>(buffer.id)].reset();
  sizes_[static_cast<size_t>(buffer.id)] = 0;
  live_[static_cast<size_t>(buffer.id)] = 0;
}

std::byte* CpuDevice::checked(const DeviceSpan& span) const {
  const auto id = static_cast<size_t>(span.buffer.id);
  if (span.buffer.id < 0 || id >= buffers_.size() || !live_[id])
    throw std::logic_error(fmt::format("cpu backend: buffer {} is not allocated", span.buffer.id));
  if (span.offset + span.bytes > sizes_[id])
    throw std::logic_error(fmt::format("cpu backend: bytes [{}, {}) are outside buffer {} of {} bytes", span.offset,
                                       span.offset + span.bytes, span.buffer.id, sizes_[id]));
  return buffers_[id] ? buffers_[id].get() + span.offset : nullptr;
}

void* CpuDevice::kernel_address(const DeviceSpan& span) { return checked(span); }

void CpuDevice::copy_to_device(const DeviceSpan& dst, const void* src) {
  if (dst.bytes > 0) std::memcpy(checked(dst), src, dst.bytes);
}
void CpuDevice::copy_to_host(void* dst, const DeviceSpan& src) {
  if (src.bytes > 0) std::memcpy(dst, checked(src), src.bytes);
}
void CpuDevice::copy(const DeviceSpan& dst, const DeviceSpan& src) {
  if (dst.bytes != src.bytes)
    throw std::logic_error(fmt::format("cpu backend: copy of {} bytes into a span of {}", src.bytes, dst.bytes));
  if (dst.bytes > 0) std::memcpy(checked(dst), checked(src), dst.bytes);
}
void CpuDevice::fill_zero(const DeviceSpan& span) {
  if (span.bytes > 0) std::memset(checked(span), 0, span.bytes);
}

Event CpuDevice::create_event() {
  events_.emplace_back();
  return {static_cast<int32_t>(events_.size() - 1)};
}
void CpuDevice::record(Event event, Stream) { events_.at(static_cast<size_t>(event.id)) = std::chrono::steady_clock::now(); }
double CpuDevice::elapsed_seconds(Event start, Event stop) {
  return std::chrono::duration<double>(events_.at(static_cast<size_t>(stop.id)) - events_.at(static_cast<size_t>(start.id)))
      .count();
}

void CpuDevice::round_to_dtype(const DeviceSpan& span, models::DType dtype) {
  if (!is_16bit_float(dtype) || span.bytes == 0) return;
  if (compute_ != ComputeType::f32) throw std::logic_error("cpu backend: 16-bit rounding needs f32 storage");
  runtime::round_to_dtype(dtype, {reinterpret_cast<float*>(checked(span)), span.bytes / sizeof(float)});
}

namespace {
// Both passes run the ISA variant this CPU has (cpu_vector_kernels.hpp; every variant gives the same bits).
template <class T>
void scale_chunks(T* x, size_t n, T factor, int threads) {
  const CpuIsa isa = detected_cpu_isa();
  for_each_chunk(chunk_count(n), threads, [&](size_t c) {
    const size_t begin = c * kChunkElements, end = std::min(n, begin + kChunkElements);
    scale_range(isa, x + begin, end - begin, factor);
  });
}
// Per chunk the lane order of math/lane_sums.hpp, then the chunks in order (the CUDA backend's order too).
template <class T>
double sum_of_squares_chunks(const T* x, size_t n, int threads) {
  const CpuIsa isa = detected_cpu_isa();
  std::vector<double> partial(chunk_count(n), 0.0);
  for_each_chunk(partial.size(), threads, [&](size_t c) {
    const size_t begin = c * kChunkElements, end = std::min(n, begin + kChunkElements);
    partial[c] = chunk_sum_of_squares(isa, x + begin, end - begin);
  });
  double sum = 0.0;
  for (double p : partial) sum += p;  // chunk order: independent of the thread count
  return sum;
}
}  // namespace

void CpuDevice::scale(const DeviceSpan& span, double factor) {
  if (span.bytes == 0) return;
  if (compute_ == ComputeType::f64)
    scale_chunks(reinterpret_cast<double*>(checked(span)), span.bytes / sizeof(double), factor, threads_);
  else
    scale_chunks(reinterpret_cast<float*>(checked(span)), span.bytes / sizeof(float), static_cast<float>(factor),
                 threads_);
}

void CpuDevice::scale_16bit(const DeviceSpan& span, models::DType dtype, double factor) {
  if (compute_ != ComputeType::f32) throw std::logic_error("cpu backend: scale_16bit needs f32 compute");
  if (!is_16bit_float(dtype)) throw std::invalid_argument("cpu backend: scale_16bit: the span holds f16 or bf16 elements");
  const size_t n = whole_element_count(span, dtype, "cpu backend: scale_16bit");
  if (n == 0) return;
  scale_16bit_host(checked(span), n, dtype, static_cast<float>(factor), threads_);
}

double CpuDevice::sum_of_squares(const DeviceSpan& span) {
  if (span.bytes == 0) return 0.0;
  if (compute_ == ComputeType::f64)
    return sum_of_squares_chunks(reinterpret_cast<const double*>(checked(span)), span.bytes / sizeof(double), threads_);
  return sum_of_squares_chunks(reinterpret_cast<const float*>(checked(span)), span.bytes / sizeof(float), threads_);
}

double CpuDevice::scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) {
  if (dtype == models::DType::f32 && static_cast<float>(factor) == 1.0f) return sum_of_squares(span);
  if (compute_ != ComputeType::f32) throw std::logic_error("cpu backend: scaled_sum_of_squares needs f32 compute");
  if (span.bytes == 0) return 0.0;
  return scaled_sum_of_squares_host(checked(span), span.bytes / tail_element_bytes(dtype), dtype,
                                    static_cast<float>(factor), threads_);
}

void CpuDevice::scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                           const DeviceSpan& sum) {
  if (sum.bytes != sizeof(double))
    throw std::invalid_argument("cpu backend: scaled_sum_of_squares_into: the sum is one double");
  double* total = reinterpret_cast<double*>(checked(sum));
  *total = *total + scaled_sum_of_squares(span, dtype, factor);
}

void CpuDevice::finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) {
  if (scalars.bytes != sizeof(optim_math::StepScalars) || sum.bytes != sizeof(double))
    throw std::invalid_argument("cpu backend: finish_step_scalars: expected one StepScalars and one double");
  optim_math::finish_norm(*reinterpret_cast<optim_math::StepScalars*>(checked(scalars)),
                          *reinterpret_cast<const double*>(checked(sum)), max_grad_norm);
}

void CpuDevice::scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                              const DeviceSpan& sum) {
  if (factor.bytes != sizeof(float))
    throw std::invalid_argument("cpu backend: scaled_sum_of_squares_into_by: the factor is one float");
  scaled_sum_of_squares_into(span, dtype, *reinterpret_cast<const float*>(checked(factor)), sum);
}

void CpuDevice::update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) {
  if (state.bytes != sizeof(optim_math::LossScaleState) || scalars.bytes != sizeof(optim_math::StepScalars))
    throw std::invalid_argument("cpu backend: update_loss_scale: expected one LossScaleState and one StepScalars");
  optim_math::update_loss_scale(*reinterpret_cast<optim_math::LossScaleState*>(checked(state)),
                                reinterpret_cast<const optim_math::StepScalars*>(checked(scalars))->skip != 0);
}

void CpuDevice::add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) {
  const bool f32 = compute_ == ComputeType::f32;
  if (sum.bytes != sizeof(double) || value.bytes != (f32 ? sizeof(float) : sizeof(double)))
    throw std::invalid_argument("cpu backend: add_to_sum: expected one double and one scalar of the compute type");
  double* total = reinterpret_cast<double*>(checked(sum));
  const double v = f32 ? *reinterpret_cast<const float*>(checked(value)) : *reinterpret_cast<const double*>(checked(value));
  *total = *total + v;
}

void CpuDevice::convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype) {
  if (compute_ != ComputeType::f32) throw std::logic_error("cpu backend: convert needs f32 compute");
  const size_t n = src.bytes / tail_element_bytes(src_dtype);
  if (dst.bytes != n * tail_element_bytes(dst_dtype))
    throw std::invalid_argument("cpu backend: convert between spans of different element counts");
  if (n == 0) return;
  convert_host(checked(dst), dst_dtype, checked(src), src_dtype, n, threads_);
}

}  // namespace cpu
}  // namespace ptsim::runtime
