// runtime/optim/optimizer.cpp — AdamW, NVLAMB, LANS and SGD on flat fp32 tensors (CPU reference).
// Element-wise arithmetic is in fp32 (optimizer_math.hpp), as NVIDIA apex's multi_tensor_lamb does
// (MATH_T = float); norms are accumulated in double per fixed chunk, and the chunks' sums added in chunk
// order, so a multithreaded pass gives the same bits as a single-threaded one.
#include "runtime/optim/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "runtime/exec/cpu_parallel.hpp"  // defines: for_each_chunk, kChunkElements

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

using optim_math::AdamStep;
using optim_math::StepInputs;

// The fp32 coefficients of one Adam-style step t (shared by AdamW, LAMB and LANS).
AdamStep adam_step(const OptimizerConfig& config, int64_t step, bool decay) {
  const double t = static_cast<double>(step);
  AdamStep c{};
  c.b1 = static_cast<float>(config.beta1);
  c.b2 = static_cast<float>(config.beta2);
  // 1 − β in double, then rounded: 1.0f − 0.999f would carry 0.999f's rounding error (1.3e-5 relative).
  c.one_minus_b1 = static_cast<float>(1.0 - config.beta1);
  c.one_minus_b2 = static_cast<float>(1.0 - config.beta2);
  c.bc1 = static_cast<float>(1.0 - std::pow(config.beta1, t));
  c.bc2 = static_cast<float>(1.0 - std::pow(config.beta2, t));
  c.eps = static_cast<float>(config.eps);
  c.lambda = decay ? static_cast<float>(config.weight_decay) : 0.0f;
  return c;
}

// One fixed chunk of one slot: elements [begin, end) of slot `slot` (index into the optimizer's slots).
struct Chunk {
  std::size_t slot, begin, end;
};
// The listed slots cut into cpu::kChunkElements pieces, slot by slot: the multi-tensor work list. Chunk
// boundaries depend only on the tensor sizes, so per-slot sums over it are independent of threads.
std::vector<Chunk> chunks_of(std::span<const std::size_t> slots, const std::vector<ParamSlot>& all) {
  std::vector<Chunk> chunks;
  for (std::size_t i : slots)
    for (std::size_t at = 0; at < all[i].n; at += cpu::kChunkElements)
      chunks.push_back({i, at, std::min(all[i].n, at + cpu::kChunkElements)});
  return chunks;
}
// Per slot (indexed like the optimizer's slots): the sum of `partial` over its chunks, in chunk order.
std::vector<double> per_slot_sum(const std::vector<Chunk>& chunks, const std::vector<double>& partial, std::size_t slots) {
  std::vector<double> sum(slots, 0.0);
  for (std::size_t k = 0; k < chunks.size(); ++k) sum[chunks[k].slot] += partial[k];
  return sum;
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
  }
  update_slots(slot_indices, StepInputs{lr_, current_t(), clip_divisor_});
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

void AdamW::update_slots(std::span<const std::size_t> slots, const StepInputs& in) {
  const AdamStep decay = adam_step(config_, in.t, true), no_decay = adam_step(config_, in.t, false);
  const float lr = static_cast<float>(in.lr), clip = static_cast<float>(in.clip_divisor);
  const std::vector<Chunk> chunks = chunks_of(slots, slots_);
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    float* m = state_[ch.slot][0].data();
    float* v = state_[ch.slot][1].data();
    const AdamStep& c = s.decay ? decay : no_decay;
    for (std::size_t e = ch.begin; e < ch.end; ++e) optim_math::adamw_element(s.weight[e], s.grad[e], m[e], v[e], c, lr, clip);
  });
}

// ---------------------------------------------------------------------------------------------------------
// LAMB (NVLAMB)

Lamb::Lamb(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Lamb::update_slots(std::span<const std::size_t> slots, const StepInputs& in) {
  const AdamStep decay = adam_step(config_, in.t, true), no_decay = adam_step(config_, in.t, false);
  const float clip = static_cast<float>(in.clip_divisor);
  const std::vector<Chunk> chunks = chunks_of(slots, slots_);
  // Pass 1 (apex stage 1): moments, and per chunk Σu², Σw² with the weights still unchanged.
  std::vector<double> u_part(chunks.size()), w_part(chunks.size());
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    float* m = state_[ch.slot][0].data();
    float* v = state_[ch.slot][1].data();
    const AdamStep& c = s.decay ? decay : no_decay;
    double u_sq = 0.0, w_sq = 0.0;
    for (std::size_t e = ch.begin; e < ch.end; ++e) {
      const float u = optim_math::lamb_moments_and_direction(s.weight[e], s.grad[e], m[e], v[e], c, clip);
      u_sq += static_cast<double>(u) * u;
      w_sq += static_cast<double>(s.weight[e]) * s.weight[e];
    }
    u_part[k] = u_sq;
    w_part[k] = w_sq;
  });
  // Per tensor: w ← w − η·ratio·u; ratio on every tensor (NVLAMB) or, with use_nvlamb = false, only where
  // λ ≠ 0 (apex: `if (use_nvlamb || decay != 0)`).
  const std::vector<double> u_sq = per_slot_sum(chunks, u_part, slots_.size());
  const std::vector<double> w_sq = per_slot_sum(chunks, w_part, slots_.size());
  std::vector<float> step(slots_.size(), 0.0f);
  for (std::size_t i : slots) {
    const bool apply_ratio = config_.use_nvlamb || (slots_[i].decay ? decay : no_decay).lambda != 0.0f;
    step[i] = static_cast<float>(
        in.lr * (apply_ratio ? optim_math::trust_ratio(std::sqrt(w_sq[i]), std::sqrt(u_sq[i])) : 1.0));
  }
  // Pass 2 (apex stage 2).
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    const float* m = state_[ch.slot][0].data();
    const float* v = state_[ch.slot][1].data();
    const AdamStep& c = s.decay ? decay : no_decay;
    for (std::size_t e = ch.begin; e < ch.end; ++e) optim_math::lamb_apply(s.weight[e], m[e], v[e], c, step[ch.slot]);
  });
}

// ---------------------------------------------------------------------------------------------------------
// LANS

Lans::Lans(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Lans::update_slots(std::span<const std::size_t> slots, const StepInputs& in) {
  const AdamStep decay = adam_step(config_, in.t, true), no_decay = adam_step(config_, in.t, false);
  const std::vector<Chunk> chunks = chunks_of(slots, slots_);
  const std::size_t n_slots = slots_.size();
  // Pass 0: ‖g‖ and ‖w‖ per tensor. A zero gradient tensor gives ĝ = 0 (no division by zero): the moments
  // then just decay and the step continues from them, as a zero Adam gradient would.
  std::vector<double> g_part(chunks.size()), w_part(chunks.size());
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    double g_sq = 0.0, w_sq = 0.0;
    for (std::size_t e = ch.begin; e < ch.end; ++e) {
      g_sq += static_cast<double>(s.grad[e]) * s.grad[e];
      w_sq += static_cast<double>(s.weight[e]) * s.weight[e];
    }
    g_part[k] = g_sq;
    w_part[k] = w_sq;
  });
  const std::vector<double> g_sq = per_slot_sum(chunks, g_part, n_slots), w_sq = per_slot_sum(chunks, w_part, n_slots);
  std::vector<float> inv_g_norm(n_slots, 0.0f);
  for (std::size_t i : slots) inv_g_norm[i] = g_sq[i] > 0.0 ? static_cast<float>(1.0 / std::sqrt(g_sq[i])) : 0.0f;
  // Pass 1: moments on ĝ, then ‖r + λw‖ and ‖c + λw‖ with the weights still unchanged.
  std::vector<double> r_part(chunks.size()), c_part(chunks.size());
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    float* m = state_[ch.slot][0].data();
    float* v = state_[ch.slot][1].data();
    const AdamStep& c = s.decay ? decay : no_decay;
    double ur_sq = 0.0, uc_sq = 0.0;
    for (std::size_t e = ch.begin; e < ch.end; ++e) {
      float ur = 0.0f, uc = 0.0f;
      optim_math::lans_moments_and_directions(s.weight[e], s.grad[e], inv_g_norm[ch.slot], m[e], v[e], c, ur, uc);
      ur_sq += static_cast<double>(ur) * ur;
      uc_sq += static_cast<double>(uc) * uc;
    }
    r_part[k] = ur_sq;
    c_part[k] = uc_sq;
  });
  const std::vector<double> ur_sq = per_slot_sum(chunks, r_part, n_slots), uc_sq = per_slot_sum(chunks, c_part, n_slots);
  // Pass 2: w ← w − η·β1·ratio_r·(r+λw) − η·(1−β1)·ratio_c·(c+λw).
  std::vector<float> step_r(n_slots, 0.0f), step_c(n_slots, 0.0f);
  for (std::size_t i : slots) {
    const double w_norm = std::sqrt(w_sq[i]);
    step_r[i] = static_cast<float>(in.lr * config_.beta1 * optim_math::trust_ratio(w_norm, std::sqrt(ur_sq[i])));
    step_c[i] = static_cast<float>(in.lr * (1.0 - config_.beta1) * optim_math::trust_ratio(w_norm, std::sqrt(uc_sq[i])));
  }
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    const float* m = state_[ch.slot][0].data();
    const float* v = state_[ch.slot][1].data();
    const AdamStep& c = s.decay ? decay : no_decay;
    for (std::size_t e = ch.begin; e < ch.end; ++e)
      optim_math::lans_apply(s.weight[e], s.grad[e], inv_g_norm[ch.slot], m[e], v[e], c, step_r[ch.slot], step_c[ch.slot]);
  });
}

// ---------------------------------------------------------------------------------------------------------
// SGD with momentum

Sgd::Sgd(OptimizerConfig config, std::vector<ParamSlot> slots) : Optimizer(config, std::move(slots)) {
  init_state();
}

void Sgd::update_slots(std::span<const std::size_t> slots, const StepInputs& in) {
  const float mu = static_cast<float>(config_.momentum);
  const float lr = static_cast<float>(in.lr), clip = static_cast<float>(in.clip_divisor);
  const std::vector<Chunk> chunks = chunks_of(slots, slots_);
  cpu::for_each_chunk(chunks.size(), threads_, [&](std::size_t k) {
    const Chunk& ch = chunks[k];
    const ParamSlot& s = slots_[ch.slot];
    float* b = state_[ch.slot][0].data();
    const float lambda = s.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    for (std::size_t e = ch.begin; e < ch.end; ++e) optim_math::sgd_element(s.weight[e], s.grad[e], b[e], mu, lambda, lr, clip);
  });
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
