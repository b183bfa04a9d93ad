// runtime/exec/step_state.cpp — the step state buffer (see step_state.hpp).
#include "runtime/exec/step_state.hpp"

#include "runtime/exec/backend.hpp"

namespace ptsim::runtime {

DeviceStepState::DeviceStepState(Backend& backend)
    : backend_(backend), buffer_(backend.allocate(sizeof(StepStateRecord))) {}  // zero-filled

DeviceStepState::~DeviceStepState() { backend_.free(buffer_); }

void DeviceStepState::write_loss_scale(const optim_math::LossScaleState& state) {
  backend_.copy_to_device(loss_scale(), &state);
  has_loss_scale_ = true;
}

StepStateRecord DeviceStepState::read() const {
  StepStateRecord r;
  backend_.copy_to_host(&r, DeviceSpan::of(buffer_));
  return r;
}

}  // namespace ptsim::runtime
