// runtime/optim/loss_scaler.hpp — fp16 loss scaling as PyTorch's torch.cuda.amp.GradScaler and NVIDIA
// Apex's DynamicLossScaler do it. The loss's gradient is multiplied by scale() before backward (so small fp16
// gradients do not flush to zero); the executor divides the gradients by it again before clipping and skips
// the optimizer step when any gradient is inf/NaN; update() then halves the scale (overflow) or doubles it
// after `growth_interval` clean steps in a row. A static scale never changes. Disabled (fp32, bf16): 1.
// The state and its update are optim_math::LossScaleState / update_loss_scale (loss_scale_state.hpp), shared
// with the device copy the executor keeps for fp16 dynamic scaling; this class is then the host's lazily read
// mirror of it (mirror()). Formulas, defaults and checkpoint fields: docs/training.md,
// docs/optimizers-and-checkpoints.md.
#pragma once
#include <cstdint>
#include <string>

#include "core/json_reader.hpp"  // defines: Json
#include "runtime/optim/loss_scale_state.hpp"  // defines: LossScaleState, update_loss_scale, kMin/kMaxLossScale

namespace ptsim::runtime {

struct LossScalerConfig {
  bool enabled = false;            // fp16 only
  bool dynamic = true;             // false: a static scale (--loss-scale S)
  double initial_scale = 65536.0;  // 2^16, GradScaler's init_scale
  int64_t growth_interval = 2000;  // clean steps before doubling (GradScaler and Apex: 2000)
};
// Throws core::InputError naming the flag when a value is out of range: initial_scale in [2^-24, 2^24],
// growth_interval in [1, 10^9].
void validate_loss_scaler_config(const LossScalerConfig& config);

class LossScaler {
 public:
  explicit LossScaler(LossScalerConfig config);
  // The factor the loss gradient is multiplied by this step (1 when disabled).
  double scale() const { return state_.scale; }
  // Call once per optimizer step with whether it was skipped (some gradient inf/NaN after unscaling).
  // Dynamic: skipped → scale/2 and the clean-step count restarts; clean → count+1, and at growth_interval
  // the scale doubles (capped at kMaxLossScale) and the count restarts. Counts skipped steps in every mode.
  // Throws std::runtime_error when a dynamic scale falls below kMinLossScale.
  void update(bool skipped);
  int64_t skipped_steps() const { return state_.skipped_steps; }
  int64_t clean_steps_in_a_row() const { return state_.growth_tracker; }

  // The state as a device copy starts from: this scaler's scale, tracker and skipped count, with
  // micro_steps = grad_accum and the step factors derived (loss_grad = fp32(scale / grad_accum)).
  optim_math::LossScaleState device_state(int64_t micro_steps) const;
  // Takes scale, tracker and skipped count from a device copy (read back after update_loss_scale ran there).
  // Throws update()'s std::runtime_error when its underflow flag is set.
  void mirror(const optim_math::LossScaleState& device);
  const LossScalerConfig& config() const { return config_; }

  // {"enabled", "dynamic", "scale", "growth_interval", "growth_tracker", "skipped_steps"}: what a
  // checkpoint stores so a resumed run continues the same sequence of scales bit for bit.
  core::Json to_json() const;
  // Restores scale, growth tracker and skipped count from a checkpoint's JSON after checking that it
  // describes the same configuration (enabled, dynamic, growth_interval; the initial scale for a static
  // one). Throws core::InputError naming `source` and the field otherwise.
  void load_json(const core::Json& j, const std::string& source);

 private:
  void throw_if_underflow() const;

  LossScalerConfig config_;
  optim_math::LossScaleState state_;  // micro_steps 1 here: the host never forms the seed from it
};

}  // namespace ptsim::runtime
