// runtime/exec/cuda/optimizer.hpp — the CUDA backend's multi-tensor optimizer step (optimizer.cu): AdamW,
// NVLAMB, LANS and SGD over device fp32 buffers (gradients f32, f16 or bf16, read times StepScalars::grad_factor), bit for bit the CPU reference (runtime/exec/cpu_optimizer.cpp;
// contract: docs/executor.md, "The device seam"; launch shape and determinism: docs/cuda-backend.md). It
// keeps the device copy of each tensor list's work list (optimizer_plan.hpp) and its scratch, built the first
// time the list is seen: the executor makes one call per gradient bucket, the same lists every step.
// Its one host wait (the cache drain below) goes through the owner's StreamWait (stream_wait.hpp).
// Host-only header (CUDA runtime types).
// Not here: resolving spans to addresses and checking them (CudaBackend::optimizer_step, cuda_backend.cpp).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "runtime/exec/cuda/stream_wait.hpp"
#include "runtime/exec/math/scaled_read.hpp"  // defines: Storage
#include "runtime/exec/optimizer_plan.hpp"
#include "runtime/optim/optimizer_math.hpp"  // defines: Hyperparameters
#include "runtime/optim/loss_scale_state.hpp"  // defines: LossScaleState
#include "runtime/optim/step_scalars.hpp"    // defines: StepScalars

namespace ptsim::runtime::cuda {

// One tensor of a step in device memory: `elements` fp32 values at each address (state[1] null for SGD),
// the gradient's `elements` stored as grad_storage (read as fp32(widen(g)·grad_factor): scaled_read.hpp).
struct OptimizerTensorAddresses {
  float* weight = nullptr;
  const void* grad = nullptr;
  float* state[2] = {nullptr, nullptr};
  size_t elements = 0;
  bool decay = true;
  math::Storage grad_storage = math::Storage::f32;
  bool operator==(const OptimizerTensorAddresses& o) const {
    return weight == o.weight && grad == o.grad && state[0] == o.state[0] && state[1] == o.state[1] &&
           elements == o.elements && decay == o.decay && grad_storage == o.grad_storage;
  }
};

struct OptimizerDeviceTables;  // optimizer.cu: the uploaded plan and the per-chunk / per-tensor scratch

class MultiTensorOptimizer {
 public:
  // `wait_for_stream`: the owner's host wait (CudaDevice::await_stream), used for the cache drain.
  explicit MultiTensorOptimizer(StreamWait wait_for_stream);
  // Frees the tables without waiting: the owner drains the streams its steps were queued on first
  // (CudaBackend's destructor: CudaDevice::drain_for_teardown, bounded behind a collective).
  ~MultiTensorOptimizer();
  MultiTensorOptimizer(const MultiTensorOptimizer&) = delete;
  MultiTensorOptimizer& operator=(const MultiTensorOptimizer&) = delete;

  // One step of hyper.rule on `tensors`, enqueued on `stream`, every kernel reading the step's scalars at
  // `scalars` (device memory, written on `stream` before; a set skip flag makes every kernel return at once).
  // Nothing synchronises, except when a new list finds kMaxLists lists cached: the cache is dropped after the
  // stream drains (wait_for_stream, "the optimizer's stream (table cache drain)"), then rebuilt as lists recur.
  void step(const optim_math::Hyperparameters& hyper, const optim_math::StepScalars* scalars,
            std::span<const OptimizerTensorAddresses> tensors, cudaStream_t stream);

  // Distinct tensor lists kept (one per gradient bucket in training: BERT-large, 335 M fp32 parameters in
  // 25 MiB buckets, makes ~51).
  static constexpr size_t kMaxLists = 1024;
  size_t cached_lists() const { return tables_.size(); }

 private:
  const OptimizerDeviceTables& tables_for(std::span<const OptimizerTensorAddresses> tensors, cudaStream_t stream);
  StreamWait wait_for_stream_;
  std::vector<std::unique_ptr<OptimizerDeviceTables>> tables_;
  size_t last_ = 0;  // the entry used last: the next bucket's is usually the one after it
};

// optim_math::finish_norm(*scalars, *sum_of_squares, max_grad_norm) as one thread on `stream` (both pointers
// device memory): the step tail's norm, clip divisor and skip flag formed where Σg² lies.
void launch_finish_step_scalars(optim_math::StepScalars* scalars, const double* sum_of_squares, double max_grad_norm,
                                cudaStream_t stream);

// optim_math::update_loss_scale(*state, scalars->skip != 0) as one thread on `stream` (device memory): the
// fp16 dynamic loss scale's step, after the step's finish kernel.
void launch_update_loss_scale(optim_math::LossScaleState* state, const optim_math::StepScalars* scalars,
                              cudaStream_t stream);
// *sum = *sum + *value as one thread on `stream`: a micro-step's fp32 loss added to the step's sum in device
// memory (the CUDA backend computes in f32 only).
void launch_add_to_sum(double* sum, const float* value, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
