// runtime/exec/cuda/cuda_device.cpp — CudaDevice (see the header), cuda_device_count and the device
// error record's message.
#include "runtime/exec/cuda/cuda_device.hpp"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <new>
#include <stdexcept>

#include "core/error.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"  // defines: tail_element_bytes
#include "runtime/exec/cpu_parallel.hpp"  // defines: kChunkElements (the sum of squares' chunks)
#include "runtime/exec/cuda/cuda_backend.hpp"
#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/convert_16bit.hpp"
#include "runtime/exec/cuda/optimizer.hpp"  // defines: launch_finish_step_scalars
#include "runtime/exec/cuda/vector_ops.hpp"
#include "runtime/exec/math/storage_dtype.hpp"  // defines: storage_of
#include "runtime/exec/precision.hpp"
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: not sticky, clear it
    return 0;
  }
  return count;
}

std::optional<BackendMemory> cuda_device_memory() {
  if (cuda_device_count() == 0) return std::nullopt;
  int device = 0;
  PTSIM_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  PTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  size_t free_bytes = 0, total_bytes = 0;
  PTSIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return BackendMemory{free_bytes, fmt::format("GPU {} ({})", device, prop.name)};
}

}  // namespace ptsim::runtime

namespace ptsim::runtime::cuda {
namespace {
// cuBLAS's workspace: 32 MiB, what NVIDIA recommends for Hopper (cuBLAS docs, cublasSetWorkspace).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// A cudaStreamQuery / cudaEventQuery result: true when done, false when not yet; any other code throws.
bool finished(cudaError_t status, const char* call) {
  if (status == cudaErrorNotReady) return false;
  check_cuda(status, call);
  return true;
}
}  // namespace

CudaDevice::CudaDevice(int device) : device_(device) {
  PTSIM_CUDA_CHECK(cudaSetDevice(device_));
  cudaStream_t compute = nullptr;
  PTSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  streams_.push_back(compute);
  PTSIM_CUBLAS_CHECK(cublasCreate(&cublas_));
  PTSIM_CUBLAS_CHECK(cublasSetStream(cublas_, compute));
  PTSIM_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
  PTSIM_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
  PTSIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&error_), sizeof(DeviceError)));
  // On the compute stream, not the legacy default one (cudaMemset): a cudaStreamNonBlocking stream does not
  // wait for the legacy stream, and a device memset may still be running when the call returns, so a
  // kernel's first report could otherwise be zeroed after it was written.
  PTSIM_CUDA_CHECK(cudaMemsetAsync(error_, 0, sizeof(DeviceError), compute));
  // Once, here: the record is zero before anything reads it, whichever stream or copy reads it first.
  PTSIM_CUDA_CHECK(cudaStreamSynchronize(compute));
  PTSIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&norm_result_), sizeof(double)));
}

// Teardown ignores errors: a destructor must not throw, and after a sticky error nothing can be freed anyway.
// No cudaDeviceSynchronize: it has no deadline, and the work that uses the buffers freed here is all on the
// backend's streams, which drain_for_teardown has waited for.
CudaDevice::~CudaDevice() {
  drain_for_teardown();
  for (void* p : buffers_)
    if (p) (void)cudaFree(p);
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  if (cublas_) (void)cublasDestroy(cublas_);
  for (cudaStream_t s : streams_) (void)cudaStreamDestroy(s);
  (void)cudaFree(cublas_workspace_);
  (void)cudaFree(error_);
  (void)cudaFree(norm_result_);
  (void)cudaFree(scratch_);
}

DeviceBuffer CudaDevice::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes > 0) {
    const cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // out of memory is not sticky: clear it, report as Backend says
      throw std::bad_alloc();
    }
    check_cuda(status, "cudaMalloc");
    PTSIM_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, compute_stream()));
  }
  buffers_.push_back(p);
  sizes_.push_back(bytes);
  live_.push_back(1);
  return {static_cast<int32_t>(buffers_.size() - 1), bytes};
}

void CudaDevice::free(DeviceBuffer buffer) {
  if (buffer.id < 0 || static_cast<size_t>(buffer.id) >= buffers_.size()) return;
  const auto id = static_cast<size_t>(buffer.id);
  if (buffers_[id]) {
    // Queued work on any stream (a kernel, a bucket all-reduce) may still use it, and cudaFree may itself wait for
    // the whole device: every stream first, through the bounded wait (docs/nccl.md, "Host waits behind a collective").
    for (cudaStream_t stream : streams_) await_stream(stream, "a stream of the backend (free)");
    PTSIM_CUDA_CHECK(cudaFree(buffers_[id]));
  }
  buffers_[id] = nullptr;
  sizes_[id] = 0;
  live_[id] = 0;
}

std::byte* CudaDevice::checked(const DeviceSpan& span) const {
  const auto id = static_cast<size_t>(span.buffer.id);
  if (span.buffer.id < 0 || id >= buffers_.size() || !live_[id])
    throw std::logic_error(fmt::format("cuda backend: buffer {} is not allocated", span.buffer.id));
  if (span.offset + span.bytes > sizes_[id])
    throw std::logic_error(fmt::format("cuda backend: bytes [{}, {}) are outside buffer {} of {} bytes", span.offset,
                                       span.offset + span.bytes, span.buffer.id, sizes_[id]));
  return buffers_[id] ? static_cast<std::byte*>(buffers_[id]) + span.offset : nullptr;
}

void* CudaDevice::kernel_address(const DeviceSpan& span) { return checked(span); }

void CudaDevice::copy_to_device(const DeviceSpan& dst, const void* src) {
  if (dst.bytes == 0) return;
  PTSIM_CUDA_CHECK(cudaMemcpyAsync(checked(dst), src, dst.bytes, cudaMemcpyHostToDevice, compute_stream()));
  await_stream(compute_stream(), "the compute stream (copy to device)");
}

void CudaDevice::copy_to_device_async(const DeviceSpan& dst, const void* src) {
  if (dst.bytes == 0) return;
  PTSIM_CUDA_CHECK(cudaMemcpyAsync(checked(dst), src, dst.bytes, cudaMemcpyHostToDevice, compute_stream()));
}

// The stream is waited for before the copy is queued: a device-to-pageable-host cudaMemcpyAsync returns only
// once it has completed (CUDA Runtime API, "API synchronization behavior"), so queued behind a collective that
// never finishes it would block the host with no deadline. The copy itself then waits for nothing else.
void CudaDevice::copy_to_host(void* dst, const DeviceSpan& src) {
  await_stream(compute_stream(), "the compute stream (copy to host)");
  if (src.bytes > 0)
    PTSIM_CUDA_CHECK(cudaMemcpyAsync(dst, checked(src), src.bytes, cudaMemcpyDeviceToHost, compute_stream()));
  await_stream(compute_stream(), "the compute stream (copy to host)");
  raise_device_errors();
}

void CudaDevice::copy(const DeviceSpan& dst, const DeviceSpan& src) {
  if (dst.bytes != src.bytes)
    throw std::logic_error(fmt::format("cuda backend: copy of {} bytes into a span of {}", src.bytes, dst.bytes));
  if (dst.bytes > 0)
    PTSIM_CUDA_CHECK(
        cudaMemcpyAsync(checked(dst), checked(src), dst.bytes, cudaMemcpyDeviceToDevice, compute_stream()));
}

void CudaDevice::fill_zero(const DeviceSpan& span) {
  if (span.bytes > 0) PTSIM_CUDA_CHECK(cudaMemsetAsync(checked(span), 0, span.bytes, compute_stream()));
}

cudaStream_t CudaDevice::stream_of(Stream stream) const {
  if (stream.id < 0 || static_cast<size_t>(stream.id) >= streams_.size())
    throw std::logic_error(fmt::format("cuda backend: stream {} was not created", stream.id));
  return streams_[static_cast<size_t>(stream.id)];
}

Stream CudaDevice::create_stream() {
  cudaStream_t s = nullptr;
  PTSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  streams_.push_back(s);
  return {static_cast<int32_t>(streams_.size() - 1)};
}

Event CudaDevice::create_event() {
  cudaEvent_t e = nullptr;
  PTSIM_CUDA_CHECK(cudaEventCreate(&e));  // timing enabled: elapsed_seconds reads it
  events_.push_back(e);
  return {static_cast<int32_t>(events_.size() - 1)};
}

void CudaDevice::record(Event event, Stream stream) {
  PTSIM_CUDA_CHECK(cudaEventRecord(events_.at(static_cast<size_t>(event.id)), stream_of(stream)));
}

void CudaDevice::wait(Stream stream, Event event) {
  PTSIM_CUDA_CHECK(cudaStreamWaitEvent(stream_of(stream), events_.at(static_cast<size_t>(event.id)), 0));
}

double CudaDevice::elapsed_seconds(Event start, Event stop) {
  cudaEvent_t b = events_.at(static_cast<size_t>(start.id)), e = events_.at(static_cast<size_t>(stop.id));
  await_event(e, "the stream of an op's timing event");
  float ms = 0.0f;
  PTSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, b, e));
  return static_cast<double>(ms) / 1e3;
}

void CudaDevice::synchronize(Stream stream) {
  await_stream(stream_of(stream), stream.id == 0 ? "the compute stream (synchronize)" : "a stream (synchronize)");
  // Only compute-stream kernels write the error record, so it is read when that stream is the one waited for.
  // After another stream's wait (a communicator's, on the comm stream) reading it would first need the compute
  // stream synchronized too: a host stall on every comm-stream wait, while the compute stream should keep
  // running. A report is not lost: the next compute-stream synchronize or copy_to_host raises it.
  if (stream_of(stream) == compute_stream()) raise_device_errors();
}

void CudaDevice::await_stream(cudaStream_t stream, const char* what) {
  const std::shared_ptr<HostWaitGuard> guard = host_wait_guard_.lock();
  if (!guard) return PTSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  await_device([stream] { return finished(cudaStreamQuery(stream), "cudaStreamQuery"); }, *guard, what);
}

void CudaDevice::await_event(cudaEvent_t event, const char* what) {
  const std::shared_ptr<HostWaitGuard> guard = host_wait_guard_.lock();
  if (!guard) return PTSIM_CUDA_CHECK(cudaEventSynchronize(event));
  await_device([event] { return finished(cudaEventQuery(event), "cudaEventQuery"); }, *guard, what);
}

void CudaDevice::drain_for_teardown() noexcept {
  for (cudaStream_t stream : streams_) {
    try {
      await_stream(stream, "a stream of the backend (teardown)");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: cuda backend teardown: %s; freeing its memory anyway\n", e.what());
    } catch (...) {
      std::fputs("warning: cuda backend teardown: an unknown exception while waiting for a stream; freeing its memory "
                 "anyway\n", stderr);
    }
  }
}

void CudaDevice::round_to_dtype(const DeviceSpan& span, models::DType dtype) {
  if (!is_16bit_float(dtype) || span.bytes == 0) return;
  launch_round_to_16bit(reinterpret_cast<float*>(checked(span)), span.bytes / sizeof(float),
                        dtype == models::DType::bf16, compute_stream());
  check_launch("round_to_16bit");
}

void CudaDevice::scale(const DeviceSpan& span, double factor) {
  if (span.bytes == 0) return;
  launch_scale(reinterpret_cast<float*>(checked(span)), span.bytes / sizeof(float), static_cast<float>(factor),
               compute_stream());
  check_launch("scale");
}

void CudaDevice::scale_16bit(const DeviceSpan& span, models::DType dtype, double factor) {
  if (dtype != models::DType::f16 && dtype != models::DType::bf16)
    throw std::invalid_argument("cuda backend: scale_16bit: the span holds f16 or bf16 elements");
  const size_t n = whole_element_count(span, dtype, "cuda backend: scale_16bit");
  if (n == 0) return;
  launch_scale_16bit(reinterpret_cast<uint16_t*>(checked(span)), n, static_cast<float>(factor),
                     dtype == models::DType::bf16, compute_stream());
  check_launch("scale_16bit");
}

double CudaDevice::sum_of_squares(const DeviceSpan& span) {
  if (span.bytes == 0) return 0.0;
  const size_t n = span.bytes / sizeof(float);
  auto* partials = static_cast<double*>(scratch(cpu::chunk_count(n) * sizeof(double)));
  launch_sum_of_squares(norm_result_, partials, reinterpret_cast<const float*>(checked(span)), n, cpu::kChunkElements,
                        compute_stream());
  check_launch("sum_of_squares");
  return read_norm_result();
}

double CudaDevice::read_norm_result() {
  double result = 0.0;
  await_stream(compute_stream(), "the compute stream (a norm read back)");  // before the copy: copy_to_host
  PTSIM_CUDA_CHECK(cudaMemcpyAsync(&result, norm_result_, sizeof(double), cudaMemcpyDeviceToHost, compute_stream()));
  await_stream(compute_stream(), "the compute stream (a norm read back)");
  return result;
}

math::Storage tail_storage(models::DType dtype) {
  if (const std::optional<math::Storage> s = math::storage_of(dtype)) return *s;
  throw std::logic_error("cuda backend: step-tail arrays are f32, f16 or bf16 only");
}

// Backend's contract (backend.hpp): f32 with factor 1 is the plain sum; otherwise every element read as
// fp32(widen(x)·fp32(factor)), in sum_of_squares' chunks and lanes.
double CudaDevice::scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) {
  const float f = static_cast<float>(factor);
  if (dtype == models::DType::f32 && f == 1.0f) return sum_of_squares(span);
  const size_t n = span.bytes / cpu::tail_element_bytes(dtype);
  if (n == 0) return 0.0;
  auto* partials = static_cast<double*>(scratch(cpu::chunk_count(n) * sizeof(double)));
  launch_scaled_sum_of_squares(norm_result_, partials, checked(span), tail_storage(dtype), f, n, cpu::kChunkElements,
                               compute_stream());
  check_launch("scaled_sum_of_squares");
  return read_norm_result();
}

void CudaDevice::scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                            const DeviceSpan& sum) {
  if (sum.bytes != sizeof(double))
    throw std::invalid_argument("cuda backend: scaled_sum_of_squares_into: the sum is one double");
  const size_t n = span.bytes / cpu::tail_element_bytes(dtype);
  if (n == 0) return;  // sum + 0: the same double
  auto* partials = static_cast<double*>(scratch(cpu::chunk_count(n) * sizeof(double)));
  launch_add_scaled_sum_of_squares(reinterpret_cast<double*>(checked(sum)), partials, checked(span),
                                   tail_storage(dtype), static_cast<float>(factor), n, cpu::kChunkElements,
                                   compute_stream());
  check_launch("scaled_sum_of_squares_into");
}

void CudaDevice::finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) {
  if (scalars.bytes != sizeof(optim_math::StepScalars) || sum.bytes != sizeof(double))
    throw std::invalid_argument("cuda backend: finish_step_scalars: expected one StepScalars and one double");
  launch_finish_step_scalars(reinterpret_cast<optim_math::StepScalars*>(checked(scalars)),
                             reinterpret_cast<const double*>(checked(sum)), max_grad_norm, compute_stream());
  check_launch("finish_step_scalars");
}

void CudaDevice::scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                               const DeviceSpan& sum) {
  if (sum.bytes != sizeof(double) || factor.bytes != sizeof(float))
    throw std::invalid_argument("cuda backend: scaled_sum_of_squares_into_by: expected one float factor and one double");
  const size_t n = span.bytes / cpu::tail_element_bytes(dtype);
  if (n == 0) return;  // sum + 0: the same double
  auto* partials = static_cast<double*>(scratch(cpu::chunk_count(n) * sizeof(double)));
  launch_add_scaled_sum_of_squares_by(reinterpret_cast<double*>(checked(sum)), partials, checked(span),
                                      tail_storage(dtype), reinterpret_cast<const float*>(checked(factor)), n,
                                      cpu::kChunkElements, compute_stream());
  check_launch("scaled_sum_of_squares_into_by");
}

void CudaDevice::update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) {
  if (state.bytes != sizeof(optim_math::LossScaleState) || scalars.bytes != sizeof(optim_math::StepScalars))
    throw std::invalid_argument("cuda backend: update_loss_scale: expected one LossScaleState and one StepScalars");
  launch_update_loss_scale(reinterpret_cast<optim_math::LossScaleState*>(checked(state)),
                           reinterpret_cast<const optim_math::StepScalars*>(checked(scalars)), compute_stream());
  check_launch("update_loss_scale");
}

void CudaDevice::add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) {
  if (sum.bytes != sizeof(double) || value.bytes != sizeof(float))
    throw std::invalid_argument("cuda backend: add_to_sum: expected one double and one float");
  launch_add_to_sum(reinterpret_cast<double*>(checked(sum)), reinterpret_cast<const float*>(checked(value)),
                    compute_stream());
  check_launch("add_to_sum");
}

// The CPU's convert_host rules (cpu_16bit_vectors.cpp): equal dtypes copy, f32 ↔ f16/bf16 convert, f16 ↔ bf16
// is not a step-tail conversion.
void CudaDevice::convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype) {
  const size_t out = cpu::tail_element_bytes(dst_dtype), in = cpu::tail_element_bytes(src_dtype);
  const size_t n = src.bytes / in;
  if (dst.bytes != n * out) throw std::invalid_argument("convert: the spans hold different element counts");
  if (dst_dtype == src_dtype) return copy(dst, src);
  if (out == in) throw std::logic_error("convert: between f16 and bf16 (not a step-tail conversion)");
  if (n == 0) return;
  if (dst_dtype == models::DType::f32) {
    launch_widen_16bit(reinterpret_cast<float*>(checked(dst)), reinterpret_cast<const uint16_t*>(checked(src)), n,
                       src_dtype == models::DType::bf16, compute_stream());
  } else {
    launch_narrow_16bit(reinterpret_cast<uint16_t*>(checked(dst)), reinterpret_cast<const float*>(checked(src)), n,
                        dst_dtype == models::DType::bf16, compute_stream());
  }
  check_launch("convert");
}

void* CudaDevice::scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  await_stream(compute_stream(), "the compute stream (scratch growth)");  // the old scratch may be in use
  PTSIM_CUDA_CHECK(cudaFree(scratch_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  const size_t grown = bytes + bytes / 2;
  const cudaError_t status = cudaMalloc(&scratch_, grown);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  check_cuda(status, "cudaMalloc (scratch)");
  scratch_bytes_ = grown;
  return scratch_;
}

void CudaDevice::raise_device_errors() {
  DeviceError e;
  // In the compute stream's order (its kernels write the record; the callers have just synchronized it, so
  // this waits for the copy alone), not the legacy stream's: cudaMemcpy does not wait for a non-blocking stream.
  PTSIM_CUDA_CHECK(cudaMemcpyAsync(&e, error_, sizeof(DeviceError), cudaMemcpyDeviceToHost, compute_stream()));
  PTSIM_CUDA_CHECK(cudaStreamSynchronize(compute_stream()));
  if (e.kind == 0) return;
  // Cleared in the compute stream's order (as in the constructor): before every kernel queued after this call.
  PTSIM_CUDA_CHECK(cudaMemsetAsync(error_, 0, sizeof(DeviceError), compute_stream()));
  switch (static_cast<DeviceErrorKind>(e.kind)) {
    case DeviceErrorKind::token_id:
      throw core::InputError(fmt::format("token id {} at row {} is outside the embedding table's {} rows", e.value,
                                         e.position, e.limit));
    case DeviceErrorKind::gather_index:
      throw core::InputError(
          fmt::format("gather index {} at position {} is outside [0, {})", e.value, e.position, e.limit));
    case DeviceErrorKind::label:
      throw core::InputError(
          fmt::format("label {} at row {} is outside [0, {}) (or -1 to ignore)", e.value, e.position, e.limit));
    case DeviceErrorKind::none: break;
  }
  throw std::logic_error(fmt::format("cuda backend: unknown device error kind {}", e.kind));
}

}  // namespace ptsim::runtime::cuda
