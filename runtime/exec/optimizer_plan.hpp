// runtime/exec/optimizer_plan.hpp — the work list of one multi-tensor optimizer step (Backend::optimizer_step,
// docs/executor.md "The device seam"), planned on the host from the tensors' sizes alone: every tensor cut
// into chunks of cpu::kChunkElements elements from its own first element, tensor by tensor, and for each
// tensor the range of its chunks in that list (where its per-chunk partial sums are added, in chunk order,
// into the tensor's norms). The CPU reference (cpu_optimizer.cpp) walks this list on its threads; the CUDA
// backend uploads it once per tensor list (runtime/exec/cuda/optimizer.cu) and runs one block or warp per
// chunk. The structs are plain integers so the device reads the same bytes the host wrote.
// Also here: the checks every backend's optimizer_step makes on its arguments.
// Not here: the passes themselves (cpu_optimizer.cpp, cuda/optimizer.cu), the element maths (optimizer_math.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/optim/optimizer_math.hpp"  // defines: Rule

namespace ptsim::runtime {

struct OptimizerTensor;  // backend.hpp
struct DeviceSpan;       // device_types.hpp

// Elements [begin, end) of tensor `tensor` (an index into the step's tensor list).
struct OptimizerChunk {
  int64_t tensor = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// One tensor of the list: its size, its chunks [first_chunk, first_chunk + chunks) of the plan, and whether
// weight decay applies (0 or 1).
struct OptimizerTensorRange {
  int64_t elements = 0;
  int64_t first_chunk = 0;
  int64_t chunks = 0;
  int32_t decay = 1;
  int32_t unused = 0;
};

struct OptimizerPlan {
  std::vector<OptimizerChunk> chunks;        // tensor by tensor; within a tensor, in element order
  std::vector<OptimizerTensorRange> tensors;  // [i]: tensor i of the list
};

// What the plan needs of each tensor.
struct OptimizerPlanTensor {
  size_t elements = 0;
  bool decay = true;
};

// The plan for `tensors` with `chunk_elements` per chunk (> 0; the backends use cpu::kChunkElements). An
// empty tensor has no chunks (its sums stay 0).
OptimizerPlan plan_optimizer_step(std::span<const OptimizerPlanTensor> tensors, size_t chunk_elements);

// How many state arrays a rule keeps per tensor: 1 for SGD (the momentum), 2 otherwise (m, v).
int optimizer_state_arrays(optim_math::Rule rule);
// Throws std::invalid_argument unless the weight is whole fp32 elements, the first `states` state spans have
// its byte count and the gradient holds as many elements of its grad_dtype (f32: 4 bytes, f16/bf16: 2).
void check_optimizer_tensor(const OptimizerTensor& t, int states);
// Throws std::invalid_argument unless `scalars` is one optim_math::StepScalars (sizeof bytes) of a valid buffer.
void check_step_scalars(const DeviceSpan& scalars);

}  // namespace ptsim::runtime
