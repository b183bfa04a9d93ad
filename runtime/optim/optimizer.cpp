// runtime/optim/optimizer.cpp — AdamW, NVLAMB, LANS and SGD on flat fp32 tensors (CPU reference).
// Element-wise arithmetic is in fp32, as NVIDIA apex's multi_tensor_lamb does (MATH_T = float); norms are
// accumulated in double so that they do not depend on the order of a parallel reduction as much.
#include "runtime/optim/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"

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

double global_grad_norm(std::span<const ParamSlot> slots) {
  double sum = 0.0;
  for (const ParamSlot& s : slots)
    for (std::size_t k = 0; k < s.n; ++k) sum += static_cast<double>(s.grad[k]) * s.grad[k];
  return std::sqrt(sum);
}

namespace {

void check_slots(const std::vector<ParamSlot>& slots) {
  std::unordered_set<std::string> seen;
  for (const ParamSlot& s : slots) {
    if (s.name.empty()) throw InputError("optimizer: a parameter slot has an empty name");
    if (!seen.insert(s.name).second)
      throw InputError(fmt::format("optimizer: parameter slot '{}' appears twice; names must be unique", s.name));
    if (s.n > 0 && (s.weight == nullptr || s.grad == nullptr))
      throw InputError(fmt::format("optimizer: parameter slot '{}' has {} elements but a null weight or gradient",
                                   s.name, s.n));
  }
}

// The fp32 coefficients of one Adam-style step t (shared by AdamW, LAMB and LANS).
struct AdamCoefficients {
  float b1, b2, one_minus_b1, one_minus_b2, bc1, bc2, eps, lambda;
  AdamCoefficients(const OptimizerConfig& config, int64_t step, bool decay) {
    const double t = static_cast<double>(step);
    b1 = static_cast<float>(config.beta1);
    b2 = static_cast<float>(config.beta2);
    // 1 − β in double, then rounded: 1.0f − 0.999f would carry 0.999f's rounding error (1.3e-5 relative).
    one_minus_b1 = static_cast<float>(1.0 - config.beta1);
    one_minus_b2 = static_cast<float>(1.0 - config.beta2);
    bc1 = static_cast<float>(1.0 - std::pow(config.beta1, t));
    bc2 = static_cast<float>(1.0 - std::pow(config.beta2, t));
    eps = static_cast<float>(config.eps);
    lambda = decay ? static_cast<float>(config.weight_decay) : 0.0f;
  }
};

double norm_of(const float* x, std::size_t n) {
  double sum = 0.0;
  for (std::size_t k = 0; k < n; ++k) sum += static_cast<double>(x[k]) * x[k];
  return std::sqrt(sum);
}

// Trust ratio ‖w‖/‖u‖, 1 where either norm is 0 (apex multi_tensor_lamb stage 2).
double trust_ratio(double w_norm, double u_norm) {
  return (w_norm > 0.0 && u_norm > 0.0) ? w_norm / u_norm : 1.0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Optimizer (shared driver)

Optimizer::Optimizer(OptimizerConfig config, std::vector<ParamSlot> slots)
    : config_(config), slots_(std::move(slots)) {
  validate_optimizer_config(config_);
  check_slots(slots_);
  updated_.assign(slots_.size(), 0);
}

void Optimizer::init_state() {
  const std::size_t per_slot = state_names().size();
  state_.resize(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    state_[i].assign(per_slot, std::vector<float>(slots_[i].n, 0.0f));
  }
}

void Optimizer::step_begin(double lr, std::optional<double> global_grad_norm_in) {
  if (in_step_) throw std::logic_error("Optimizer::step_begin: the previous step was not ended (call step_end)");
  if (!std::isfinite(lr) || lr < 0.0)
    throw std::invalid_argument(fmt::format("Optimizer::step_begin: learning rate must be finite and >= 0, got {}", lr));
  lr_ = lr;
  grad_norm_ = std::numeric_limits<double>::quiet_NaN();
  clip_divisor_ = 1.0;
  if (uses_global_norm()) {
    grad_norm_ = global_grad_norm_in ? *global_grad_norm_in : global_grad_norm(slots_);
    if (!std::isfinite(grad_norm_) || grad_norm_ < 0.0)
      throw std::invalid_argument(fmt::format(
          "Optimizer::step_begin: global gradient norm is {}; skip the step (loss-scale overflow?) instead", grad_norm_));
    // apex FusedLAMB: clipped_global_grad_norm = norm > max ? norm / max : 1; g is divided by it.
    if (grad_norm_ > config_.max_grad_norm) clip_divisor_ = grad_norm_ / config_.max_grad_norm;
  }
  std::fill(updated_.begin(), updated_.end(), 0);
  in_step_ = true;
}

void Optimizer::update(std::span<const std::size_t> slot_indices) {
  if (!in_step_) throw std::logic_error("Optimizer::update called outside step_begin/step_end");
  for (std::size_t i : slot_indices) {
    if (i >= slots_.size())
      throw std::out_of_range(fmt::format("Optimizer::update: slot index {} >= {} slots", i, slots_.size()));
    if (updated_[i]) throw std::logic_error(fmt::format("Optimizer::update: slot '{}' updated twice in one step",
                                                        slots_[i].name));
    updated_[i] = 1;
    update_slot(i);
  }
}

void Optimizer::update_all() {
  std::vector<std::size_t> all(slots_.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  update(all);
}

void Optimizer::step_end() {
  if (!in_step_) throw std::logic_error("Optimizer::step_end without step_begin");
  in_step_ = false;
  ++step_count_;
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

void Optimizer::rebind(std::vector<ParamSlot> slots) {
  if (slots.size() != slots_.size())
    throw std::invalid_argument(fmt::format("Optimizer::rebind: {} slots, expected {}", slots.size(), slots_.size()));
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].name != slots_[i].name || slots[i].n != slots_[i].n || slots[i].decay != slots_[i].decay)
      throw std::invalid_argument(fmt::format("Optimizer::rebind: slot {} is '{}' ({} elements), expected '{}' ({})",
                                              i, slots[i].name, slots[i].n, slots_[i].name, slots_[i].n));
  }
  check_slots(slots);
  slots_ = std::move(slots);
}

OptimizerState Optimizer::save_state() const {
  OptimizerState s;
  s.kind = models::to_string(config_.kind);
  s.step = step_count_;
  const std::vector<std::string> names = state_names();
  for (std::size_t i = 0; i < slots_.size(); ++i)
    for (std::size_t k = 0; k < names.size(); ++k)
      s.arrays.push_back(NamedArray{slots_[i].name + "." + names[k], state_[i][k]});
  return s;
}

void Optimizer::load_state(const OptimizerState& s, const std::string& source) {
  if (in_step_) throw std::logic_error("Optimizer::load_state inside a step");
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
      state_[i][k] = by_name.at(slots_[i].name + "." + names[k])->values;
  step_count_ = s.step;
}

// ---------------------------------------------------------------------------------------------------------
// AdamW

AdamW::AdamW(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void AdamW::update_slot(std::size_t i) {
  const ParamSlot& s = slots_[i];
  float* m = state_[i][0].data();
  float* v = state_[i][1].data();
  const AdamCoefficients c(config_, current_t(), s.decay);
  const float b1 = c.b1, b2 = c.b2, one_minus_b1 = c.one_minus_b1, one_minus_b2 = c.one_minus_b2;
  const float bc1 = c.bc1, bc2 = c.bc2, eps = c.eps, lambda = c.lambda;
  const float lr = static_cast<float>(lr_);
  const float clip = static_cast<float>(clip_divisor_);
  for (std::size_t k = 0; k < s.n; ++k) {
    const float g = s.grad[k] / clip;
    m[k] = b1 * m[k] + one_minus_b1 * g;
    v[k] = b2 * v[k] + one_minus_b2 * g * g;
    const float u = (m[k] / bc1) / (std::sqrt(v[k] / bc2) + eps) + lambda * s.weight[k];
    s.weight[k] -= lr * u;
  }
}

// ---------------------------------------------------------------------------------------------------------
// LAMB (NVLAMB)

Lamb::Lamb(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Lamb::update_slot(std::size_t i) {
  const ParamSlot& s = slots_[i];
  float* m = state_[i][0].data();
  float* v = state_[i][1].data();
  const AdamCoefficients c(config_, current_t(), s.decay);
  const float b1 = c.b1, b2 = c.b2, one_minus_b1 = c.one_minus_b1, one_minus_b2 = c.one_minus_b2;
  const float bc1 = c.bc1, bc2 = c.bc2, eps = c.eps, lambda = c.lambda;
  const float clip = static_cast<float>(clip_divisor_);
  // u from the (already updated) moments and the old weight; used identically in both passes.
  auto u_at = [&](std::size_t k) { return (m[k] / bc1) / (std::sqrt(v[k] / bc2) + eps) + lambda * s.weight[k]; };
  // Pass 1 (apex stage 1): moments, and ‖u‖, ‖w‖ with the weights still unchanged.
  double u_sq = 0.0, w_sq = 0.0;
  for (std::size_t k = 0; k < s.n; ++k) {
    const float g = s.grad[k] / clip;
    m[k] = b1 * m[k] + one_minus_b1 * g;
    v[k] = b2 * v[k] + one_minus_b2 * g * g;
    const float u = u_at(k);
    u_sq += static_cast<double>(u) * u;
    w_sq += static_cast<double>(s.weight[k]) * s.weight[k];
  }
  // Pass 2 (apex stage 2): w ← w − η·ratio·u; ratio on every tensor (NVLAMB) or, with use_nvlamb = false,
  // only where λ ≠ 0 (apex: `if (use_nvlamb || decay != 0)`).
  const bool apply_ratio = config_.use_nvlamb || lambda != 0.0f;
  const float step =
      static_cast<float>(lr_ * (apply_ratio ? trust_ratio(std::sqrt(w_sq), std::sqrt(u_sq)) : 1.0));
  for (std::size_t k = 0; k < s.n; ++k) {
    const float u = u_at(k);
    s.weight[k] -= step * u;
  }
}

// ---------------------------------------------------------------------------------------------------------
// LANS

Lans::Lans(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Lans::update_slot(std::size_t i) {
  const ParamSlot& s = slots_[i];
  float* m = state_[i][0].data();
  float* v = state_[i][1].data();
  const AdamCoefficients c(config_, current_t(), s.decay);
  const float b1 = c.b1, b2 = c.b2, one_minus_b1 = c.one_minus_b1, one_minus_b2 = c.one_minus_b2;
  const float bc1 = c.bc1, bc2 = c.bc2, eps = c.eps, lambda = c.lambda;
  // Pass 0: ‖g‖ and ‖w‖ of this block. A zero gradient block gives ĝ = 0 (no division by zero): the
  // moments then just decay and the step continues from them, as a zero Adam gradient would.
  const double g_norm = norm_of(s.grad, s.n);
  const double w_norm = norm_of(s.weight, s.n);
  const float inv_g_norm = g_norm > 0.0 ? static_cast<float>(1.0 / g_norm) : 0.0f;
  auto ghat_at = [&](std::size_t k) { return s.grad[k] * inv_g_norm; };
  auto denom_at = [&](std::size_t k) { return std::sqrt(v[k] / bc2) + eps; };
  // Pass 1: moments on ĝ, then ‖r + λw‖ and ‖c + λw‖ with the weights still unchanged.
  double ur_sq = 0.0, uc_sq = 0.0;
  for (std::size_t k = 0; k < s.n; ++k) {
    const float gh = ghat_at(k);
    m[k] = b1 * m[k] + one_minus_b1 * gh;
    v[k] = b2 * v[k] + one_minus_b2 * gh * gh;
    const float d = denom_at(k);
    const float ur = (m[k] / bc1) / d + lambda * s.weight[k];
    const float uc = gh / d + lambda * s.weight[k];
    ur_sq += static_cast<double>(ur) * ur;
    uc_sq += static_cast<double>(uc) * uc;
  }
  // Pass 2: w ← w − η·β1·ratio_r·(r+λw) − η·(1−β1)·ratio_c·(c+λw).
  const float step_r = static_cast<float>(lr_ * config_.beta1 * trust_ratio(w_norm, std::sqrt(ur_sq)));
  const float step_c = static_cast<float>(lr_ * (1.0 - config_.beta1) * trust_ratio(w_norm, std::sqrt(uc_sq)));
  for (std::size_t k = 0; k < s.n; ++k) {
    const float gh = ghat_at(k);
    const float d = denom_at(k);
    const float ur = (m[k] / bc1) / d + lambda * s.weight[k];
    const float uc = gh / d + lambda * s.weight[k];
    s.weight[k] = s.weight[k] - step_r * ur - step_c * uc;
  }
}

// ---------------------------------------------------------------------------------------------------------
// SGD with momentum

Sgd::Sgd(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Sgd::update_slot(std::size_t i) {
  const ParamSlot& s = slots_[i];
  float* b = state_[i][0].data();
  const float mu = static_cast<float>(config_.momentum);
  const float lambda = s.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
  const float lr = static_cast<float>(lr_);
  const float clip = static_cast<float>(clip_divisor_);
  for (std::size_t k = 0; k < s.n; ++k) {
    const float d = s.grad[k] / clip + lambda * s.weight[k];
    b[k] = mu * b[k] + d;
    s.weight[k] -= lr * b[k];
  }
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<ParamSlot> slots) {
  switch (config.kind) {
    case models::OptimizerKind::adamw: return std::make_unique<AdamW>(config, std::move(slots));
    case models::OptimizerKind::lamb: return std::make_unique<Lamb>(config, std::move(slots));
    case models::OptimizerKind::lans: return std::make_unique<Lans>(config, std::move(slots));
    case models::OptimizerKind::sgd: return std::make_unique<Sgd>(config, std::move(slots));
  }
  throw std::invalid_argument("make_optimizer: unknown optimizer kind");
}

}  // namespace ptsim::runtime
