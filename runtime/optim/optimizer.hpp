// runtime/optim/optimizer.hpp — the optimizers the runtime executes on flat fp32 tensors:
// AdamW, LAMB as NVIDIA runs it (NVLAMB), LANS, and SGD with momentum.
// Each optimizer owns its per-tensor state (Adam moments m, v; SGD momentum) and a global step counter,
// and updates weights in place from gradients it only reads. Formulas and sources:
// docs/optimizers-and-checkpoints.md (which names the primary sources: torch.optim, NVIDIA apex FusedLAMB,
// DeepLearningExamples BERT, the LANS paper); tests/runtime/golden/ checks AdamW and NVLAMB against PyTorch.
// Each update is multi-tensor shaped (apex multi_tensor_apply): the listed slots are cut into fixed chunks
// (runtime/exec/cpu_parallel.hpp) that run on set_threads() threads; per-tensor norms add the chunks' partial
// sums in chunk order, so results do not depend on the thread count or scheduling. The per-element maths is
// runtime/optim/optimizer_math.hpp, which a GPU multi-tensor kernel includes; the learning rate, step number
// and clip divisor reach it as optim_math::StepInputs, not as state read inside the loop.
// Not here: mixed precision (the executor keeps fp32 master weights and hands them in as ParamSlots,
// unscales gradients and skips steps with non-finite gradients), GPU kernels, learning-rate schedules
// (lr_schedule.hpp).
//
// Two call shapes, equivalent to the bit:
//   opt.step(lr, norm);                                       // all tensors at once
//   opt.step_begin(lr, norm); opt.update({3, 4}); opt.update({0, 1, 2}); opt.step_end();  // bucket by bucket
// `norm` is the global L2 norm of all gradients, precomputed by the executor's grad_norm op; pass
// std::nullopt to let the optimizer compute it from every slot's gradient in step_begin (then every
// gradient must be final before step_begin, which defeats bucketing).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/recipe.hpp"  // defines: OptimizerKind
#include "runtime/optim/optimizer_math.hpp"  // defines: StepInputs

namespace ptsim::runtime {

// One parameter tensor as the optimizer sees it: flat fp32 weights (updated in place) and gradient.
struct ParamSlot {
  std::string name;               // unique; names this tensor's state arrays ("<name>.m", "<name>.v")
  float* weight = nullptr;        // (n) fp32 (master) weights, updated in place
  const float* grad = nullptr;    // (n) fp32 gradient: unscaled and averaged over the global batch
  std::size_t n = 0;
  bool decay = true;              // false for biases and LayerNorm gains/biases: no weight decay
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
struct OptimizerState {
  std::string kind;               // "adamw" | "lamb" | "lans" | "sgd"
  int64_t step = 0;               // completed optimizer steps
  std::vector<NamedArray> arrays; // "<slot>.<state>" in slot order, e.g. "enc.0.qkv.w.m", "enc.0.qkv.w.v"
};

class Optimizer {
 public:
  // Throws core::InputError on a bad config or on empty/duplicate slot names, null pointers.
  Optimizer(OptimizerConfig config, std::vector<ParamSlot> slots);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Bucketed shape. step_begin fixes lr and the clipping factor for this step (computing the global
  // gradient norm over every slot when `global_grad_norm` is nullopt and the optimizer clips);
  // update() applies the step to the listed slots (each at most once per step); step_end() advances the
  // step counter. A non-finite or negative norm throws std::invalid_argument: skip such a step instead.
  void step_begin(double lr, std::optional<double> global_grad_norm = std::nullopt);
  void update(std::span<const std::size_t> slot_indices);
  void update_all();
  void step_end();
  // One-shot shape: step_begin + update_all + step_end.
  void step(double lr, std::optional<double> global_grad_norm = std::nullopt);

  int64_t step_count() const { return step_count_; }   // completed steps
  // Threads for the update passes (≤ 1: the calling thread). Results are identical for any count.
  void set_threads(int threads) { threads_ = threads > 1 ? threads : 1; }
  // Global norm used by the current/last step (NaN when the optimizer did not need it), and the factor
  // the gradient was divided by (1 when not clipped). For logging.
  double last_grad_norm() const { return grad_norm_; }
  double last_clip_divisor() const { return clip_divisor_; }

  const OptimizerConfig& config() const { return config_; }
  const std::vector<ParamSlot>& slots() const { return slots_; }
  std::size_t slot_index(std::string_view name) const;  // throws std::out_of_range
  // Point the slots at new buffers (same names, sizes and order; decay flags may not change either).
  void rebind(std::vector<ParamSlot> slots);

  OptimizerState save_state() const;
  // Throws core::InputError naming `source` and the array on a kind mismatch, a missing, extra or
  // wrongly sized array.
  void load_state(const OptimizerState& state, const std::string& source = "optimizer state");

  // Names of the per-tensor state arrays of this kind ({"m", "v"} or {"momentum"}).
  virtual std::vector<std::string> state_names() const = 0;

 protected:
  // Apply one step to the listed slots (each once), with this step's inputs (lr, 1-based t, clip divisor).
  virtual void update_slots(std::span<const std::size_t> slots, const optim_math::StepInputs& in) = 0;
  // Whether this kind uses the global gradient norm (clipping); LANS does not.
  virtual bool uses_global_norm() const { return config_.max_grad_norm > 0.0; }

  OptimizerConfig config_;
  std::vector<ParamSlot> slots_;
  std::vector<std::vector<std::vector<float>>> state_;  // [slot][state_names() index] (n)
  int64_t step_count_ = 0;
  // Valid between step_begin and step_end:
  bool in_step_ = false;
  double lr_ = 0.0;
  double grad_norm_ = 0.0;
  double clip_divisor_ = 1.0;  // gradients are divided by this (apex: clipped_global_grad_norm)
  std::vector<char> updated_;  // per slot, this step
  int threads_ = 1;

  int64_t current_t() const { return step_count_ + 1; }
  void init_state();
};

// AdamW (Loshchilov & Hutter; torch.optim.AdamW): m, v with bias correction,
// w ← w − η·(m̂/(√v̂+ε) + λ·w).
class AdamW final : public Optimizer {
 public:
  AdamW(OptimizerConfig config, std::vector<ParamSlot> slots);
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
 protected:
  void update_slots(std::span<const std::size_t> slots, const optim_math::StepInputs& in) override;
};

// NVLAMB (NVIDIA apex FusedLAMB with use_nvlamb=True): clip by global norm, Adam moments
// with bias correction, u = m̂/(√v̂+ε) + λ·w, per-tensor trust ratio ‖w‖/‖u‖ on every tensor (1 when
// either norm is 0), w ← w − η·ratio·u. config.use_nvlamb = false reproduces apex's default instead
// (ratio 1 on tensors with λ = 0).
class Lamb final : public Optimizer {
 public:
  Lamb(OptimizerConfig config, std::vector<ParamSlot> slots);
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
 protected:
  void update_slots(std::span<const std::size_t> slots, const optim_math::StepInputs& in) override;
};

// LANS (Zheng et al. 2020), per tensor: ĝ = g/‖g‖ (ĝ = 0 when ‖g‖ = 0), moments on ĝ with bias
// correction, r = m̂/(√v̂+ε), c = ĝ/(√v̂+ε),
// w ← w − η·β1·‖w‖/‖r+λw‖·(r+λw) − η·(1−β1)·‖w‖/‖c+λw‖·(c+λw); each ratio is 1 when either norm is 0.
// Global clipping is a no-op for LANS (ĝ is scale-invariant), so max_grad_norm is ignored.
class Lans final : public Optimizer {
 public:
  Lans(OptimizerConfig config, std::vector<ParamSlot> slots);
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
 protected:
  void update_slots(std::span<const std::size_t> slots, const optim_math::StepInputs& in) override;
  bool uses_global_norm() const override { return false; }
};

// SGD with momentum (torch.optim.SGD, dampening 0, no Nesterov): b ← μ·b + (g + λ·w), w ← w − η·b.
class Sgd final : public Optimizer {
 public:
  Sgd(OptimizerConfig config, std::vector<ParamSlot> slots);
  std::vector<std::string> state_names() const override { return {"momentum"}; }
 protected:
  void update_slots(std::span<const std::size_t> slots, const optim_math::StepInputs& in) override;
};

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<ParamSlot> slots);

// sqrt(Σ over slots Σ g²), accumulated in double: what the executor's grad_norm op must compute.
double global_grad_norm(std::span<const ParamSlot> slots);

}  // namespace ptsim::runtime
