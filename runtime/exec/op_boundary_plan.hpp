// runtime/exec/op_boundary_plan.hpp — the backend-neutral half of running an op on 16-bit (f16/bf16)
// storage with an fp32 kernel: which of the op's operands are 16-bit, which outputs the op adds into (so
// they are widened before it, not only narrowed after), and where each 16-bit operand's fp32 copy sits in
// the one scratch buffer (offsets in floats from the buffer's start, each a multiple of
// kBoundaryAlignmentFloats, inputs then outputs in operand order, none overlapping). Its size over a graph
// is boundary_scratch_bytes, which the trainer's memory check counts. The CPU backend's OpBoundary
// (cpu_16bit_boundary.hpp) and the CUDA backend's (cuda/cuda_16bit_boundary.hpp) carry a plan out, each with
// its own memory and conversions. Design: docs/executor.md, "Mixed precision".
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::runtime {

// Each scratch operand starts a multiple of 16 floats (64 bytes) after the scratch's start; a buffer
// aligned to 64 bytes (the CUDA one: cudaMalloc's 256) keeps every operand 64-byte aligned.
inline constexpr size_t kBoundaryAlignmentFloats = 16;

// Whether `op` adds into its output `index` (C += A·B for gradients, dtable +=, dγ/dβ +=, dbias +=) rather
// than overwriting it: such an output is widened before the op.
bool accumulates_into(const models::Op& op, size_t index);

// One 16-bit operand of an op and its fp32 copy in the scratch.
struct BoundaryOperand {
  bool output = false;  // false: op.inputs[index]; true: op.outputs[index]
  size_t index = 0;
  size_t offset_floats = 0;  // from the scratch's start, a multiple of kBoundaryAlignmentFloats
  size_t elements = 0;
  models::DType dtype = models::DType::bf16;
  bool widen = false;   // copied in before the op: every input, and the outputs it accumulates into
  bool narrow = false;  // copied back (rounded to nearest even) after it: every output
};

struct OpBoundaryPlan {
  std::vector<BoundaryOperand> operands;  // inputs in operand order, then outputs
  size_t scratch_floats = 0;              // the scratch the operands take, alignment included
  bool empty() const { return operands.empty(); }
};

// One conversion a backend carries out for a bound plan: `elements` values between the 16-bit storage and
// their fp32 copy in the scratch.
struct BoundaryConversion {
  void* storage;
  float* scratch;
  size_t elements;
  models::DType dtype;
};
// A plan bound to one scratch and one op's storage addresses: what to give the fp32 kernel (its inputs and
// outputs, the 16-bit ones replaced by their scratch copies), what to widen before it and narrow after it.
struct BoundBoundary {
  std::vector<void*> inputs, outputs;
  std::vector<BoundaryConversion> widen, narrow;
};
// Fills `bound` (its vectors reused) from `plan`, `scratch` (at least plan.scratch_floats floats) and the
// op's storage addresses. Both backends' OpBoundary call it, then convert with their own kernels.
void bind_boundary(const OpBoundaryPlan& plan, float* scratch, std::span<void* const> inputs,
                   std::span<void* const> outputs, BoundBoundary& bound);

// The plan of `op` on `graph` (whose tensor dtypes are as stored: Executor's storage_graph). Empty when no
// operand is 16-bit.
OpBoundaryPlan plan_op_boundary(const models::TaskGraph& graph, const models::Op& op);
// plan_op_boundary(graph, op).scratch_floats, without building the plan.
size_t op_scratch_floats(const models::TaskGraph& graph, const models::Op& op);
// The scratch one backend needs to run every op of `graph` that goes to Backend::run (bytes): the largest
// micro-step op's (forward, recompute, backward; the step tail's ops never cross the boundary). 0 for a graph
// with no 16-bit tensor (fp32 storage). The trainer's memory check counts it on top of the memory plan.
size_t boundary_scratch_bytes(const models::TaskGraph& graph);

}  // namespace ptsim::runtime
