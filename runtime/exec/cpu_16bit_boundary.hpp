// runtime/exec/cpu_16bit_boundary.hpp — how the CPU backend runs an op on 16-bit (f16/bf16) storage with
// its one fp32 kernel: before the op, each 16-bit operand gets fp32 scratch (inputs widened, exactly;
// outputs the op accumulates into widened too); after it, each 16-bit output is narrowed back with
// round-to-nearest-even (narrow_16bit), the rounding round_to_dtype (precision.hpp) applies to fp32 storage. So the
// values are bit for bit those of the fp32-storage emulation, at 2 bytes per stored element.
// The scratch is one buffer per backend, grown to the largest op's 16-bit operands and reused.
// Design: docs/executor.md, "Mixed precision". Not here: the kernels (cpu_backend.cpp).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::runtime::cpu {

// Whether `op` adds into its output `index` (C += A·B for gradients, dtable +=, dγ/dβ +=, dbias +=) rather
// than overwriting it: such an output is widened before the op.
bool accumulates_into(const models::Op& op, size_t index);

// The fp32 scratch (floats) `op` needs on 16-bit storage: its 16-bit inputs and outputs, each aligned; 0 when
// it has none.
size_t op_scratch_floats(const models::TaskGraph& graph, const models::Op& op);
// What the scratch grows to over `graph` (bytes): the largest op's. The trainer's memory check counts it.
size_t boundary_scratch_bytes(const models::TaskGraph& graph);

// The fp32 operands of one op run on 16-bit storage. prepare() returns false (and does nothing) when the op
// has no 16-bit operand; otherwise inputs()/outputs() are the addresses to give the fp32 kernel, and
// finish() narrows the outputs into storage.
class OpBoundary {
 public:
  bool prepare(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
               std::span<void* const> outputs);
  std::span<void* const> inputs() const { return inputs_; }
  std::span<void* const> outputs() const { return outputs_; }
  void finish();
  // The scratch grown so far (bytes): 4 × the largest op's 16-bit operand elements, plus alignment.
  size_t scratch_bytes() const { return scratch_.size() * sizeof(float); }

 private:
  struct Narrowing {
    void* storage;
    const float* scratch;
    size_t n;
    models::DType dtype;
  };
  std::vector<float> scratch_;
  std::vector<void*> inputs_, outputs_;
  std::vector<Narrowing> narrowings_;
};

}  // namespace ptsim::runtime::cpu
