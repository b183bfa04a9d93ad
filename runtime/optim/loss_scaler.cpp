// runtime/optim/loss_scaler.cpp — GradScaler/Apex-style loss scaling (see loss_scaler.hpp).
#include "runtime/optim/loss_scaler.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/error.hpp"

namespace ptsim::runtime {

using core::InputError;

namespace {
constexpr core::NumberRange kScaleRange{kMinLossScale, kMaxLossScale, false,
                                        "2^-24 .. 2^24, Apex's max_loss_scale; a power of two keeps unscaling exact"};
constexpr core::IntRange kIntervalRange{1, 1'000'000'000, "clean steps before the scale doubles (default 2000)"};
}  // namespace

void validate_loss_scaler_config(const LossScalerConfig& c) {
  if (!c.enabled) return;
  core::check_range(c.initial_scale, kScaleRange, c.dynamic ? "initial loss scale" : "--loss-scale");
  core::check_range(c.growth_interval, kIntervalRange, "--loss-scale-window");
}

LossScaler::LossScaler(LossScalerConfig config) : config_(config) {
  validate_loss_scaler_config(config_);
  state_.scale = config_.enabled ? config_.initial_scale : 1.0;
  state_.growth_interval = config_.growth_interval;
  state_.dynamic = config_.enabled && config_.dynamic ? 1 : 0;
  optim_math::derive_step_factors(state_);
}

void LossScaler::update(bool skipped) {
  optim_math::update_loss_scale(state_, skipped);
  throw_if_underflow();
}

void LossScaler::throw_if_underflow() const {
  if (state_.underflow != 0)
    throw std::runtime_error(fmt::format("fp16 loss scale fell below 2^-24 after {} skipped steps: the gradients "
                                         "are inf/NaN at every scale (the model diverged; try a lower --lr or bf16)",
                                         state_.skipped_steps));
}

optim_math::LossScaleState LossScaler::device_state(int64_t micro_steps) const {
  optim_math::LossScaleState s = state_;
  s.micro_steps = static_cast<double>(micro_steps);
  optim_math::derive_step_factors(s);
  return s;
}

void LossScaler::mirror(const optim_math::LossScaleState& device) {
  state_.scale = device.scale;
  state_.growth_tracker = device.growth_tracker;
  state_.skipped_steps = device.skipped_steps;
  state_.underflow = device.underflow;
  optim_math::derive_step_factors(state_);
  throw_if_underflow();
}

core::Json LossScaler::to_json() const {
  return {{"enabled", config_.enabled},   {"dynamic", config_.dynamic},
          {"scale", state_.scale},        {"growth_interval", config_.growth_interval},
          {"growth_tracker", state_.growth_tracker}, {"skipped_steps", state_.skipped_steps}};
}

void LossScaler::load_json(const core::Json& j, const std::string& source) {
  if (!j.is_object()) throw InputError(fmt::format("{}: loss_scaler must be an object", source));
  core::JsonReader r(j, source, "loss_scaler");
  auto same_bool = [&](const char* key, bool want) {
    if (r.require_bool(key) != want)
      r.fail(key, fmt::format("{} (this run's setting; resume with the same --precision and loss-scale flags)", want));
  };
  same_bool("enabled", config_.enabled);
  same_bool("dynamic", config_.dynamic);
  if (r.require_int("growth_interval") != config_.growth_interval)
    r.fail("growth_interval", fmt::format("{} (this run's --loss-scale-window)", config_.growth_interval));
  const double scale = r.require_number("scale");
  const bool scale_ok = !config_.enabled ? scale == 1.0
                        : config_.dynamic ? core::in_range(scale, kScaleRange)
                                          : scale == config_.initial_scale;
  if (!scale_ok)
    r.fail("scale", !config_.enabled ? "1 (no loss scaling)"
                    : config_.dynamic ? core::describe(kScaleRange)
                                      : fmt::format("{} (this run's --loss-scale)", config_.initial_scale));
  const long long tracker = r.require_int("growth_tracker");
  if (tracker < 0 || tracker >= config_.growth_interval)
    r.fail("growth_tracker", fmt::format("an integer in [0, {}) (clean steps since the last change)", config_.growth_interval));
  const long long skipped = r.require_int("skipped_steps");
  if (skipped < 0) r.fail("skipped_steps", "an integer >= 0");
  r.finish();
  state_.scale = scale;
  state_.growth_tracker = tracker;
  state_.skipped_steps = skipped;
  state_.underflow = 0;
  optim_math::derive_step_factors(state_);
}

}  // namespace ptsim::runtime
