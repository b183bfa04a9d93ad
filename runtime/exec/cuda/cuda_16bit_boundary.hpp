// runtime/exec/cuda/cuda_16bit_boundary.hpp — how the CUDA backend runs an op on 16-bit (f16/bf16) storage
// with its fp32 kernels, as the CPU backend does (cpu_16bit_boundary.hpp) and from the same plan
// (op_boundary_plan.hpp): before the op, the conversion kernels (convert_16bit.hpp) widen each 16-bit input,
// and each output the op accumulates into, into fp32 device scratch; the kernel runs on the scratch; after
// it, each 16-bit output is narrowed back, round to nearest even. All on the compute stream, in order, so
// the scratch is reused op after op without synchronising. The values are bit for bit the CPU backend's
// wherever the fp32 kernels agree bit for bit (the conversions do: the same half_bits.hpp functions).
// The scratch: one device buffer, allocated at the first op that needs it at boundary_scratch_bytes of that
// op's graph (what the trainer's memory check counts), so one allocation per run, which waits for nothing
// (no older scratch is in use); a later graph that needs more reallocates after draining the stream through
// the owner's StreamWait (stream_wait.hpp: bounded behind a communicator's collective).
// Design: docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "models/task_graph.hpp"
#include "runtime/exec/cuda/stream_wait.hpp"
#include "runtime/exec/op_boundary_plan.hpp"

namespace ptsim::runtime::cuda {

// The fp32 device operands of one op run on 16-bit storage. prepare() returns false (and enqueues
// nothing) when the op has no 16-bit operand; otherwise it enqueues the widening on `stream`, and
// inputs()/outputs() are the device addresses to give the fp32 kernel; finish() enqueues the narrowing.
class OpBoundary {
 public:
  // `wait_for_stream`: the owner's host wait (CudaDevice::await_stream), used before the scratch grows.
  explicit OpBoundary(StreamWait wait_for_stream) : wait_for_stream_(std::move(wait_for_stream)) {}
  // Frees the scratch without waiting: the owner drains its streams first (CudaDevice::drain_for_teardown).
  ~OpBoundary();
  OpBoundary(const OpBoundary&) = delete;
  OpBoundary& operator=(const OpBoundary&) = delete;

  bool prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
               std::span<void* const> outputs, cudaStream_t stream);
  std::span<void* const> inputs() const { return bound_.inputs; }
  std::span<void* const> outputs() const { return bound_.outputs; }
  void finish(cudaStream_t stream);
  // The device scratch allocated so far (bytes): boundary_scratch_bytes of the largest graph run.
  size_t scratch_bytes() const { return scratch_bytes_; }

 private:
  float* scratch_for(const models::TaskGraph& graph, size_t floats, cudaStream_t stream);
  StreamWait wait_for_stream_;
  float* scratch_ = nullptr;  // device
  size_t scratch_bytes_ = 0;
  BoundBoundary bound_;
};

}  // namespace ptsim::runtime::cuda
