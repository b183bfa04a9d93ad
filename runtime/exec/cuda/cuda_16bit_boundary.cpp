// runtime/exec/cuda/cuda_16bit_boundary.cpp — the CUDA backend's op boundary for 16-bit storage: the shared
// plan carried out on device memory with the conversion kernels (see cuda_16bit_boundary.hpp).
#include "runtime/exec/cuda/cuda_16bit_boundary.hpp"

#include <cstdint>
#include <new>

#include "runtime/exec/cuda/convert_16bit.hpp"
#include "runtime/exec/cuda/cuda_check.hpp"

namespace ptsim::runtime::cuda {

OpBoundary::~OpBoundary() { (void)cudaFree(scratch_); }

float* OpBoundary::scratch_for(const models::TaskGraph& graph, size_t floats, cudaStream_t stream) {
  if (floats * sizeof(float) <= scratch_bytes_) return scratch_;
  // The whole graph's need at once (this op's need is at most that), so one allocation serves the run.
  const size_t bytes = boundary_scratch_bytes(graph);
  PTSIM_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old scratch may still be read or written
  PTSIM_CUDA_CHECK(cudaFree(scratch_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  check_cuda(status, "cudaMalloc (16-bit boundary scratch)");
  scratch_ = static_cast<float*>(p);
  scratch_bytes_ = bytes;
  return scratch_;
}

bool OpBoundary::prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
                         std::span<void* const> outputs, cudaStream_t stream) {
  const OpBoundaryPlan plan = plan_op_boundary(graph, op);
  if (plan.empty()) return false;
  float* scratch = scratch_for(graph, plan.scratch_floats, stream);
  inputs_.assign(inputs.begin(), inputs.end());
  outputs_.assign(outputs.begin(), outputs.end());
  narrowings_.clear();
  for (const BoundaryOperand& o : plan.operands) {
    float* f = scratch + o.offset_floats;
    void* storage = o.output ? outputs[o.index] : inputs[o.index];
    const bool bf16 = o.dtype == models::DType::bf16;
    if (o.widen) launch_widen_16bit(f, static_cast<const uint16_t*>(storage), o.elements, bf16, stream);
    if (o.narrow) narrowings_.push_back({storage, f, o.elements, bf16});
    (o.output ? outputs_ : inputs_)[o.index] = f;
  }
  check_launch("widen_16bit");
  return true;
}

void OpBoundary::finish(cudaStream_t stream) {
  for (const Narrowing& n : narrowings_)
    launch_narrow_16bit(static_cast<uint16_t*>(n.storage), n.scratch, n.n, n.bf16, stream);
  narrowings_.clear();
  check_launch("narrow_16bit");
}

}  // namespace ptsim::runtime::cuda
