// runtime/optim/loss_scaler.hpp — fp16 loss scaling as PyTorch's torch.cuda.amp.GradScaler and NVIDIA
// Apex's DynamicLossScaler do it. The loss's gradient is multiplied by scale() before backward (so small fp16
// gradients do not flush to zero); the executor divides the gradients by it again before clipping and skips
// the optimizer step when any gradient is inf/NaN; update() then halves the scale (overflow) or doubles it
// after `growth_interval` clean steps in a row. A static scale never changes. Disabled (fp32, bf16): 1.
// Formulas, defaults and checkpoint fields: docs/training.md, docs/optimizers-and-checkpoints.md.
#pragma once
#include <cstdint>
#include <string>

#include "core/json_reader.hpp"  // defines: Json

namespace ptsim::runtime {

struct LossScalerConfig {
  bool enabled = false;            // fp16 only
  bool dynamic = true;             // false: a static scale (--loss-scale S)
  double initial_scale = 65536.0;  // 2^16, GradScaler's init_scale
  int64_t growth_interval = 2000;  // clean steps before doubling (GradScaler and Apex: 2000)
};
// Apex's max_loss_scale (2^24): growth stops there. Below kMinLossScale every step has overflowed ~40 times
// in a row from 2^16: the forward itself produces inf/NaN and no scale can help, so update() throws.
inline constexpr double kMaxLossScale = 16777216.0;   // 2^24
inline constexpr double kMinLossScale = 0x1.0p-24;

// Throws core::InputError naming the flag when a value is out of range: initial_scale in [2^-24, 2^24],
// growth_interval in [1, 10^9].
void validate_loss_scaler_config(const LossScalerConfig& config);

class LossScaler {
 public:
  explicit LossScaler(LossScalerConfig config);
  // The factor the loss gradient is multiplied by this step (1 when disabled).
  double scale() const { return scale_; }
  // Call once per optimizer step with whether it was skipped (some gradient inf/NaN after unscaling).
  // Dynamic: skipped → scale/2 and the clean-step count restarts; clean → count+1, and at growth_interval
  // the scale doubles (capped at kMaxLossScale) and the count restarts. Counts skipped steps in every mode.
  // Throws std::runtime_error when a dynamic scale falls below kMinLossScale.
  void update(bool skipped);
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t clean_steps_in_a_row() const { return growth_tracker_; }
  const LossScalerConfig& config() const { return config_; }

  // {"enabled", "dynamic", "scale", "growth_interval", "growth_tracker", "skipped_steps"}: what a
  // checkpoint stores so a resumed run continues the same sequence of scales bit for bit.
  core::Json to_json() const;
  // Restores scale, growth tracker and skipped count from a checkpoint's JSON after checking that it
  // describes the same configuration (enabled, dynamic, growth_interval; the initial scale for a static
  // one). Throws core::InputError naming `source` and the field otherwise.
  void load_json(const core::Json& j, const std::string& source);

 private:
  LossScalerConfig config_;
  double scale_ = 1.0;
  int64_t growth_tracker_ = 0;  // clean steps since the last change (GradScaler's _growth_tracker)
  int64_t skipped_steps_ = 0;
};

}  // namespace ptsim::runtime
