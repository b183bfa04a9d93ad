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
  if (scratch_ != nullptr) {  // the old scratch may still be read or written by queued ops
    wait_for_stream_(stream, "the op boundary's stream (16-bit scratch growth)");
    PTSIM_CUDA_CHECK(cudaFree(scratch_));
    scratch_ = nullptr;
    scratch_bytes_ = 0;
  }
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
  bind_boundary(plan, scratch_for(graph, plan.scratch_floats, stream), inputs, outputs, bound_);
  for (const BoundaryConversion& c : bound_.widen)
    launch_widen_16bit(c.scratch, static_cast<const uint16_t*>(c.storage), c.elements,
                       c.dtype == models::DType::bf16, stream);
  check_launch("widen_16bit");
  return true;
}

void OpBoundary::finish(cudaStream_t stream) {
  for (const BoundaryConversion& c : bound_.narrow)
    launch_narrow_16bit(static_cast<uint16_t*>(c.storage), c.scratch, c.elements, c.dtype == models::DType::bf16,
                        stream);
  bound_.narrow.clear();
  check_launch("narrow_16bit");
}

}  // namespace ptsim::runtime::cuda
