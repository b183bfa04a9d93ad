// runtime/optim/optimizer.cpp — the optimizers' host driver: configuration defaults and checks, the step
// counter and global-norm clipping, state buffers allocated by the Backend, and the explicit copies that
// save and restore them. Every update is one Backend::optimizer_step (the CPU reference:
// runtime/exec/cpu_optimizer.cpp) reading the step's StepScalars, which step_begin writes into a backend buffer.
#include "runtime/optim/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/precision.hpp"  // defines: is_16bit_float

namespace ptsim::runtime {
using core::InputError;

OptimizerConfig default_optimizer_config(models::OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  switch (kind) {
    case models::OptimizerKind::lamb:  // NVIDIA DeepLearningExamples BERT run_pretraining.py + apex FusedLAMB
      break;
    case models::OptimizerKind::lans:  // Zheng et al. 2020, "Accelerated Large Batch Optimization of BERT ..."
      c.max_grad_norm = 0.0;
      break;
    case models::OptimizerKind::adamw:  // torch.optim.AdamW defaults, weight decay 0.01 as BERT
      c.eps = 1e-8;
      c.max_grad_norm = 0.0;
      break;
    case models::OptimizerKind::sgd:
      c.weight_decay = 0.0;
      c.max_grad_norm = 0.0;
      c.momentum = 0.9;
      break;
  }
  return c;
}

void validate_optimizer_config(const OptimizerConfig& c) {
  auto in_unit = [](double x) { return std::isfinite(x) && x >= 0.0 && x < 1.0; };
  if (!in_unit(c.beta1)) throw InputError(fmt::format("optimizer: field 'beta1' must be in [0, 1), got {}", c.beta1));
  if (!in_unit(c.beta2)) throw InputError(fmt::format("optimizer: field 'beta2' must be in [0, 1), got {}", c.beta2));
  if (!in_unit(c.momentum))
    throw InputError(fmt::format("optimizer: field 'momentum' must be in [0, 1), got {}", c.momentum));
  if (!(std::isfinite(c.eps) && c.eps > 0.0))
    throw InputError(fmt::format("optimizer: field 'eps' must be a positive number, got {}", c.eps));
  if (!(std::isfinite(c.weight_decay) && c.weight_decay >= 0.0))
    throw InputError(fmt::format("optimizer: field 'weight_decay' must be >= 0, got {}", c.weight_decay));
  if (!std::isfinite(c.max_grad_norm))
    throw InputError(fmt::format("optimizer: field 'max_grad_norm' must be finite (<= 0 disables clipping), got {}",
                                 c.max_grad_norm));
}

namespace {

void check_slots(const std::vector<ParamSlot>& slots) {
  std::unordered_set<std::string> seen;
  for (const ParamSlot& s : slots) {
    if (s.name.empty()) throw InputError("optimizer: a parameter slot has an empty name");
    if (!seen.insert(s.name).second)
      throw InputError(fmt::format("optimizer: parameter slot '{}' appears twice; names must be unique", s.name));
    const bool f32_grad = s.grad_dtype == models::DType::f32;
    if (!f32_grad && !is_16bit_float(s.grad_dtype))
      throw InputError(fmt::format("optimizer: parameter slot '{}' has a {} gradient (expected f32, f16 or bf16)",
                                   s.name, models::to_string(s.grad_dtype)));
    const std::size_t grad_bytes = s.n * (f32_grad ? sizeof(float) : 2);
    if (s.weight.bytes != s.n * sizeof(float) || s.grad.bytes != grad_bytes ||
        (s.n > 0 && (!s.weight.valid() || !s.grad.valid())))
      throw InputError(fmt::format("optimizer: parameter slot '{}' has {} elements but its weight span holds {} bytes "
                                   "and its gradient span {} (expected {} fp32 weights, {} gradient bytes)",
                                   s.name, s.n, s.weight.bytes, s.grad.bytes, s.n, grad_bytes));
  }
}

optim_math::Rule rule_of(models::OptimizerKind kind) {
  switch (kind) {
    case models::OptimizerKind::adamw: return optim_math::Rule::adamw;
    case models::OptimizerKind::lamb: return optim_math::Rule::lamb;
    case models::OptimizerKind::lans: return optim_math::Rule::lans;
    case models::OptimizerKind::sgd: return optim_math::Rule::sgd;
  }
  throw std::invalid_argument("optimizer: unknown optimizer kind");
}

optim_math::Hyperparameters hyperparameters_of(const OptimizerConfig& c) {
  optim_math::Hyperparameters h;
  h.rule = rule_of(c.kind);
  h.beta1 = c.beta1;
  h.beta2 = c.beta2;
  h.eps = c.eps;
  h.weight_decay = c.weight_decay;
  h.momentum = c.momentum;
  h.use_nvlamb = c.use_nvlamb;
  return h;
}

constexpr size_t kStateAlignment = 64;  // each state array starts on a cache line, as the executor's tensors
size_t aligned(size_t bytes) { return (bytes + kStateAlignment - 1) / kStateAlignment * kStateAlignment; }

}  // namespace

// ---------------------------------------------------------------------------------------------------------

Optimizer::Optimizer(Backend& backend, OptimizerConfig config, std::vector<ParamSlot> slots)
    : backend_(backend), config_(config), slots_(std::move(slots)) {
  validate_optimizer_config(config_);
  check_slots(slots_);
  hyper_ = hyperparameters_of(config_);
  updated_.assign(slots_.size(), 0);
  // One buffer for all state arrays (zero-filled by allocate), array k of slot i at its own aligned offset.
  const size_t per_slot = state_names().size();
  size_t total = 0;
  for (const ParamSlot& s : slots_) total += per_slot * aligned(s.n * sizeof(float));
  state_buffer_ = backend_.allocate(total);
  scalars_buffer_ = backend_.allocate(sizeof(optim_math::StepScalars));
  state_.resize(slots_.size());
  size_t at = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    for (size_t k = 0; k < per_slot; ++k) {
      state_[i][k] = DeviceSpan::of(state_buffer_).sub(at, slots_[i].n * sizeof(float));
      at += aligned(slots_[i].n * sizeof(float));
    }
}

Optimizer::~Optimizer() {
  backend_.free(scalars_buffer_);
  backend_.free(state_buffer_);
}

DeviceSpan Optimizer::step_scalars_span() const { return DeviceSpan::of(scalars_buffer_); }

std::vector<std::string> Optimizer::state_names() const {
  if (config_.kind == models::OptimizerKind::sgd) return {"momentum"};
  return {"m", "v"};
}

bool Optimizer::uses_global_norm() const {
  return config_.kind != models::OptimizerKind::lans && config_.max_grad_norm > 0.0;
}

double Optimizer::global_grad_norm() const {
  double sum = 0.0;
  for (const ParamSlot& s : slots_) sum += backend_.scaled_sum_of_squares(s.grad, s.grad_dtype, grad_factor_);
  return std::sqrt(sum);
}

void Optimizer::begin_common(double lr, double grad_factor) {
  if (in_step_) throw std::logic_error("Optimizer::step_begin: the previous step was not ended (call step_end)");
  if (!std::isfinite(lr) || lr < 0.0)
    throw std::invalid_argument(fmt::format("Optimizer::step_begin: learning rate must be finite and >= 0, got {}", lr));
  if (!std::isfinite(grad_factor) || !(grad_factor > 0.0))
    throw std::invalid_argument(fmt::format("Optimizer::step_begin: gradient factor must be finite and > 0, got {}",
                                            grad_factor));
  settle_step();  // this step's t is the count of the steps before it that were not skipped
  lr_ = lr;
  grad_factor_ = grad_factor;
  grad_factor_on_device_ = false;
  grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  clip_divisor_ = 1.0;
  skipped_ = false;
  ++step_serial_;
}

void Optimizer::step_begin(double lr, std::optional<double> global_grad_norm_in, double grad_factor) {
  begin_common(lr, grad_factor);
  if (uses_global_norm()) {
    grad_norm_ = global_grad_norm_in ? *global_grad_norm_in : global_grad_norm();
    if (!std::isfinite(grad_norm_) || grad_norm_ < 0.0)
      throw std::invalid_argument(fmt::format(
          "Optimizer::step_begin: global gradient norm is {}; skip the step (loss-scale overflow?) instead", grad_norm_));
    // apex FusedLAMB: clipped_global_grad_norm = norm > max ? norm / max : 1; g is divided by it.
    if (grad_norm_ > config_.max_grad_norm) clip_divisor_ = grad_norm_ / config_.max_grad_norm;
  }
  // This step's scalars, written once for every update() of the step (queued on the compute stream, after the
  // previous step's passes, which read the previous values).
  optim_math::StepScalars scalars =
      optim_math::step_scalars(hyper_, optim_math::StepInputs{lr_, current_t(), clip_divisor_, grad_factor_});
  scalars.grad_norm = grad_norm_;
  scalars.grad_norm_f32 = static_cast<float>(grad_norm_);
  backend_.copy_to_device_async(step_scalars_span(), &scalars);
  std::fill(updated_.begin(), updated_.end(), 0);
  in_step_ = true;
}

void Optimizer::step_begin_on_device(double lr, const DeviceSpan& sum_of_squares, double grad_factor) {
  begin_on_device(lr, sum_of_squares, grad_factor, nullptr);
}

void Optimizer::step_begin_on_device(double lr, const DeviceSpan& sum_of_squares, const DeviceSpan& grad_factor_f32) {
  if (grad_factor_f32.bytes != sizeof(float))
    throw std::invalid_argument("Optimizer::step_begin_on_device: the device gradient factor is one float");
  begin_on_device(lr, sum_of_squares, 1.0, &grad_factor_f32);
}

void Optimizer::begin_on_device(double lr, const DeviceSpan& sum_of_squares, double grad_factor,
                                const DeviceSpan* device_factor) {
  begin_common(lr, grad_factor);
  grad_factor_on_device_ = device_factor != nullptr;  // unknown here: update() treats every read as widened
  // The host's part (lr, t, bias corrections, grad_factor; clip 1, skip 0), then the device's: the factor
  // when it lies there, and finish_norm with the clip threshold step_begin would apply (0: no clipping).
  const optim_math::StepScalars scalars =
      optim_math::step_scalars(hyper_, optim_math::StepInputs{lr_, current_t(), 1.0, grad_factor_});
  backend_.copy_to_device_async(step_scalars_span(), &scalars);
  if (device_factor)
    backend_.copy(step_scalars_span().sub(offsetof(optim_math::StepScalars, grad_factor), sizeof(float)), *device_factor);
  backend_.finish_step_scalars(step_scalars_span(), sum_of_squares, uses_global_norm() ? config_.max_grad_norm : 0.0);
  verdict_unread_ = true;
  std::fill(updated_.begin(), updated_.end(), 0);
  in_step_ = true;
}

void Optimizer::read_verdict() const {
  if (!verdict_unread_) return;
  optim_math::StepScalars s;
  backend_.copy_to_host(&s, step_scalars_span());  // waits for the queued finish step (and the passes before it)
  verdict_unread_ = false;
  grad_norm_ = s.grad_norm;
  clip_divisor_ = s.clip_divisor;
  skipped_ = s.skip != 0;
}

void Optimizer::adopt_verdict(const optim_math::StepScalars& s, int64_t serial) const {
  if (serial != step_serial_)
    throw std::logic_error("Optimizer::adopt_verdict: another step began since the verdict's step");
  if (!verdict_unread_) return;
  verdict_unread_ = false;
  grad_norm_ = s.grad_norm;
  clip_divisor_ = s.clip_divisor;
  skipped_ = s.skip != 0;
}

void Optimizer::settle_step() const {
  if (!count_unsettled_) return;
  read_verdict();
  count_unsettled_ = false;
  if (!skipped_) ++step_count_;
}

int64_t Optimizer::step_count() const {
  settle_step();
  return step_count_;
}

StepVerdict Optimizer::last_step_verdict() const {
  read_verdict();
  return StepVerdict{grad_norm_, clip_divisor_, skipped_};
}

void Optimizer::update(std::span<const std::size_t> slot_indices) {
  if (!in_step_) throw std::logic_error("Optimizer::update called outside step_begin/step_end");
  std::vector<OptimizerTensor> tensors;
  tensors.reserve(slot_indices.size());
  // A gradient read other than as stored in fp32 (a device factor may be anything).
  bool widened = grad_factor_on_device_ || static_cast<float>(grad_factor_) != 1.0f;
  for (std::size_t i : slot_indices) {
    if (i >= slots_.size())
      throw std::out_of_range(fmt::format("Optimizer::update: slot index {} >= {} slots", i, slots_.size()));
    if (updated_[i]) throw std::logic_error(fmt::format("Optimizer::update: slot '{}' updated twice in one step",
                                                        slots_[i].name));
    updated_[i] = 1;
    tensors.push_back(OptimizerTensor{slots_[i].weight, slots_[i].grad, {state_[i][0], state_[i][1]}, slots_[i].decay,
                                      slots_[i].grad_dtype});
    widened = widened || slots_[i].grad_dtype != models::DType::f32;
  }
  // A backend whose optimizer kernels read fp32 gradients only gets the reference on host copies for the rest.
  if (widened && !backend_.optimizer_reads_16bit_gradients())
    backend_.Backend::optimizer_step(hyper_, step_scalars_span(), tensors);
  else backend_.optimizer_step(hyper_, step_scalars_span(), tensors);
}

void Optimizer::update_all() {
  std::vector<std::size_t> all(slots_.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  update(all);
}

void Optimizer::step_end() {
  if (!in_step_) throw std::logic_error("Optimizer::step_end without step_begin");
  in_step_ = false;
  if (verdict_unread_) count_unsettled_ = true;  // counted (or not, when skipped) once the verdict is read
  else if (!skipped_) ++step_count_;  // the verdict was read inside the step: a skipped step does not count
}

void Optimizer::step(double lr, std::optional<double> global_grad_norm_in) {
  step_begin(lr, global_grad_norm_in);
  update_all();
  step_end();
}

std::size_t Optimizer::slot_index(std::string_view name) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].name == name) return i;
  throw std::out_of_range(fmt::format("optimizer: no parameter slot named '{}'", name));
}

OptimizerState Optimizer::save_state() const {
  OptimizerState s;
  s.kind = models::to_string(config_.kind);
  s.step = step_count();
  const std::vector<std::string> names = state_names();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    for (std::size_t k = 0; k < names.size(); ++k) {
      NamedArray a{slots_[i].name + "." + names[k], std::vector<float>(slots_[i].n)};
      backend_.copy_to_host(a.values.data(), state_[i][k]);
      s.arrays.push_back(std::move(a));
    }
  return s;
}

void Optimizer::load_state(const OptimizerState& s, const std::string& source) {
  if (in_step_) throw std::logic_error("Optimizer::load_state inside a step");
  settle_step();  // a pending count must not be applied on top of the loaded one
  const std::string kind = models::to_string(config_.kind);
  if (s.kind != kind)
    throw InputError(fmt::format("{}: optimizer state is for '{}', but this run uses '{}'", source, s.kind, kind));
  if (s.step < 0) throw InputError(fmt::format("{}: optimizer step count is negative ({})", source, s.step));
  const std::vector<std::string> names = state_names();
  std::unordered_map<std::string, const NamedArray*> by_name;
  for (const NamedArray& a : s.arrays)
    if (!by_name.emplace(a.name, &a).second)
      throw InputError(fmt::format("{}: optimizer state array '{}' appears twice", source, a.name));
  // Check everything before changing anything.
  std::size_t used = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    for (const std::string& k : names) {
      const std::string name = slots_[i].name + "." + k;
      auto it = by_name.find(name);
      if (it == by_name.end())
        throw InputError(fmt::format("{}: optimizer state array '{}' is missing (model and checkpoint differ?)",
                                     source, name));
      if (it->second->values.size() != slots_[i].n)
        throw InputError(fmt::format("{}: optimizer state array '{}' has {} elements, expected {}", source, name,
                                     it->second->values.size(), slots_[i].n));
      ++used;
    }
  if (used != s.arrays.size()) {
    for (const NamedArray& a : s.arrays) {
      bool known = false;
      for (std::size_t i = 0; i < slots_.size() && !known; ++i)
        for (const std::string& k : names)
          if (a.name == slots_[i].name + "." + k) known = true;
      if (!known)
        throw InputError(fmt::format("{}: optimizer state array '{}' matches no parameter of this model", source, a.name));
    }
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    for (std::size_t k = 0; k < names.size(); ++k)
      backend_.copy_to_device(state_[i][k], by_name.at(slots_[i].name + "." + names[k])->values.data());
  step_count_ = s.step;
}

std::unique_ptr<Optimizer> make_optimizer(Backend& backend, const OptimizerConfig& config, std::vector<ParamSlot> slots) {
  return std::make_unique<Optimizer>(backend, config, std::move(slots));
}

}  // namespace ptsim::runtime
