// runtime/optim/optimizer.hpp — the optimizers the runtime executes on flat fp32 tensors in a Backend's
// memory: AdamW, LAMB as NVIDIA runs it (NVLAMB), LANS, and SGD with momentum.
// The Optimizer is the host driver: it keeps the configuration, the step counter and the clipping decision,
// has the Backend allocate its state (Adam moments m, v; SGD momentum) next to the weights, and runs each
// update as one Backend::optimizer_step over the listed tensors (multi-tensor passes; the CPU reference is
// runtime/exec/cpu_optimizer.cpp, the per-element maths runtime/optim/optimizer_math.hpp), with the learning
// rate, step number, bias corrections and clip divisor in an optim_math::StepScalars that step_begin writes
// into a small backend buffer once per step (step_scalars.hpp) and the passes read there. State crosses to the host only
// through explicit copies (save_state / load_state, for checkpoints). Formulas and sources:
// docs/optimizers-and-checkpoints.md (torch.optim, NVIDIA apex FusedLAMB, DeepLearningExamples BERT, the LANS
// paper); tests/runtime/golden/ checks AdamW and NVLAMB against PyTorch.
// Not here: mixed precision (the executor keeps fp32 master weights and hands them in as ParamSlots,
// unscales gradients and skips steps with non-finite gradients), kernels (the Backend), learning-rate
// schedules (lr_schedule.hpp).
//
// Two call shapes, equivalent to the bit:
//   opt.step(lr, norm);                                       // all tensors at once
//   opt.step_begin(lr, norm); opt.update({3, 4}); opt.update({0, 1, 2}); opt.step_end();  // bucket by bucket
// `norm` is the global L2 norm of all gradients, precomputed by the executor's grad_norm op; pass
// std::nullopt to let the optimizer compute it from every slot's gradient in step_begin (then every
// gradient must be final before step_begin, which defeats bucketing).
// A third form leaves the norm on the device (what the executor's step tail uses):
//   opt.step_begin_on_device(lr, sum_span, grad_factor); opt.update(...); ...; opt.step_end();
// takes Σg² from a double in backend memory and forms the norm, the clip divisor and the skip flag (a
// non-finite norm: the passes change nothing) in the step's StepScalars on the compute stream
// (Backend::finish_step_scalars), so nothing is read back before the passes are queued. The host learns the
// verdict lazily: one copy of the StepScalars, the first time step_count(), last_step_verdict(), the next
// step_begin, save_state or load_state needs it (a skipped step does not advance the step count).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/recipe.hpp"  // defines: OptimizerKind
#include "models/task_graph.hpp"  // defines: DType
#include "runtime/exec/device_types.hpp"  // defines: DeviceSpan
#include "runtime/optim/optimizer_math.hpp"  // defines: StepInputs
#include "runtime/optim/step_scalars.hpp"    // defines: StepScalars

namespace ptsim::runtime {

class Backend;  // runtime/exec/backend.hpp

// One parameter tensor as the optimizer sees it: n fp32 weights (updated in place) and n gradients (fp32, or
// f16/bf16 under 16-bit storage), in the memory of the Backend the optimizer is built on.
struct ParamSlot {
  std::string name;               // unique; names this tensor's state arrays ("<name>.m", "<name>.v")
  DeviceSpan weight;              // (n) fp32 (master) weights, updated in place
  DeviceSpan grad;                // (n) gradient averaged over the global batch; × step_begin's grad_factor = unscaled
  std::size_t n = 0;
  bool decay = true;              // false for biases and LayerNorm gains/biases: no weight decay
  models::DType grad_dtype = models::DType::f32;  // how grad is stored: f32 (4·n bytes) or f16/bf16 (2·n)
};

// Hyperparameters. One struct for every kind; default_optimizer_config() fills each kind's defaults.
struct OptimizerConfig {
  models::OptimizerKind kind = models::OptimizerKind::lamb;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;              // LAMB/LANS 1e-6 (NVIDIA BERT, LANS paper); AdamW default 1e-8 (PyTorch)
  double weight_decay = 0.01;     // λ; applied only to slots with decay = true
  double max_grad_norm = 1.0;     // global-norm clipping threshold; <= 0 disables. Ignored by LANS.
  double momentum = 0.9;          // sgd only
  // lamb only. true (NVLAMB, apex use_nvlamb=True): trust ratio on every tensor. false (apex FusedLAMB's
  // default, which NVIDIA DeepLearningExamples BERT run_pretraining.py uses): ratio 1 where λ = 0.
  bool use_nvlamb = true;
};

// Per-kind defaults: lamb (0.9, 0.999, 1e-6, λ 0.01, clip 1.0) as NVIDIA DeepLearningExamples BERT;
// lans (0.9, 0.999, 1e-6, λ 0.01) as Zheng et al. 2020; adamw (0.9, 0.999, 1e-8, λ 0.01, no clipping)
// as torch.optim.AdamW; sgd (momentum 0.9, λ 0, no clipping).
OptimizerConfig default_optimizer_config(models::OptimizerKind kind);
// Throws core::InputError naming the field when a value is out of range (betas in [0,1), eps > 0, ...).
void validate_optimizer_config(const OptimizerConfig& config);

// Named flat arrays + step count: what a checkpoint stores. save_state/load_state round-trip bit-exactly.
struct NamedArray {
  std::string name;
  std::vector<float> values;
};
// What a step did, for logging and loss scaling: the global norm it used (NaN when it neither needed nor was
// given one), the divisor its gradients were divided by (1: not clipped), and whether it was skipped (a
// non-finite norm under step_begin_on_device: weights, moments and the step count unchanged).
struct StepVerdict {
  double grad_norm = 0.0;
  double clip_divisor = 1.0;
  bool skipped = false;
};

struct OptimizerState {
  std::string kind;               // "adamw" | "lamb" | "lans" | "sgd"
  int64_t step = 0;               // completed optimizer steps
  std::vector<NamedArray> arrays; // "<slot>.<state>" in slot order, e.g. "enc.0.qkv.w.m", "enc.0.qkv.w.v"
};

class Optimizer {
 public:
  // Allocates the state (zeros) in `backend`, which must hold the slots' spans and outlive the optimizer.
  // Throws core::InputError on a bad config or on empty/duplicate slot names, spans of the wrong size.
  Optimizer(Backend& backend, OptimizerConfig config, std::vector<ParamSlot> slots);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Bucketed shape. step_begin fixes lr and the clipping factor for this step (computing the global
  // gradient norm over every slot when `global_grad_norm` is nullopt and the optimizer clips);
  // update() applies the step to the listed slots (each at most once per step); step_end() advances the
  // step counter. A non-finite or negative norm throws std::invalid_argument: skip such a step instead.
  // `grad_factor`: every gradient is read as fp32(g · fp32(grad_factor)) in this step (the loss-scale unscale
  // applied on read, StepInputs::grad_factor; also in the norm computed here); `global_grad_norm` is of
  // those values.
  void step_begin(double lr, std::optional<double> global_grad_norm = std::nullopt, double grad_factor = 1.0);
  // The device form: `sum_of_squares` is one double in the backend's memory holding Σg² of every gradient as
  // the passes read it (× grad_factor), final on the compute stream before the passes run. The norm is
  // always formed (it decides the skip); clipping follows the configuration as in step_begin. Never throws
  // for a non-finite norm: the step is skipped on the device instead.
  void step_begin_on_device(double lr, const DeviceSpan& sum_of_squares, double grad_factor = 1.0);
  // The same with the gradient factor in the backend's memory (`grad_factor_f32`: one fp32, the device loss
  // scale's LossScaleState::grad_factor), copied into the step's StepScalars on the compute stream.
  void step_begin_on_device(double lr, const DeviceSpan& sum_of_squares, const DeviceSpan& grad_factor_f32);
  void update(std::span<const std::size_t> slot_indices);
  void update_all();
  void step_end();
  // One-shot shape: step_begin + update_all + step_end.
  void step(double lr, std::optional<double> global_grad_norm = std::nullopt);

  // Completed (not skipped) steps. After a step_begin_on_device step, reads its verdict first (once).
  int64_t step_count() const;
  // The current/last step's verdict (StepVerdict); after step_begin_on_device one copy of the step's
  // StepScalars, the first time it is asked, then cached.
  StepVerdict last_step_verdict() const;
  // Global norm used by the current/last step (host step_begin: NaN when the optimizer did not need it; after
  // step_begin_on_device always √Σg², which the overflow check forms for every rule), and the factor
  // the gradient was divided by (1 when not clipped). For logging. last_step_verdict()'s fields.
  double last_grad_norm() const { return last_step_verdict().grad_norm; }
  // How many steps were begun (step_begin / step_begin_on_device), skipped ones included: a caller that will
  // read a step's verdict later keeps this to check that no other step began meanwhile.
  int64_t step_serial() const { return step_serial_; }
  double last_clip_divisor() const { return last_step_verdict().clip_divisor; }
  // Takes the verdict of step `serial` (step_serial() when it began) from a copy of its StepScalars that the
  // caller read back with other values in one copy (the executor's step state), so the optimizer need not read
  // its own buffer again. Throws std::logic_error when another step began since.
  void adopt_verdict(const optim_math::StepScalars& scalars, int64_t serial) const;
  // √(Σ over slots Σ g²): one Backend::sum_of_squares per slot (double, fixed chunk order), added in slot
  // order. What step_begin computes when it is given no norm.
  double global_grad_norm() const;
  // The backend buffer holding the current/last step's optim_math::StepScalars (what every update() passes
  // to Backend::optimizer_step); written by step_begin.
  DeviceSpan step_scalars_span() const;

  const OptimizerConfig& config() const { return config_; }
  const std::vector<ParamSlot>& slots() const { return slots_; }
  Backend& backend() const { return backend_; }
  std::size_t slot_index(std::string_view name) const;  // throws std::out_of_range

  // Copies of the state (device → host; host → device): what a checkpoint stores. Round-trips bit-exactly.
  OptimizerState save_state() const;
  // Throws core::InputError naming `source` and the array on a kind mismatch, a missing, extra or
  // wrongly sized array; changes nothing then.
  void load_state(const OptimizerState& state, const std::string& source = "optimizer state");

  // Names of the per-tensor state arrays of this kind ({"m", "v"} or {"momentum"}).
  std::vector<std::string> state_names() const;

 private:
  // Whether this kind uses the global gradient norm (clipping); LANS does not (ĝ is scale-invariant).
  bool uses_global_norm() const;
  // step_begin's checks and per-step resets, shared by both forms.
  void begin_common(double lr, double grad_factor);
  // Reads a device step's verdict from the scalars buffer (once); then, when that step has ended, counts
  // it unless it was skipped.
  void read_verdict() const;
  void begin_on_device(double lr, const DeviceSpan& sum_of_squares, double grad_factor, const DeviceSpan* device_factor);
  void settle_step() const;

  Backend& backend_;
  OptimizerConfig config_;
  optim_math::Hyperparameters hyper_;
  std::vector<ParamSlot> slots_;
  DeviceBuffer state_buffer_;                     // every state array, 64-byte aligned each
  DeviceBuffer scalars_buffer_;                   // one optim_math::StepScalars
  std::vector<std::array<DeviceSpan, 2>> state_;  // [slot][state_names() index]
  // Mutable: a device step's verdict and its effect on the count are settled lazily by const readers.
  mutable int64_t step_count_ = 0;
  bool grad_factor_on_device_ = false;  // this step's grad_factor lies in backend memory (grad_factor_ is 1)
  mutable bool verdict_unread_ = false;  // a step_begin_on_device step whose StepScalars were not read yet
  mutable bool count_unsettled_ = false; // that step has ended; step_count_ not yet advanced (or not: skipped)
  mutable bool skipped_ = false;
  int64_t step_serial_ = 0;  // steps begun so far: tells a caller holding an old step's verdict apart
  mutable double grad_norm_ = 0.0;
  mutable double clip_divisor_ = 1.0;  // gradients are divided by this (apex: clipped_global_grad_norm)
  // Valid between step_begin and step_end:
  bool in_step_ = false;
  double lr_ = 0.0;
  double grad_factor_ = 1.0;   // gradients are read × this (StepInputs::grad_factor)
  std::vector<char> updated_;  // per slot, this step

  int64_t current_t() const { return step_count_ + 1; }
};

// The optimizer of config.kind: AdamW (Loshchilov & Hutter; torch.optim.AdamW), NVLAMB (apex FusedLAMB
// use_nvlamb=True; use_nvlamb = false: apex's default), LANS (Zheng et al. 2020), SGD with momentum
// (torch.optim.SGD). Formulas: docs/optimizers-and-checkpoints.md.
std::unique_ptr<Optimizer> make_optimizer(Backend& backend, const OptimizerConfig& config, std::vector<ParamSlot> slots);

}  // namespace ptsim::runtime
