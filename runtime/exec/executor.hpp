// runtime/exec/executor.hpp — executes a TaskGraph for real: has the Backend (made once from
// ExecutorOptions::backend) allocate its tensors as the memory plan lays them out (one activation arena at
// the plan's offsets; flat weight, gradient, master and input buffers with a view per tensor), runs the ops
// of one micro-step in order through the Backend, times every op with backend events (same op ids as the
// simulator), and runs the step tail (gradient all-reduce through a Communicator, global norm, optimizer
// updates by bucket). Callers move values only through explicit copies (read_/write_tensor, _parameter).
// Not here: kernels and memory (runtime/exec/backend.hpp, cpu_*), data loading, the training loop
// (runtime/train/).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/memory_plan.hpp"
#include "runtime/exec/step_state.hpp"  // defines: StepStateRecord, LossScaleState
#include "models/task_graph.hpp"
#include "runtime/exec/device_types.hpp"  // defines: ComputeType, BackendKind

namespace ptsim::runtime {

class Optimizer;     // runtime/optim/optimizer.hpp
struct ParamSlot;    // runtime/optim/optimizer.hpp
class Communicator;  // runtime/comm/communicator.hpp
class Backend;       // runtime/exec/backend.hpp

struct ExecutorOptions {
  BackendKind backend = BackendKind::cpu;  // made once, by make_backend (backend.hpp)
  BackendOptions backend_options;           // what make_backend is given (the attention kernel)
  ComputeType compute = ComputeType::f32;
  uint64_t seed = 1234;        // dropout streams: hash(seed, step, micro_step, op.attrs.rng_stream)
  bool time_ops = true;        // measure every op's wall time
  int threads = 0;             // GEMM threads (OpenBLAS, Eigen with OpenMP; 0 = the libraries' defaults) and
                               // the CPU backend's step-tail passes (cpu::vector_pass_threads of it)
  // Called after every body op (forward, recompute, backward) with the op just run, while its outputs still
  // hold their values: the memory plan may reuse an activation's bytes once its last reader has run, so
  // this is where a check copies out intermediate tensors such as the MLM logits (read_tensor;
  // tests/runtime/golden/).
  std::function<void(const models::Op&)> after_op;
  // Polled between the ops of a micro-step (never in the step tail, where the optimizer updates weights in
  // place): when it returns true, run_micro_step throws MicroStepAbandoned. Null: never polled. The
  // trainer passes its SIGINT/SIGTERM flag, so a long step stops within one op (docs/training.md).
  bool (*stop_requested)() = nullptr;
  // Data parallel: the last micro-step of an optimizer step starts each gradient bucket's all-reduce as soon
  // as the backward op writing its last gradient has run (when run_micro_step is given the communicator),
  // and the step tail waits for it before the norm. The same bits either way (tested with 2 ranks). Off:
  // every all-reduce runs whole in the tail, so its op time is the collective's full time, not the part
  // left exposed after backward (docs/executor.md, "Overlapping the bucket all-reduces").
  bool overlap_comm = true;
};

// Thrown by run_micro_step when options.stop_requested() became true between two ops. Only activations
// and gradients were written, so the weights and optimizer state are those of the last completed step.
struct MicroStepAbandoned : std::runtime_error {
  MicroStepAbandoned() : std::runtime_error("micro-step abandoned on a stop request") {}
};

// The graph with each tensor's dtype as the executor stores it, so models::plan_memory of it is the memory
// the executor allocates. `stores_16bit` (Backend::stores_16bit, backend_stores_16bit): f16/bf16
// activations, workspace, weight copies and parameter gradients stay 16-bit (2 bytes per element; the CPU
// backend). Otherwise every f16/bf16 tensor becomes f32 (the rounding emulation).
models::TaskGraph storage_graph(const models::TaskGraph& graph, bool stores_16bit);
// The fp32 staging buffers for 16-bit gradient buckets under overlap_comm, used only with a communicator
// that cannot sum the buckets' 16-bit dtype in place (Communicator::sums_natively false: no communicator
// ptsim train uses; MPI, NCCL and one rank sum f16/bf16 in their type): at most this many buckets are
// widened and in flight at once; starting one more first finishes the oldest (waits for its all-reduce
// alone, not the newer ones queued behind it, and narrows it). Two: one bucket's sum on the communication stream while the next is widened (double
// buffering, as DDP's and Megatron's bucketed all-reduces keep a couple of buckets in flight).
// docs/executor.md, "Mixed precision".
inline constexpr int kAllReduceStagingSlots = 2;
// The fp32 staging the executor allocates to all-reduce 16-bit gradient buckets through a communicator that
// does not sum them natively (`stored`: a storage_graph; 0 when its gradients are fp32). With overlap_comm
// bucket i (op order) always takes staging slot
// i mod kAllReduceStagingSlots, each slot sized to the largest bucket that takes it (its tensors' fp32
// elements, alignment padding included): the sum of those maxima (max over even buckets + max over odd
// ones, not slots × the largest); without overlap_comm one slot, the largest bucket (the buckets run one at
// a time in the step tail). On top of models::plan_memory(stored).
double all_reduce_staging_bytes(const models::TaskGraph& stored, bool overlap_comm);
// What the executor stages with `comm`: all_reduce_staging_bytes(stored, overlap_comm) when `comm` does not
// sum the 16-bit buckets' dtype natively, else 0 (every bucket summed in place: the simulator's memory plan
// has no staging either). What the trainer's memory check adds.
double all_reduce_staging_bytes(const models::TaskGraph& stored, bool overlap_comm, const Communicator& comm);

class Executor {
 public:
  Executor(const models::TaskGraph& graph, ExecutorOptions options);
  // With a backend the caller made (a test double, or one make_backend does not know); options.backend is
  // not used. Throws std::invalid_argument for a null backend or one that does not compute in options.compute.
  Executor(const models::TaskGraph& graph, ExecutorOptions options, std::unique_ptr<Backend> backend);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const models::TaskGraph& graph() const;
  const models::MemoryPlan& plan() const;
  size_t allocated_activation_bytes() const;  // the arena really allocated (= plan.activations_peak_bytes; ×2 for f64)
  // The flat buffers really allocated: weights (the ops' weight copies; 2 bytes per element when 16-bit
  // storage keeps them as 16 bits), fp32 masters (bf16/fp16 graphs), gradients (2 bytes per element likewise).
  struct ParameterBytes {
    size_t weights = 0, masters = 0, gradients = 0;
  };
  ParameterBytes allocated_parameter_bytes() const;

  // Parameters: BERT/GPT-2 init (normal(0, 0.02) for matrices and embeddings, LayerNorm weight 1, biases 0),
  // into the fp32 masters under mixed precision, then the 16-bit weight copies are refreshed from them.
  void init_parameters(uint64_t seed);

  // ---- values in and out: explicit copies through the backend (no caller holds a pointer into storage) ----
  // The fp32 values of graph.params[i] that the optimizer updates and a checkpoint stores: its master weight
  // under bf16/fp16, the weight itself under fp32. write_parameter also refreshes the 16-bit weight copy the
  // ops read (no-op under fp32). f32 compute only; `values` must have the parameter's element count.
  std::vector<float> read_parameter(size_t param_index);
  void write_parameter(size_t param_index, std::span<const float> values);
  // The fp32 gradient of graph.params[i] as the last run_step_tail's norm and optimizer read it: unscaled by
  // its loss scale (and averaged over ranks). 16-bit gradients are stored scaled and unscaled on read
  // (docs/executor.md, "Mixed precision"), so this is the stored value × fp32(1/loss scale); fp32-stored ones
  // the tail unscaled in place. Before any tail, or after micro-steps, the gradient as stored. f32 only.
  std::vector<float> read_gradient(size_t param_index);
  // Recomputes every 16-bit weight copy from its fp32 master (no-op under fp32).
  void refresh_weight_copies();
  // A tensor's values: T = float under f32 compute, double under f64 (any float tensor; f16/bf16 tensors hold
  // 16-bit values: on a backend that stores 16 bits a value written here is rounded to the dtype (nearest
  // even) and read back widened; on one that emulates, it is kept as written in fp32 storage and the executor
  // rounds only what ops write), int32_t for i32 tensors (inputs). Throws std::invalid_argument for another
  // T, a tensor without storage, or (write) a size that is not the tensor's element count.
  template <class T>
  std::vector<T> read_tensor(int tensor_id);
  template <class T>
  void write_tensor(int tensor_id, std::span<const T> values);
  // The value the last micro-step gave a scalar the executor keeps: graph.loss_tensor and the loss output of
  // every cross_entropy op (e.g. "cls.predictions.loss"), copied into a small buffer as they are produced
  // and read back with one copy per micro-step. Throws std::invalid_argument for any other tensor.
  double scalar_output(int tensor_id) const;
  bool has_scalar_output(int tensor_id) const;

  void zero_gradients();
  // One micro-step: forward, (recompute), backward. Inputs must have been filled via i32(...) / f32/f64(loss_grad).
  // Returns the loss (graph.loss_tensor). micro_step 0 starts an optimizer step: gradients are zeroed first
  // (so calling zero_gradients() before it is harmless but not needed). Throws MicroStepAbandoned when
  // options.stop_requested says so between two ops. `comm` (data parallel, options.overlap_comm): on the
  // last micro-step (graph.micro_steps − 1) the bucket all-reduces start from backward; run_step_tail must
  // then be given the same communicator, before the next micro-step.
  double run_micro_step(int64_t step, int64_t micro_step, Communicator* comm = nullptr);
  // The step tail: all_reduce ops through `comm` (may be null when data_parallel == 1), grad_norm, and
  // optimizer_update ops through `optimizer` (slot i == graph.params[i]) with learning rate `lr`.
  // `loss_scale`: the factor the loss gradient (graph.inputs.loss_grad) carried; after the all-reduce the
  // gradients are divided by it in fp32, before the norm and the update (fp16 loss scaling); 1 = none.
  // Under mixed precision each update writes the fp32 masters and then refreshes the 16-bit weight copies.
  // all_reduce averages over comm->size() ranks: sums, then divides (a 16-bit bucket summed in its type is
  // divided first, before its sum: docs/executor.md). A null optimizer skips
  // the updates (communication and norm only); f64 compute refuses a non-null one. A non-finite global
  // norm skips the update (last_step_skipped()).
  void run_step_tail(Communicator* comm, Optimizer* optimizer, double lr, double loss_scale = 1.0);

  // ---- a step with no host read inside it (docs/cuda-backend.md, "The loss scale on the device") ----
  // run_micro_step without reading anything back: the kept scalars `summed` (at most 3 tensor ids, each one
  // scalar_output accepts: e.g. the loss, MLM and NSP losses) are added in double into the step state's sums
  // on the backend, zeroed at micro_step 0 (the same order and bits as the host's `sum += run_micro_step(...)`).
  // scalar_output is not updated. read_step_state() returns the sums.
  void run_micro_step_summed(int64_t step, int64_t micro_step, Communicator* comm, std::span<const int> summed);
  // fp16 dynamic loss scaling with the scale in backend memory: needs f32 compute and 16-bit gradients.
  bool supports_device_loss_scale() const;
  // Writes the scale state (LossScaler::device_state: a run's start or a checkpoint restore) into backend
  // memory. Throws std::logic_error when !supports_device_loss_scale().
  void set_device_loss_scale(const optim_math::LossScaleState& state);
  // graph.inputs.loss_grad ← the device state's loss_grad (fp32(scale / grad_accum)), a device copy: what
  // write_tensor of that value gives.
  void seed_loss_gradient();
  // run_step_tail with the unscale factor (grad_factor = fp32(1/scale)) read from the device state by the norm
  // and the optimizer, and after the verdict the scale's update on the device (Backend::update_loss_scale).
  // Needs an optimizer and set_device_loss_scale first.
  void run_step_tail_device_scale(Communicator* comm, Optimizer* optimizer, double lr);
  // One copy back of the step state: the verdict of the last f32 tail (also answering last_grad_norm,
  // last_step_skipped and the optimizer's own verdict, so they read nothing more), the device loss scale
  // after its update (what LossScaler::mirror takes), and the micro-step sums.
  StepStateRecord read_step_state();

  // Measured seconds per op id, accumulated since the last reset (body ops: summed over micro-steps).
  const std::vector<double>& op_seconds() const;
  const std::vector<int>& op_executions() const;
  void reset_timers();

  // ---- additions (runtime/exec) ----
  ComputeType compute() const;
  Backend& backend();
  // One ParamSlot per graph.params[i] (slot i): the spans of this executor's weight and gradient storage
  // (the fp32 masters under bf16/fp16) in backend(): what to build the Optimizer from,
  // make_optimizer(backend(), config, param_slots()). f32 compute only (throws core::InputError for f64).
  std::vector<ParamSlot> param_slots();
  // The global gradient L2 norm the last run_step_tail computed (by the grad_norm op, or before the first
  // update when the graph has none; NaN when neither ran), and whether that tail skipped the optimizer
  // because the norm was not finite (weights and optimizer state unchanged). Under f32 compute both come from
  // the verdict the tail left in backend memory: one small copy the first time either is asked, then cached
  // (the optimizer given to that tail must still exist then).
  double last_grad_norm() const;
  bool last_step_skipped() const;
  // The fp32 staging for 16-bit gradient all-reduces allocated so far (bytes; all_reduce_staging_bytes is
  // its bound, reached once every slot has been used).
  size_t all_reduce_staging_held() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptsim::runtime
