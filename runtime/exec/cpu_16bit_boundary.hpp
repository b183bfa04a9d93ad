// runtime/exec/cpu_16bit_boundary.hpp — how the CPU backend runs an op on 16-bit (f16/bf16) storage with
// its one fp32 kernel: before the op, each 16-bit operand gets fp32 scratch (inputs widened, exactly;
// outputs the op accumulates into widened too); after it, each 16-bit output is narrowed back with
// round-to-nearest-even (narrow_16bit), the rounding round_to_dtype (precision.hpp) applies to fp32 storage. So the
// values are bit for bit those of the fp32-storage emulation, at 2 bytes per stored element.
// Which operands, and where in the scratch: the shared plan (op_boundary_plan.hpp, also the CUDA backend's).
// The scratch is one host buffer per backend, grown to the largest op's 16-bit operands and reused.
// Design: docs/executor.md, "Mixed precision". Not here: the kernels (cpu_backend.cpp).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "models/task_graph.hpp"
#include "runtime/exec/op_boundary_plan.hpp"

namespace ptsim::runtime::cpu {

// The plan's functions, under the names the CPU code has used.
using runtime::accumulates_into;
using runtime::boundary_scratch_bytes;
using runtime::op_scratch_floats;

// The fp32 operands of one op run on 16-bit storage. prepare() returns false (and does nothing) when the op
// has no 16-bit operand; otherwise inputs()/outputs() are the addresses to give the fp32 kernel, and
// finish() narrows the outputs into storage.
class OpBoundary {
 public:
  bool prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
               std::span<void* const> outputs);
  std::span<void* const> inputs() const { return bound_.inputs; }
  std::span<void* const> outputs() const { return bound_.outputs; }
  void finish();
  // The scratch grown so far (bytes): 4 × the largest op's 16-bit operand elements, plus alignment.
  size_t scratch_bytes() const { return scratch_.size() * sizeof(float); }

 private:
  std::vector<float> scratch_;
  BoundBoundary bound_;
};

}  // namespace ptsim::runtime::cpu
