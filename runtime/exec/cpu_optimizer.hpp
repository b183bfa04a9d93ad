// runtime/exec/cpu_optimizer.hpp — the CPU reference of Backend::optimizer_step: AdamW, NVLAMB, LANS and SGD
// as multi-tensor passes over host fp32 arrays (the shape of apex's multi_tensor_apply). Every tensor is cut
// into kChunkElements chunks from its first element; the chunks run on `threads` threads
// (cpu_parallel.hpp); per-tensor norms add the chunks' double partial sums in chunk order, so the result
// does not depend on the thread count. A GPU kernel must give the same bits (docs/executor.md, "The device
// seam"); the element maths is optim_math's (runtime/optim/optimizer_math.hpp).
// Not here: the step counter, clipping decision and state save/restore (runtime/optim/optimizer.*), memory
// (the CPU backend passes its buffers' addresses; Backend's default passes host copies).
#pragma once
#include <cstddef>
#include <span>

#include "models/task_graph.hpp"  // defines: DType
#include "runtime/optim/optimizer_math.hpp"  // defines: Hyperparameters
#include "runtime/optim/step_scalars.hpp"    // defines: StepScalars

namespace ptsim::runtime::cpu {

// One tensor of the step: n elements at each pointer (state[1] unused, may be null, for SGD); the gradient's
// as grad_dtype (f32, f16, bf16), read as fp32(widen(g)·StepScalars::grad_factor) chunk by chunk.
struct HostOptimizerTensor {
  float* weight = nullptr;
  const void* grad = nullptr;
  models::DType grad_dtype = models::DType::f32;
  float* state[2] = {nullptr, nullptr};
  size_t n = 0;
  bool decay = true;
};

// One update step of hyper.rule on `tensors` with this step's scalars (Backend::optimizer_step's contract):
// nothing changes when s.skip is set.
void optimizer_step(const optim_math::Hyperparameters& hyper, const optim_math::StepScalars& s,
                    std::span<const HostOptimizerTensor> tensors, int threads);

}  // namespace ptsim::runtime::cpu
