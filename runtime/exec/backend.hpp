// runtime/exec/backend.hpp — the device seam: everything the executor asks of a device. A Backend owns
// memory (allocate/free buffers, copies host↔device and device↔device, zero-fill), streams and events
// (queue order, cross-stream waits, op timing), the compute ops (one virtual run() per TaskGraph op) and
// the few vector operations of the step tail (16-bit rounding and conversion, scaling, sums of squares, the
// step's norm verdict formed where the sum lies). The executor
// asks it for every buffer and never dereferences tensor storage; values cross the seam only through
// copy_to_device / copy_to_host. Implementations: the CPU backend (cpu_device.* + cpu_backend.*, float or
// double); a CUDA backend implements the same interface on device memory. What a new backend must
// implement: docs/executor.md, "The device seam".
// The optimizer is a backend operation too (optimizer_step: one multi-tensor update over backend buffers,
// the moments in buffers this backend allocated); its per-element maths is runtime/optim/optimizer_math.hpp.
// Not here: collectives (runtime/comm/communicator.hpp, which reduce backend spans), the optimizer's host
// driver (step counter, clipping, state save/restore: runtime/optim/optimizer.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "models/task_graph.hpp"
#include "runtime/exec/device_types.hpp"
#include "runtime/optim/optimizer_math.hpp"  // defines: Hyperparameters
#include "runtime/optim/loss_scale_state.hpp"  // defines: LossScaleState
#include "runtime/optim/step_scalars.hpp"    // defines: StepScalars

namespace ptsim::runtime {

// Where an op runs in the training schedule: selects the dropout stream.
struct OpContext {
  uint64_t seed = 0;
  int64_t step = 0;        // optimizer step
  int64_t micro_step = 0;  // micro-step within the optimizer step
};

// One parameter tensor of an optimizer step: n fp32 elements in the weight and state spans (bytes = 4·n);
// the gradient's n elements are stored as `grad_dtype` (f32: 4·n bytes; f16/bf16: 2·n bytes, 16-bit storage).
// The gradient the update uses is fp32(widen(grad[i]) · fp32(StepScalars::grad_factor)): the unscale is
// applied on read, so a 16-bit gradient buffer never holds an unscaled value (one that fp16 could not hold).
// The dtype is here because it belongs to the storage (the same every step, like the spans); the factor is a
// StepScalars field because it changes from step to step (dynamic loss scaling), like lr.
struct OptimizerTensor {
  DeviceSpan weight;    // the (master) weights, updated in place
  DeviceSpan grad;      // the gradient (averaged over ranks; scaled by the loss scale unless grad_factor = 1), read only
  DeviceSpan state[2];  // m and v (AdamW, LAMB, LANS); the momentum (SGD: state[0], state[1] unused)
  bool decay = true;    // false: λ = 0 for this tensor
  models::DType grad_dtype = models::DType::f32;  // f32, f16 or bf16
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual ComputeType compute() const = 0;
  // How f16/bf16 tensors are stored. true: as 16 bits (2 bytes per element); run() then gets 16-bit operands
  // wherever the graph it is given says f16/bf16 and converts at the op boundary (the CPU and CUDA backends,
  // op_boundary_plan.hpp). false: as fp32 values that the executor rounds after every write
  // (round_to_dtype), the emulation a backend without 16-bit conversions can use. docs/executor.md.
  virtual bool stores_16bit() const { return false; }

  // ---- memory ----
  // A new buffer of `bytes`, zero-filled, 64-byte aligned. Throws std::bad_alloc when out of memory.
  virtual DeviceBuffer allocate(size_t bytes) = 0;
  virtual void free(DeviceBuffer buffer) = 0;
  // The address of a span as the backend's kernels take it (a device pointer on a GPU): what run() gets.
  // Opaque to the caller, who may pass it back to this backend only.
  virtual void* kernel_address(const DeviceSpan& span) = 0;
  // True when kernel_address() is ordinary host memory that host code may read and write after
  // synchronize() (the CPU backend): the MPI communicator reduces it in place.
  virtual bool host_addressable() const = 0;
  // src (span.bytes bytes of host memory) → span; span → dst. Both complete before returning (copy_to_host
  // waits for the compute stream's queued work first).
  virtual void copy_to_device(const DeviceSpan& dst, const void* src) = 0;
  virtual void copy_to_host(void* dst, const DeviceSpan& src) = 0;
  // src (span.bytes bytes of host memory, a few dozen: e.g. the optimizer's StepScalars) → span, queued on the
  // compute stream after the work queued so far, without waiting for it; src may be reused as soon as this
  // returns. This default is copy_to_device (it waits); the CUDA backend queues a pageable cudaMemcpyAsync,
  // which stages src before it returns.
  virtual void copy_to_device_async(const DeviceSpan& dst, const void* src) { copy_to_device(dst, src); }
  // dst ← src on the compute stream (same byte count; the spans do not overlap).
  virtual void copy(const DeviceSpan& dst, const DeviceSpan& src) = 0;
  virtual void fill_zero(const DeviceSpan& span) = 0;

  // ---- streams and events (all no-ops or clock reads on the CPU, where work runs when it is queued) ----
  virtual Stream create_stream() = 0;
  virtual Event create_event() = 0;
  // Marks the point in `stream` after everything queued so far (CPU: reads the clock).
  virtual void record(Event event, Stream stream = {}) = 0;
  // Work queued on `stream` from now on starts after `event` completes.
  virtual void wait(Stream stream, Event event) = 0;
  // Seconds between two recorded events (waits for `stop`).
  virtual double elapsed_seconds(Event start, Event stop) = 0;
  // Waits until everything queued on `stream` has run.
  virtual void synchronize(Stream stream = {}) = 0;

  // ---- compute ops ----
  // Runs one compute op. inputs[i] / outputs[i] are kernel_address()es of op.inputs[i] / op.outputs[i]
  // (float-like tensors in compute(), i32 as int32_t, u8 as uint8_t; on a backend that stores_16bit(), the
  // tensors `graph` says are f16/bf16 as 16 bits: the executor passes the graph with each tensor's dtype as
  // it is stored, Executor's storage_graph); shapes come from `graph`. Throws
  // std::invalid_argument for op kinds the backend does not run.
  virtual void run(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> inputs,
                   std::span<void* const> outputs, const OpContext& context) = 0;

  // ---- vector operations of the step tail, on float elements of compute() ----
  // Rounds fp32 storage to the nearest f16/bf16 (precision.hpp); a no-op for other dtypes. f32 only.
  virtual void round_to_dtype(const DeviceSpan& span, models::DType dtype) = 0;
  // x ← x · factor (factor rounded to compute() first).
  virtual void scale(const DeviceSpan& span, double factor) = 0;
  // x ← narrow(widen(x) · fp32(factor)) over 16-bit elements of `dtype` (f16 or bf16), in place: the fp32
  // product rounded to nearest even (precision.hpp's narrow_16bit), what scale then round_to_dtype does on
  // fp32 storage. The average of a 16-bit gradient bucket summed in its own type. f32 compute only. This
  // default goes through host copies.
  virtual void scale_16bit(const DeviceSpan& span, models::DType dtype, double factor);
  // Σ x² accumulated in double, in a fixed order (fixed-size chunks, partial sums added in chunk order),
  // so the result does not depend on threads or scheduling; returned through one small copy.
  virtual double sum_of_squares(const DeviceSpan& span) = 0;
  // Σ (x·factor)² over the span's elements x of `dtype` (f32; or f16/bf16 widened, exact), x·factor computed
  // in fp32 (factor rounded to fp32 once), squared and summed in double in sum_of_squares's chunk and lane
  // order: the same double as scale(span, factor) then sum_of_squares on the fp32 values, without writing
  // anything (the global norm of 16-bit gradients with the loss-scale unscale applied on read). f32 compute
  // only. This default copies the span to the host and sums there (correct on any backend, slow); with
  // dtype f32 and factor 1 it is sum_of_squares(span).
  virtual double scaled_sum_of_squares(const DeviceSpan& span, models::DType dtype, double factor);
  // sum ← sum + scaled_sum_of_squares(span, dtype, factor), where `sum` is one double in this backend's
  // memory, on the compute stream and without a host read (the host's `sum += ...` order: the same double).
  // The step tail accumulates the gradients' Σg² so, starting from a zeroed sum. f32 compute only. This
  // default goes through host copies (copy_to_host of the sum, scaled_sum_of_squares, copy_to_device).
  virtual void scaled_sum_of_squares_into(const DeviceSpan& span, models::DType dtype, double factor,
                                          const DeviceSpan& sum);
  // The step's norm verdict on the compute stream: optim_math::finish_norm(*scalars, *sum, max_grad_norm)
  // with `scalars` one StepScalars and `sum` one double in this backend's memory (grad_norm, grad_norm_f32,
  // skip, clip_divisor, clip; the other fields as they are). A one-thread device step on a GPU; this default
  // goes through host copies.
  virtual void finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm);
  // scaled_sum_of_squares_into with the factor in this backend's memory: `factor` one fp32 (the
  // LossScaleState's grad_factor, formed on the device), read on the compute stream; the same double as
  // scaled_sum_of_squares_into(span, dtype, that float, sum). This default copies the factor to the host.
  virtual void scaled_sum_of_squares_into_by(const DeviceSpan& span, models::DType dtype, const DeviceSpan& factor,
                                             const DeviceSpan& sum);
  // The loss scale's step on the compute stream: optim_math::update_loss_scale(*state, scalars->skip != 0),
  // with `state` one LossScaleState and `scalars` the step's StepScalars after finish_step_scalars. A
  // one-thread device step on a GPU; this default goes through host copies.
  virtual void update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars);
  // sum ← sum + value on the compute stream, `sum` one double and `value` one scalar of compute()'s type (fp32
  // widened exactly, or double): the host's `loss_sum += loss` on a value that stays in backend memory. This
  // default goes through host copies.
  virtual void add_to_sum(const DeviceSpan& sum, const DeviceSpan& value);
  // dst ← src converted element by element on the compute stream: f32 → f16/bf16 rounds to nearest even
  // (precision.hpp's narrow_16bit: fp16 overflow → ±inf, NaN stays NaN), f16/bf16 → f32 widens (exact),
  // equal dtypes copy. Both spans hold the same element count and do not overlap. f32 compute only. Used for
  // the 16-bit weight copies (master → copy) and the 16-bit gradient buckets' fp32 all-reduce staging. This
  // default goes through host copies (copy_to_host, convert, copy_to_device).
  virtual void convert(const DeviceSpan& dst, models::DType dst_dtype, const DeviceSpan& src, models::DType src_dtype);

  // ---- optimizer (multi-tensor passes over fp32 buffers; contract: docs/executor.md, "The device seam") ----
  // One update step of `hyper.rule` on `tensors`, with this step's scalars read from `scalars` (one
  // optim_math::StepScalars in this backend's memory, written by the caller on the compute stream before
  // the call: learning rate, 1-based step t and its bias corrections, clip divisor, gradient factor, skip
  // flag; nothing from earlier calls). When its skip flag is set the step changes nothing. Cut every tensor into chunks of
  // cpu::kChunkElements elements from its first element; per-tensor norms are Σ over its chunks, in chunk
  // order, of per-chunk double sums; trust ratios and step sizes per tensor in double, rounded to fp32;
  // the element maths is optim_math's. Passes: AdamW, SGD one; LAMB two (moments + Σu², Σw²; apply);
  // LANS three (Σg², Σw²; moments + Σ(r+λw)², Σ(c+λw)²; apply). On the compute stream.
  // This default is the CPU reference (cpu_optimizer.hpp) run on host copies (copy_to_host of the scalars
  // and the tensors, step, copy_to_device): correct, bit for bit, on any backend, and slow; a device backend
  // overrides it with one kernel per pass (the CPU backend runs the reference in place).
  virtual void optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                              std::span<const OptimizerTensor> tensors);
  // Whether this backend's optimizer_step override reads 16-bit gradients (OptimizerTensor::grad_dtype) and
  // applies StepScalars::grad_factor. When false, the Optimizer runs a step that needs either through
  // Backend::optimizer_step, the default above (host copies), so an override written for fp32 gradients
  // (the CUDA backend's kernels) is never given what it cannot read. The default itself handles both.
  virtual bool optimizer_reads_16bit_gradients() const { return false; }
};

// The reference backend: every op as a plain loop (OpenBLAS/Eigen for GEMMs) in float or double, on host
// memory. `threads`: the step tail's vector operations split their fixed chunks over this many threads
// (0 or 1: the calling thread only).
std::unique_ptr<Backend> make_cpu_backend(ComputeType compute, int threads = 1);

// The factory: the backend `kind` computing in `compute`, set up as `options` says. Throws core::InputError
// when this build does not have it (backend_available), saying so, and for an option the backend does not have
// (options.attention tensor_core on the CPU backend).
std::unique_ptr<Backend> make_backend(BackendKind kind, ComputeType compute, int threads,
                                      const BackendOptions& options = {});

}  // namespace ptsim::runtime
