// runtime/exec/cpu_device.hpp — the memory, stream/event and step-tail half of the CPU backend: buffers
// are 64-byte aligned host allocations in a table indexed by DeviceBuffer::id, copies are memcpy, streams
// are the one in-order host thread (work runs when it is queued, so waits are no-ops), events are
// steady_clock reads, and the vector passes split fixed chunks over `threads` threads (cpu_parallel.hpp).
// CpuBackend<T> (cpu_backend.cpp) derives from it and adds the compute ops.
// Not here: kernels (cpu_backend.*), GEMM engines (cpu_gemm.*).
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/exec/backend.hpp"

namespace ptsim::runtime::cpu {

class CpuDevice : public Backend {
 public:
  CpuDevice(ComputeType compute, int threads);
  ComputeType compute() const override { return compute_; }
  // f32: 16-bit tensors are stored as 16 bits, converted at the op boundary (cpu_16bit_boundary.hpp).
  bool stores_16bit() const override { return compute_ == ComputeType::f32; }

  DeviceBuffer allocate(size_t bytes) override;
  void free(DeviceBuffer buffer) override;
  void* kernel_address(const DeviceSpan& span) override;
  bool host_addressable() const override { return true; }
  void copy_to_device(const DeviceSpan& dst, const void* src) override;
  void copy_to_host(void* dst, const DeviceSpan& src) override;
  void copy(const DeviceSpan& dst, const DeviceSpan& src) override;
  void fill_zero(const DeviceSpan& span) override;

  Stream create_stream() override { return {}; }  // one in-order host thread: every stream is it
  Event create_event() override;
  void record(Event event, Stream stream = {}) override;
  void wait(Stream, Event) override {}
  double elapsed_seconds(Event start, Event stop) override;
  void synchronize(Stream = {}) override {}

  void round_to_dtype(const DeviceSpan& span, models::DType dtype) override;
  void scale(const DeviceSpan& span, double factor) override;
  void scale_16bit(const DeviceSpan& span, models::DType dtype, double factor) override;
  double sum_of_squares(const DeviceSpan& span) override;
  // In place on the buffers, chunked over threads() threads (cpu_16bit_vectors.hpp).
  double scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor) override;
  // In place: the sum and the scalars are host memory (no copies).
  void scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                  const DeviceSpan& sum) override;
  void finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) override;
  void scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                     const DeviceSpan& sum) override;
  void update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) override;
  void add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) override;
  void convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype) override;
  // The CPU reference (cpu_optimizer.hpp) in place on these buffers, on threads() threads, with the
  // StepScalars read from their buffer (host memory: work runs when it is queued).
  void optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                      std::span<const OptimizerTensor> tensors) override;
  bool optimizer_reads_16bit_gradients() const override { return true; }

  int threads() const { return threads_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::byte* checked(const DeviceSpan& span) const;  // the span's first byte; throws when it is out of range
  ComputeType compute_;
  int threads_;
  std::vector<std::unique_ptr<std::byte, Free>> buffers_;  // [id]; null once freed
  std::vector<size_t> sizes_;
  std::vector<char> live_;  // [id]: allocated and not freed
  std::vector<std::chrono::steady_clock::time_point> events_;
};

}  // namespace ptsim::runtime::cpu
