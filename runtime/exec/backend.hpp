// runtime/exec/backend.hpp — the seam between the executor and the kernels: one virtual run() per op.
// The executor resolves every op's tensors to pointers once (arena offsets, parameter and input buffers)
// and hands them to a Backend in op order. Implementations: CpuBackend (runtime/exec/cpu_backend.*,
// float or double); a CUDA backend implements the same interface on device pointers.
// Not here: step-tail ops (all_reduce, grad_norm, optimizer_update): they need a Communicator and an
// Optimizer, so the executor runs them itself.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "models/task_graph.hpp"
#include "runtime/exec/executor.hpp"  // defines: ComputeType

namespace ptsim::runtime {

// Where an op runs in the training schedule: selects the dropout stream.
struct OpContext {
  uint64_t seed = 0;
  int64_t step = 0;        // optimizer step
  int64_t micro_step = 0;  // micro-step within the optimizer step
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Runs one compute op. inputs[i] / outputs[i] point at the storage of op.inputs[i] / op.outputs[i]
  // (float-like tensors in the backend's scalar type, i32 as int32_t, u8 as uint8_t); tensor shapes
  // come from `graph`. Throws std::invalid_argument for op kinds the backend does not run.
  virtual void run(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
                   std::span<void* const> outputs, const OpContext& context) = 0;
  // Waits for queued work (no-op on the CPU); the executor calls it before reading a clock.
  virtual void synchronize() {}
};

// The reference backend: every op as a plain loop (Eigen for GEMMs) in float or double.
std::unique_ptr<Backend> make_cpu_backend(ComputeType compute);

}  // namespace ptsim::runtime
