// runtime/exec/cuda/cuda_device.hpp — the memory, stream/event and step-tail half of the CUDA backend
// (the counterpart of cpu_device.hpp): cudaMalloc'd buffers in a table indexed by DeviceBuffer::id (zero
// filled; cudaMalloc aligns to 256 bytes), copies on the compute stream (host copies complete before they
// return), streams and timing events, the deterministic sum of squares, and the device error record that
// kernels report bad input into (checked at every synchronising call). CudaBackend (cuda_backend.cpp)
// derives from it and adds the compute ops. Every CUDA call is checked (cuda_check.hpp).
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/comm/cuda_stream_source.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/device_error.hpp"
#include "runtime/exec/cuda/stream_wait.hpp"
#include "runtime/exec/math/scaled_read.hpp"  // defines: Storage

namespace ptsim::runtime::cuda {

// Also a CudaStreamSource: the NCCL communicator (runtime/comm/nccl_communicator.*) enqueues its
// all-reduces on the native stream behind a ptsim Stream.
// How a kernel takes an array of `dtype` (f32, f16 or bf16; throws std::logic_error for others).
math::Storage tail_storage(models::DType dtype);

class CudaDevice : public Backend, public CudaStreamSource {
 public:
  // Device `device`; the caller has checked that it exists.
  explicit CudaDevice(int device);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;
  ComputeType compute() const override { return ComputeType::f32; }

  DeviceBuffer allocate(size_t bytes) override;
  void free(DeviceBuffer buffer) override;
  void* kernel_address(const DeviceSpan& span) override;
  bool host_addressable() const override { return false; }
  void copy_to_device(const DeviceSpan& dst, const void* src) override;
  // cudaMemcpyAsync from pageable memory on the compute stream: the driver stages src before returning
  // (no synchronisation), so src may be reused at once (the optimizer's StepScalars).
  void copy_to_device_async(const DeviceSpan& dst, const void* src) override;
  void copy_to_host(void* dst, const DeviceSpan& src) override;
  void copy(const DeviceSpan& dst, const DeviceSpan& src) override;
  void fill_zero(const DeviceSpan& span) override;

  Stream create_stream() override;
  Event create_event() override;
  void record(Event event, Stream stream = {}) override;
  void wait(Stream stream, Event event) override;
  double elapsed_seconds(Event start, Event stop) override;
  void synchronize(Stream stream = {}) override;
  void* cuda_stream(Stream stream) override { return stream_of(stream); }
  void set_host_wait_guard(std::weak_ptr<HostWaitGuard> guard) override { host_wait_guard_ = std::move(guard); }

  void round_to_dtype(const DeviceSpan& span, models::DType dtype) override;
  void scale(const DeviceSpan& span, double factor) override;
  void scale_16bit(const DeviceSpan& span, models::DType dtype, double factor) override;  // convert_16bit.cu
  double sum_of_squares(const DeviceSpan& span) override;
  // On the device (vector_ops.cu, convert_16bit.cu), the bits of Backend's host-copy defaults.
  double scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) override;
  // Queued on the compute stream, nothing read back (vector_ops.cu's accumulating sum; optimizer.cu's
  // one-thread finish_norm).
  void scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                  const DeviceSpan& sum) override;
  void finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) override;
  void scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                     const DeviceSpan& sum) override;
  void update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) override;
  void add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) override;
  void convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype) override;

 protected:
  cudaStream_t compute_stream() const { return streams_[0]; }
  cublasHandle_t cublas() const { return cublas_; }
  DeviceError* device_error() const { return error_; }
  // At least `bytes` of device scratch for one op (valid until the next call; grows by reallocating after
  // a stream synchronisation).
  void* scratch(size_t bytes);
  // The double at norm_result_, after the compute stream's queued work.
  double read_norm_result();
  // Every host wait of the backend (and of CudaBackend's ops) on the device: until `stream` has run what was
  // queued on it (`what`: what waits, for the message of a collective that never finishes). Without a host
  // wait guard cudaStreamSynchronize; with one, cudaStreamQuery polled through await_device (docs/nccl.md).
  void await_stream(cudaStream_t stream, const char* what);
  void await_event(cudaEvent_t event, const char* what);
  // Before teardown frees device memory: await_stream on every stream of the backend, so behind a
  // communicator's collective that never finishes it ends at that collective's deadline (the guard aborts
  // the communicator, which releases the streams) instead of blocking for good. Never throws: a failure is
  // written to stderr and teardown goes on. Called by ~CudaBackend (before its members free their device
  // memory) and ~CudaDevice; a second call on drained streams costs one cudaStreamQuery each.
  void drain_for_teardown() noexcept;
  // await_stream as the helpers that reuse device memory take it (stream_wait.hpp); valid while this lives.
  StreamWait wait_for_stream() {
    return [this](cudaStream_t stream, const char* what) { await_stream(stream, what); };
  }
  // Throws core::InputError for a bad id/index/label a kernel reported (and clears the record).
  void raise_device_errors();

 private:
  std::byte* checked(const DeviceSpan& span) const;
  cudaStream_t stream_of(Stream stream) const;
  int device_;
  std::vector<void*> buffers_;  // [id]; null once freed (or for a 0-byte buffer)
  std::vector<size_t> sizes_;
  std::vector<char> live_;
  std::vector<cudaStream_t> streams_;  // [0]: the compute stream
  std::vector<cudaEvent_t> events_;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  DeviceError* error_ = nullptr;   // device memory
  double* norm_result_ = nullptr;  // device: the sums of squares' one double
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::weak_ptr<HostWaitGuard> host_wait_guard_;  // the communicator's (set_host_wait_guard); empty: none
};

}  // namespace ptsim::runtime::cuda
