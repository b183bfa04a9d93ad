// runtime/exec/step_state.hpp — the few values of a training step that stay in backend memory until the
// metrics line asks for them, in one small buffer so that one copy brings them all back: the fp16 dynamic
// loss scale (optim_math::LossScaleState, updated on the device after each step's verdict), the step's
// micro-step loss sums (loss, MLM, NSP: double, added on the device in micro-step order), and a copy of
// the step's verdict (the optimizer's StepScalars). The executor owns one (Executor::read_step_state).
// Not here: forming those values (Backend::update_loss_scale, add_to_sum, finish_step_scalars) and the
// host mirror (LossScaler). Design: docs/cuda-backend.md, "The loss scale on the device".
#pragma once
#include <cstddef>
#include <type_traits>

#include "runtime/exec/device_types.hpp"        // defines: DeviceBuffer, DeviceSpan
#include "runtime/optim/loss_scale_state.hpp"  // defines: LossScaleState
#include "runtime/optim/step_scalars.hpp"      // defines: StepScalars

namespace ptsim::runtime {

class Backend;

// What one read of the step state returns (its bytes in backend memory, in this order).
struct StepStateRecord {
  optim_math::StepScalars verdict;          // the last tail's verdict (norm, clip, skip)
  optim_math::LossScaleState loss_scale;    // after that tail's update: the scale of the next step
  double loss_sums[3] = {0.0, 0.0, 0.0};    // Σ over the step's micro-steps of each summed scalar
};
static_assert(std::is_trivially_copyable_v<StepStateRecord> && sizeof(StepStateRecord) == 144,
              "StepStateRecord crosses to the host as raw bytes");
inline constexpr size_t kStepStateSums = 3;

class DeviceStepState {
 public:
  explicit DeviceStepState(Backend& backend);
  ~DeviceStepState();
  DeviceStepState(const DeviceStepState&) = delete;
  DeviceStepState& operator=(const DeviceStepState&) = delete;

  // Writes the loss scale part (a run's start, a checkpoint restore); from then on has_loss_scale().
  void write_loss_scale(const optim_math::LossScaleState& state);
  bool has_loss_scale() const { return has_loss_scale_; }

  DeviceSpan verdict() const { return field(offsetof(StepStateRecord, verdict), sizeof(optim_math::StepScalars)); }
  DeviceSpan loss_scale() const {
    return field(offsetof(StepStateRecord, loss_scale), sizeof(optim_math::LossScaleState));
  }
  DeviceSpan loss_grad() const { return scale_field(offsetof(optim_math::LossScaleState, loss_grad)); }
  DeviceSpan grad_factor() const { return scale_field(offsetof(optim_math::LossScaleState, grad_factor)); }
  DeviceSpan sums() const { return field(offsetof(StepStateRecord, loss_sums), sizeof(double) * kStepStateSums); }
  DeviceSpan sum(size_t k) const { return sums().sub(k * sizeof(double), sizeof(double)); }

  // One copy_to_host of the whole record (waits for the queued work that writes it).
  StepStateRecord read() const;

 private:
  DeviceSpan field(size_t offset, size_t bytes) const { return DeviceSpan::of(buffer_).sub(offset, bytes); }
  DeviceSpan scale_field(size_t offset) const { return loss_scale().sub(offset, sizeof(float)); }

  Backend& backend_;
  DeviceBuffer buffer_;
  bool has_loss_scale_ = false;
};

}  // namespace ptsim::runtime
