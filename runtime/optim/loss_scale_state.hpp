// runtime/optim/loss_scale_state.hpp — fp16 dynamic loss scaling's state as one trivially copyable struct
// (the scale, the growth tracker, the skipped count, an underflow flag, and the two fp32 values a step
// derives from the scale) with its update written once for a host and a device (PTSIM_HD): LossScaler
// (loss_scaler.hpp) keeps one on the host and calls update_loss_scale, and the executor keeps one in backend
// memory and has the backend run the same function after each step's finish_norm (Backend::update_loss_scale),
// so the next step's loss-gradient seed and gradient unscale come from device memory with no host read.
// Not here: configuration checks and checkpoint JSON (loss_scaler.hpp). Design: docs/cuda-backend.md,
// "The loss scale on the device"; semantics: docs/training.md.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"  // defines: PTSIM_HD

namespace ptsim::runtime {

// Apex's max_loss_scale (2^24): growth stops there. Below kMinLossScale every step has overflowed ~40 times
// in a row from 2^16: the forward itself produces inf/NaN and no scale can help, so LossScaler throws.
inline constexpr double kMaxLossScale = 16777216.0;  // 2^24
inline constexpr double kMinLossScale = 0x1.0p-24;

namespace optim_math {

// 48 bytes, no padding: the device reads the bytes the host wrote.
struct LossScaleState {
  double scale = 1.0;             // the factor the loss gradient carries this step
  int64_t growth_tracker = 0;     // clean steps since the last change (GradScaler's _growth_tracker)
  int64_t skipped_steps = 0;      // steps whose gradients were inf/NaN (counted in every mode)
  int64_t growth_interval = 2000; // clean steps before doubling
  double micro_steps = 1.0;       // grad_accum: the loss gradient of one micro-step is scale / micro_steps
  float loss_grad = 1.0f;         // fp32(scale / micro_steps): what fill_inputs wrote into loss_grad
  float grad_factor = 1.0f;       // fp32(1 / scale): the unscale the norm and the optimizer apply on read
  int32_t dynamic = 0;            // 1: enabled and dynamic (halve / double); 0: the scale never changes
  int32_t underflow = 0;          // 1: a halving took the scale below kMinLossScale (LossScaler throws on it)
};
static_assert(std::is_trivially_copyable_v<LossScaleState> && sizeof(LossScaleState) == 56,
              "LossScaleState crosses to the device as raw bytes");

// loss_grad and grad_factor from the scale: the host expressions static_cast<float>(scale / grad_accum)
// (the trainer's fill_inputs) and static_cast<float>(1.0 / scale) (the executor's unscale); double `/` is
// correctly rounded on a host and on a device, so both give the same bits.
PTSIM_HD inline void derive_step_factors(LossScaleState& s) {
  s.loss_grad = static_cast<float>(s.scale / s.micro_steps);
  s.grad_factor = static_cast<float>(1.0 / s.scale);
}

// One optimizer step's effect (LossScaler::update's rule, GradScaler's _amp_update_scale_): a skipped step
// is counted; a dynamic scale then halves and the tracker restarts, or, after a clean step, the tracker
// grows and at growth_interval the scale doubles (capped at kMaxLossScale) and the tracker restarts.
// Sets `underflow` when a halving goes below kMinLossScale (the scale keeps the halved value). Then
// derive_step_factors.
PTSIM_HD inline void update_loss_scale(LossScaleState& s, bool skipped) {
  if (skipped) ++s.skipped_steps;
  if (s.dynamic != 0) {
    if (skipped) {
      s.scale *= 0.5;  // GradScaler's backoff_factor
      s.growth_tracker = 0;
      if (s.scale < kMinLossScale) s.underflow = 1;
    } else if (++s.growth_tracker == s.growth_interval) {
      const double grown = s.scale * 2.0;  // GradScaler's growth_factor
      s.scale = grown < kMaxLossScale ? grown : kMaxLossScale;
      s.growth_tracker = 0;
    }
  }
  derive_step_factors(s);
}

}  // namespace optim_math
}  // namespace ptsim::runtime
